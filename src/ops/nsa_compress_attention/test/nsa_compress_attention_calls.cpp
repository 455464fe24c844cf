#include "nsa_compress_attention/test/nsa_compress_attention_calls.h"

#include "aclnnop/aclnn_nsa_compress_attention.h"

namespace opcall {

const OpInfo& NsaCompressAttention::Info() {
  static const OpInfo info{"NsaCompressAttention", aclnnNsaCompressAttention};
  return info;
}

aclnnStatus NsaCompressAttention::Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const {
  return aclnnNsaCompressAttentionGetWorkspaceSize(
      query, key, value, atten_mask, topk_mask, actual_seq_q_len, actual_cmp_seq_kv_len, actual_sel_seq_kv_len,
      scale_value, head_num, MutableString(input_layout), sparse_mode, compress_block_size, compress_stride,
      select_block_size, select_block_count, softmax_max, softmax_sum, attention_out, topk_indices, workspace_size,
      executor);
}

namespace {

const Registration kRegistration({&NsaCompressAttention::Info()});

}  // namespace
}  // namespace opcall
