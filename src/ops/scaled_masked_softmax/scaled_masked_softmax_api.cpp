// The aclnn entry points of ScaledMaskedSoftmax (forward) and ScaledMaskedSoftmaxBackward:
// phase 1 validates the arguments (reading no tensor data) and captures plain-data parameters in an executor;
// phase 2 runs that executor on a stream.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "aclnnop/aclnn_scaled_masked_softmax.h"
#include "aclnnop/aclnn_scaled_masked_softmax_backward.h"
#include "pacl/broadcast.h"
#include "pacl/error.h"
#include "pacl/op_glue.h"
#include "pacl/tensor.h"
#include "scaled_masked_softmax/scaled_masked_softmax_params.h"

namespace pacl::scaled_masked_softmax {
namespace {


// The rules on the (B, N, S1, S2) value tensor and the mask shared by both operators. values is gradOutput or x.
bool CheckValuesAndMask(OpChecker& check, const TensorDesc& values, const char* values_param, const TensorDesc& mask) {
  if (!check.DType(values, values_param, {ACL_FLOAT16, ACL_FLOAT, ACL_BF16})) return false;
  if (!check.DType(mask, "mask", {ACL_BOOL})) return false;
  const int64_t row_length = values.shape[3];
  if (!check.Check(row_length >= 1 && row_length <= kMaxRowLength,
                   "the last dim (S2) of %s must be in [1, %lld], got %lld (shape %s)", values_param,
                   static_cast<long long>(kMaxRowLength), static_cast<long long>(row_length),
                   values.ShapeString().c_str())) {
    return false;
  }
  if (!check.Check(mask.shape[2] == values.shape[2] && mask.shape[3] == values.shape[3],
                   "the last two dims of mask must equal those of %s, got mask shape %s and %s shape %s", values_param,
                   mask.ShapeString().c_str(), values_param, values.ShapeString().c_str())) {
    return false;
  }
  for (int d = 0; d < 2; ++d) {
    if (!check.Check(mask.shape[d] == 1 || mask.shape[d] == values.shape[d],
                     "mask must broadcast to %s: dim %d of mask is %lld, expected 1 or %lld (mask shape %s, %s "
                     "shape %s)",
                     values_param, d, static_cast<long long>(mask.shape[d]), static_cast<long long>(values.shape[d]),
                     mask.ShapeString().c_str(), values_param, values.ShapeString().c_str())) {
      return false;
    }
  }
  return true;
}

// The kernels compute in FLOAT: scale must have a FLOAT value (converting a finite double beyond FLOAT's range is
// undefined behaviour in C++, and NaN or an infinity would make every unmasked result NaN).
bool CheckScale(OpChecker& check, double scale) {
  const double limit = static_cast<double>(std::numeric_limits<float>::max());
  return check.Check(std::isfinite(scale) && std::fabs(scale) <= limit,
                     "scale must be finite and at most %g in magnitude (a FLOAT value), got %g", limit, scale);
}

bool CheckFormats(OpChecker& check, std::initializer_list<std::pair<const TensorDesc*, const char*>> tensors) {
  for (const auto& [desc, param] : tensors) {
    if (!check.PlainFormat(*desc, param)) return false;
  }
  return true;
}

SoftmaxShape ShapeOf(const TensorDesc& values) {
  SoftmaxShape shape;
  shape.batch = values.shape[0];
  shape.heads = values.shape[1];
  shape.query_len = values.shape[2];
  shape.key_len = values.shape[3];
  return shape;
}

SoftmaxOperand Operand(const TensorDesc& desc) {
  SoftmaxOperand operand;
  operand.desc = desc;
  for (int d = 0; d < 4; ++d) operand.strides[d] = desc.strides[d];
  return operand;
}

// The mask read as a (B, N, S1, S2) tensor: stride 0 along the dims it broadcasts.
bool MaskOperand(OpChecker& check, const TensorDesc& mask, const TensorDesc& values, SoftmaxOperand* operand) {
  operand->desc = mask;
  return check.Check(BroadcastStrides(mask, values.shape, 4, operand->strides),
                     "mask shape %s does not broadcast to %s", mask.ShapeString().c_str(),
                     values.ShapeString().c_str());
}

}  // namespace
}  // namespace pacl::scaled_masked_softmax

using pacl::OpChecker;
using pacl::TensorDesc;
namespace sms = pacl::scaled_masked_softmax;

