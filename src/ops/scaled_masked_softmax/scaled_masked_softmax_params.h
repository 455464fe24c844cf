// Plain-data parameters of aclnnScaledMaskedSoftmax (forward) and aclnnScaledMaskedSoftmaxBackward, filled by
// phase 1 (scaled_masked_softmax_api.cpp) and consumed by the kernels (cpu/, cuda/).
#ifndef PACL_OPS_SCALED_MASKED_SOFTMAX_PARAMS_H_
#define PACL_OPS_SCALED_MASKED_SOFTMAX_PARAMS_H_

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "aclnn/acl_meta.h"
#include "pacl/tensor.h"

namespace pacl {
struct KernelContext;
}  // namespace pacl

namespace pacl::scaled_masked_softmax {

// S2 (the softmax dim) is limited to this many elements: kernels keep whole rows in fixed-size stack buffers.
inline constexpr int64_t kMaxRowLength = 4096;
// The value a masked logit takes in the forward before the softmax (CANN's choice).
inline constexpr float kMaskedLogit = -10000.0f;

// The logical problem: tensors of shape (batch, heads, query_len, key_len) = (B, N, S1, S2); the softmax runs over
// key_len.
struct SoftmaxShape {
  int64_t batch = 0;      // B
  int64_t heads = 0;      // N
  int64_t query_len = 0;  // S1
  int64_t key_len = 0;    // S2
};

// One operand as the kernels read or write it: a copy of the caller's view (dtype, data, offset) and its element
// strides for (b, n, s1, s2). For the mask these are broadcast strides: 0 along a dim of size 1 that broadcasts.
struct SoftmaxOperand {
  TensorDesc desc;
  int64_t strides[4] = {};
};

// y = softmax over the last dim of (x * scale, masked positions replaced by kMaskedLogit).
struct ForwardParams {
  SoftmaxShape shape;
  float scale = 1.0f;
  SoftmaxOperand x;     // FLOAT, FLOAT16 or BF16
  SoftmaxOperand mask;  // BOOL: any nonzero byte means masked
  SoftmaxOperand y;     // same dtype as x
};

// out = scale * (dy*y - sum_lastdim(dy*y) * y) where the mask is false, exactly 0 where it is true.
struct BackwardParams {
  SoftmaxShape shape;
  float scale = 1.0f;
  SoftmaxOperand grad_output;  // dy: FLOAT, FLOAT16 or BF16
  SoftmaxOperand y;            // the forward's output, same dtype as dy
  SoftmaxOperand mask;         // BOOL: any nonzero byte means masked
  SoftmaxOperand out;          // same dtype as dy
};

inline constexpr const char* kForwardName = "aclnnScaledMaskedSoftmax";
inline constexpr const char* kBackwardName = "aclnnScaledMaskedSoftmaxBackward";


// The CPU kernels (phase 2). They return ACLNN_SUCCESS; they read and write only the elements of the views.
aclnnStatus RunForwardCpu(const ForwardParams& params);
aclnnStatus RunBackwardCpu(const BackwardParams& params);

}  // namespace pacl::scaled_masked_softmax

#endif  // PACL_OPS_SCALED_MASKED_SOFTMAX_PARAMS_H_
