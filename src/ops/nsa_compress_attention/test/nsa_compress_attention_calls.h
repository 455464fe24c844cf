// nsa_compress_attention's entry in the operator-call table (tests/support/op_calls.h): its phase-1 arguments in the
// API's order under the API's names (snake case).
#ifndef PACL_OPS_NSA_COMPRESS_ATTENTION_TEST_NSA_COMPRESS_ATTENTION_CALLS_H_
#define PACL_OPS_NSA_COMPRESS_ATTENTION_TEST_NSA_COMPRESS_ATTENTION_CALLS_H_

#include <cstdint>

#include "op_calls.h"

namespace opcall {

struct NsaCompressAttention {
  const aclTensor* query = nullptr;
  const aclTensor* key = nullptr;
  const aclTensor* value = nullptr;
  const aclTensor* atten_mask = nullptr;               // optional
  const aclTensor* topk_mask = nullptr;                // optional
  const aclIntArray* actual_seq_q_len = nullptr;       // required with layout TND
  const aclIntArray* actual_cmp_seq_kv_len = nullptr;  // required with layout TND
  const aclIntArray* actual_sel_seq_kv_len = nullptr;  // required with layout TND
  double scale_value = 1.0;
  int64_t head_num = 0;
  const char* input_layout = "TND";
  int64_t sparse_mode = 0;
  int64_t compress_block_size = 0;
  int64_t compress_stride = 0;
  int64_t select_block_size = 0;
  int64_t select_block_count = 0;
  const aclTensor* softmax_max = nullptr;  // outputs, const in the API's signature
  const aclTensor* softmax_sum = nullptr;
  const aclTensor* attention_out = nullptr;
  const aclTensor* topk_indices = nullptr;

  static const OpInfo& Info();
  aclnnStatus Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const;
};

}  // namespace opcall

#endif  // PACL_OPS_NSA_COMPRESS_ATTENTION_TEST_NSA_COMPRESS_ATTENTION_CALLS_H_