extern "C" aclnnStatus aclnnScaledMaskedSoftmaxGetWorkspaceSize(const aclTensor* x, const aclTensor* mask, double scale,
                                                                bool fixedTriuMask, aclTensor* y,
                                                                uint64_t* workspaceSize, aclOpExecutor** executor) {
  OpChecker check(sms::kForwardName);
  if (!check.Tensor(x, "x") || !check.Tensor(mask, "mask") || !check.Tensor(y, "y") ||
      !check.OutPointers(workspaceSize, executor)) {
    return check.status();
  }
  const TensorDesc& x_desc = x->desc;
  const TensorDesc& mask_desc = mask->desc;
  const TensorDesc& y_desc = y->desc;
  if (!check.Rank(x_desc, "x", 4) || !check.Rank(mask_desc, "mask", 4) || !check.Rank(y_desc, "y", 4) ||
      !sms::CheckValuesAndMask(check, x_desc, "x", mask_desc) || !check.SameDType(x_desc, "x", y_desc, "y") ||
      !check.SameShape(x_desc, "x", y_desc, "y") ||
      !sms::CheckFormats(check, {{&x_desc, "x"}, {&mask_desc, "mask"}, {&y_desc, "y"}}) ||
      !check.Check(!fixedTriuMask, "fixedTriuMask must be false (only an explicit mask is supported), got true") ||
      !sms::CheckScale(check, scale) || !check.DistinctOutputElements(y_desc, "y")) {
    return check.status();
  }

  sms::ForwardParams params;
  params.shape = sms::ShapeOf(x_desc);
  params.scale = static_cast<float>(scale);
  params.x = sms::Operand(x_desc);
  params.y = sms::Operand(y_desc);
  if (!sms::MaskOperand(check, mask_desc, x_desc, &params.mask)) return check.status();
  return pacl::BindImplementation(sms::kForwardName, params.x.desc.dtype, params, workspaceSize,
                                  executor);
}

extern "C" aclnnStatus aclnnScaledMaskedSoftmax(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                aclrtStream stream) {
  return pacl::RunExecutor(sms::kForwardName, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* y,
                                                                        const aclTensor* mask, double scale,
                                                                        bool fixTriuMask, aclTensor* out,
                                                                        uint64_t* workspaceSize,
                                                                        aclOpExecutor** executor) {
  OpChecker check(sms::kBackwardName);
  if (!check.Tensor(gradOutput, "gradOutput") || !check.Tensor(y, "y") || !check.Tensor(mask, "mask") ||
      !check.Tensor(out, "out") || !check.OutPointers(workspaceSize, executor)) {
    return check.status();
  }
  const TensorDesc& dy_desc = gradOutput->desc;
  const TensorDesc& y_desc = y->desc;
  const TensorDesc& mask_desc = mask->desc;
  const TensorDesc& out_desc = out->desc;
  if (!check.Rank(dy_desc, "gradOutput", 4) || !check.Rank(y_desc, "y", 4) || !check.Rank(mask_desc, "mask", 4) ||
      !check.Rank(out_desc, "out", 4) || !sms::CheckValuesAndMask(check, dy_desc, "gradOutput", mask_desc) ||
      !check.SameDType(dy_desc, "gradOutput", y_desc, "y") ||
      !check.SameDType(dy_desc, "gradOutput", out_desc, "out") ||
      !check.SameShape(dy_desc, "gradOutput", y_desc, "y") ||
      !check.SameShape(dy_desc, "gradOutput", out_desc, "out") ||
      !sms::CheckFormats(check, {{&dy_desc, "gradOutput"}, {&y_desc, "y"}, {&mask_desc, "mask"}, {&out_desc, "out"}}) ||
      !check.Check(!fixTriuMask, "fixTriuMask must be false (only an explicit mask is supported), got true") ||
      !sms::CheckScale(check, scale) || !check.DistinctOutputElements(out_desc, "out")) {
    return check.status();
  }

  sms::BackwardParams params;
  params.shape = sms::ShapeOf(dy_desc);
  params.scale = static_cast<float>(scale);
  params.grad_output = sms::Operand(dy_desc);
  params.y = sms::Operand(y_desc);
  params.out = sms::Operand(out_desc);
  if (!sms::MaskOperand(check, mask_desc, dy_desc, &params.mask)) return check.status();
  return pacl::BindImplementation(sms::kBackwardName, params.grad_output.desc.dtype, params, workspaceSize,
                                  executor);
}

extern "C" aclnnStatus aclnnScaledMaskedSoftmaxBackward(void* workspace, uint64_t workspaceSize,
                                                        aclOpExecutor* executor, aclrtStream stream) {
  return pacl::RunExecutor(sms::kBackwardName, workspace, workspaceSize, executor, stream);
}
