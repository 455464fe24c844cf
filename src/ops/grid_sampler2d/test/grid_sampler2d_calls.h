// grid_sampler2d's entries in the operator-call table (tests/support/op_calls.h): one struct per aclnn function, its
// phase-1 arguments in the API's order under the API's names (snake case).
#ifndef PACL_OPS_GRID_SAMPLER2D_TEST_GRID_SAMPLER2D_CALLS_H_
#define PACL_OPS_GRID_SAMPLER2D_TEST_GRID_SAMPLER2D_CALLS_H_

#include <cstdint>

#include "op_calls.h"

namespace opcall {

struct GridSampler2D {
  const aclTensor* input = nullptr;
  const aclTensor* grid = nullptr;
  int64_t interpolation_mode = 0;
  int64_t padding_mode = 0;
  bool align_corners = false;
  aclTensor* out = nullptr;

  static const OpInfo& Info();
  aclnnStatus Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const;
};

struct GridSampler2DBackward {
  const aclTensor* grad_output = nullptr;
  const aclTensor* input = nullptr;
  const aclTensor* grid = nullptr;
  int64_t interpolation_mode = 0;
  int64_t padding_mode = 0;
  bool align_corners = false;
  const aclBoolArray* output_mask = nullptr;
  aclTensor* input_grad = nullptr;
  aclTensor* grid_grad = nullptr;

  static const OpInfo& Info();
  aclnnStatus Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const;
};

}  // namespace opcall

#endif  // PACL_OPS_GRID_SAMPLER2D_TEST_GRID_SAMPLER2D_CALLS_H_
