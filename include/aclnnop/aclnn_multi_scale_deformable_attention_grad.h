/* portable-aclnn: aclnnMultiScaleDeformableAttentionGrad — gradients of multi-scale deformable attention.
 * value (bs, nk, nh, c); spatialShape (nl, 2) rows (H, W); levelStartIndex (nl); location (bs, nq, nh, nl, np, 2)
 * with (x, y) in [0, 1]; attnWeight (bs, nq, nh, nl, np); gradOutput (bs, nq, nh*c) or (bs, nq, nh, c).
 * gradValue, gradLocation and gradAttnWeight have the shapes of value, location and attnWeight. */
#ifndef PORTABLE_ACLNN_ACLNNOP_ACLNN_MULTI_SCALE_DEFORMABLE_ATTENTION_GRAD_H_
#define PORTABLE_ACLNN_ACLNNOP_ACLNN_MULTI_SCALE_DEFORMABLE_ATTENTION_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMultiScaleDeformableAttentionGradGetWorkspaceSize(
    const aclTensor *value, const aclTensor *spatialShape, const aclTensor *levelStartIndex, const aclTensor *location,
    const aclTensor *attnWeight, const aclTensor *gradOutput, aclTensor *gradValue, aclTensor *gradLocation,
    aclTensor *gradAttnWeight, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMultiScaleDeformableAttentionGrad(void *workspace, uint64_t workspaceSize,
                                                                       aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* PORTABLE_ACLNN_ACLNNOP_ACLNN_MULTI_SCALE_DEFORMABLE_ATTENTION_GRAD_H_ */
