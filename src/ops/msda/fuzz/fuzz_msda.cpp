// libFuzzer harness: aclnnMultiScaleDeformableAttnFunction and aclnnMultiScaleDeformableAttentionGrad (first
// byte: which). Input layout (one byte a field; missing bytes read as 0, the plausible choice):
//   direction, bs, num_heads, channels / 8, num_levels, num_points, num_queries, (H, W) per level, float dtype,
//   spatialShape dtype, levelStartIndex dtype, [backward: gradOutput 3-D or 4-D], then each tensor
//   (fuzz::DecodeTensor), the out-pointer byte and phase 2's mode.
// spatialShape and levelStartIndex get the consistent (H, W) and level starts in the plausible fill, hostile
// bytes in the others: phase 2 must stay inside value whatever they hold.
#include <cstdint>
#include <vector>

#include "aclnnop/aclnn_multi_scale_deformable_attention_grad.h"
#include "aclnnop/aclnn_multi_scale_deformable_attn_function.h"
#include "fuzz_support.h"
#include "msda/test/msda_calls.h"

namespace {

constexpr const char* kForward = "aclnnMultiScaleDeformableAttnFunction";
constexpr const char* kBackward = "aclnnMultiScaleDeformableAttentionGrad";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader r(data, size);
  fuzz::Call call(data, size);
  const bool backward = r.Flag();
  const int64_t batch = 1 + static_cast<int64_t>(r.Below(2));
  const int64_t heads = 1 + static_cast<int64_t>(r.Below(3));
  const int64_t channels = 8 * (1 + static_cast<int64_t>(r.Below(4)));
  const int64_t levels = 1 + static_cast<int64_t>(r.Below(3));
  const int64_t points = 1 + static_cast<int64_t>(r.Below(4));
  const int64_t queries = 1 + static_cast<int64_t>(r.Below(8));
  std::vector<int64_t> spatial_values;
  std::vector<int64_t> start_values;
  int64_t keys = 0;
  for (int64_t l = 0; l < levels; ++l) {
    const int64_t height = 1 + static_cast<int64_t>(r.Below(6));
    const int64_t width = 1 + static_cast<int64_t>(r.Below(6));
    spatial_values.push_back(height);
    spatial_values.push_back(width);
    start_values.push_back(keys);
    keys += height * width;
  }
  constexpr aclDataType kDTypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
  const aclDataType dtype = kDTypes[r.Below(3)];
  const aclDataType spatial_dtype = r.Flag() ? ACL_INT32 : ACL_INT64;
  const aclDataType start_dtype = r.Flag() ? ACL_INT32 : ACL_INT64;
  const bool grad_output_4d = backward && r.Flag();

  const std::vector<int64_t> value_shape = {batch, keys, heads, channels};
  const std::vector<int64_t> location_shape = {batch, queries, heads, levels, points, 2};
  const std::vector<int64_t> attn_shape = {batch, queries, heads, levels, points};
  const std::vector<int64_t> rows_shape = {batch, queries, heads * channels};
  const fuzz::ValueRange unit{true, 0};  // [0, 1): locations and attention weights
  const int value = call.Add(fuzz::DecodeTensor(r, "value", false, value_shape, dtype));
  fuzz::TensorSpec spatial = fuzz::DecodeTensor(r, "spatialShape", false, {levels, 2}, spatial_dtype);
  spatial.int_values = spatial_values;
  const int spatial_shape = call.Add(spatial);
  fuzz::TensorSpec start = fuzz::DecodeTensor(r, "levelStartIndex", false, {levels}, start_dtype);
  start.int_values = start_values;
  const int level_start = call.Add(start);
  const int location = call.Add(fuzz::DecodeTensor(r, "location", false, location_shape, dtype, unit));
  const int attn_weight = call.Add(fuzz::DecodeTensor(r, "attnWeight", false, attn_shape, dtype, unit));
  int output = -1;
  int grad_output = -1;
  int grad_value = -1;
  int grad_location = -1;
  int grad_attn = -1;
  if (backward) {
    const std::vector<int64_t> grad_rows =
        grad_output_4d ? std::vector<int64_t>{batch, queries, heads, channels} : rows_shape;
    grad_output = call.Add(fuzz::DecodeTensor(r, "gradOutput", false, grad_rows, dtype));
    grad_value = call.Add(fuzz::DecodeTensor(r, "gradValue", true, value_shape, dtype));
    grad_location = call.Add(fuzz::DecodeTensor(r, "gradLocation", true, location_shape, dtype));
    grad_attn = call.Add(fuzz::DecodeTensor(r, "gradAttnWeight", true, attn_shape, dtype));
  } else {
    output = call.Add(fuzz::DecodeTensor(r, "output", true, rows_shape, dtype));
  }
  call.Materialize();
  call.DecodeOutPointers(r);

