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
};

const Implementation<BackwardParams> kBackwardImplementations[] = {
    {"cpu", rt::DeviceKind::kCpu, /*deterministic=*/true, /*supports=*/nullptr, PlanBackwardCpu,
     RunWithWorkspace<BackwardParams, RunBackwardCpu>},
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
