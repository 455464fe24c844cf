/* portable-aclnn: aclnnNsaCompressGrad — gradients of aclnnNsaCompress.
 * outputGrad (total blocks, N, D), input (T, N, D) layout "TND", weight (compressBlockSize, N);
 * inputGradOut like input (tokens covered by no block get 0), weightGradOut like weight. FLOAT16 / BFLOAT16.
 * Note the argument order differs from the forward's (layout after actSeqLenType). */
#ifndef PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_COMPRESS_GRAD_H_
#define PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_COMPRESS_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnNsaCompressGradGetWorkspaceSize(
    const aclTensor *outputGrad, const aclTensor *input, const aclTensor *weight,
    const aclIntArray *actSeqLenOptionalOptional, int64_t compressBlockSize, int64_t compressStride,
    int64_t actSeqLenType, char *layoutOptionalOptional, const aclTensor *inputGradOut, const aclTensor *weightGradOut,
    uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnNsaCompressGrad(void *workspace, uint64_t workspaceSize,
                                                     aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_COMPRESS_GRAD_H_ */
