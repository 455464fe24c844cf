/* portable-aclnn: aclnnNsaCompressAttentionInfer - Native Sparse Attention's compress attention while decoding: each
 * query token attends to the compressed keys and values of its sequence held in a paged cache (key (blockNum,
 * pageBlockSize, N2 * Dqk), value (blockNum, pageBlockSize, N2 * Dv), blockTableOptional INT32 (B, pages per entry)),
 * and the block-importance scores of each KV head's group give the selectBlockCount best select blocks. query "TND"
 * (T, N1, Dqk) or "BSND" (B, S, N1, Dqk), S <= 4; output as query with Dv; topKOutput INT32 (T, N2, selectBlockCount)
 * or (B, S, N2, selectBlockCount). FLOAT16 / BFLOAT16. docs/ops/nsa_compress_attention_infer.md. */
#ifndef PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_COMPRESS_ATTENTION_INFER_H_
#define PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_COMPRESS_ATTENTION_INFER_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnNsaCompressAttentionInferGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *attentionMaskOptional,
    const aclTensor *blockTableOptional, const aclIntArray *actualQSeqLenOptional,
    const aclIntArray *actualCmpKvSeqLenOptional, const aclIntArray *actualSelKvSeqLenOptional,
    const aclTensor *topKMaskOptional, int64_t numHeads, int64_t numKeyValueHeads, int64_t selectBlockSize,
    int64_t selectBlockCount, int64_t compressBlockSize, int64_t compressBlockStride, double scaleValue,
    char *layoutOptional, int64_t pageBlockSize, int64_t sparseMode, const aclTensor *output,
    const aclTensor *topKOutput, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnNsaCompressAttentionInfer(void *workspace, uint64_t workspaceSize,
                                                               aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_COMPRESS_ATTENTION_INFER_H_ */
