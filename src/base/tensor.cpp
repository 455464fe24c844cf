// aclTensor: creation with full validation of the view against its storage, the getters, and TensorDesc's methods.
//
// NOTE: aclCreateTensor is the one place where a view is checked, so everything downstream (ElementAddress, the
// kernels) may trust that every element of the view lies inside the storage shape. The check computes the lowest
// and highest element index the view can address, offset + sum over dims of min/max(0, (dim - 1) * stride), with
// overflow-checked 64-bit arithmetic; an overflow means the view cannot fit and is refused. Negative strides are
// refused as CANN documents (its aclCreateTensor: "stride ... cannot be a negative number"), so that a program
// that would fail on an NPU fails here too; zero strides (broadcast views) are accepted.
#include "pacl/tensor.h"

#include <cinttypes>
#include <cstdint>
#include <limits>
#include <new>
#include <string>
#include <utility>

#include "aclnn/acl_meta.h"
#include "aclnn/opdev/op_errno.h"
#include "pacl/dtype.h"
#include "pacl/error.h"
#include "pacl/tensor_objects.h"

namespace pacl {

int64_t TensorDesc::NumElements() const {
  int64_t count = 1;
  for (int d = 0; d < rank; ++d) count *= shape[d];
  return count;
}

bool TensorDesc::IsContiguous() const {
  if (NumElements() == 0) return true;
  int64_t expected = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (shape[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

namespace {
std::string JoinDims(const int64_t* values, int count) {
  std::string text = "[";
  for (int d = 0; d < count; ++d) {
    if (d > 0) text += ", ";
    text += std::to_string(values[d]);
  }
  text += "]";
  return text;
}
}  // namespace

std::string TensorDesc::ShapeString() const { return JoinDims(shape, rank); }

std::string TensorDesc::StridesString() const { return JoinDims(strides, rank); }

bool TensorDesc::ElementsAreDistinct() const {
  int64_t abs_strides[kMaxRank];
  int64_t sizes[kMaxRank];
  int count = 0;
  for (int d = 0; d < rank; ++d) {
    if (shape[d] == 0) return true;  // no elements at all
    if (shape[d] == 1) continue;
    abs_strides[count] = strides[d] < 0 ? -strides[d] : strides[d];
    sizes[count] = shape[d];
    ++count;
  }
  for (int i = 1; i < count; ++i) {  // insertion sort by |stride|: at most kMaxRank entries
    for (int j = i; j > 0 && abs_strides[j] < abs_strides[j - 1]; --j) {
      std::swap(abs_strides[j], abs_strides[j - 1]);
      std::swap(sizes[j], sizes[j - 1]);
    }
  }
  int64_t reach = 0;  // the largest element offset reachable with the dims seen so far
  for (int i = 0; i < count; ++i) {
    if (abs_strides[i] <= reach) return false;
    reach += (sizes[i] - 1) * abs_strides[i];
  }
  return true;
}

bool IsKnownDataType(int value) {
  switch (value) {
    case ACL_FLOAT:
    case ACL_FLOAT16:
    case ACL_INT8:
    case ACL_INT32:
    case ACL_UINT8:
    case ACL_INT16:
    case ACL_UINT16:
    case ACL_UINT32:
    case ACL_INT64:
    case ACL_UINT64:
    case ACL_DOUBLE:
    case ACL_BOOL:
    case ACL_STRING:
    case ACL_COMPLEX64:
    case ACL_COMPLEX128:
    case ACL_BF16:
      return true;
    case ACL_DT_UNDEFINED:
      return false;
  }
  return false;
}

bool IsKnownFormat(int value) {
  switch (value) {
    case ACL_FORMAT_NCHW:
    case ACL_FORMAT_NHWC:
    case ACL_FORMAT_ND:
    case ACL_FORMAT_NC1HWC0:
    case ACL_FORMAT_FRACTAL_Z:
    case ACL_FORMAT_NC1HWC0_C04:
    case ACL_FORMAT_HWCN:
    case ACL_FORMAT_NDHWC:
    case ACL_FORMAT_FRACTAL_NZ:
    case ACL_FORMAT_NCDHW:
    case ACL_FORMAT_NDC1HWC0:
    case ACL_FRACTAL_Z_3D:
    case ACL_FORMAT_NC:
    case ACL_FORMAT_NCL:
      return true;
    case ACL_FORMAT_UNDEFINED:
      return false;
  }
  return false;
}

std::string FormatName(int value) {
  switch (value) {
    case ACL_FORMAT_UNDEFINED:
      return "UNDEFINED";
    case ACL_FORMAT_NCHW:
      return "NCHW";
    case ACL_FORMAT_NHWC:
      return "NHWC";
    case ACL_FORMAT_ND:
      return "ND";
    case ACL_FORMAT_NC1HWC0:
      return "NC1HWC0";
    case ACL_FORMAT_FRACTAL_Z:
      return "FRACTAL_Z";
    case ACL_FORMAT_NC1HWC0_C04:
      return "NC1HWC0_C04";
    case ACL_FORMAT_HWCN:
      return "HWCN";
    case ACL_FORMAT_NDHWC:
      return "NDHWC";
    case ACL_FORMAT_FRACTAL_NZ:
      return "FRACTAL_NZ";
    case ACL_FORMAT_NCDHW:
      return "NCDHW";
    case ACL_FORMAT_NDC1HWC0:
      return "NDC1HWC0";
    case ACL_FRACTAL_Z_3D:
      return "FRACTAL_Z_3D";
    case ACL_FORMAT_NC:
      return "NC";
    case ACL_FORMAT_NCL:
      return "NCL";
  }
  return "UNKNOWN(" + std::to_string(value) + ")";
}

}  // namespace pacl

namespace {

std::string DimsString(const int64_t* dims, uint64_t count) {
  std::string text = "[";
  for (uint64_t i = 0; i < count; ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(dims[i]);
  }
  text += "]";
  return text;
}

aclTensor* RefuseTensor(const std::string& message) {
  pacl::SetRecentErrorMessage("aclCreateTensor: " + message);
  return nullptr;
}

// Product of dims into *count; false on int64 overflow. dims are non-negative.
bool CheckedProduct(const int64_t* dims, uint64_t count_dims, int64_t* count) {
  int64_t product = 1;
  for (uint64_t i = 0; i < count_dims; ++i) {
    if (__builtin_mul_overflow(product, dims[i], &product)) return false;
  }
  *count = product;
  return true;
}

// The row-major strides of dims (a dim of size 0 or 1 counts as 1), what a null stride array means; false on int64
// overflow.
bool ContiguousStrides(const int64_t* dims, uint64_t rank, int64_t* strides) {
  int64_t step = 1;
  for (uint64_t d = rank; d-- > 0;) {
    strides[d] = step;
    if (__builtin_mul_overflow(step, dims[d] > 1 ? dims[d] : 1, &step)) return false;
  }
  return true;
}

// Lowest and highest element index a non-empty view addresses; false on int64 overflow.
bool ViewExtent(const int64_t* dims, const int64_t* strides, uint64_t rank, int64_t offset, int64_t* lowest,
                int64_t* highest) {
  int64_t low = offset;
  int64_t high = offset;
  for (uint64_t d = 0; d < rank; ++d) {
    int64_t span = 0;
    if (__builtin_mul_overflow(dims[d] - 1, strides[d], &span)) return false;
    if (span < 0) {
      if (__builtin_add_overflow(low, span, &low)) return false;
    } else {
      if (__builtin_add_overflow(high, span, &high)) return false;
    }
  }
  *lowest = low;
  *highest = high;
  return true;
}

// Checks the tensor and out-pointer of a getter; records the message and returns false when one is null.
bool GetterArgumentsPresent(const char* function, const aclTensor* tensor, const void* out, const char* out_name,
                            const void* out2 = nullptr, const char* out2_name = nullptr) {
  const char* missing = nullptr;
  if (tensor == nullptr) {
    missing = "tensor";
  } else if (out == nullptr) {
    missing = out_name;
  } else if (out2_name != nullptr && out2 == nullptr) {
    missing = out2_name;
  }
  if (missing == nullptr) return true;
  pacl::SetRecentErrorMessage(pacl::StrFormat("%s: %s must not be null", function, missing));
  return false;
}

// Copies count values into a new[] array for the caller (nullptr when count is 0, as CANN does for rank 0).
aclnnStatus ExportDims(const char* function, const int64_t* values, int count, int64_t** out, uint64_t* out_count) {
  int64_t* copy = nullptr;
  if (count > 0) {
    copy = new (std::nothrow) int64_t[static_cast<size_t>(count)];
    if (copy == nullptr) {
      pacl::SetRecentErrorMessage(pacl::StrFormat("%s: out of memory", function));
      return ACLNN_ERR_INNER;
    }
    for (int i = 0; i < count; ++i) copy[i] = values[i];
  }
  *out = copy;
  *out_count = static_cast<uint64_t>(count);
  return ACLNN_SUCCESS;
}

}  // namespace

bool pacl::TensorDesc::ElementRange(int64_t* lowest, int64_t* highest) const {
  return NumElements() > 0 && ViewExtent(shape, strides, static_cast<uint64_t>(rank), offset, lowest, highest);
}

// The byte ranges of the two views, [lowest element, highest element + 1) each, by ElementRange (ViewExtent: the same
// bounds aclCreateTensor checked, so they do not overflow for a created tensor).
bool pacl::TensorDesc::MayShareMemoryWith(const TensorDesc& other) const {
  auto bytes = [](const TensorDesc& t, uintptr_t* begin, uintptr_t* end) {
    int64_t lowest = 0;
    int64_t highest = 0;
    if (t.data == nullptr || !t.ElementRange(&lowest, &highest)) return false;
    const uintptr_t base = reinterpret_cast<uintptr_t>(t.data);
    const uintptr_t size = t.ElementSize();
    *begin = base + static_cast<uintptr_t>(lowest) * size;
    *end = base + static_cast<uintptr_t>(highest + 1) * size;
    return true;
  };
  uintptr_t begin = 0, end = 0, other_begin = 0, other_end = 0;
  if (!bytes(*this, &begin, &end) || !bytes(other, &other_begin, &other_end)) return false;
  return begin < other_end && other_begin < end;
}

extern "C" {

aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataType, const int64_t* stride,
                           int64_t offset, aclFormat format, const int64_t* storageDims, uint64_t storageDimsNum,
                           void* tensorData) {
  using pacl::StrFormat;
  const uint64_t max_rank = static_cast<uint64_t>(pacl::kMaxRank);
  if (viewDimsNum > max_rank) {
    return RefuseTensor(StrFormat("viewDimsNum must be at most %d, got %" PRIu64, pacl::kMaxRank, viewDimsNum));
  }
  if (storageDimsNum > max_rank) {
    return RefuseTensor(StrFormat("storageDimsNum must be at most %d, got %" PRIu64, pacl::kMaxRank, storageDimsNum));
  }
  if (viewDimsNum > 0 && viewDims == nullptr) {
    return RefuseTensor(StrFormat("viewDims must not be null when viewDimsNum is %" PRIu64, viewDimsNum));
  }
  if (storageDimsNum > 0 && storageDims == nullptr) {
    return RefuseTensor(StrFormat("storageDims must not be null when storageDimsNum is %" PRIu64, storageDimsNum));
  }
  for (uint64_t d = 0; d < viewDimsNum; ++d) {
    if (viewDims[d] < 0) {
      return RefuseTensor(StrFormat("viewDims[%" PRIu64 "] must not be negative, got %" PRId64 " in %s", d, viewDims[d],
                                    DimsString(viewDims, viewDimsNum).c_str()));
    }
  }
  // A null stride array means a contiguous view, as in CANN.
  int64_t contiguous_strides[pacl::kMaxRank] = {};
  if (stride == nullptr) {
    if (!ContiguousStrides(viewDims, viewDimsNum, contiguous_strides)) {
      return RefuseTensor(StrFormat("stride is null, and the contiguous strides of viewDims %s overflow int64",
                                    DimsString(viewDims, viewDimsNum).c_str()));
    }
    stride = contiguous_strides;
  }
  for (uint64_t d = 0; d < viewDimsNum; ++d) {
    if (stride[d] < 0) {
      return RefuseTensor(StrFormat("stride[%" PRIu64 "] must not be negative, got %" PRId64
                                    " in %s (CANN's aclTensor takes no negative strides)",
                                    d, stride[d], DimsString(stride, viewDimsNum).c_str()));
    }
  }
  for (uint64_t d = 0; d < storageDimsNum; ++d) {
    if (storageDims[d] < 0) {
      return RefuseTensor(StrFormat("storageDims[%" PRIu64 "] must not be negative, got %" PRId64 " in %s", d,
                                    storageDims[d], DimsString(storageDims, storageDimsNum).c_str()));
    }
  }
  const int dtype_value = pacl::EnumValue(dataType);
  if (!pacl::IsKnownDataType(dtype_value)) {
    return RefuseTensor(StrFormat("dataType %d is not a valid aclDataType", dtype_value));
  }
  if (dtype_value == ACL_STRING) {
    return RefuseTensor("dataType STRING is not supported for tensors");
  }
  const int format_value = pacl::EnumValue(format);
  if (!pacl::IsKnownFormat(format_value)) {
    return RefuseTensor(
        StrFormat("format %d (%s) is not a valid aclFormat", format_value, pacl::FormatName(format_value).c_str()));
  }
  if (offset < 0) {
    return RefuseTensor(StrFormat("offset must not be negative, got %" PRId64, offset));
  }
  int64_t view_elements = 0;
  if (!CheckedProduct(viewDims, viewDimsNum, &view_elements)) {
    return RefuseTensor(
        StrFormat("the element count of viewDims %s overflows int64", DimsString(viewDims, viewDimsNum).c_str()));
  }
  int64_t storage_elements = 0;
  int64_t storage_bytes = 0;
  if (!CheckedProduct(storageDims, storageDimsNum, &storage_elements) ||
      __builtin_mul_overflow(storage_elements, static_cast<int64_t>(pacl::DataTypeSize(dataType)), &storage_bytes)) {
    return RefuseTensor(
        StrFormat("the size of storageDims %s overflows int64", DimsString(storageDims, storageDimsNum).c_str()));
  }

  if (view_elements == 0) {
    // An empty view addresses nothing; only its offset has to be a position within the storage.
    if (offset > storage_elements) {
      return RefuseTensor(StrFormat("offset %" PRId64 " of an empty view lies beyond storageDims %s (%" PRId64
                                    " elements)",
                                    offset, DimsString(storageDims, storageDimsNum).c_str(), storage_elements));
    }
  } else {
    int64_t lowest = 0;
    int64_t highest = 0;
    const bool fits = ViewExtent(viewDims, stride, viewDimsNum, offset, &lowest, &highest);
    if (!fits || lowest < 0 || highest >= storage_elements) {
      std::string reach = fits ? StrFormat("addresses storage elements %" PRId64 " to %" PRId64, lowest, highest)
                               : std::string("addresses element indices that overflow int64");
      return RefuseTensor(StrFormat("the view (viewDims %s, stride %s, offset %" PRId64
                                    ") %s, outside storageDims %s (elements 0 to %" PRId64 ")",
                                    DimsString(viewDims, viewDimsNum).c_str(), DimsString(stride, viewDimsNum).c_str(),
                                    offset, reach.c_str(), DimsString(storageDims, storageDimsNum).c_str(),
                                    storage_elements - 1));
    }
  }

  aclTensor* tensor = new (std::nothrow) aclTensor;
  if (tensor == nullptr) return RefuseTensor("out of memory");
  pacl::TensorDesc& desc = tensor->desc;
  desc.dtype = dataType;
  desc.format = format;
  desc.rank = static_cast<int>(viewDimsNum);
  // Size-1 dims, and every dim of an empty view, get the packed stride, the one a null stride array gives (0 if
  // those overflow, which only an empty view allows): see TensorDesc.
  int64_t packed_strides[pacl::kMaxRank] = {};
  const bool packed_fits = ContiguousStrides(viewDims, viewDimsNum, packed_strides);
  for (uint64_t d = 0; d < viewDimsNum; ++d) {
    desc.shape[d] = viewDims[d];
    const bool addresses_nothing = viewDims[d] == 1 || view_elements == 0;
    desc.strides[d] = addresses_nothing ? (packed_fits ? packed_strides[d] : 0) : stride[d];
    tensor->caller_strides[d] = stride[d];
  }
  desc.offset = offset;
  desc.storage_rank = static_cast<int>(storageDimsNum);
  for (uint64_t d = 0; d < storageDimsNum; ++d) desc.storage_shape[d] = storageDims[d];
  desc.data = tensorData;
  return tensor;
}

aclnnStatus aclDestroyTensor(const aclTensor* tensor) {
  delete tensor;
  return ACLNN_SUCCESS;
}

aclnnStatus aclGetViewShape(const aclTensor* tensor, int64_t** viewDims, uint64_t* viewDimsNum) {
  if (!GetterArgumentsPresent("aclGetViewShape", tensor, viewDims, "viewDims", viewDimsNum, "viewDimsNum")) {
    return ACLNN_ERR_PARAM_NULLPTR;
  }
  return ExportDims("aclGetViewShape", tensor->desc.shape, tensor->desc.rank, viewDims, viewDimsNum);
}

aclnnStatus aclGetStorageShape(const aclTensor* tensor, int64_t** storageDims, uint64_t* storageDimsNum) {
  if (!GetterArgumentsPresent("aclGetStorageShape", tensor, storageDims, "storageDims", storageDimsNum,
                              "storageDimsNum")) {
    return ACLNN_ERR_PARAM_NULLPTR;
  }
  return ExportDims("aclGetStorageShape", tensor->desc.storage_shape, tensor->desc.storage_rank, storageDims,
                    storageDimsNum);
}

aclnnStatus aclGetViewStrides(const aclTensor* tensor, int64_t** stridesValue, uint64_t* stridesNum) {
  if (!GetterArgumentsPresent("aclGetViewStrides", tensor, stridesValue, "stridesValue", stridesNum, "stridesNum")) {
    return ACLNN_ERR_PARAM_NULLPTR;
  }
  return ExportDims("aclGetViewStrides", tensor->caller_strides, tensor->desc.rank, stridesValue, stridesNum);
}

aclnnStatus aclGetViewOffset(const aclTensor* tensor, int64_t* offset) {
  if (!GetterArgumentsPresent("aclGetViewOffset", tensor, offset, "offset")) return ACLNN_ERR_PARAM_NULLPTR;
  *offset = tensor->desc.offset;
  return ACLNN_SUCCESS;
}

aclnnStatus aclGetFormat(const aclTensor* tensor, aclFormat* format) {
  if (!GetterArgumentsPresent("aclGetFormat", tensor, format, "format")) return ACLNN_ERR_PARAM_NULLPTR;
  *format = tensor->desc.format;
  return ACLNN_SUCCESS;
}

aclnnStatus aclGetDataType(const aclTensor* tensor, aclDataType* dataType) {
  if (!GetterArgumentsPresent("aclGetDataType", tensor, dataType, "dataType")) return ACLNN_ERR_PARAM_NULLPTR;
  *dataType = tensor->desc.dtype;
  return ACLNN_SUCCESS;
}

}  // extern "C"
