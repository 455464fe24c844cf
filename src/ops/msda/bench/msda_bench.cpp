// Benchmark cases of aclnnMultiScaleDeformableAttnFunction (forward) and aclnnMultiScaleDeformableAttentionGrad.
//
// Case names: <operator>/<dtype>/<shape>, e.g. "MsdaBackward/FLOAT/encoder" or "MsdaForward/BFLOAT16/decoder".
// bench/torch_msda.py times PyTorch's composite formulation on the same table under the same names; keep the two
// in step.
//
// Shapes: Deformable-DETR's, batch 2, 8 heads of 32 channels, 4 levels of (H, W) = (100, 150), (50, 75), (25, 38),
// (13, 19) (nk = 19947 keys), 4 points per level and head. "encoder" and "encoder_pixels": every key is also a
// query (nq = 19947); "decoder": 300 object queries over the same value. "small": a scaled-down encoder_pixels (batch
// 1, levels (16, 24) and (8, 12), so nq = nk = 480), for the bench_smoke test.
//
// Data, drawn from fixed-seed generators so every run samples the same points:
// - value uniform in [-1, 1);
// - location: one reference point per (batch, query) plus an offset uniform in [-0.05, 0.05)^2 per (head, level,
//   point), as the model's learned offsets are small; so some points fall slightly outside the map (partly or
//   wholly zero padding), as in the model. The reference point is uniform in [0, 1)^2 ("encoder", "decoder"), or
//   ("encoder_pixels") the centre of the query's own pixel, queries in key order (level by level, row by row), as
//   Deformable-DETR's encoder has it: neighbouring queries then sample neighbouring keys, which the caches reward;
//   the uniform "encoder" is the cache-hostile bound of the same work;
// - attnWeight: per (batch, query, head) a softmax over the nl * np = 16 (level, point) pairs of logits uniform in
//   [-2, 2): positive, summing to 1;
// - spatialShape and levelStartIndex as INT64 (what PyTorch models pass);
// - gradOutput (bs, nq, nh * c), uniform in [-1, 1).
// Bytes per call: forward reads value, location and attnWeight and writes output; backward reads value, location,
// attnWeight and gradOutput and writes gradValue, gradLocation and gradAttnWeight; each tensor counted once (the
// two small index tensors are left out).
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "msda/test/msda_calls.h"
#include "bench_common.h"

