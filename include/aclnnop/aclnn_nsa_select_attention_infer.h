/* portable-aclnn: aclnnNsaSelectedAttentionInfer - Native Sparse Attention's selected attention at inference, over a
 * paged key/value cache. query (B, S, N1, D_qk) BSND, (B, S, N1 * D_qk) BSH or (T, N1, D_qk) TND; key
 * (blockNum, pageBlockSize, N2 * D_qk) or (blockNum, pageBlockSize, N2, D_qk), value likewise with D_v: pages of the
 * cache, blockTableOptional INT32 (B, pages per sequence) naming each sequence's pages in order;
 * actualQSeqLenOptional / actualKvSeqLenOptional: each batch's query and key/value lengths; topkIndices INT32: the
 * blocks of selectBlockSize positions each query token attends to, per KV head. Output in the layout of query, D_v,
 * in its dtype (FLOAT16 / BFLOAT16). docs/ops/nsa_selected_attention_infer.md. */
#ifndef PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_SELECT_ATTENTION_INFER_H_
#define PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_SELECT_ATTENTION_INFER_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnNsaSelectedAttentionInferGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *topkIndices,
    const aclTensor *attenMaskOptional, const aclTensor *blockTableOptional, const aclIntArray *actualQSeqLenOptional,
    const aclIntArray *actualKvSeqLenOptional, char *layoutOptional, int64_t numHeads, int64_t numKeyValueHeads,
    int64_t selectBlockSize, int64_t selectBlockCount, int64_t pageBlockSize, double scaleValue, int64_t sparseMode,
    aclTensor *output, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnNsaSelectedAttentionInfer(void *workspace, uint64_t workspaceSize,
                                                               aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_SELECT_ATTENTION_INFER_H_ */
