// scaled_masked_softmax's entries in the operator-call table (tests/support/op_calls.h): one struct per aclnn function, its
// phase-1 arguments in the API's order under the API's names (snake case).
#ifndef PACL_OPS_SCALED_MASKED_SOFTMAX_TEST_SCALED_MASKED_SOFTMAX_CALLS_H_
#define PACL_OPS_SCALED_MASKED_SOFTMAX_TEST_SCALED_MASKED_SOFTMAX_CALLS_H_

#include <cstdint>

#include "op_calls.h"

namespace opcall {

struct ScaledMaskedSoftmax {
  const aclTensor* x = nullptr;
  const aclTensor* mask = nullptr;
  double scale = 1.0;
  bool fixed_triu_mask = false;
  aclTensor* y = nullptr;

  static const OpInfo& Info();
  aclnnStatus Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const;
};

struct ScaledMaskedSoftmaxBackward {
  const aclTensor* grad_output = nullptr;
  const aclTensor* y = nullptr;
  const aclTensor* mask = nullptr;
  double scale = 1.0;
  bool fix_triu_mask = false;
  aclTensor* out = nullptr;

  static const OpInfo& Info();
  aclnnStatus Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const;
};

}  // namespace opcall

#endif  // PACL_OPS_SCALED_MASKED_SOFTMAX_TEST_SCALED_MASKED_SOFTMAX_CALLS_H_
