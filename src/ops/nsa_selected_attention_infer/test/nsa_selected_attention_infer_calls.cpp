#include "nsa_selected_attention_infer/test/nsa_selected_attention_infer_calls.h"

#include "aclnnop/aclnn_nsa_select_attention_infer.h"

namespace opcall {

const OpInfo& NsaSelectedAttentionInfer::Info() {
  static const OpInfo info{"NsaSelectedAttentionInfer", aclnnNsaSelectedAttentionInfer};
  return info;
}

aclnnStatus NsaSelectedAttentionInfer::Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const {
  return aclnnNsaSelectedAttentionInferGetWorkspaceSize(
      query, key, value, topk_indices, atten_mask, block_table, actual_q_seq_len, actual_kv_seq_len,
      layout != nullptr ? MutableString(layout) : nullptr, num_heads, num_key_value_heads, select_block_size,
      select_block_count, page_block_size, scale_value, sparse_mode, const_cast<aclTensor*>(output), workspace_size,
      executor);
}

namespace {

const Registration kRegistration({&NsaSelectedAttentionInfer::Info()});

}  // namespace
}  // namespace opcall
