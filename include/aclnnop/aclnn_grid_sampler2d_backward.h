/* portable-aclnn: aclnnGridSampler2DBackward — gradients of grid_sampler_2d (PyTorch semantics).
 * interpolationMode: 0 bilinear, 1 nearest, 2 bicubic; paddingMode: 0 zeros, 1 border, 2 reflection.
 * outputMask (length 2) chooses inputGrad / gridGrad; NULL computes nothing. */
#ifndef PORTABLE_ACLNN_ACLNNOP_ACLNN_GRID_SAMPLER2D_BACKWARD_H_
#define PORTABLE_ACLNN_ACLNNOP_ACLNN_GRID_SAMPLER2D_BACKWARD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnGridSampler2DBackwardGetWorkspaceSize(
    const aclTensor *gradOutput, const aclTensor *input, const aclTensor *grid, int64_t interpolationMode,
    int64_t paddingMode, bool alignCorners, const aclBoolArray *outputMask, aclTensor *inputGrad,
    aclTensor *gridGrad, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnGridSampler2DBackward(void *workspace, uint64_t workspaceSize,
                                                           aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* PORTABLE_ACLNN_ACLNNOP_ACLNN_GRID_SAMPLER2D_BACKWARD_H_ */
