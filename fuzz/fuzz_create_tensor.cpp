// libFuzzer harness: aclCreateTensor and its getters, and the other object constructors of acl_meta.h
// (aclCreateScalar, aclCreateIntArray / FloatArray / BoolArray, aclCreateTensorList / ScalarList).
// First byte: which (below 192: a tensor). A tensor is decoded as rank, dims, dtype, format, then
// fuzz::DecodeTensor's layout and mutations, then one byte of pointer mutations (null arrays, claimed counts that
// differ from the arrays, null data). The oracle: aclCreateTensor accepts exactly the descriptions
// fuzz::CreateTensorMustAccept calls valid, a refusal carries an "aclCreateTensor: " message, and the getters
// return what was passed in.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn/opdev/op_errno.h"
#include "c_shim.h"
#include "fuzz_support.h"

namespace {

// An exact-size heap copy of values (null for none), so that reads past the end are ASan reports.
std::unique_ptr<int64_t[]> ExactCopy(const std::vector<int64_t>& values, size_t count) {
  if (count == 0) return nullptr;
  std::unique_ptr<int64_t[]> copy(new int64_t[count]);
  for (size_t i = 0; i < count; ++i) copy[i] = i < values.size() ? values[i] : 0;
  return copy;
}

void CheckArrayGetter(const char* getter, aclnnStatus status, int64_t* values, uint64_t count,
                      const std::vector<int64_t>& expected) {
  FUZZ_CHECK(status == ACLNN_SUCCESS, "%s failed: %s", getter, fuzz::TakeRecentError().c_str());
  FUZZ_CHECK(count == expected.size(), "%s returned %llu values, expected %zu", getter,
             static_cast<unsigned long long>(count), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    FUZZ_CHECK(values[i] == expected[i], "%s value %zu is %lld, expected %lld", getter, i,
               static_cast<long long>(values[i]), static_cast<long long>(expected[i]));
  }
  delete[] values;
}

void CheckGetters(const aclTensor* tensor, const fuzz::TensorSpec& spec) {
  int64_t* values = nullptr;
  uint64_t count = 0;
  CheckArrayGetter("aclGetViewShape", aclGetViewShape(tensor, &values, &count), values, count, spec.dims);
  CheckArrayGetter("aclGetViewStrides", aclGetViewStrides(tensor, &values, &count), values, count, spec.strides);
  CheckArrayGetter("aclGetStorageShape", aclGetStorageShape(tensor, &values, &count), values, count,
                   spec.storage_dims);
  int64_t offset = -1;
  FUZZ_CHECK(aclGetViewOffset(tensor, &offset) == ACLNN_SUCCESS && offset == spec.offset, "aclGetViewOffset");
  int format = 0;
  FUZZ_CHECK(FuzzGetFormat(tensor, &format) == ACLNN_SUCCESS && format == spec.format, "aclGetFormat");
  int dtype = 0;
  FUZZ_CHECK(FuzzGetDataType(tensor, &dtype) == ACLNN_SUCCESS && dtype == spec.dtype, "aclGetDataType");
  // Null out-pointers and a null tensor are refused with 161001.
  FUZZ_CHECK(aclGetViewShape(tensor, nullptr, &count) == ACLNN_ERR_PARAM_NULLPTR, "aclGetViewShape(null)");
  FUZZ_CHECK(aclGetStorageShape(tensor, &values, nullptr) == ACLNN_ERR_PARAM_NULLPTR, "aclGetStorageShape(null)");
  FUZZ_CHECK(aclGetViewStrides(nullptr, &values, &count) == ACLNN_ERR_PARAM_NULLPTR, "aclGetViewStrides(null)");
  FUZZ_CHECK(aclGetViewOffset(tensor, nullptr) == ACLNN_ERR_PARAM_NULLPTR, "aclGetViewOffset(null)");
  FUZZ_CHECK(FuzzGetFormat(nullptr, &format) == ACLNN_ERR_PARAM_NULLPTR, "aclGetFormat(null)");
  FUZZ_CHECK(FuzzGetDataType(tensor, nullptr) == ACLNN_ERR_PARAM_NULLPTR, "aclGetDataType(null)");
}

void FuzzTensor(fuzz::Reader& r) {
  const size_t rank = r.Below(10);
  std::vector<int64_t> dims(rank);
  for (int64_t& dim : dims) {
    const uint8_t choice = r.Byte();
    dim = choice < 224 ? choice % 6 : fuzz::EdgeValue(r, choice % 6);
  }
  const int dtype = fuzz::DecodeDataType(r);
  const int format = fuzz::DecodeFormat(r);
  fuzz::TensorSpec spec = fuzz::DecodeTensor(r, "tensor", false, dims, dtype);
  if (format != 0) spec.format = format;

  // Pointer-level mutations: null arrays, claimed counts other than the array lengths, null data.
  const uint8_t pointers = r.Byte();
  uint64_t view_count = spec.dims.size();
  uint64_t storage_count = spec.storage_dims.size();
  if (pointers & 0x08) view_count = r.Flag() ? r.Bits(8) : view_count + 1 + r.Below(4);
  if (pointers & 0x10) storage_count = r.Flag() ? r.Bits(8) : storage_count + 1 + r.Below(4);
  // The arrays hold exactly the claimed counts when those are small (extra entries: 1), else the real lengths.
  const size_t view_array = view_count <= 16 ? view_count : spec.dims.size();
  const size_t storage_array = storage_count <= 16 ? storage_count : spec.storage_dims.size();
  std::unique_ptr<int64_t[]> view_dims = ExactCopy(spec.dims, view_array);
  std::unique_ptr<int64_t[]> strides = ExactCopy(spec.strides, view_array);
  std::unique_ptr<int64_t[]> storage_dims = ExactCopy(spec.storage_dims, storage_array);
  for (size_t i = spec.dims.size(); i < view_array; ++i) view_dims[i] = 1;
  for (size_t i = spec.storage_dims.size(); i < storage_array; ++i) storage_dims[i] = 1;
  if (pointers & 0x01) view_dims.reset();
  if (pointers & 0x02) strides.reset();
  if (pointers & 0x04) storage_dims.reset();

  // The description aclCreateTensor actually sees.
  fuzz::TensorSpec seen = spec;
  bool must_refuse = false;
  if (view_count > 16 || storage_count > 16) {
    must_refuse = true;  // above the maximum rank, whatever the arrays hold
  } else {
    seen.dims.assign(view_dims.get(), view_dims.get() + (view_dims ? view_count : 0));
    seen.strides.assign(strides.get(), strides.get() + (strides ? view_count : 0));
    seen.storage_dims.assign(storage_dims.get(), storage_dims.get() + (storage_dims ? storage_count : 0));
    must_refuse = (view_count > 0 && view_dims == nullptr) || (storage_count > 0 && storage_dims == nullptr);
    // Null strides mean the contiguous strides of the dims (a dim of 0 or 1 counting as 1); refused if they overflow.
    if (view_count > 0 && view_dims != nullptr && strides == nullptr) {
      seen.strides.assign(view_count, 0);
      int64_t step = 1;
      for (size_t d = view_count; d-- > 0;) {
        seen.strides[d] = step;
        if (__builtin_mul_overflow(step, std::max<int64_t>(seen.dims[d], 1), &step)) must_refuse = true;
      }
    }
  }

  // Storage: a small exact allocation when the description is valid and small, else no memory (aclCreateTensor
  // never reads tensor data).
  std::unique_ptr<unsigned char[]> storage;
  const int64_t bytes = fuzz::CheckedBytes(seen.storage_dims, fuzz::ElementBytes(seen.dtype));
  void* data = nullptr;
  if (!(pointers & 0x20)) {
    if (bytes >= 0 && bytes <= 4096) {
      storage.reset(new unsigned char[static_cast<size_t>(bytes) + 1]);
      data = storage.get();
    } else {
      data = reinterpret_cast<void*>(uintptr_t{64});  // faults if touched
    }
  }

  aclTensor* tensor = FuzzCreateTensor(view_dims.get(), view_count, spec.dtype, strides.get(), spec.offset, spec.format,
                                       storage_dims.get(), storage_count, data);
  std::string why = "a null array or a count above 16";
  const bool must_accept = !must_refuse && fuzz::CreateTensorMustAccept(seen, &why);
  if (tensor == nullptr) {
    const std::string message = fuzz::TakeRecentError();
    FUZZ_CHECK(!must_accept, "aclCreateTensor refused a valid description (dims %s, strides %s, offset %lld, storage "
               "%s, dtype %d, format %d): %s", fuzz::DimsString(seen.dims).c_str(),
               fuzz::DimsString(seen.strides).c_str(), static_cast<long long>(seen.offset),
               fuzz::DimsString(seen.storage_dims).c_str(), seen.dtype, seen.format, message.c_str());
    FUZZ_CHECK(message.rfind("aclCreateTensor: ", 0) == 0 && message.size() > 17,
               "aclCreateTensor refused with message \"%s\"", message.c_str());
    return;
  }
  FUZZ_CHECK(must_accept, "aclCreateTensor accepted dims %s, strides %s, offset %lld, storage %s, dtype %d, format "
             "%d although %s", fuzz::DimsString(seen.dims).c_str(), fuzz::DimsString(seen.strides).c_str(),
             static_cast<long long>(seen.offset), fuzz::DimsString(seen.storage_dims).c_str(), seen.dtype,
             seen.format, why.c_str());
  CheckGetters(tensor, seen);
  FUZZ_CHECK(aclDestroyTensor(tensor) == ACLNN_SUCCESS, "aclDestroyTensor");
}

// A value array: exact size, or null with a nonzero size (which must be refused).
void FuzzArrays(fuzz::Reader& r, fuzz::Call& call) {
  const uint8_t which = r.Byte() % 6;
  const bool null_values = r.Byte() >= 224;
  const uint64_t size = null_values ? (r.Flag() ? r.Bits(8) : 1 + r.Below(8)) : r.Below(40);
  const size_t bytes_each = which == 2 ? 1 : which == 1 ? 4 : 8;
  std::unique_ptr<unsigned char[]> values(null_values ? nullptr : new unsigned char[size * bytes_each + 1]);
  for (uint64_t i = 0; values && i < size * bytes_each; ++i) values[i] = static_cast<unsigned char>(call.Random());
  uint64_t got = 0;
  switch (which) {
    case 0: {
      aclIntArray* array = aclCreateIntArray(reinterpret_cast<const int64_t*>(values.get()), size);
      FUZZ_CHECK((array == nullptr) == (null_values && size > 0), "aclCreateIntArray decision");
      if (array == nullptr) break;
      FUZZ_CHECK(aclGetIntArraySize(array, &got) == ACLNN_SUCCESS && got == size, "aclGetIntArraySize");
      FUZZ_CHECK(aclGetIntArraySize(array, nullptr) == ACLNN_ERR_PARAM_NULLPTR, "aclGetIntArraySize(null)");
      aclDestroyIntArray(array);
      break;
    }
    case 1: {
      aclFloatArray* array = aclCreateFloatArray(reinterpret_cast<const float*>(values.get()), size);
      FUZZ_CHECK((array == nullptr) == (null_values && size > 0), "aclCreateFloatArray decision");
      if (array == nullptr) break;
      FUZZ_CHECK(aclGetFloatArraySize(array, &got) == ACLNN_SUCCESS && got == size, "aclGetFloatArraySize");
      aclDestroyFloatArray(array);
      break;
    }
    case 2: {
      // Any byte values, as a C caller may pass them.
      aclBoolArray* array = aclCreateBoolArray(reinterpret_cast<const bool*>(values.get()), size);
      FUZZ_CHECK((array == nullptr) == (null_values && size > 0), "aclCreateBoolArray decision");
      if (array == nullptr) break;
      FUZZ_CHECK(aclGetBoolArraySize(array, &got) == ACLNN_SUCCESS && got == size, "aclGetBoolArraySize");
      aclDestroyBoolArray(array);
      break;
    }
    case 3: {
      // A scalar of any dtype value, its bytes in an exact allocation of that dtype's size.
      const int dtype = fuzz::DecodeDataType(r);
      const size_t element = fuzz::ElementBytes(dtype);
      std::unique_ptr<unsigned char[]> scalar_bytes(new unsigned char[element == 0 ? 1 : element]);
      for (size_t i = 0; i < element; ++i) scalar_bytes[i] = static_cast<unsigned char>(call.Random());
      aclScalar* scalar = FuzzCreateScalar(null_values ? nullptr : scalar_bytes.get(), dtype);
      FUZZ_CHECK((scalar != nullptr) == (!null_values && element > 0), "aclCreateScalar decision for dtype %d",
                 dtype);
      if (scalar == nullptr) {
        FUZZ_CHECK(!fuzz::TakeRecentError().empty(), "aclCreateScalar refused without a message");
        break;
      }
      aclDestroyScalar(scalar);
      break;
    }
    default: {
      // Lists of tensors / scalars, some entries null (refused).
      const size_t count = r.Below(6);
      const int64_t dims[1] = {1};
      const int64_t strides[1] = {1};
      float element = 0.0f;
      std::vector<aclTensor*> tensors;
      std::vector<aclScalar*> scalars;
      bool any_null = false;
      for (size_t i = 0; i < count; ++i) {
        const bool null_entry = r.Byte() >= 240;
        any_null = any_null || null_entry;
        tensors.push_back(null_entry ? nullptr : aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 1,
                                                                 &element));
        scalars.push_back(null_entry ? nullptr : aclCreateScalar(&element, ACL_FLOAT));
      }
      std::unique_ptr<const aclTensor*[]> tensor_array(new const aclTensor*[count + 1]);
      std::unique_ptr<const aclScalar*[]> scalar_array(new const aclScalar*[count + 1]);
      for (size_t i = 0; i < count; ++i) {
        tensor_array[i] = tensors[i];
        scalar_array[i] = scalars[i];
      }
      aclTensorList* tensor_list = aclCreateTensorList(null_values ? nullptr : tensor_array.get(), count);
      aclScalarList* scalar_list = aclCreateScalarList(null_values ? nullptr : scalar_array.get(), count);
      const bool must_refuse = (null_values && count > 0) || any_null;
      FUZZ_CHECK((tensor_list == nullptr) == must_refuse, "aclCreateTensorList decision");
      FUZZ_CHECK((scalar_list == nullptr) == must_refuse, "aclCreateScalarList decision");
      if (tensor_list != nullptr) {
        FUZZ_CHECK(aclGetTensorListSize(tensor_list, &got) == ACLNN_SUCCESS && got == count, "aclGetTensorListSize");
        aclDestroyTensorList(tensor_list);
      }
      if (scalar_list != nullptr) {
        FUZZ_CHECK(aclGetScalarListSize(scalar_list, &got) == ACLNN_SUCCESS && got == count, "aclGetScalarListSize");
        aclDestroyScalarList(scalar_list);
      }
      for (aclTensor* tensor : tensors) aclDestroyTensor(tensor);
      for (aclScalar* scalar : scalars) aclDestroyScalar(scalar);
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader r(data, size);
  fuzz::Call call(data, size);  // only its random numbers
  if (r.Byte() < 192) {
    FuzzTensor(r);
  } else {
    FuzzArrays(r, call);
  }
  return 0;
}