namespace bench {
namespace {

enum class Direction { kForward, kBackward };

struct MsdaShape {
  const char* label;
  int64_t batch, queries, heads, channels, points;
  std::vector<int64_t> level_heights, level_widths;
  bool queries_are_pixels;  // queries == keys, each referring to its own pixel's centre (else uniform)
};

struct MsdaCase {
  Direction direction;
  aclDataType dtype;
  MsdaShape shape;
};

const MsdaShape kEncoderShape = {"encoder", 2, 19947, 8, 32, 4, {100, 50, 25, 13}, {150, 75, 38, 19}, false};
const MsdaShape kEncoderPixelsShape = {"encoder_pixels",  2,   19947, 8, 32, 4, {100, 50, 25, 13},
                                       {150, 75, 38, 19}, true};
const MsdaShape kDecoderShape = {"decoder", 2, 300, 8, 32, 4, {100, 50, 25, 13}, {150, 75, 38, 19}, false};
const MsdaShape kSmallShape = {"small", 1, 480, 8, 32, 4, {16, 8}, {24, 12}, true};

std::vector<MsdaCase> Cases() {
  std::vector<MsdaCase> cases;
  for (Direction direction : {Direction::kBackward, Direction::kForward}) {
    for (const MsdaShape& shape : {kEncoderShape, kEncoderPixelsShape, kDecoderShape, kSmallShape}) {
      for (aclDataType dtype : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) cases.push_back({direction, dtype, shape});
    }
  }
  return cases;
}

std::string CaseName(const MsdaCase& c) {
  return std::string(c.direction == Direction::kBackward ? "MsdaBackward" : "MsdaForward") + "/" + DTypeName(c.dtype) +
         "/" + c.shape.label;
}

int64_t Levels(const MsdaShape& s) { return static_cast<int64_t>(s.level_heights.size()); }

int64_t KeyCount(const MsdaShape& s) {
  int64_t keys = 0;
  for (size_t l = 0; l < s.level_heights.size(); ++l) keys += s.level_heights[l] * s.level_widths[l];
  return keys;
}

// Uniform in [0, 1) from a fixed seed; any reasonable generator does, only the distribution matters.
struct Uniform {
  uint64_t state;
  explicit Uniform(uint64_t seed) : state(seed * 0x9E3779B97F4A7C15ull + 1) {}
  double operator()() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(state >> 11) * 0x1.0p-53;
  }
};

// The reference points, (x, y) per query: pixel centres of every level in key order, or uniform in [0, 1)^2.
std::vector<double> ReferencePoints(const MsdaShape& s, Uniform* uniform) {
  std::vector<double> points;
  if (!s.queries_are_pixels) {
    for (int64_t i = 0; i < 2 * s.queries; ++i) points.push_back((*uniform)());
    return points;
  }
  for (size_t l = 0; l < s.level_heights.size(); ++l) {
    const double height = static_cast<double>(s.level_heights[l]), width = static_cast<double>(s.level_widths[l]);
    for (int64_t y = 0; y < s.level_heights[l]; ++y) {
      for (int64_t x = 0; x < s.level_widths[l]; ++x) {
        points.push_back((static_cast<double>(x) + 0.5) / width);
        points.push_back((static_cast<double>(y) + 0.5) / height);
      }
    }
  }
  return points;  // 2 * nk values: queries == keys for this kind
}

// (bs, nq, nh, nl, np, 2) as (x, y): reference point per (batch, query) plus a small offset per (head, level,
// point).
std::vector<float> Locations(const MsdaShape& s) {
  const int64_t per_query = s.heads * Levels(s) * s.points;
  std::vector<float> locations(static_cast<size_t>(s.batch * s.queries * per_query * 2));
  Uniform uniform(21);
  size_t i = 0;
  for (int64_t b = 0; b < s.batch; ++b) {
    const std::vector<double> references = ReferencePoints(s, &uniform);
    for (int64_t q = 0; q < s.queries; ++q) {
      const double reference_x = references[static_cast<size_t>(2 * q)];
      const double reference_y = references[static_cast<size_t>(2 * q + 1)];
      for (int64_t k = 0; k < per_query; ++k) {
        locations[i++] = static_cast<float>(reference_x + 0.1 * uniform() - 0.05);
        locations[i++] = static_cast<float>(reference_y + 0.1 * uniform() - 0.05);
      }
    }
  }
  return locations;
}

// (bs, nq, nh, nl, np): a softmax over the (level, point) pairs of each (batch, query, head).
std::vector<float> AttentionWeights(const MsdaShape& s) {
  const int64_t group = Levels(s) * s.points;
  std::vector<float> weights(static_cast<size_t>(s.batch * s.queries * s.heads * group));
  std::vector<double> exponentials(static_cast<size_t>(group));
  Uniform uniform(22);
  for (size_t begin = 0; begin < weights.size(); begin += static_cast<size_t>(group)) {
    double sum = 0;
    for (double& e : exponentials) {
      e = std::exp(4.0 * uniform() - 2.0);
      sum += e;
    }
    for (size_t k = 0; k < exponentials.size(); ++k) weights[begin + k] = static_cast<float>(exponentials[k] / sum);
  }
  return weights;
}

// A contiguous INT64 tensor holding values.
std::string CreateInt64Tensor(const std::vector<int64_t>& shape, const std::vector<int64_t>& values,
                              DeviceTensor* result) {
  result->bytes = values.size() * sizeof(int64_t);
  aclError status = aclrtMalloc(&result->data, result->bytes, ACL_MEM_MALLOC_HUGE_FIRST);
  if (status != ACL_SUCCESS) return "aclrtMalloc failed with " + std::to_string(status) + ": " + RecentErrorMessage();
  status = aclrtMemcpy(result->data, result->bytes, values.data(), result->bytes, ACL_MEMCPY_HOST_TO_DEVICE);
  if (status != ACL_SUCCESS) return "aclrtMemcpy failed with " + std::to_string(status) + ": " + RecentErrorMessage();
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d > 1; --d) strides[d - 2] = strides[d - 1] * shape[d - 1];
  result->tensor = aclCreateTensor(shape.data(), shape.size(), ACL_INT64, strides.data(), 0, ACL_FORMAT_ND,
                                   shape.data(), shape.size(), result->data);
  if (result->tensor == nullptr) return "aclCreateTensor returned NULL: " + RecentErrorMessage();
  return "";
}

