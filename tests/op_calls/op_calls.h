// The operator-call table: each aclnn operator's call as plain data (its operands and attributes), with one function
// that makes the phase-1 call for any of them and one that runs the whole CANN sequence. The operator tests, the
// conformance and whole-library tests, the large-tensor tests, the parity runners, the benchmark, the demo and the
// fuzzers all call the operators through it, so they exercise the same binding of arguments on every device (the
// idea of XNNPACK's testers and ggml's test-backend-ops). Public API only; no test framework. (The CANN-style sample
// program calls the API directly: it shows users how to write such code.)
#ifndef PACL_TESTS_OP_CALLS_OP_CALLS_H_
#define PACL_TESTS_OP_CALLS_OP_CALLS_H_

#include <cstdint>
#include <variant>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"

namespace opcall {

enum class OpKind {
  kScaledMaskedSoftmax,
  kScaledMaskedSoftmaxBackward,
  kGridSampler2D,
  kGridSampler2DBackward,
  kMultiScaleDeformableAttnFunction,
  kMultiScaleDeformableAttentionGrad,
  kNsaCompress,
  kNsaCompressGrad,
};
inline constexpr OpKind kAllOps[] = {
    OpKind::kScaledMaskedSoftmax,
    OpKind::kScaledMaskedSoftmaxBackward,
    OpKind::kGridSampler2D,
    OpKind::kGridSampler2DBackward,
    OpKind::kMultiScaleDeformableAttnFunction,
    OpKind::kMultiScaleDeformableAttentionGrad,
    OpKind::kNsaCompress,
    OpKind::kNsaCompressGrad,
};
// The operator's aclnn name without the "aclnn" prefix ("GridSampler2DBackward").
const char* OpName(OpKind op);

// One struct per operator: its phase-1 arguments in the API's order, under the API's names (snake case).
struct ScaledMaskedSoftmax {
  const aclTensor* x = nullptr;
  const aclTensor* mask = nullptr;
  double scale = 1.0;
  bool fixed_triu_mask = false;
  aclTensor* y = nullptr;
};
struct ScaledMaskedSoftmaxBackward {
  const aclTensor* grad_output = nullptr;
  const aclTensor* y = nullptr;
  const aclTensor* mask = nullptr;
  double scale = 1.0;
  bool fix_triu_mask = false;
  aclTensor* out = nullptr;
};
struct GridSampler2D {
  const aclTensor* input = nullptr;
  const aclTensor* grid = nullptr;
  int64_t interpolation_mode = 0;
  int64_t padding_mode = 0;
  bool align_corners = false;
  aclTensor* out = nullptr;
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
};
struct MultiScaleDeformableAttnFunction {
  const aclTensor* value = nullptr;
  const aclTensor* spatial_shape = nullptr;
  const aclTensor* level_start_index = nullptr;
  const aclTensor* location = nullptr;
  const aclTensor* attn_weight = nullptr;
  aclTensor* output = nullptr;
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
};
struct NsaCompress {
  const aclTensor* input = nullptr;
  const aclTensor* weight = nullptr;
  const aclIntArray* act_seq_len = nullptr;  // optional
  const char* layout = nullptr;              // optional ("TND")
  int64_t compress_block_size = 0;
  int64_t compress_stride = 0;
  int64_t act_seq_len_type = 0;
  aclTensor* output = nullptr;
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
};

using OpCall = std::variant<ScaledMaskedSoftmax, ScaledMaskedSoftmaxBackward, GridSampler2D, GridSampler2DBackward,
                            MultiScaleDeformableAttnFunction, MultiScaleDeformableAttentionGrad, NsaCompress,
                            NsaCompressGrad>;

OpKind KindOf(const OpCall& call);

// aclnnXxxGetWorkspaceSize with the call's arguments.
aclnnStatus GetWorkspaceSize(const OpCall& call, uint64_t* workspace_size, aclOpExecutor** executor);

// Phase 2 of an operator: aclnnXxx(workspace, workspaceSize, executor, stream).
using Phase2Function = aclnnStatus (*)(void*, uint64_t, aclOpExecutor*, aclrtStream);
Phase2Function Phase2Of(OpKind op);

// Phase 2 with a workspace of workspace_size bytes from aclrtMalloc (none for 0), then aclrtSynchronizeStream, then
// aclrtFree. ACLNN_ERR_INNER when the workspace cannot be allocated.
aclnnStatus RunPhase2(Phase2Function run, uint64_t workspace_size, aclOpExecutor* executor, aclrtStream stream);

// The whole sequence of CANN's samples: phase 1, then RunPhase2. The first failing status.
aclnnStatus Run(const OpCall& call, aclrtStream stream);

}  // namespace opcall

#endif  // PACL_TESTS_OP_CALLS_OP_CALLS_H_
