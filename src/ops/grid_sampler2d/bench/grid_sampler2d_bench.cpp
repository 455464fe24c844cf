// Benchmark cases of aclnnGridSampler2D and aclnnGridSampler2DBackward.
//
// Case names: <operator>/<dtype>/<interpolation>_<padding>[_align]/<N>x<C>x<Hin>x<Win>_to_<Hout>x<Wout>/<grid>,
// e.g. "GridSampler2DBackward/FLOAT/bilinear_zeros/4x32x256x256_to_256x256/warp". bench/torch_grid_sampler2d.py
// times PyTorch on the same table under the same names; keep the two in step.
//
// Two kinds of grid, because the sampling pattern decides the speed as much as the shape does:
// - "random": every (x, y) uniform in [-1, 1): each output pixel reads an unrelated place of the input (the worst
//   case for the caches, and what a generic benchmark uses);
// - "warp": the output pixel centres rotated by 0.3 rad, scaled by 1.1 and shifted by (0.05, -0.05), plus a
//   uniform jitter of up to half an input pixel: a spatial-transformer / optical-flow style warp, where
//   neighbouring output pixels read neighbouring input pixels; the corners of the output fall outside the input
//   (zeros padding).
// Bytes per call: every input and output tensor counted once (forward: input, grid, out; backward: gradOutput,
// input, grid, inputGrad, gridGrad: the backward computes both gradients, outputMask [true, true]).
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "grid_sampler2d/test/grid_sampler2d_calls.h"
#include "bench_common.h"

namespace bench {
namespace {

enum class Direction { kForward, kBackward };
enum class GridKind { kRandom, kWarp };

struct SamplerShape {
  int64_t n, c, in_height, in_width, out_height, out_width;
};

struct SamplerCase {
  Direction direction;
  aclDataType dtype;
  int64_t interpolation;  // 0 bilinear, 1 nearest, 2 bicubic
  int64_t padding;        // 0 zeros, 1 border, 2 reflection
  bool align_corners;
  SamplerShape shape;
  GridKind grid;
};

// The two speed shapes (a batch of mid-sized feature maps; one large map that must keep both cores
// busy) in FLOAT bilinear/zeros, each with both grids; then bicubic and FLOAT16 on a small shape (its name
// matches the bench_smoke test's filter, so those paths of the driver are exercised by ctest too).
const SamplerShape kBatchShape = {4, 32, 256, 256, 256, 256};
const SamplerShape kLargeShape = {1, 64, 512, 512, 512, 512};
const SamplerShape kSmallShape = {2, 8, 128, 128, 128, 128};

std::vector<SamplerCase> Cases() {
  std::vector<SamplerCase> cases;
  for (Direction direction : {Direction::kBackward, Direction::kForward}) {
    for (const SamplerShape& shape : {kBatchShape, kLargeShape}) {
      for (GridKind grid : {GridKind::kWarp, GridKind::kRandom}) {
        cases.push_back({direction, ACL_FLOAT, 0, 0, false, shape, grid});
      }
    }
    cases.push_back({direction, ACL_FLOAT, 2, 0, false, kSmallShape, GridKind::kWarp});
    cases.push_back({direction, ACL_FLOAT16, 0, 0, false, kSmallShape, GridKind::kWarp});
  }
  return cases;
}

const char* InterpolationLabel(int64_t mode) { return mode == 0 ? "bilinear" : mode == 1 ? "nearest" : "bicubic"; }
const char* PaddingLabel(int64_t mode) { return mode == 0 ? "zeros" : mode == 1 ? "border" : "reflection"; }

std::string CaseName(const SamplerCase& c) {
  const SamplerShape& s = c.shape;
  return std::string(c.direction == Direction::kBackward ? "GridSampler2DBackward" : "GridSampler2D") + "/" +
         DTypeName(c.dtype) + "/" + InterpolationLabel(c.interpolation) + "_" + PaddingLabel(c.padding) +
         (c.align_corners ? "_align" : "") + "/" + ShapeLabel({s.n, s.c, s.in_height, s.in_width}) + "_to_" +
         ShapeLabel({s.out_height, s.out_width}) + "/" + (c.grid == GridKind::kWarp ? "warp" : "random");
}

// The "warp" grid (see the top of the file), (N, Hout, Wout, 2) as (x, y). The jitter comes from a fixed-seed
// generator, so every run samples the same points.
std::vector<float> WarpGrid(const SamplerShape& s) {
  const double angle = 0.3, scale = 1.1, shift_x = 0.05, shift_y = -0.05;
  const double cos_a = std::cos(angle), sin_a = std::sin(angle);
  uint64_t state = 0x243F6A8885A308D3ull;
  auto jitter = [&state](double half_width) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return half_width * (2.0 * static_cast<double>(state >> 40) / 16777216.0 - 1.0);
  };
  std::vector<float> grid(static_cast<size_t>(s.n * s.out_height * s.out_width * 2));
  size_t i = 0;
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t h = 0; h < s.out_height; ++h) {
      for (int64_t w = 0; w < s.out_width; ++w) {
        // Pixel centres in [-1, 1] (alignCorners false).
        const double u = (2.0 * static_cast<double>(w) + 1.0) / static_cast<double>(s.out_width) - 1.0;
        const double v = (2.0 * static_cast<double>(h) + 1.0) / static_cast<double>(s.out_height) - 1.0;
        const double x = scale * (cos_a * u - sin_a * v) + shift_x + jitter(1.0 / static_cast<double>(s.in_width));
        const double y = scale * (sin_a * u + cos_a * v) + shift_y + jitter(1.0 / static_cast<double>(s.in_height));
        grid[i++] = static_cast<float>(x);
        grid[i++] = static_cast<float>(y);
      }
    }
  }
  return grid;
}

