/* portable-aclnn: aclnnNsaSelectedAttention - Native Sparse Attention's selected attention (training forward).
 * query (T1, N1, D_qk), key (T2, N2, D_qk), value (T2, N2, D_v), layout "TND"; topkIndices INT32 (T1, N2,
 * selectedBlockCount): the key/value blocks of selectedBlockSize tokens each query row attends to, per KV head;
 * actualSeqQLenOptional / actualSeqKvLenOptional: cumulative sequence ends. Outputs attentionOut (T1, N1, D_v) in the
 * inputs' dtype (FLOAT16 / BFLOAT16) and the softmax statistics softmaxMaxOut / softmaxSumOut FLOAT (T1, N1, 8). */
#ifndef PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_SELECTED_ATTENTION_H_
#define PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_SELECTED_ATTENTION_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnNsaSelectedAttentionGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *topkIndices,
    const aclTensor *attenMaskOptional, const aclIntArray *actualSeqQLenOptional,
    const aclIntArray *actualSeqKvLenOptional, double scaleValue, int64_t headNum, char *inputLayout,
    int64_t sparseMode, int64_t selectedBlockSize, int64_t selectedBlockCount, const aclTensor *softmaxMaxOut,
    const aclTensor *softmaxSumOut, const aclTensor *attentionOut, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnNsaSelectedAttention(void *workspace, uint64_t workspaceSize,
                                                          aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_SELECTED_ATTENTION_H_ */
