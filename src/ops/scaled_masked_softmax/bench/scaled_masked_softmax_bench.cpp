// Benchmark cases of aclnnScaledMaskedSoftmax and aclnnScaledMaskedSoftmaxBackward.
#include <string>
#include <vector>

#include "scaled_masked_softmax/test/scaled_masked_softmax_calls.h"
#include "bench_common.h"

namespace bench {
namespace {

enum class Direction { kForward, kBackward };

struct SoftmaxShape {
  std::vector<int64_t> scores;  // (B, N, S1, S2): x, y, gradOutput and out
  std::vector<int64_t> mask;    // (B or 1, N or 1, S1, S2)
};

// Attention-sized shapes: a large training batch (gradOutput 4 x 16 x 1024 x 1024, one mask per batch) and a
// small one whose tensors fit in the caches.
const SoftmaxShape kShapes[] = {
    {{4, 16, 1024, 1024}, {4, 1, 1024, 1024}},
    {{2, 8, 128, 128}, {2, 1, 128, 128}},
};
const aclDataType kDTypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
const double kScale = 0.125;  // 1 / sqrt(head size 64)

std::string Prepare(Direction direction, const SoftmaxShape& shape, aclDataType dtype, PreparedCall* call) {
  const size_t element_size = aclDataTypeSize(dtype);
  const double scores_bytes = static_cast<double>(ElementCount(shape.scores)) * static_cast<double>(element_size);
  const double mask_bytes = static_cast<double>(ElementCount(shape.mask));
  DeviceTensor mask;
  std::string error = CreateCausalMask(shape.mask, &mask);
  call->tensors.push_back(mask);
  if (!error.empty()) return error;
  aclnnStatus status;
  if (direction == Direction::kForward) {
    DeviceTensor x, y;
    error = CreateRandomTensor(shape.scores, dtype, -8.0, 8.0, 1, &x);
    call->tensors.push_back(x);
    if (!error.empty()) return error;
    error = CreateRandomTensor(shape.scores, dtype, 0.0, 0.0, 2, &y);
    call->tensors.push_back(y);
    if (!error.empty()) return error;
    status = PlanCall(opcall::ScaledMaskedSoftmax{x.tensor, mask.tensor, kScale, false, y.tensor}, call);
    call->bytes = 2 * scores_bytes + mask_bytes;
  } else {
    // y holds probabilities of about the size a softmax over S2 keys gives.
    const double key_count = static_cast<double>(shape.scores.back());
    DeviceTensor grad_output, y, out;
    error = CreateRandomTensor(shape.scores, dtype, -1.0, 1.0, 3, &grad_output);
    call->tensors.push_back(grad_output);
    if (!error.empty()) return error;
    error = CreateRandomTensor(shape.scores, dtype, 0.0, 2.0 / key_count, 4, &y);
    call->tensors.push_back(y);
    if (!error.empty()) return error;
    error = CreateRandomTensor(shape.scores, dtype, 0.0, 0.0, 5, &out);
    call->tensors.push_back(out);
    if (!error.empty()) return error;
    status = PlanCall(
        opcall::ScaledMaskedSoftmaxBackward{grad_output.tensor, y.tensor, mask.tensor, kScale, false, out.tensor},
        call);
    call->bytes = 3 * scores_bytes + mask_bytes;
  }
  if (status != ACLNN_SUCCESS) {
    return "phase 1 failed with " + std::to_string(status) + ": " + RecentErrorMessage();
  }
  return "";
}

void RegisterCases() {
  for (Direction direction : {Direction::kBackward, Direction::kForward}) {
    const char* op = direction == Direction::kBackward ? "ScaledMaskedSoftmaxBackward" : "ScaledMaskedSoftmax";
    for (const SoftmaxShape& shape : kShapes) {
      for (aclDataType dtype : kDTypes) {
        const CaseInfo info = {std::string(op) + "/" + DTypeName(dtype) + "/" + ShapeLabel(shape.scores),
                               "ScaledMaskedSoftmax",
                               std::string("aclnn") + op,
                               direction == Direction::kBackward,
                               dtype,
                               "scores " + ShapeLabel(shape.scores) + ", causal mask " + ShapeLabel(shape.mask)};
        RegisterOperatorBenchmark(
            info, [direction, shape, dtype](PreparedCall* call) { return Prepare(direction, shape, dtype, call); });
      }
    }
  }
}

const CaseTableRegistration kRegistration("ScaledMaskedSoftmax", RegisterCases);

}  // namespace
}  // namespace bench
