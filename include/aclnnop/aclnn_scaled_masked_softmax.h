/* portable-aclnn: aclnnScaledMaskedSoftmax.
 * y = softmax over the last dim of (x * scale), masked positions replaced by -10000 before the softmax. */
#ifndef PORTABLE_ACLNN_ACLNNOP_ACLNN_SCALED_MASKED_SOFTMAX_H_
#define PORTABLE_ACLNN_ACLNNOP_ACLNN_SCALED_MASKED_SOFTMAX_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnScaledMaskedSoftmaxGetWorkspaceSize(const aclTensor *x, const aclTensor *mask,
                                                                         double scale, bool fixedTriuMask,
                                                                         aclTensor *y, uint64_t *workspaceSize,
                                                                         aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnScaledMaskedSoftmax(void *workspace, uint64_t workspaceSize,
                                                         aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* PORTABLE_ACLNN_ACLNNOP_ACLNN_SCALED_MASKED_SOFTMAX_H_ */
