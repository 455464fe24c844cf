// The aclnn entry points of GridSampler2D (forward) and GridSampler2DBackward: phase 1 validates the arguments (reading
// no tensor data) and binds plain-data parameters to the implementation for the current device (the first entry of its
// implementation list that fits: cpu/, cuda/), which plans the workspace; phase 2 runs the executor on a stream.
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "aclnnop/aclnn_grid_sampler2d.h"
#include "aclnnop/aclnn_grid_sampler2d_backward.h"
#include "grid_sampler2d/grid_sampler2d_params.h"
#include "pacl/dtype.h"
#include "pacl/op_glue.h"
#include "pacl/tensor.h"
#include "pacl/tensor_objects.h"

namespace pacl::grid_sampler2d {
namespace {

using NamedTensor = std::pair<const TensorDesc*, const char*>;

// Every tensor FLOAT16, BFLOAT16, FLOAT or DOUBLE, and all of input's dtype.
bool CheckDTypes(OpChecker& check, const TensorDesc& input, std::initializer_list<NamedTensor> others) {
  if (!check.DType(input, "input", {ACL_FLOAT16, ACL_BF16, ACL_FLOAT, ACL_DOUBLE})) return false;
  for (const auto& [desc, param] : others) {
    if (!check.DType(*desc, param, {ACL_FLOAT16, ACL_BF16, ACL_FLOAT, ACL_DOUBLE})) return false;
    if (!check.SameDType(input, "input", *desc, param)) return false;
  }
  return true;
}

bool CheckFormats(OpChecker& check, std::initializer_list<NamedTensor> tensors) {
  for (const auto& [desc, param] : tensors) {
    if (!check.PlainFormat(*desc, param)) return false;
  }
  return true;
}

bool CheckModes(OpChecker& check, int64_t interpolation_mode, int64_t padding_mode) {
  return check.Check(interpolation_mode >= 0 && interpolation_mode <= 2,
                     "interpolationMode must be 0 (bilinear), 1 (nearest) or 2 (bicubic), got %lld",
                     static_cast<long long>(interpolation_mode)) &&
         check.Check(padding_mode >= 0 && padding_mode <= 2,
                     "paddingMode must be 0 (zeros), 1 (border) or 2 (reflection), got %lld",
                     static_cast<long long>(padding_mode));
}

// input's spatial dims must be nonzero and grid's last dim 2 (shared by both operators).
bool CheckInputAndGrid(OpChecker& check, const TensorDesc& input, const TensorDesc& grid) {
  return check.Check(input.shape[2] != 0 && input.shape[3] != 0,
                     "the last two dims of input (Hin, Win) must not be 0, got input shape %s",
                     input.ShapeString().c_str()) &&
         check.Check(grid.shape[3] == 2, "the last dim of grid must be 2 (x, y), got grid shape %s",
                     grid.ShapeString().c_str());
}

SamplerOperand Operand(const TensorDesc& desc) {
  SamplerOperand operand;
  operand.desc = desc;
  for (int d = 0; d < 4; ++d) operand.strides[d] = desc.strides[d];
  return operand;
}

// The problem's sizes: input (N, C, Hin, Win) and grid (N, Hout, Wout, 2), already checked.
SamplerShape ShapeOf(const TensorDesc& input, const TensorDesc& grid) {
  SamplerShape shape;
  shape.batch = input.shape[0];
  shape.channels = input.shape[1];
  shape.in_height = input.shape[2];
  shape.in_width = input.shape[3];
  shape.out_height = grid.shape[1];
  shape.out_width = grid.shape[2];
  return shape;
}

SamplerModes Modes(int64_t interpolation_mode, int64_t padding_mode, bool align_corners) {
  SamplerModes modes;
  modes.interpolation = static_cast<Interpolation>(interpolation_mode);
  modes.padding = static_cast<Padding>(padding_mode);
  modes.align_corners = align_corners;
  return modes;
}

}  // namespace

}  // namespace pacl::grid_sampler2d

