// msda's entries in the operator-call table (tests/support/op_calls.h): one struct per aclnn function, its
// phase-1 arguments in the API's order under the API's names (snake case).
#ifndef PACL_OPS_MSDA_TEST_MSDA_CALLS_H_
#define PACL_OPS_MSDA_TEST_MSDA_CALLS_H_

#include <cstdint>

#include "op_calls.h"

namespace opcall {

struct MultiScaleDeformableAttnFunction {
  const aclTensor* value = nullptr;
  const aclTensor* spatial_shape = nullptr;
  const aclTensor* level_start_index = nullptr;
  const aclTensor* location = nullptr;
  const aclTensor* attn_weight = nullptr;
  aclTensor* output = nullptr;

  static const OpInfo& Info();
  aclnnStatus Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const;
};

struct MultiScaleDeformableAttentionGrad {
  const aclTensor* value = nullptr;
  const aclTensor* spatial_shape = nullptr;
  const aclTensor* level_start_index = nullptr;
  const aclTensor* location = nullptr;
  const aclTensor* attn_weight = nullptr;
  const aclTensor* grad_output = nullptr;
  aclTensor* grad_value = nullptr;
  aclTensor* grad_location = nullptr;
  aclTensor* grad_attn_weight = nullptr;

  static const OpInfo& Info();
  aclnnStatus Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const;
};

}  // namespace opcall

#endif  // PACL_OPS_MSDA_TEST_MSDA_CALLS_H_
