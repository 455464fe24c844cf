// nsa_compress's entries in the operator-call table (tests/support/op_calls.h): one struct per aclnn function, its
// phase-1 arguments in the API's order under the API's names (snake case).
#ifndef PACL_OPS_NSA_COMPRESS_TEST_NSA_COMPRESS_CALLS_H_
#define PACL_OPS_NSA_COMPRESS_TEST_NSA_COMPRESS_CALLS_H_

#include <cstdint>

#include "op_calls.h"

namespace opcall {

struct NsaCompress {
  const aclTensor* input = nullptr;
  const aclTensor* weight = nullptr;
  const aclIntArray* act_seq_len = nullptr;  // optional
  const char* layout = nullptr;              // optional ("TND")
  int64_t compress_block_size = 0;
  int64_t compress_stride = 0;
  int64_t act_seq_len_type = 0;
  aclTensor* output = nullptr;

  static const OpInfo& Info();
  aclnnStatus Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const;
};

struct NsaCompressGrad {
  const aclTensor* output_grad = nullptr;
  const aclTensor* input = nullptr;
  const aclTensor* weight = nullptr;
  const aclIntArray* act_seq_len = nullptr;  // optional
  int64_t compress_block_size = 0;
  int64_t compress_stride = 0;
  int64_t act_seq_len_type = 0;
  const char* layout = nullptr;  // optional
  const aclTensor* input_grad = nullptr;  // outputs, const in the API's signature
  const aclTensor* weight_grad = nullptr;

  static const OpInfo& Info();
  aclnnStatus Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const;
};

}  // namespace opcall

#endif  // PACL_OPS_NSA_COMPRESS_TEST_NSA_COMPRESS_CALLS_H_
