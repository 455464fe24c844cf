// The implementations of MultiScaleDeformableAttnFunction and MultiScaleDeformableAttentionGrad, in order of
// preference per device.
#include "multi_scale_deformable_attention/msda_params.h"
#include "pacl/op_glue.h"

namespace pacl::msda {
namespace {

const Implementation<ForwardParams> kForwardImplementations[] = {
    {"cpu", rt::DeviceKind::kCpu, /*deterministic=*/true, /*supports=*/nullptr,
     PlanInto<ForwardParams, PlanForwardWorkspace>, RunWithWorkspace<ForwardParams, RunForwardCpu>},
};

const Implementation<BackwardParams> kBackwardImplementations[] = {
    {"cpu", rt::DeviceKind::kCpu, /*deterministic=*/true, /*supports=*/nullptr,
     PlanInto<BackwardParams, PlanBackwardWorkspace>, RunWithWorkspace<BackwardParams, RunBackwardCpu>},
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
