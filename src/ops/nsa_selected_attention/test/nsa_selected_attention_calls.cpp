#include "nsa_selected_attention/test/nsa_selected_attention_calls.h"

#include "aclnnop/aclnn_nsa_selected_attention.h"
#include "aclnnop/aclnn_nsa_selected_attention_grad.h"

namespace opcall {

const OpInfo& NsaSelectedAttention::Info() {
  static const OpInfo info{"NsaSelectedAttention", aclnnNsaSelectedAttention};
  return info;
}

aclnnStatus NsaSelectedAttention::Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const {
  return aclnnNsaSelectedAttentionGetWorkspaceSize(
      query, key, value, topk_indices, atten_mask, actual_seq_q_len, actual_seq_kv_len, scale_value, head_num,
      MutableString(input_layout), sparse_mode, selected_block_size, selected_block_count, softmax_max, softmax_sum,
      attention_out, workspace_size, executor);
}

const OpInfo& NsaSelectedAttentionGrad::Info() {
  static const OpInfo info{"NsaSelectedAttentionGrad", aclnnNsaSelectedAttentionGrad};
  return info;
}

aclnnStatus NsaSelectedAttentionGrad::Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const {
  return aclnnNsaSelectedAttentionGradGetWorkspaceSize(
      query, key, value, attention_out, attention_out_grad, softmax_max, softmax_sum, topk_indices, actual_seq_q_len,
      actual_seq_kv_len, atten_mask, scale_value, selected_block_size, selected_block_count, head_num,
      MutableString(input_layout), sparse_mode, dq, dk, dv, workspace_size, executor);
}

namespace {

const Registration kRegistration({&NsaSelectedAttention::Info(), &NsaSelectedAttentionGrad::Info()});

}  // namespace
}  // namespace opcall
