// The implementations of GridSampler2D and its backward, in order of preference per device.
#include "grid_sampler2d/grid_sampler2d_params.h"
#include "pacl/op_glue.h"

namespace pacl::grid_sampler2d {
namespace {

uint64_t PlanBackwardCpu(BackwardParams* params) {
  params->channels_per_block = BackwardChannelsPerBlock(params->shape, params->input.desc.dtype);
  return PlanInto<BackwardParams, PlanBackwardWorkspace>(params);
}

const Implementation<ForwardParams> kForwardImplementations[] = {
    {"cpu", rt::DeviceKind::kCpu, /*deterministic=*/true, /*supports=*/nullptr,
     PlanInto<ForwardParams, PlanForwardWorkspace>, RunWithWorkspace<ForwardParams, RunForwardCpu>},
#if PACL_WITH_CUDA
    {"cuda", rt::DeviceKind::kCuda, /*deterministic=*/true, /*supports=*/nullptr, /*plan=*/nullptr, RunForwardCuda},
#endif
};

const Implementation<BackwardParams> kBackwardImplementations[] = {
    {"cpu", rt::DeviceKind::kCpu, /*deterministic=*/true, /*supports=*/nullptr, PlanBackwardCpu,
     RunWithWorkspace<BackwardParams, RunBackwardCpu>},
#if PACL_WITH_CUDA
    // Atomic first: taken only when ACL_OPT_DETERMINISTIC is off (BindImplementation skips it otherwise).
    {"cuda-atomic", rt::DeviceKind::kCuda, /*deterministic=*/false, SupportsBackwardCuda, PlanBackwardCudaAtomic,
     RunBackwardCudaAtomic},
    {"cuda", rt::DeviceKind::kCuda, /*deterministic=*/true, SupportsBackwardCuda, PlanBackwardCudaDeterministic,
     RunBackwardCudaDeterministic},
#endif
};

}  // namespace

aclnnStatus BindForward(const ForwardParams& params, uint64_t* workspace_size, aclOpExecutor** executor) {
  return BindImplementation(kForwardName, params.input.desc.dtype, params, kForwardImplementations, workspace_size,
                            executor);
}

aclnnStatus BindBackward(const BackwardParams& params, uint64_t* workspace_size, aclOpExecutor** executor) {
  return BindImplementation(kBackwardName, params.input.desc.dtype, params, kBackwardImplementations, workspace_size,
                            executor);
}

}  // namespace pacl::grid_sampler2d
