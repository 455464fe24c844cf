/* portable-aclnn: aclnnGridSampler2D — grid_sampler_2d (PyTorch semantics): out[n, c, h, w] samples input[n, c]
 * at grid[n, h, w] = (x, y) in [-1, 1]. interpolationMode: 0 bilinear, 1 nearest, 2 bicubic; paddingMode: 0 zeros,
 * 1 border, 2 reflection. */
#ifndef PORTABLE_ACLNN_ACLNNOP_ACLNN_GRID_SAMPLER2D_H_
#define PORTABLE_ACLNN_ACLNNOP_ACLNN_GRID_SAMPLER2D_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnGridSampler2DGetWorkspaceSize(const aclTensor *input, const aclTensor *grid,
                                                                   int64_t interpolationMode, int64_t paddingMode,
                                                                   bool alignCorners, aclTensor *out,
                                                                   uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnGridSampler2D(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                   aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* PORTABLE_ACLNN_ACLNNOP_ACLNN_GRID_SAMPLER2D_H_ */
