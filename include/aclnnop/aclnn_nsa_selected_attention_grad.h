/* portable-aclnn: aclnnNsaSelectedAttentionGrad - gradients of aclnnNsaSelectedAttention.
 * query, key, value, topkIndices, the actual-length arrays and the attributes as the forward took them; attentionOut
 * and attentionOutGrad (T1, N1, D_v); softmaxMax / softmaxSum FLOAT (T1, N1, 8) as the forward wrote them.
 * dqOut like query, dkOut like key, dvOut like value (key/value rows no query selected get 0). FLOAT16 / BFLOAT16.
 * The outputs are declared const as in CANN's own header (its document shows them without const). */
#ifndef PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_SELECTED_ATTENTION_GRAD_H_
#define PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_SELECTED_ATTENTION_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnNsaSelectedAttentionGradGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *attentionOut,
    const aclTensor *attentionOutGrad, const aclTensor *softmaxMax, const aclTensor *softmaxSum,
    const aclTensor *topkIndices, const aclIntArray *actualSeqQLenOptional, const aclIntArray *actualSeqKvLenOptional,
    const aclTensor *attenMaskOptional, double scaleValue, int64_t selectedBlockSize, int64_t selectedBlockCount,
    int64_t headNum, char *inputLayout, int64_t sparseMode, const aclTensor *dqOut, const aclTensor *dkOut,
    const aclTensor *dvOut, uint64_t *workspaceSize, aclOpExecutor **executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnNsaSelectedAttentionGrad(void *workspace, uint64_t workspaceSize,
                                                              aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* PORTABLE_ACLNN_ACLNNOP_ACLNN_NSA_SELECTED_ATTENTION_GRAD_H_ */
