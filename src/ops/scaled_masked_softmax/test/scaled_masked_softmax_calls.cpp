#include "scaled_masked_softmax/test/scaled_masked_softmax_calls.h"

#include "aclnnop/aclnn_scaled_masked_softmax.h"
#include "aclnnop/aclnn_scaled_masked_softmax_backward.h"

namespace opcall {

const OpInfo& ScaledMaskedSoftmax::Info() {
  static const OpInfo info{"ScaledMaskedSoftmax", aclnnScaledMaskedSoftmax};
  return info;
}

aclnnStatus ScaledMaskedSoftmax::Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const {
  return aclnnScaledMaskedSoftmaxGetWorkspaceSize(x, mask, scale, fixed_triu_mask, y, workspace_size, executor);
}

const OpInfo& ScaledMaskedSoftmaxBackward::Info() {
  static const OpInfo info{"ScaledMaskedSoftmaxBackward", aclnnScaledMaskedSoftmaxBackward};
  return info;
}

aclnnStatus ScaledMaskedSoftmaxBackward::Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const {
  return aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(grad_output, y, mask, scale, fix_triu_mask, out,
                                                          workspace_size, executor);
}

namespace {

const Registration kRegistration({&ScaledMaskedSoftmax::Info(), &ScaledMaskedSoftmaxBackward::Info()});

}  // namespace
}  // namespace opcall