std::string Prepare(const SamplerCase& c, PreparedCall* call) {
  const SamplerShape& s = c.shape;
  const std::vector<int64_t> input_shape = {s.n, s.c, s.in_height, s.in_width};
  const std::vector<int64_t> grid_shape = {s.n, s.out_height, s.out_width, 2};
  const std::vector<int64_t> out_shape = {s.n, s.c, s.out_height, s.out_width};
  const double element_size = static_cast<double>(aclDataTypeSize(c.dtype));
  const double input_bytes = static_cast<double>(ElementCount(input_shape)) * element_size;
  const double grid_bytes = static_cast<double>(ElementCount(grid_shape)) * element_size;
  const double out_bytes = static_cast<double>(ElementCount(out_shape)) * element_size;

  // Each tensor goes into call->tensors as soon as it exists, so that a failure part way releases what was made.
  auto random_tensor = [&c, call](const std::vector<int64_t>& shape, double low, double high, uint32_t seed,
                                  DeviceTensor* tensor) {
    const std::string error = CreateRandomTensor(shape, c.dtype, low, high, seed, tensor);
    call->tensors.push_back(*tensor);
    return error;
  };
  DeviceTensor input, grid;
  std::string error = random_tensor(input_shape, -1.0, 1.0, 11, &input);
  if (!error.empty()) return error;
  if (c.grid == GridKind::kWarp) {
    error = CreateTensorFromValues(grid_shape, c.dtype, WarpGrid(s), &grid);
    call->tensors.push_back(grid);
  } else {
    error = random_tensor(grid_shape, -1.0, 1.0, 12, &grid);
  }
  if (!error.empty()) return error;

  aclnnStatus status;
  if (c.direction == Direction::kForward) {
    DeviceTensor out;
    error = random_tensor(out_shape, 0.0, 0.0, 13, &out);
    if (!error.empty()) return error;
    status = PlanCall(
        opcall::GridSampler2D{input.tensor, grid.tensor, c.interpolation, c.padding, c.align_corners, out.tensor},
        call);
    call->bytes = input_bytes + grid_bytes + out_bytes;
  } else {
    DeviceTensor grad_output, input_grad, grid_grad;
    error = random_tensor(out_shape, -1.0, 1.0, 14, &grad_output);
    if (!error.empty()) return error;
    error = random_tensor(input_shape, 0.0, 0.0, 15, &input_grad);
    if (!error.empty()) return error;
    error = random_tensor(grid_shape, 0.0, 0.0, 16, &grid_grad);
    if (!error.empty()) return error;
    const bool both[2] = {true, true};
    aclBoolArray* output_mask = aclCreateBoolArray(both, 2);
    if (output_mask == nullptr) return "aclCreateBoolArray returned NULL: " + RecentErrorMessage();
    call->bool_arrays.push_back(output_mask);
    status = PlanCall(opcall::GridSampler2DBackward{grad_output.tensor, input.tensor, grid.tensor, c.interpolation,
                                                    c.padding, c.align_corners, output_mask, input_grad.tensor,
                                                    grid_grad.tensor},
                      call);
    call->bytes = out_bytes + 2 * input_bytes + 2 * grid_bytes;
  }
  if (status != ACLNN_SUCCESS) {
    return "phase 1 failed with " + std::to_string(status) + ": " + RecentErrorMessage();
  }
  return "";
}

// "input 4x32x256x256, grid 4x256x256x2 (warp), bilinear, zeros padding".
std::string ShapeText(const SamplerCase& c) {
  const SamplerShape& s = c.shape;
  return "input " + ShapeLabel({s.n, s.c, s.in_height, s.in_width}) + ", grid " +
         ShapeLabel({s.n, s.out_height, s.out_width, 2}) + " (" + (c.grid == GridKind::kWarp ? "warp" : "random") +
         "), " + InterpolationLabel(c.interpolation) + ", " + PaddingLabel(c.padding) + " padding" +
         (c.align_corners ? ", alignCorners" : "");
}

void RegisterCases() {
  for (const SamplerCase& c : Cases()) {
    const bool backward = c.direction == Direction::kBackward;
    const CaseInfo info = {CaseName(c), "GridSampler2D", backward ? "aclnnGridSampler2DBackward" : "aclnnGridSampler2D",
                           backward,    c.dtype,         ShapeText(c)};
    RegisterOperatorBenchmark(info, [c](PreparedCall* call) { return Prepare(c, call); });
  }
}

const CaseTableRegistration kRegistration("GridSampler2D", RegisterCases);

}  // namespace
}  // namespace bench
