/* portable-aclnn: aclnnNsaCompressAttention - Native Sparse Attention's compressed attention (training forward) with
 * the importance scores' top-k block selection. query (T1, N1, D_qk), compressed key (T2, N2, D_qk) and value
 * (T2, N2, D_v), layout "TND"; attenMaskOptional BOOL/UINT8 (max S_q, max CmpS_kv) and topkMaskOptional
 * (max S_q, max SelS_kv), true = masked; actualSeqQLenOptional / actualCmpSeqKvLenOptional / actualSelSeqKvLenOptional:
 * cumulative sequence ends. Outputs attentionOut (T1, N1, D_v) in the inputs' dtype (FLOAT16 / BFLOAT16), the softmax
 * statistics softmaxMaxOut / softmaxSumOut FLOAT (T1, N1, 8) and topkIndicesOut INT32 (T1, N2, selectBlockCount): the
 * selected blocks of selectBlockSize tokens, the input of aclnnNsaSelectedAttention. */
#ifndef PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_COMPRESS_ATTENTION_H_
#define PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_COMPRESS_ATTENTION_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnNsaCompressAttentionGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *attenMaskOptional,
    const aclTensor *topkMaskOptional, const aclIntArray *actualSeqQLenOptional,
    const aclIntArray *actualCmpSeqKvLenOptional, const aclIntArray *actualSelSeqKvLenOptional, double scaleValue,
    int64_t headNum, char *inputLayout, int64_t sparseMode, int64_t compressBlockSize, int64_t compressStride,
    int64_t selectBlockSize, int64_t selectBlockCount, const aclTensor *softmaxMaxOut, const aclTensor *softmaxSumOut,
    const aclTensor *attentionOutOut, const aclTensor *topkIndicesOut, uint64_t *workspaceSize,
    aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnNsaCompressAttention(void *workspace, uint64_t workspaceSize,
                                                          aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_COMPRESS_ATTENTION_H_ */
