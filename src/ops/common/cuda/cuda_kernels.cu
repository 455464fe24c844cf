// The launch glue of the operators' CUDA kernels (pacl/cuda_kernels.cuh).
#include <cuda.h>  // the driver's types; its functions come through the runtime (nothing links libcuda)

#include "pacl/cuda_kernels.cuh"
#include "pacl/dtype.h"
#include "pacl/error.h"

namespace pacl::cuda {
namespace {

template <class Function>
Function DriverFunction(const char* name) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &function, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<Function>(function);
}

}  // namespace

bool SaveCurrentContext(void** context) {
  using GetCurrent = CUresult (*)(CUcontext*);
  static const GetCurrent get_current = DriverFunction<GetCurrent>("cuCtxGetCurrent");
  CUcontext current = nullptr;
  if (get_current == nullptr || get_current(&current) != CUDA_SUCCESS) return false;
  *context = current;
  return true;
}

void RestoreCurrentContext(void* context) {
  using SetCurrent = CUresult (*)(CUcontext);
  static const SetCurrent set_current = DriverFunction<SetCurrent>("cuCtxSetCurrent");
  if (set_current != nullptr) set_current(static_cast<CUcontext>(context));
}

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
