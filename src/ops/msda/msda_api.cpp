// The aclnn entry points of MultiScaleDeformableAttnFunction (forward) and MultiScaleDeformableAttentionGrad: phase 1
// validates the arguments (reading no tensor data: spatialShape and levelStartIndex are device data, only their shapes
// and dtypes are checked here) and binds plain-data parameters to the implementation for the current device (the first
// entry of its implementation list that fits: cpu/, cuda/), which plans the workspace; phase 2 runs the executor on a
// stream.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "aclnnop/aclnn_multi_scale_deformable_attention_grad.h"
#include "aclnnop/aclnn_multi_scale_deformable_attn_function.h"
#include "msda/msda_params.h"
#include "pacl/op_glue.h"
#include "pacl/tensor.h"

namespace pacl::msda {
namespace {


using NamedTensor = std::pair<const TensorDesc*, const char*>;

long long LL(int64_t v) { return static_cast<long long>(v); }

// The float tensors FLOAT, FLOAT16, BFLOAT16 or (an extension beyond CANN) DOUBLE, all of value's dtype; the index
// tensors INT32 or INT64.
bool CheckDTypes(OpChecker& check, const MsdaInputs& in, std::initializer_list<NamedTensor> float_tensors) {
  if (!check.DType(in.value, "value", {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE})) return false;
  for (const auto& [desc, param] : float_tensors) {
    if (!check.DType(*desc, param, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE})) return false;
    if (!check.SameDType(in.value, "value", *desc, param)) return false;
  }
  return check.DType(in.spatial_shape, "spatialShape", {ACL_INT32, ACL_INT64}) &&
         check.DType(in.level_start_index, "levelStartIndex", {ACL_INT32, ACL_INT64});
}

bool CheckFormats(OpChecker& check, std::initializer_list<NamedTensor> tensors) {
  for (const auto& [desc, param] : tensors) {
    if (!check.PlainFormat(*desc, param)) return false;
  }
  return true;
}

// Ranks, the consistency of every shared dim, and the seeds' limits. Fills *shape.
bool CheckInputs(OpChecker& check, const MsdaInputs& in, MsdaShape* shape) {
  if (!check.Rank(in.value, "value", 4) || !check.Rank(in.spatial_shape, "spatialShape", 2) ||
      !check.Rank(in.level_start_index, "levelStartIndex", 1) || !check.Rank(in.location, "location", 6) ||
      !check.Rank(in.attn_weight, "attnWeight", 5)) {
    return false;
  }
  const int64_t* value = in.value.shape;
  const int64_t* location = in.location.shape;
  const int64_t* attn = in.attn_weight.shape;
  const std::string value_shape = in.value.ShapeString();
  const std::string location_shape = in.location.ShapeString();
  const std::string attn_shape = in.attn_weight.ShapeString();
  if (!check.Check(in.spatial_shape.shape[1] == 2, "the last dim of spatialShape must be 2 (H, W), got shape %s",
                   in.spatial_shape.ShapeString().c_str()) ||
      !check.Check(location[5] == 2, "the last dim of location must be 2 (x, y), got shape %s",
                   location_shape.c_str()) ||
      !check.Check(in.level_start_index.shape[0] == in.spatial_shape.shape[0],
                   "levelStartIndex must have one entry per level (dim 0 of spatialShape = %lld), got shape %s",
                   LL(in.spatial_shape.shape[0]), in.level_start_index.ShapeString().c_str()) ||
      !check.Check(location[0] == value[0] && attn[0] == value[0],
                   "dim 0 (bs) of location and attnWeight must equal value's, got value %s, location %s, "
                   "attnWeight %s",
                   value_shape.c_str(), location_shape.c_str(), attn_shape.c_str()) ||
      !check.Check(location[2] == value[2] && attn[2] == value[2],
                   "dim 2 (num_heads) of location and attnWeight must equal value's, got value %s, location %s, "
                   "attnWeight %s",
                   value_shape.c_str(), location_shape.c_str(), attn_shape.c_str()) ||
      !check.Check(location[3] == in.spatial_shape.shape[0] && attn[3] == in.spatial_shape.shape[0],
                   "dim 3 (num_levels) of location and attnWeight must equal dim 0 of spatialShape (%lld), got "
                   "location %s, attnWeight %s",
                   LL(in.spatial_shape.shape[0]), location_shape.c_str(), attn_shape.c_str()) ||
      !check.Check(attn[1] == location[1],
                   "dim 1 (num_queries) of attnWeight must equal location's, got location %s, attnWeight %s",
                   location_shape.c_str(), attn_shape.c_str()) ||
      !check.Check(attn[4] == location[4],
                   "dim 4 (num_points) of attnWeight must equal location's, got location %s, attnWeight %s",
                   location_shape.c_str(), attn_shape.c_str())) {
    return false;
  }
  shape->batch = value[0];
  shape->keys = value[1];
  shape->heads = value[2];
  shape->channels = value[3];
  shape->levels = location[3];
  shape->queries = location[1];
  shape->points = location[4];
  // CANN's rule is a multiple of 8 in [8, 256]; any other count runs on the CPU's generic kernels (an extension).
  return check.Check(shape->channels >= 1, "channels (dim 3 of value) must be at least 1, got %lld (value shape %s)",
                     LL(shape->channels), value_shape.c_str()) &&
         check.Check(shape->queries < kMaxQueriesExclusive,
                     "num_queries (dim 1 of location) must be less than 500000, got %lld", LL(shape->queries)) &&
         check.Check(shape->levels >= 1 && shape->levels <= kMaxLevels,
                     "num_levels (dim 0 of spatialShape) must be in [1, 16], got %lld", LL(shape->levels)) &&
         check.Check(shape->heads >= 1 && shape->heads <= kMaxHeads,
                     "num_heads (dim 2 of value) must be in [1, 16], got %lld", LL(shape->heads)) &&
         check.Check(shape->points >= 1 && shape->points <= kMaxPoints,
                     "num_points (dim 4 of location) must be in [1, 16], got %lld", LL(shape->points));
}

// output / gradOutput: (bs, nq, nh * c) or (bs, nq, nh, c) (CANN's pages list both forms, in different versions).
bool CheckHeadRows(OpChecker& check, const TensorDesc& t, const char* param, const MsdaShape& s, HeadRows* rows) {
  const bool three_d =
      t.rank == 3 && t.shape[0] == s.batch && t.shape[1] == s.queries && t.shape[2] == s.heads * s.channels;
  const bool four_d = t.rank == 4 && t.shape[0] == s.batch && t.shape[1] == s.queries && t.shape[2] == s.heads &&
                      t.shape[3] == s.channels;
  if (!check.Check(three_d || four_d,
                   "%s must have shape [%lld, %lld, %lld] (bs, num_queries, num_heads * channels) or [%lld, %lld, "
                   "%lld, %lld] (bs, num_queries, num_heads, channels), got %s",
                   param, LL(s.batch), LL(s.queries), LL(s.heads * s.channels), LL(s.batch), LL(s.queries),
                   LL(s.heads), LL(s.channels), t.ShapeString().c_str())) {
    return false;
  }
  rows->desc = t;
  rows->batch_stride = t.strides[0];
  rows->query_stride = t.strides[1];
  if (three_d) {
    rows->head_stride = t.strides[2] * s.channels;
    rows->channel_stride = t.strides[2];
  } else {
    rows->head_stride = t.strides[2];
    rows->channel_stride = t.strides[3];
  }
  return true;
}

}  // namespace

}  // namespace pacl::msda

