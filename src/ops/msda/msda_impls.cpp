// The implementations of MultiScaleDeformableAttnFunction and MultiScaleDeformableAttentionGrad, in order of
// preference per device.
#include "msda/msda_params.h"
#include "pacl/op_glue.h"

namespace pacl::msda {
namespace {

// CANN's range (FLOAT, FLOAT16, BFLOAT16; c a multiple of 8 in [8, 256]): the CPU's vector kernels.
template <class Params>
bool InVectorRange(const Params& params) {
  return VectorKernelsTake(params.shape, params.in.value.dtype);
}

#if PACL_WITH_CUDA
// The CUDA kernels take any c up to 256 (at most 8 channels a lane) in the three CANN dtypes; DOUBLE and wider rows
// have no CUDA kernel (161002).
template <class Params>
bool CudaTakes(const Params& params) {
  return params.in.value.dtype != ACL_DOUBLE && params.shape.channels <= kMaxChannels;
}
#endif

uint64_t PlanGenericBackward(BackwardParams* params) {
  params->workspace = PlanGenericBackwardWorkspace(*params);
  return params->workspace.bytes;
}

const Implementation<ForwardParams> kForwardImplementations[] = {
    {"cpu", rt::DeviceKind::kCpu, /*deterministic=*/true, InVectorRange<ForwardParams>,
     PlanInto<ForwardParams, PlanForwardWorkspace>, RunWithWorkspace<ForwardParams, RunForwardCpu>},
    {"cpu-generic", rt::DeviceKind::kCpu, /*deterministic=*/true, /*supports=*/nullptr, /*plan=*/nullptr,
     RunWithWorkspace<ForwardParams, RunForwardCpuGeneric>},
#if PACL_WITH_CUDA
    {"cuda", rt::DeviceKind::kCuda, /*deterministic=*/true, CudaTakes<ForwardParams>, /*plan=*/nullptr,
     RunForwardCuda},
#endif
};

const Implementation<BackwardParams> kBackwardImplementations[] = {
    {"cpu", rt::DeviceKind::kCpu, /*deterministic=*/true, InVectorRange<BackwardParams>,
     PlanInto<BackwardParams, PlanBackwardWorkspace>, RunWithWorkspace<BackwardParams, RunBackwardCpu>},
    {"cpu-generic", rt::DeviceKind::kCpu, /*deterministic=*/true, /*supports=*/nullptr, PlanGenericBackward,
     RunWithWorkspace<BackwardParams, RunBackwardCpuGeneric>},
#if PACL_WITH_CUDA
    // Atomic first: taken only when ACL_OPT_DETERMINISTIC is off (BindImplementation skips it otherwise).
    {"cuda-atomic", rt::DeviceKind::kCuda, /*deterministic=*/false, CudaTakes<BackwardParams>,
     PlanBackwardCudaAtomic, RunBackwardCudaAtomic},
    {"cuda", rt::DeviceKind::kCuda, /*deterministic=*/true, CudaTakes<BackwardParams>, PlanBackwardCudaDeterministic,
     RunBackwardCudaDeterministic},
#endif
};

}  // namespace

aclnnStatus BindForward(const ForwardParams& params, uint64_t* workspace_size, aclOpExecutor** executor) {
  return BindImplementation(kForwardName, params.in.value.dtype, params, kForwardImplementations, workspace_size,
                            executor);
}

aclnnStatus BindBackward(const BackwardParams& params, uint64_t* workspace_size, aclOpExecutor** executor) {
  return BindImplementation(kBackwardName, params.in.value.dtype, params, kBackwardImplementations, workspace_size,
                            executor);
}

}  // namespace pacl::msda