using pacl::OpChecker;
using pacl::TensorDesc;
namespace gs = pacl::grid_sampler2d;

extern "C" aclnnStatus aclnnGridSampler2DGetWorkspaceSize(const aclTensor* input, const aclTensor* grid,
                                                          int64_t interpolationMode, int64_t paddingMode,
                                                          bool alignCorners, aclTensor* out, uint64_t* workspaceSize,
                                                          aclOpExecutor** executor) {
  OpChecker check(gs::kForwardName);
  if (!check.Tensor(input, "input") || !check.Tensor(grid, "grid") || !check.Tensor(out, "out") ||
      !check.OutPointers(workspaceSize, executor)) {
    return check.status();
  }
  const TensorDesc& input_desc = input->desc;
  const TensorDesc& grid_desc = grid->desc;
  const TensorDesc& out_desc = out->desc;
  if (!gs::CheckDTypes(check, input_desc, {{&grid_desc, "grid"}, {&out_desc, "out"}}) ||
      !check.Rank(input_desc, "input", 4) || !check.Rank(grid_desc, "grid", 4) || !check.Rank(out_desc, "out", 4) ||
      !gs::CheckModes(check, interpolationMode, paddingMode) ||
      !check.Check(input_desc.shape[0] == grid_desc.shape[0],
                   "dim 0 of input and grid (N) must be equal, got input shape %s and grid shape %s",
                   input_desc.ShapeString().c_str(), grid_desc.ShapeString().c_str()) ||
      !gs::CheckInputAndGrid(check, input_desc, grid_desc) ||
      !check.Check(out_desc.shape[0] == input_desc.shape[0] && out_desc.shape[1] == input_desc.shape[1] &&
                       out_desc.shape[2] == grid_desc.shape[1] && out_desc.shape[3] == grid_desc.shape[2],
                   "out shape must be (N, C, Hout, Wout) = [%lld, %lld, %lld, %lld] from input shape %s and grid "
                   "shape %s, got %s",
                   static_cast<long long>(input_desc.shape[0]), static_cast<long long>(input_desc.shape[1]),
                   static_cast<long long>(grid_desc.shape[1]), static_cast<long long>(grid_desc.shape[2]),
                   input_desc.ShapeString().c_str(), grid_desc.ShapeString().c_str(), out_desc.ShapeString().c_str()) ||
      !gs::CheckFormats(check, {{&input_desc, "input"}, {&grid_desc, "grid"}, {&out_desc, "out"}}) ||
      !check.DistinctOutputElements(out_desc, "out")) {
    return check.status();
  }

  gs::ForwardParams params;
  params.shape = gs::ShapeOf(input_desc, grid_desc);
  params.modes = gs::Modes(interpolationMode, paddingMode, alignCorners);
  params.input = gs::Operand(input_desc);
  params.grid = gs::Operand(grid_desc);
  params.out = gs::Operand(out_desc);
  return pacl::BindImplementation(gs::kForwardName, params.input.desc.dtype, params, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnGridSampler2D(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                          aclrtStream stream) {
  return pacl::RunExecutor(gs::kForwardName, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnGridSampler2DBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* input,
                                                                  const aclTensor* grid, int64_t interpolationMode,
                                                                  int64_t paddingMode, bool alignCorners,
                                                                  const aclBoolArray* outputMask, aclTensor* inputGrad,
                                                                  aclTensor* gridGrad, uint64_t* workspaceSize,
                                                                  aclOpExecutor** executor) {
  OpChecker check(gs::kBackwardName);
  if (!check.Tensor(gradOutput, "gradOutput") || !check.Tensor(input, "input") || !check.Tensor(grid, "grid") ||
      !check.Tensor(inputGrad, "inputGrad") || !check.Tensor(gridGrad, "gridGrad") ||
      !check.OutPointers(workspaceSize, executor)) {
    return check.status();
  }
  const TensorDesc& dy_desc = gradOutput->desc;
  const TensorDesc& input_desc = input->desc;
  const TensorDesc& grid_desc = grid->desc;
  const TensorDesc& input_grad_desc = inputGrad->desc;
  const TensorDesc& grid_grad_desc = gridGrad->desc;
  if (!gs::CheckDTypes(check, input_desc,
                       {{&dy_desc, "gradOutput"},
                        {&grid_desc, "grid"},
                        {&input_grad_desc, "inputGrad"},
                        {&grid_grad_desc, "gridGrad"}}) ||
      !check.Rank(dy_desc, "gradOutput", 4) || !check.Rank(input_desc, "input", 4) ||
      !check.Rank(grid_desc, "grid", 4) || !gs::CheckModes(check, interpolationMode, paddingMode) ||
      !check.Check(input_desc.shape[0] == grid_desc.shape[0] && input_desc.shape[0] == dy_desc.shape[0],
                   "dim 0 (N) of input, grid and gradOutput must be equal, got input shape %s, grid shape %s and "
                   "gradOutput shape %s",
                   input_desc.ShapeString().c_str(), grid_desc.ShapeString().c_str(), dy_desc.ShapeString().c_str()) ||
      !check.Check(input_desc.shape[1] == dy_desc.shape[1],
                   "dim 1 (C) of input and gradOutput must be equal, got input shape %s and gradOutput shape %s",
                   input_desc.ShapeString().c_str(), dy_desc.ShapeString().c_str()) ||
      !check.Check(grid_desc.shape[1] == dy_desc.shape[2],
                   "dim 1 of grid must equal dim 2 of gradOutput (Hout), got grid shape %s and gradOutput shape %s",
                   grid_desc.ShapeString().c_str(), dy_desc.ShapeString().c_str()) ||
      !check.Check(grid_desc.shape[2] == dy_desc.shape[3],
                   "dim 2 of grid must equal dim 3 of gradOutput (Wout), got grid shape %s and gradOutput shape %s",
                   grid_desc.ShapeString().c_str(), dy_desc.ShapeString().c_str()) ||
      !gs::CheckInputAndGrid(check, input_desc, grid_desc) ||
      !check.SameShape(input_desc, "input", input_grad_desc, "inputGrad") ||
      !check.SameShape(grid_desc, "grid", grid_grad_desc, "gridGrad") ||
      !check.Check(outputMask == nullptr || outputMask->values.size() == 2,
                   "outputMask must have 2 elements (inputGrad, gridGrad), got %zu",
                   outputMask == nullptr ? size_t{0} : outputMask->values.size()) ||
      !gs::CheckFormats(check, {{&dy_desc, "gradOutput"},
                                {&input_desc, "input"},
                                {&grid_desc, "grid"},
                                {&input_grad_desc, "inputGrad"},
                                {&grid_grad_desc, "gridGrad"}})) {
    return check.status();
  }
  const bool want_input_grad = outputMask != nullptr && outputMask->values[0];
  const bool want_grid_grad = outputMask != nullptr && outputMask->values[1];
  if ((want_input_grad && !check.DistinctOutputElements(input_grad_desc, "inputGrad")) ||
      (want_grid_grad && !check.DistinctOutputElements(grid_grad_desc, "gridGrad"))) {
    return check.status();
  }

  gs::BackwardParams params;
  params.shape = gs::ShapeOf(input_desc, grid_desc);
  params.modes = gs::Modes(interpolationMode, paddingMode, alignCorners);
  params.want_input_grad = want_input_grad;
  params.want_grid_grad = want_grid_grad;
  params.grad_output = gs::Operand(dy_desc);
  params.input = gs::Operand(input_desc);
  params.grid = gs::Operand(grid_desc);
  params.input_grad = gs::Operand(input_grad_desc);
  params.grid_grad = gs::Operand(grid_grad_desc);
  return pacl::BindImplementation(gs::kBackwardName, params.input.desc.dtype, params, workspaceSize,
                                  executor);
}

extern "C" aclnnStatus aclnnGridSampler2DBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                  aclrtStream stream) {
  return pacl::RunExecutor(gs::kBackwardName, workspace, workspaceSize, executor, stream);
}
