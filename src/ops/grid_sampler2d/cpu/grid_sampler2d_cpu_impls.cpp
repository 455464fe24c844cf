// The CPU's entries in the implementation lists of GridSampler2D and GridSampler2DBackward, in order of preference
// (pacl/op_glue.h: phase 1 takes the first that fits the call).
#include "grid_sampler2d/grid_sampler2d_params.h"
#include "pacl/op_glue.h"

namespace pacl::grid_sampler2d {
namespace {

uint64_t PlanBackwardCpu(BackwardParams* params) {
  params->channels_per_block = BackwardChannelsPerBlock(params->shape, params->input.desc.dtype);
  return PlanInto<BackwardParams, PlanBackwardWorkspace>(params);
}

const Implementation<ForwardParams> kForward[] = {
    {"cpu", /*deterministic=*/true, /*supports=*/nullptr, PlanInto<ForwardParams, PlanForwardWorkspace>,
     RunWithWorkspace<ForwardParams, RunForwardCpu>},
};

const Implementation<BackwardParams> kBackward[] = {
    {"cpu", /*deterministic=*/true, /*supports=*/nullptr, PlanBackwardCpu,
     RunWithWorkspace<BackwardParams, RunBackwardCpu>},
};

const ImplementationFragment<ForwardParams> kForwardOnCpu("cpu", kForward);
const ImplementationFragment<BackwardParams> kBackwardOnCpu("cpu", kBackward);

}  // namespace
}  // namespace pacl::grid_sampler2d
