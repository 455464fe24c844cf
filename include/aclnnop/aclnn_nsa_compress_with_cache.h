/* portable-aclnn: aclnnNsaCompressWithCache - Native Sparse Attention's key/value compression while decoding: each
 * batch entry whose sequence has just completed a compression window gets that window compressed (the weighted sum of
 * its compressBlockSize tokens, per head and channel) into row slotMapping[b] of outputCache. input (blockNum,
 * pageBlockSize, N, D) paged through blockTableOptional INT32 (B, pages per entry), or (T, N, D) "TND" (the entries'
 * tokens back to back); weight (compressBlockSize, N); slotMapping INT32 (B); actSeqLenOptional: each entry's length;
 * outputCache (resultLen, N, D), updated in place. FLOAT16 / BFLOAT16. docs/ops/nsa_compress_with_cache.md. */
#ifndef PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_COMPRESS_WITH_CACHE_H_
#define PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_COMPRESS_WITH_CACHE_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnNsaCompressWithCacheGetWorkspaceSize(
    const aclTensor *input, const aclTensor *weight, const aclTensor *slotMapping, const aclIntArray *actSeqLenOptional,
    const aclTensor *blockTableOptional, char *layoutOptional, int64_t compressBlockSize, int64_t compressStride,
    int64_t actSeqLenType, int64_t pageBlockSize, aclTensor *outputCache, uint64_t *workspaceSize,
    aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnNsaCompressWithCache(void *workspace, uint64_t workspaceSize,
                                                          aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_COMPRESS_WITH_CACHE_H_ */