using pacl::OpChecker;
using pacl::TensorDesc;
namespace msda = pacl::msda;

extern "C" aclnnStatus aclnnMultiScaleDeformableAttnFunctionGetWorkspaceSize(
    const aclTensor* value, const aclTensor* spatialShape, const aclTensor* levelStartIndex, const aclTensor* location,
    const aclTensor* attnWeight, aclTensor* output, uint64_t* workspaceSize, aclOpExecutor** executor) {
  OpChecker check(msda::kForwardName);
  if (!check.Tensor(value, "value") || !check.Tensor(spatialShape, "spatialShape") ||
      !check.Tensor(levelStartIndex, "levelStartIndex") || !check.Tensor(location, "location") ||
      !check.Tensor(attnWeight, "attnWeight") || !check.Tensor(output, "output") ||
      !check.OutPointers(workspaceSize, executor)) {
    return check.status();
  }
  const msda::MsdaInputs in{value->desc, spatialShape->desc, levelStartIndex->desc, location->desc, attnWeight->desc};
  msda::ForwardParams params;
  if (!msda::CheckDTypes(check, in,
                         {{&in.location, "location"}, {&in.attn_weight, "attnWeight"}, {&output->desc, "output"}}) ||
      !msda::CheckInputs(check, in, &params.shape) ||
      !msda::CheckHeadRows(check, output->desc, "output", params.shape, &params.output) ||
      !msda::CheckFormats(check, {{&in.value, "value"},
                                  {&in.spatial_shape, "spatialShape"},
                                  {&in.level_start_index, "levelStartIndex"},
                                  {&in.location, "location"},
                                  {&in.attn_weight, "attnWeight"},
                                  {&output->desc, "output"}}) ||
      !check.DistinctOutputElements(output->desc, "output")) {
    return check.status();
  }
  params.in = in;
  return pacl::BindImplementation(msda::kForwardName, params.in.value.dtype, params, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnMultiScaleDeformableAttnFunction(void* workspace, uint64_t workspaceSize,
                                                             aclOpExecutor* executor, aclrtStream stream) {
  return pacl::RunExecutor(msda::kForwardName, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnMultiScaleDeformableAttentionGradGetWorkspaceSize(
    const aclTensor* value, const aclTensor* spatialShape, const aclTensor* levelStartIndex, const aclTensor* location,
    const aclTensor* attnWeight, const aclTensor* gradOutput, aclTensor* gradValue, aclTensor* gradLocation,
    aclTensor* gradAttnWeight, uint64_t* workspaceSize, aclOpExecutor** executor) {
  OpChecker check(msda::kBackwardName);
  if (!check.Tensor(value, "value") || !check.Tensor(spatialShape, "spatialShape") ||
      !check.Tensor(levelStartIndex, "levelStartIndex") || !check.Tensor(location, "location") ||
      !check.Tensor(attnWeight, "attnWeight") || !check.Tensor(gradOutput, "gradOutput") ||
      !check.Tensor(gradValue, "gradValue") || !check.Tensor(gradLocation, "gradLocation") ||
      !check.Tensor(gradAttnWeight, "gradAttnWeight") || !check.OutPointers(workspaceSize, executor)) {
    return check.status();
  }
  const msda::MsdaInputs in{value->desc, spatialShape->desc, levelStartIndex->desc, location->desc, attnWeight->desc};
  const TensorDesc& grad_value = gradValue->desc;
  const TensorDesc& grad_location = gradLocation->desc;
  const TensorDesc& grad_attn = gradAttnWeight->desc;
  msda::BackwardParams params;
  if (!msda::CheckDTypes(check, in,
                         {{&in.location, "location"},
                          {&in.attn_weight, "attnWeight"},
                          {&gradOutput->desc, "gradOutput"},
                          {&grad_value, "gradValue"},
                          {&grad_location, "gradLocation"},
                          {&grad_attn, "gradAttnWeight"}}) ||
      !msda::CheckInputs(check, in, &params.shape) ||
      !msda::CheckHeadRows(check, gradOutput->desc, "gradOutput", params.shape, &params.grad_output) ||
      !check.SameShape(in.value, "value", grad_value, "gradValue") ||
      !check.SameShape(in.location, "location", grad_location, "gradLocation") ||
      !check.SameShape(in.attn_weight, "attnWeight", grad_attn, "gradAttnWeight") ||
      !msda::CheckFormats(check, {{&in.value, "value"},
                                  {&in.spatial_shape, "spatialShape"},
                                  {&in.level_start_index, "levelStartIndex"},
                                  {&in.location, "location"},
                                  {&in.attn_weight, "attnWeight"},
                                  {&gradOutput->desc, "gradOutput"},
                                  {&grad_value, "gradValue"},
                                  {&grad_location, "gradLocation"},
                                  {&grad_attn, "gradAttnWeight"}}) ||
      !check.DistinctOutputElements(grad_value, "gradValue") ||
      !check.DistinctOutputElements(grad_location, "gradLocation") ||
      !check.DistinctOutputElements(grad_attn, "gradAttnWeight")) {
    return check.status();
  }
  params.in = in;
  params.grad_value = grad_value;
  params.grad_location = grad_location;
  params.grad_attn_weight = grad_attn;
  return pacl::BindImplementation(msda::kBackwardName, params.in.value.dtype, params, workspaceSize,
                                  executor);
}

extern "C" aclnnStatus aclnnMultiScaleDeformableAttentionGrad(void* workspace, uint64_t workspaceSize,
                                                              aclOpExecutor* executor, aclrtStream stream) {
  return pacl::RunExecutor(msda::kBackwardName, workspace, workspaceSize, executor, stream);
}
