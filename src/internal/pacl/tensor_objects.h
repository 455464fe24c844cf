// Definitions of the small aclnn argument objects (scalars, arrays, lists) so that the operators can read them,
// and the format helpers the checks share. Implemented in libnnopbase (src/base/tensor_objects.cpp, tensor.cpp).
#ifndef PACL_TENSOR_OBJECTS_H_
#define PACL_TENSOR_OBJECTS_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl_base.h"
#include "aclnn/acl_meta.h"
#include "pacl/export.h"
#include "pacl/tensor.h"

// A copy of the value given to aclCreateScalar, in its own dtype's representation (bytes[0, DataTypeSize(dtype))).
struct aclScalar {
  aclDataType dtype = ACL_DT_UNDEFINED;
  alignas(16) unsigned char bytes[16] = {};
};

// Copies of the caller's values.
struct aclIntArray {
  std::vector<int64_t> values;
};
struct aclFloatArray {
  std::vector<float> values;
};
struct aclBoolArray {
  std::vector<bool> values;
};

// As in CANN, lists hold the caller's pointers and do not own the elements: destroying a list leaves its tensors
// and scalars alive; the caller destroys them separately.
struct aclTensorList {
  std::vector<const aclTensor*> tensors;
};
struct aclScalarList {
  std::vector<const aclScalar*> scalars;
};

namespace pacl {

// The scalar's value as double: integers and bool converted, fp16/bf16 widened exactly, complex types give the
// real part.
PACL_INTERNAL_API double ScalarToDouble(const aclScalar& scalar);

// The numeric value of an enum argument, read without loading it as the enum type: a C caller may pass any int,
// and a value outside the enum's range must be refused before anything treats it as an enumerator (loading it as
// the enum would be undefined behaviour in C++, which the sanitizers flag).
template <class Enum>
int EnumValue(const Enum& value) {
  static_assert(sizeof(Enum) == sizeof(int), "the aclnn enums are int-sized");
  int number;
  std::memcpy(&number, &value, sizeof number);
  return number;
}

// Whether value is one of aclDataType's enumerators other than ACL_DT_UNDEFINED (ACL_STRING included).
PACL_INTERNAL_API bool IsKnownDataType(int value);
// Whether value is one of aclFormat's enumerators other than ACL_FORMAT_UNDEFINED.
PACL_INTERNAL_API bool IsKnownFormat(int value);
// "ND", "NCHW", "FRACTAL_NZ", ... ("UNDEFINED" for ACL_FORMAT_UNDEFINED, "UNKNOWN(<n>)" for other values).
PACL_INTERNAL_API std::string FormatName(int value);
inline std::string FormatName(aclFormat format) { return FormatName(EnumValue(format)); }

}  // namespace pacl

#endif  // PACL_TENSOR_OBJECTS_H_
