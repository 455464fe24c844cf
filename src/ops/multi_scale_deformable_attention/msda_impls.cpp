// The implementations of MultiScaleDeformableAttnFunction and MultiScaleDeformableAttentionGrad, in order of
// preference per device.
#include "multi_scale_deformable_attention/msda_params.h"
#include "pacl/op_glue.h"

namespace pacl::msda {
namespace {

const Implementation<ForwardParams> kForwardImplementations[] = {
    {"cpu", rt::DeviceKind::kCpu, /*deterministic=*/true, /*supports=*/nullptr,
     PlanInto<ForwardParams, PlanForwardWorkspace>, RunWithWorkspace<ForwardParams, RunForwardCpu>},
#if PACL_WITH_CUDA
    {"cuda", rt::DeviceKind::kCuda, /*deterministic=*/true, /*supports=*/nullptr, /*plan=*/nullptr, RunForwardCuda},
#endif
};

const Implementation<BackwardParams> kBackwardImplementations[] = {
    {"cpu", rt::DeviceKind::kCpu, /*deterministic=*/true, /*supports=*/nullptr,
     PlanInto<BackwardParams, PlanBackwardWorkspace>, RunWithWorkspace<BackwardParams, RunBackwardCpu>},
#if PACL_WITH_CUDA
    // Atomic first: taken only when ACL_OPT_DETERMINISTIC is off (BindImplementation skips it otherwise).
    {"cuda-atomic", rt::DeviceKind::kCuda, /*deterministic=*/false, /*supports=*/nullptr, PlanBackwardCudaAtomic,
     RunBackwardCudaAtomic},
    {"cuda", rt::DeviceKind::kCuda, /*deterministic=*/true, /*supports=*/nullptr, PlanBackwardCudaDeterministic,
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
