/* portable-aclnn: aclnnNsaCompress — Native Sparse Attention key/value compression (forward).
 * input (T, N, D) in layout "TND"; weight (compressBlockSize, N); actSeqLenOptional: cumulative sequence ends
 * (a leading 0 allowed); output (total blocks, N, D): out[i, n, :] = sum_j weight[j, n] * input[s + k*stride + j, n, :]
 * for the k-th block of the sequence starting at s. FLOAT16 / BFLOAT16. */
#ifndef PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_COMPRESS_H_
#define PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_COMPRESS_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnNsaCompressGetWorkspaceSize(const aclTensor *input, const aclTensor *weight,
                                                                 const aclIntArray *actSeqLenOptional,
                                                                 char *layoutOptional, int64_t compressBlockSize,
                                                                 int64_t compressStride, int64_t actSeqLenType,
                                                                 aclTensor *output, uint64_t *workspaceSize,
                                                                 aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnNsaCompress(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                 aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_COMPRESS_H_ */
