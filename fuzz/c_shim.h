// C wrappers that let the C++ harnesses pass any int as an aclDataType / aclFormat, as a C caller may: in C an
// enum argument is just an int, while C++ code that loads an enum object holding a value outside its enumerators
// has undefined behaviour (UBSan's -fsanitize=enum reports it). Implemented in c_shim.c, compiled as C.
#ifndef PACL_FUZZ_C_SHIM_H_
#define PACL_FUZZ_C_SHIM_H_

#include <stdint.h>

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

aclTensor *FuzzCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, int dataType, const int64_t *stride,
                            int64_t offset, int format, const int64_t *storageDims, uint64_t storageDimsNum,
                            void *tensorData);
aclScalar *FuzzCreateScalar(void *value, int dataType);
/* aclGetFormat / aclGetDataType, the value returned as an int. */
aclnnStatus FuzzGetFormat(const aclTensor *tensor, int *format);
aclnnStatus FuzzGetDataType(const aclTensor *tensor, int *dataType);

#ifdef __cplusplus
}
#endif

#endif /* PACL_FUZZ_C_SHIM_H_ */
