// nsa_selected_attention_infer's entry in the operator-call table (tests/support/op_calls.h): its phase-1 arguments in
// the API's order under the API's names (snake case).
#ifndef PACL_OPS_NSA_SELECTED_ATTENTION_INFER_TEST_NSA_SELECTED_ATTENTION_INFER_CALLS_H_
#define PACL_OPS_NSA_SELECTED_ATTENTION_INFER_TEST_NSA_SELECTED_ATTENTION_INFER_CALLS_H_

#include <cstdint>

#include "op_calls.h"

namespace opcall {

struct NsaSelectedAttentionInfer {
  const aclTensor* query = nullptr;
  const aclTensor* key = nullptr;
  const aclTensor* value = nullptr;
  const aclTensor* topk_indices = nullptr;
  const aclTensor* atten_mask = nullptr;  // reserved, not read
  const aclTensor* block_table = nullptr;  // required (paged attention only)
  const aclIntArray* actual_q_seq_len = nullptr;  // optional
  const aclIntArray* actual_kv_seq_len = nullptr;  // required
  const char* layout = "BSND";  // nullptr: BSND
  int64_t num_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t select_block_size = 0;
  int64_t select_block_count = 0;
  int64_t page_block_size = 0;
  double scale_value = 1.0;
  int64_t sparse_mode = 0;  // reserved
  const aclTensor* output = nullptr;

  static const OpInfo& Info();
  aclnnStatus Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const;
};

}  // namespace opcall

#endif  // PACL_OPS_NSA_SELECTED_ATTENTION_INFER_TEST_NSA_SELECTED_ATTENTION_INFER_CALLS_H_
