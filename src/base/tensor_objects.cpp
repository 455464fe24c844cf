// aclScalar, aclIntArray, aclFloatArray, aclBoolArray, aclTensorList and aclScalarList: creation, destruction and
// sizes. Scalars and arrays copy the caller's values; lists keep the caller's element pointers (CANN does the same).
#include "pacl/tensor_objects.h"

#include <cinttypes>
#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "aclnn/acl_meta.h"
#include "aclnn/opdev/op_errno.h"
#include "pacl/dtype.h"
#include "pacl/error.h"

namespace pacl {

double ScalarToDouble(const aclScalar& scalar) {
  const unsigned char* bytes = scalar.bytes;
  auto read = [bytes](auto zero) {
    decltype(zero) value = zero;
    std::memcpy(&value, bytes, sizeof value);
    return value;
  };
  switch (scalar.dtype) {
    case ACL_FLOAT:
    case ACL_COMPLEX64:  // real part first
      return read(0.0f);
    case ACL_DOUBLE:
    case ACL_COMPLEX128:
      return read(0.0);
    case ACL_FLOAT16:
      return HalfToFloat(read(uint16_t{0}));
    case ACL_BF16:
      return BFloat16ToFloat(read(uint16_t{0}));
    case ACL_INT8:
      return read(int8_t{0});
    case ACL_UINT8:
      return read(uint8_t{0});
    case ACL_INT16:
      return read(int16_t{0});
    case ACL_UINT16:
      return read(uint16_t{0});
    case ACL_INT32:
      return read(int32_t{0});
    case ACL_UINT32:
      return read(uint32_t{0});
    case ACL_INT64:
      return static_cast<double>(read(int64_t{0}));
    case ACL_UINT64:
      return static_cast<double>(read(uint64_t{0}));
    case ACL_BOOL:
      return read(uint8_t{0}) != 0 ? 1.0 : 0.0;
    default:
      return 0.0;
  }
}

}  // namespace pacl

namespace {

template <class T>
T* Refuse(const char* function, const std::string& message) {
  pacl::SetRecentErrorMessage(std::string(function) + ": " + message);
  return nullptr;
}

aclnnStatus RefuseNullArgument(const char* function, const char* param) {
  pacl::SetRecentErrorMessage(pacl::StrFormat("%s: %s must not be null", function, param));
  return ACLNN_ERR_PARAM_NULLPTR;
}

// Builds an array object of `size` elements with element i = convert(i); nullptr (message recorded) when value is
// null for a non-empty array or when memory runs out.
template <class Array, class Values, class Convert>
Array* MakeArray(const char* function, const void* value, uint64_t size, Values Array::*values, Convert convert) {
  if (size > 0 && value == nullptr) {
    return Refuse<Array>(function, pacl::StrFormat("value must not be null when size is %" PRIu64, size));
  }
  Array* array = new (std::nothrow) Array;
  if (array == nullptr) return Refuse<Array>(function, "out of memory");
  try {
    (array->*values).reserve(size);
    for (uint64_t i = 0; i < size; ++i) (array->*values).push_back(convert(i));
  } catch (const std::exception&) {
    delete array;
    return Refuse<Array>(function, pacl::StrFormat("cannot allocate an array of %" PRIu64 " elements", size));
  }
  return array;
}

template <class Array>
aclnnStatus GetSize(const char* function, const char* array_param, const Array* array, uint64_t* size, uint64_t count) {
  if (array == nullptr) return RefuseNullArgument(function, array_param);
  if (size == nullptr) return RefuseNullArgument(function, "size");
  *size = count;
  return ACLNN_SUCCESS;
}

}  // namespace