  const char* name = backward ? kBackward : kForward;
  aclnnStatus status;
  if (backward) {
    status = opcall::GetWorkspaceSize(
        opcall::MultiScaleDeformableAttentionGrad{call.tensor(value), call.tensor(spatial_shape),
                                                  call.tensor(level_start), call.tensor(location),
                                                  call.tensor(attn_weight), call.tensor(grad_output),
                                                  call.tensor(grad_value), call.tensor(grad_location),
                                                  call.tensor(grad_attn)},
        call.workspace_size_out(), call.executor_out());
  } else {
    status = opcall::GetWorkspaceSize(
        opcall::MultiScaleDeformableAttnFunction{call.tensor(value), call.tensor(spatial_shape),
                                                 call.tensor(level_start), call.tensor(location),
                                                 call.tensor(attn_weight), call.tensor(output)},
        call.workspace_size_out(), call.executor_out());
  }
  if (!call.CheckPhase1(name, status, call.AnyPassedAsNull())) return 0;

  // Accepted: the documented rules hold.
  const fuzz::TensorSpec& value_spec = call.spec(value);
  // DOUBLE and any channel count >= 1 are the CPU's extension beyond CANN (the generic kernels).
  fuzz::CheckAcceptedDType(name, value_spec, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE});
  fuzz::CheckAcceptedDType(name, call.spec(spatial_shape), {ACL_INT32, ACL_INT64});
  fuzz::CheckAcceptedDType(name, call.spec(level_start), {ACL_INT32, ACL_INT64});
  const std::vector<int64_t>& v = value_spec.dims;
  const std::vector<int64_t>& loc = call.spec(location).dims;
  FUZZ_CHECK(v.size() == 4 && loc.size() == 6, "%s accepted value dims %s, location dims %s", name,
             fuzz::DimsString(v).c_str(), fuzz::DimsString(loc).c_str());
  const int64_t nq = loc[1];
  const int64_t nl = loc[3];
  const int64_t np = loc[4];
  FUZZ_CHECK(v[3] >= 1 && nq < 500000 && nl >= 1 && nl <= 16 && v[2] >= 1 &&
                 v[2] <= 16 && np >= 1 && np <= 16,
             "%s accepted value dims %s with location dims %s", name, fuzz::DimsString(v).c_str(),
             fuzz::DimsString(loc).c_str());
  fuzz::CheckAcceptedDims(name, call.spec(location), {v[0], nq, v[2], nl, np, 2});
  fuzz::CheckAcceptedDims(name, call.spec(attn_weight), {v[0], nq, v[2], nl, np});
  fuzz::CheckAcceptedDims(name, call.spec(spatial_shape), {nl, 2});
  fuzz::CheckAcceptedDims(name, call.spec(level_start), {nl});
  // output and gradOutput: (bs, nq, nh * c) or (bs, nq, nh, c), as CANN's pages disagree (docs/compat.md).
  const std::vector<int64_t> accepted_rows = {v[0], nq, v[2] * v[3]};
  const std::vector<int64_t> accepted_4d = {v[0], nq, v[2], v[3]};
  std::vector<int> written;
  if (backward) {
    const std::vector<int64_t>& g = call.spec(grad_output).dims;
    FUZZ_CHECK(g == accepted_rows || g == accepted_4d,
               "%s accepted gradOutput dims %s", name, fuzz::DimsString(g).c_str());
    fuzz::CheckAcceptedDims(name, call.spec(grad_value), v);
    fuzz::CheckAcceptedDims(name, call.spec(grad_location), loc);
    fuzz::CheckAcceptedDims(name, call.spec(grad_attn), call.spec(attn_weight).dims);
    written = {grad_value, grad_location, grad_attn};
  } else {
    const std::vector<int64_t>& out = call.spec(output).dims;
    FUZZ_CHECK(out == accepted_rows || out == accepted_4d, "%s accepted output dims %s", name,
               fuzz::DimsString(out).c_str());
    written = {output};
  }
  for (int index : {location, attn_weight, output, grad_output, grad_value, grad_location, grad_attn}) {
    FUZZ_CHECK(index < 0 || call.spec(index).dtype == value_spec.dtype, "%s accepted mixed dtypes", name);
  }

  // Four corners per sample point and channel; the backward does about three times the forward's work.
  const uint64_t corner_work = fuzz::SaturatingMul(fuzz::Elements(call.spec(attn_weight).dims),
                                                   fuzz::SaturatingMul(static_cast<uint64_t>(v[3]), 4));
  call.RunPhase2(r, name,
                 backward ? aclnnMultiScaleDeformableAttentionGrad : aclnnMultiScaleDeformableAttnFunction,
                 backward ? aclnnMultiScaleDeformableAttnFunction : aclnnMultiScaleDeformableAttentionGrad, written,
                 fuzz::SaturatingMul(corner_work, backward ? 3 : 1));
  return 0;
}
