/* portable-aclnn: aclnnMultiScaleDeformableAttnFunction — multi-scale deformable attention (forward).
 * value (bs, nk, nh, c); spatialShape (nl, 2) rows (H, W); levelStartIndex (nl); location (bs, nq, nh, nl, np, 2)
 * with (x, y) in [0, 1]; attnWeight (bs, nq, nh, nl, np); output (bs, nq, nh*c). */
#ifndef PORTABLE_ACLNN_ACLNNOP_ACLNN_MULTI_SCALE_DEFORMABLE_ATTN_FUNCTION_H_
#define PORTABLE_ACLNN_ACLNNOP_ACLNN_MULTI_SCALE_DEFORMABLE_ATTN_FUNCTION_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMultiScaleDeformableAttnFunctionGetWorkspaceSize(
    const aclTensor *value, const aclTensor *spatialShape, const aclTensor *levelStartIndex, const aclTensor *location,
    const aclTensor *attnWeight, aclTensor *output, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMultiScaleDeformableAttnFunction(void *workspace, uint64_t workspaceSize,
                                                                      aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* PORTABLE_ACLNN_ACLNNOP_ACLNN_MULTI_SCALE_DEFORMABLE_ATTN_FUNCTION_H_ */