extern "C" {

aclScalar* aclCreateScalar(void* value, aclDataType dataType) {
  const int dtype_value = pacl::EnumValue(dataType);
  if (!pacl::IsKnownDataType(dtype_value)) {
    return Refuse<aclScalar>("aclCreateScalar", pacl::StrFormat("dataType %d is not a valid aclDataType", dtype_value));
  }
  const size_t size = pacl::DataTypeSize(dataType);
  if (size == 0) {
    return Refuse<aclScalar>("aclCreateScalar", pacl::StrFormat("dataType %d (%s) is not supported for scalars",
                                                                dtype_value, pacl::DataTypeName(dataType)));
  }
  if (value == nullptr) return Refuse<aclScalar>("aclCreateScalar", "value must not be null");
  aclScalar* scalar = new (std::nothrow) aclScalar;
  if (scalar == nullptr) return Refuse<aclScalar>("aclCreateScalar", "out of memory");
  if (size > sizeof scalar->bytes) {  // no aclDataType is wider than complex128
    delete scalar;
    return Refuse<aclScalar>("aclCreateScalar", pacl::StrFormat("dataType %d is too wide", dtype_value));
  }
  scalar->dtype = dataType;
  std::memcpy(scalar->bytes, value, size);
  return scalar;
}

aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size) {
  return MakeArray<aclIntArray>("aclCreateIntArray", value, size, &aclIntArray::values,
                                [value](uint64_t i) { return value[i]; });
}

aclFloatArray* aclCreateFloatArray(const float* value, uint64_t size) {
  return MakeArray<aclFloatArray>("aclCreateFloatArray", value, size, &aclFloatArray::values,
                                  [value](uint64_t i) { return value[i]; });
}

aclBoolArray* aclCreateBoolArray(const bool* value, uint64_t size) {
  // Read the bytes rather than the bools: a byte other than 0 or 1 counts as true instead of being undefined.
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(value);
  return MakeArray<aclBoolArray>("aclCreateBoolArray", value, size, &aclBoolArray::values,
                                 [bytes](uint64_t i) { return bytes[i] != 0; });
}

aclTensorList* aclCreateTensorList(const aclTensor* const* value, uint64_t size) {
  for (uint64_t i = 0; value != nullptr && i < size; ++i) {
    if (value[i] == nullptr) {
      return Refuse<aclTensorList>("aclCreateTensorList", pacl::StrFormat("value[%" PRIu64 "] must not be null", i));
    }
  }
  return MakeArray<aclTensorList>("aclCreateTensorList", value, size, &aclTensorList::tensors,
                                  [value](uint64_t i) { return value[i]; });
}

aclScalarList* aclCreateScalarList(const aclScalar* const* value, uint64_t size) {
  for (uint64_t i = 0; value != nullptr && i < size; ++i) {
    if (value[i] == nullptr) {
      return Refuse<aclScalarList>("aclCreateScalarList", pacl::StrFormat("value[%" PRIu64 "] must not be null", i));
    }
  }
  return MakeArray<aclScalarList>("aclCreateScalarList", value, size, &aclScalarList::scalars,
                                  [value](uint64_t i) { return value[i]; });
}

aclnnStatus aclDestroyScalar(const aclScalar* scalar) {
  delete scalar;
  return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyIntArray(const aclIntArray* array) {
  delete array;
  return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyFloatArray(const aclFloatArray* array) {
  delete array;
  return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyBoolArray(const aclBoolArray* array) {
  delete array;
  return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyTensorList(const aclTensorList* array) {
  delete array;
  return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyScalarList(const aclScalarList* array) {
  delete array;
  return ACLNN_SUCCESS;
}

aclnnStatus aclGetIntArraySize(const aclIntArray* array, uint64_t* size) {
  return GetSize("aclGetIntArraySize", "array", array, size, array ? array->values.size() : 0);
}

aclnnStatus aclGetFloatArraySize(const aclFloatArray* array, uint64_t* size) {
  return GetSize("aclGetFloatArraySize", "array", array, size, array ? array->values.size() : 0);
}

aclnnStatus aclGetBoolArraySize(const aclBoolArray* array, uint64_t* size) {
  return GetSize("aclGetBoolArraySize", "array", array, size, array ? array->values.size() : 0);
}

aclnnStatus aclGetTensorListSize(const aclTensorList* tensorList, uint64_t* size) {
  return GetSize("aclGetTensorListSize", "tensorList", tensorList, size, tensorList ? tensorList->tensors.size() : 0);
}

aclnnStatus aclGetScalarListSize(const aclScalarList* scalarList, uint64_t* size) {
  return GetSize("aclGetScalarListSize", "scalarList", scalarList, size, scalarList ? scalarList->scalars.size() : 0);
}

}  // extern "C"
