// MultiScaleDeformableAttention's step of aclnn_demo (examples/demo/demo_support.h): its forward and backward on a
// realistic shape.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "demo_support.h"
#include "msda/test/msda_calls.h"
#include "msda/test/msda_reference.h"

namespace demo {
namespace {

// MultiScaleDeformableAttention forward and backward, one dtype, on Deformable DETR's encoder self-attention:
// 2 images, 4 levels of (H, W) = (100, 150), (50, 75), (25, 38), (13, 19) (19947 keys), every pixel of every
// level a query (nq = nk = 19947), 8 heads of 32 channels, 4 points on each level; INT64 spatialShape and
// levelStartIndex, as PyTorch models pass them. A query's locations are its own pixel's centre (its reference
// point, as the encoder has it) plus small offsets (+-0.05) per (head, level, point); attention weights a softmax
// over each query and head's 16 (level, point) pairs.
//
// The locations are multiples of 2^-16: then the pixel coordinate loc * W - 0.5 (W, H < 256) is exact in fp32 and
// the operator and the float64 reference pick the same bilinear cell. (gradLocation jumps where a coordinate crosses
// an integer, so a coordinate rounded across one would be a legitimate difference of O(1), not an error.) In
// FLOAT16 and BFLOAT16 the rounded locations are such multiples anyway.
void RunMultiScaleDeformableAttention(aclrtStream stream, aclDataType dtype, std::vector<Row>* rows) {
  const std::vector<int64_t> heights = {100, 50, 25, 13}, widths = {150, 75, 38, 19};
  ref::MsdaShape s{2, 0, 8, 32, static_cast<int64_t>(heights.size()), 0, 4};
  std::vector<int64_t> spatial_shape, level_start;
  std::vector<double> pixel_centres;  // (x, y) of every key, in key order: the queries' reference points
  for (size_t l = 0; l < heights.size(); ++l) {
    spatial_shape.push_back(heights[l]);
    spatial_shape.push_back(widths[l]);
    level_start.push_back(s.nk);
    s.nk += heights[l] * widths[l];
    for (int64_t y = 0; y < heights[l]; ++y) {
      for (int64_t x = 0; x < widths[l]; ++x) {
        pixel_centres.push_back((static_cast<double>(x) + 0.5) / static_cast<double>(widths[l]));
        pixel_centres.push_back((static_cast<double>(y) + 0.5) / static_cast<double>(heights[l]));
      }
    }
  }
  s.nq = s.nk;
  const std::vector<int64_t> value_shape = {s.bs, s.nk, s.nh, s.c};
  const std::vector<int64_t> location_shape = {s.bs, s.nq, s.nh, s.nl, s.np, 2};
  const std::vector<int64_t> attn_shape = {s.bs, s.nq, s.nh, s.nl, s.np};
  const std::vector<int64_t> output_shape = {s.bs, s.nq, s.nh * s.c};

  Row forward = MakeRow("MultiScaleDeformableAttnFunction", "", dtype, output_shape);
  Row grad_value_row = MakeRow("MultiScaleDeformableAttentionGrad", "gradValue", dtype, value_shape);
  Row grad_location_row = MakeRow("MultiScaleDeformableAttentionGrad", "gradLocation", dtype, location_shape);
  Row grad_attn_row = MakeRow("MultiScaleDeformableAttentionGrad", "gradAttnWeight", dtype, attn_shape);

  std::vector<double> value = RandomValues(ElementCount(value_shape), -1.0, 1.0, 6);
  std::vector<double> grad_output = RandomValues(ElementCount(output_shape), -1.0, 1.0, 7);
  std::vector<double> location = RandomValues(ElementCount(location_shape), -0.05, 0.05, 9);
  const size_t coordinates_per_query = static_cast<size_t>(s.nh * s.nl * s.np * 2);
  for (size_t i = 0; i < location.size(); ++i) {
    const size_t query = i / coordinates_per_query % static_cast<size_t>(s.nq);  // the same in every image
    location[i] = std::round((location[i] + pixel_centres[2 * query + i % 2]) * 65536.0) / 65536.0;
  }
  std::vector<double> attn = RandomValues(ElementCount(attn_shape), -2.0, 2.0, 10);  // logits, then a softmax
  const size_t group = static_cast<size_t>(s.nl * s.np);
  for (size_t begin = 0; begin < attn.size(); begin += group) {
    double sum = 0;
    for (size_t k = begin; k < begin + group; ++k) {
      attn[k] = std::exp(attn[k]);
      sum += attn[k];
    }
    for (size_t k = begin; k < begin + group; ++k) attn[k] /= sum;
  }
  RoundTo(dtype, &value);
  RoundTo(dtype, &grad_output);
  RoundTo(dtype, &location);
  RoundTo(dtype, &attn);

  auto index_bytes = [](const std::vector<int64_t>& values) {
    std::vector<unsigned char> bytes(values.size() * sizeof(int64_t));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
  };
  DeviceTensor value_dev, spatial_shape_dev, level_start_dev, location_dev, attn_dev, output_dev, grad_output_dev,
      grad_value_dev, grad_location_dev, grad_attn_dev;
  std::string setup_error = value_dev.Create(value_shape, dtype, Encode(value, dtype));
  if (setup_error.empty()) setup_error = spatial_shape_dev.Create({s.nl, 2}, ACL_INT64, index_bytes(spatial_shape));
  if (setup_error.empty()) setup_error = level_start_dev.Create({s.nl}, ACL_INT64, index_bytes(level_start));
  if (setup_error.empty()) setup_error = location_dev.Create(location_shape, dtype, Encode(location, dtype));
  if (setup_error.empty()) setup_error = attn_dev.Create(attn_shape, dtype, Encode(attn, dtype));
  if (setup_error.empty()) setup_error = output_dev.Create(output_shape, dtype, {});
  if (setup_error.empty()) setup_error = grad_output_dev.Create(output_shape, dtype, Encode(grad_output, dtype));
  if (setup_error.empty()) setup_error = grad_value_dev.Create(value_shape, dtype, {});
  if (setup_error.empty()) setup_error = grad_location_dev.Create(location_shape, dtype, {});
  if (setup_error.empty()) setup_error = grad_attn_dev.Create(attn_shape, dtype, {});

  double milliseconds = NAN;
  std::string error = setup_error;
  if (error.empty()) {
    error = TimedCall(stream,
                      opcall::MultiScaleDeformableAttnFunction{value_dev.tensor(), spatial_shape_dev.tensor(),
                                                               level_start_dev.tensor(), location_dev.tensor(),
                                                               attn_dev.tensor(), output_dev.tensor()},
                      &milliseconds);
  }
  CompleteCall(
      error, milliseconds, TotalBytes({&value_dev, &location_dev, &attn_dev, &output_dev}), {{&output_dev, &forward}},
      [&] {
        std::vector<double> expected(static_cast<size_t>(ElementCount(output_shape)));
        ref::MsdaForward(value.data(), spatial_shape.data(), level_start.data(), location.data(), attn.data(), s,
                         expected.data());
        return Expected{expected};
      },
      0, rows);

  // Backward: one call, three outputs, each checked against its own largest value.
  error = setup_error;
  if (error.empty()) {
    error = TimedCall(stream,
                      opcall::MultiScaleDeformableAttentionGrad{
                          value_dev.tensor(), spatial_shape_dev.tensor(), level_start_dev.tensor(),
                          location_dev.tensor(), attn_dev.tensor(), grad_output_dev.tensor(),
                          grad_value_dev.tensor(), grad_location_dev.tensor(), grad_attn_dev.tensor()},
                      &milliseconds);
  }
  CompleteCall(
      error, milliseconds,
      TotalBytes({&value_dev, &location_dev, &attn_dev, &grad_output_dev, &grad_value_dev, &grad_location_dev,
                  &grad_attn_dev}),
      {{&grad_value_dev, &grad_value_row}, {&grad_location_dev, &grad_location_row}, {&grad_attn_dev, &grad_attn_row}},
      [&] {
        std::vector<double> grad_value(value.size()), grad_location(location.size()), grad_attn(attn.size());
        ref::MsdaBackward(value.data(), spatial_shape.data(), level_start.data(), location.data(), attn.data(),
                          grad_output.data(), s, grad_value.data(), grad_location.data(), grad_attn.data());
        return Expected{grad_value, grad_location, grad_attn};
      },
      0, rows);
}

// DOUBLE too: the CPU's extension beyond CANN (its generic kernels), which mmcv's callers use.
const StepRegistration kRegistration("MultiScaleDeformableAttention", {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE},
                                     RunMultiScaleDeformableAttention);

}  // namespace
}  // namespace demo
