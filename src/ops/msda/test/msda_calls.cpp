#include "msda/test/msda_calls.h"

#include "aclnnop/aclnn_multi_scale_deformable_attn_function.h"
#include "aclnnop/aclnn_multi_scale_deformable_attention_grad.h"

namespace opcall {

const OpInfo& MultiScaleDeformableAttnFunction::Info() {
  static const OpInfo info{"MultiScaleDeformableAttnFunction", aclnnMultiScaleDeformableAttnFunction};
  return info;
}

aclnnStatus MultiScaleDeformableAttnFunction::Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const {
  return aclnnMultiScaleDeformableAttnFunctionGetWorkspaceSize(value, spatial_shape, level_start_index, location,
                                                               attn_weight, output, workspace_size, executor);
}

const OpInfo& MultiScaleDeformableAttentionGrad::Info() {
  static const OpInfo info{"MultiScaleDeformableAttentionGrad", aclnnMultiScaleDeformableAttentionGrad};
  return info;
}

aclnnStatus MultiScaleDeformableAttentionGrad::Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const {
  return aclnnMultiScaleDeformableAttentionGradGetWorkspaceSize(value, spatial_shape, level_start_index, location,
                                                                attn_weight, grad_output, grad_value, grad_location,
                                                                grad_attn_weight, workspace_size, executor);
}

namespace {

const Registration kRegistration({&MultiScaleDeformableAttnFunction::Info(), &MultiScaleDeformableAttentionGrad::Info()});

}  // namespace
}  // namespace opcall
