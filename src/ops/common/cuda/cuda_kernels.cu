// The launch glue of the operators' CUDA kernels (pacl/cuda_kernels.cuh).
#include "pacl/cuda_kernels.cuh"

#include "pacl/dtype.h"
#include "pacl/error.h"

namespace pacl::cuda {

aclnnStatus Activate(const char* op_name, const KernelContext& context) {
  const cudaError_t status = cudaSetDevice(context.device.id);
  if (status == cudaSuccess) return ACLNN_SUCCESS;
  SetRecentErrorMessage(StrFormat("%s: cudaSetDevice(%d): %s: %s", op_name, static_cast<int>(context.device.id),
                                  cudaGetErrorName(status), cudaGetErrorString(status)));
  return ACLNN_ERR_RUNTIME_ERROR;
}

aclnnStatus LaunchStatus(const char* op_name, const char* what) {
  const cudaError_t status = cudaGetLastError();
  if (status == cudaSuccess) return ACLNN_SUCCESS;
  SetRecentErrorMessage(
      StrFormat("%s: %s: %s: %s", op_name, what, cudaGetErrorName(status), cudaGetErrorString(status)));
  return ACLNN_ERR_RUNTIME_ERROR;
}

aclnnStatus UnsupportedDType(const char* op_name, aclDataType dtype) {
  SetRecentErrorMessage(StrFormat("%s: no CUDA kernel for %s", op_name, DataTypeName(dtype)));
  return ACLNN_ERR_PARAM_INVALID;
}

}  // namespace pacl::cuda