std::string Prepare(const MsdaCase& c, PreparedCall* call) {
  const MsdaShape& s = c.shape;
  if (s.queries_are_pixels && s.queries != KeyCount(s)) return "msda_bench: a pixels shape needs nq == nk";
  const int64_t levels = Levels(s);
  const std::vector<int64_t> value_shape = {s.batch, KeyCount(s), s.heads, s.channels};
  const std::vector<int64_t> location_shape = {s.batch, s.queries, s.heads, levels, s.points, 2};
  const std::vector<int64_t> weight_shape = {s.batch, s.queries, s.heads, levels, s.points};
  const std::vector<int64_t> output_shape = {s.batch, s.queries, s.heads * s.channels};
  const double element_size = static_cast<double>(aclDataTypeSize(c.dtype));
  const double value_bytes = static_cast<double>(ElementCount(value_shape)) * element_size;
  const double location_bytes = static_cast<double>(ElementCount(location_shape)) * element_size;
  const double weight_bytes = static_cast<double>(ElementCount(weight_shape)) * element_size;
  const double output_bytes = static_cast<double>(ElementCount(output_shape)) * element_size;

  std::vector<int64_t> spatial_shapes, level_starts;
  int64_t start = 0;
  for (int64_t l = 0; l < levels; ++l) {
    const int64_t height = s.level_heights[static_cast<size_t>(l)], width = s.level_widths[static_cast<size_t>(l)];
    spatial_shapes.push_back(height);
    spatial_shapes.push_back(width);
    level_starts.push_back(start);
    start += height * width;
  }

  // Each tensor goes into call->tensors as soon as it exists, so that a failure part way releases what was made.
  auto random_tensor = [&c, call](const std::vector<int64_t>& shape, double low, double high, uint32_t seed,
                                  DeviceTensor* tensor) {
    const std::string error = CreateRandomTensor(shape, c.dtype, low, high, seed, tensor);
    call->tensors.push_back(*tensor);
    return error;
  };
  auto tensor_from_values = [&c, call](const std::vector<int64_t>& shape, const std::vector<float>& values,
                                       DeviceTensor* tensor) {
    const std::string error = CreateTensorFromValues(shape, c.dtype, values, tensor);
    call->tensors.push_back(*tensor);
    return error;
  };
  auto index_tensor = [call](const std::vector<int64_t>& shape, const std::vector<int64_t>& values,
                             DeviceTensor* tensor) {
    const std::string error = CreateInt64Tensor(shape, values, tensor);
    call->tensors.push_back(*tensor);
    return error;
  };
  DeviceTensor value, spatial_shape, level_start_index, location, weight;
  std::string error = random_tensor(value_shape, -1.0, 1.0, 31, &value);
  if (error.empty()) error = index_tensor({levels, 2}, spatial_shapes, &spatial_shape);
  if (error.empty()) error = index_tensor({levels}, level_starts, &level_start_index);
  if (error.empty()) error = tensor_from_values(location_shape, Locations(s), &location);
  if (error.empty()) error = tensor_from_values(weight_shape, AttentionWeights(s), &weight);
  if (!error.empty()) return error;

  aclnnStatus status;
  if (c.direction == Direction::kForward) {
    DeviceTensor output;
    error = random_tensor(output_shape, 0.0, 0.0, 32, &output);
    if (!error.empty()) return error;
    status = PlanCall(opcall::MultiScaleDeformableAttnFunction{value.tensor, spatial_shape.tensor,
                                                               level_start_index.tensor, location.tensor,
                                                               weight.tensor, output.tensor},
                      call);
    call->bytes = value_bytes + location_bytes + weight_bytes + output_bytes;
  } else {
    DeviceTensor grad_output, grad_value, grad_location, grad_weight;
    error = random_tensor(output_shape, -1.0, 1.0, 33, &grad_output);
    if (error.empty()) error = random_tensor(value_shape, 0.0, 0.0, 34, &grad_value);
    if (error.empty()) error = random_tensor(location_shape, 0.0, 0.0, 35, &grad_location);
    if (error.empty()) error = random_tensor(weight_shape, 0.0, 0.0, 36, &grad_weight);
    if (!error.empty()) return error;
    status = PlanCall(opcall::MultiScaleDeformableAttentionGrad{value.tensor, spatial_shape.tensor,
                                                                level_start_index.tensor, location.tensor,
                                                                weight.tensor, grad_output.tensor, grad_value.tensor,
                                                                grad_location.tensor, grad_weight.tensor},
                      call);
    call->bytes = 2 * value_bytes + 2 * location_bytes + 2 * weight_bytes + output_bytes;
  }
  if (status != ACLNN_SUCCESS) {
    return "phase 1 failed with " + std::to_string(status) + ": " + RecentErrorMessage();
  }
  return "";
}

// "bs 2, nq 300, nk 19947 (levels 100x150, 50x75, 25x38, 13x19), nh 8, c 32, np 4, reference points uniform".
std::string ShapeText(const MsdaShape& s) {
  std::string levels;
  for (size_t l = 0; l < s.level_heights.size(); ++l) {
    levels += (l > 0 ? ", " : "") + ShapeLabel({s.level_heights[l], s.level_widths[l]});
  }
  return "bs " + std::to_string(s.batch) + ", nq " + std::to_string(s.queries) + ", nk " + std::to_string(KeyCount(s)) +
         " (levels " + levels + "), nh " + std::to_string(s.heads) + ", c " + std::to_string(s.channels) + ", np " +
         std::to_string(s.points) + ", reference points " + (s.queries_are_pixels ? "at the query's pixel" : "uniform");
}

void RegisterCases() {
  for (const MsdaCase& c : Cases()) {
    const bool backward = c.direction == Direction::kBackward;
    const CaseInfo info = {
        CaseName(c),
        "MultiScaleDeformableAttention",
        backward ? "aclnnMultiScaleDeformableAttentionGrad" : "aclnnMultiScaleDeformableAttnFunction",
        backward,
        c.dtype,
        ShapeText(c.shape)};
    RegisterOperatorBenchmark(info, [c](PreparedCall* call) { return Prepare(c, call); });
  }
}

const CaseTableRegistration kRegistration("MultiScaleDeformableAttention", RegisterCases);

}  // namespace
}  // namespace bench
