#include "nsa_compress_attention_infer/test/nsa_compress_attention_infer_calls.h"

#include "aclnnop/aclnn_nsa_compress_attention_infer.h"

namespace opcall {

const OpInfo& NsaCompressAttentionInfer::Info() {
  static const OpInfo info{"NsaCompressAttentionInfer", aclnnNsaCompressAttentionInfer};
  return info;
}

aclnnStatus NsaCompressAttentionInfer::Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const {
  return aclnnNsaCompressAttentionInferGetWorkspaceSize(
      query, key, value, attention_mask, block_table, actual_q_seq_len, actual_cmp_kv_seq_len, actual_sel_kv_seq_len,
      topk_mask, num_heads, num_key_value_heads, select_block_size, select_block_count, compress_block_size,
      compress_block_stride, scale_value, layout != nullptr ? MutableString(layout) : nullptr, page_block_size,
      sparse_mode, output, topk_output, workspace_size, executor);
}

namespace {

const Registration kRegistration({&NsaCompressAttentionInfer::Info()});

}  // namespace
}  // namespace opcall
