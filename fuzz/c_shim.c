/* See c_shim.h. */
#include "c_shim.h"

aclTensor *FuzzCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, int dataType, const int64_t *stride,
                            int64_t offset, int format, const int64_t *storageDims, uint64_t storageDimsNum,
                            void *tensorData) {
  return aclCreateTensor(viewDims, viewDimsNum, (aclDataType)dataType, stride, offset, (aclFormat)format, storageDims,
                         storageDimsNum, tensorData);
}

aclScalar *FuzzCreateScalar(void *value, int dataType) { return aclCreateScalar(value, (aclDataType)dataType); }

aclnnStatus FuzzGetFormat(const aclTensor *tensor, int *format) {
  aclFormat value = ACL_FORMAT_UNDEFINED;
  const aclnnStatus status = aclGetFormat(tensor, format == 0 ? 0 : &value);
  if (format != 0) *format = (int)value;
  return status;
}

aclnnStatus FuzzGetDataType(const aclTensor *tensor, int *dataType) {
  aclDataType value = ACL_DT_UNDEFINED;
  const aclnnStatus status = aclGetDataType(tensor, dataType == 0 ? 0 : &value);
  if (dataType != 0) *dataType = (int)value;
  return status;
}
