// nsa_compress_attention_infer's entry in the operator-call table (tests/support/op_calls.h): its phase-1 arguments in
// the API's order under the API's names (snake case).
#ifndef PACL_OPS_NSA_COMPRESS_ATTENTION_INFER_TEST_NSA_COMPRESS_ATTENTION_INFER_CALLS_H_
#define PACL_OPS_NSA_COMPRESS_ATTENTION_INFER_TEST_NSA_COMPRESS_ATTENTION_INFER_CALLS_H_

#include <cstdint>

#include "op_calls.h"

namespace opcall {

struct NsaCompressAttentionInfer {
  const aclTensor* query = nullptr;
  const aclTensor* key = nullptr;
  const aclTensor* value = nullptr;
  const aclTensor* attention_mask = nullptr;           // not read
  const aclTensor* block_table = nullptr;              // required (paged attention only)
  const aclIntArray* actual_q_seq_len = nullptr;       // optional
  const aclIntArray* actual_cmp_kv_seq_len = nullptr;  // required
  const aclIntArray* actual_sel_kv_seq_len = nullptr;  // optional: with actual_q_seq_len, the multi-token form
  const aclTensor* topk_mask = nullptr;                // reserved, not read
  int64_t num_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t select_block_size = 0;
  int64_t select_block_count = 0;
  int64_t compress_block_size = 0;
  int64_t compress_block_stride = 0;
  double scale_value = 1.0;
  const char* layout = "TND";  // nullptr: BSND
  int64_t page_block_size = 0;
  int64_t sparse_mode = 0;  // not read
  const aclTensor* output = nullptr;
  const aclTensor* topk_output = nullptr;

  static const OpInfo& Info();
  aclnnStatus Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const;
};

}  // namespace opcall

#endif  // PACL_OPS_NSA_COMPRESS_ATTENTION_INFER_TEST_NSA_COMPRESS_ATTENTION_INFER_CALLS_H_
