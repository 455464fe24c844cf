// GridSampler2D's step of aclnn_demo (examples/demo/demo_support.h): its forward and backward on a realistic shape.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "demo_support.h"
#include "grid_sampler2d/test/grid_sampler2d_calls.h"
#include "grid_sampler2d/test/grid_sampler2d_reference.h"

namespace demo {
namespace {

// The grid sampler computes pixel coordinates in the working precision: an fp32 coordinate is off by up to about
// eps32 * size pixels, and the result moves by that times the image's slope (at most 2 per pixel for values in
// [-1, 1]). So FLOAT gets max(k, 8 * eps32 * size); the other dtypes' k already exceed that.
double GridSamplerTolerance(aclDataType dtype, const ref::GridSamplerShape& s) {
  const double coordinate_bound = 8.0 * std::ldexp(1.0, -24) * static_cast<double>(std::max(s.Hin, s.Win));
  return dtype == ACL_FLOAT ? std::max(RelativeTolerance(dtype), coordinate_bound) : RelativeTolerance(dtype);
}

// GridSampler2D forward and backward (bilinear, zeros padding, alignCorners false: a spatial-transformer warp),
// one dtype: a batch of 2 feature maps of 32 channels, 128x128, sampled through a rotated, scaled grid.
void RunGridSampler2D(aclrtStream stream, aclDataType dtype, std::vector<Row>* rows) {
  const ref::GridSamplerShape s{2, 32, 128, 128, 128, 128};
  const std::vector<int64_t> input_shape = {s.N, s.C, s.Hin, s.Win};
  const std::vector<int64_t> grid_shape = {s.N, s.Hout, s.Wout, 2};
  const std::vector<int64_t> out_shape = {s.N, s.C, s.Hout, s.Wout};
  const int interpolation = 0, padding = 0;
  const bool align_corners = false;
  const double tolerance = GridSamplerTolerance(dtype, s);

  Row forward = MakeRow("GridSampler2D", "", dtype, out_shape);
  Row input_grad_row = MakeRow("GridSampler2DBackward", "inputGrad", dtype, input_shape);
  Row grid_grad_row = MakeRow("GridSampler2DBackward", "gridGrad", dtype, grid_shape);

  std::vector<double> input = RandomValues(ElementCount(input_shape), -1.0, 1.0, 3);
  std::vector<double> grad_output = RandomValues(ElementCount(out_shape), -1.0, 1.0, 4);
  std::vector<double> jitter = RandomValues(ElementCount(grid_shape), -0.01, 0.01, 5);
  std::vector<double> grid(jitter.size());
  const double angle = 0.3, zoom = 1.1;
  for (int64_t n = 0; n < s.N; ++n) {
    for (int64_t h = 0; h < s.Hout; ++h) {
      for (int64_t w = 0; w < s.Wout; ++w) {
        const double u = (2.0 * w + 1.0) / s.Wout - 1.0, v = (2.0 * h + 1.0) / s.Hout - 1.0;
        const size_t i = static_cast<size_t>(((n * s.Hout + h) * s.Wout + w) * 2);
        grid[i] = zoom * (std::cos(angle) * u - std::sin(angle) * v) + jitter[i];
        grid[i + 1] = zoom * (std::sin(angle) * u + std::cos(angle) * v) + jitter[i + 1];
      }
    }
  }
  RoundTo(dtype, &input);
  RoundTo(dtype, &grad_output);
  RoundTo(dtype, &grid);

  DeviceTensor input_dev, grid_dev, out_dev, grad_output_dev, input_grad_dev, grid_grad_dev;
  std::string setup_error = input_dev.Create(input_shape, dtype, Encode(input, dtype));
  if (setup_error.empty()) setup_error = grid_dev.Create(grid_shape, dtype, Encode(grid, dtype));
  if (setup_error.empty()) setup_error = out_dev.Create(out_shape, dtype, {});
  if (setup_error.empty()) setup_error = grad_output_dev.Create(out_shape, dtype, Encode(grad_output, dtype));
  if (setup_error.empty()) setup_error = input_grad_dev.Create(input_shape, dtype, {});
  if (setup_error.empty()) setup_error = grid_grad_dev.Create(grid_shape, dtype, {});

  double milliseconds = NAN;
  std::string error = setup_error;
  if (error.empty()) {
    error = TimedCall(stream,
                      opcall::GridSampler2D{input_dev.tensor(), grid_dev.tensor(), interpolation, padding,
                                            align_corners, out_dev.tensor()},
                      &milliseconds);
  }
  CompleteCall(
      error, milliseconds, TotalBytes({&input_dev, &grid_dev, &out_dev}), {{&out_dev, &forward}},
      [&] {
        std::vector<double> expected(static_cast<size_t>(ElementCount(out_shape)));
        ref::GridSampler2DForward(input.data(), grid.data(), s, interpolation, padding, align_corners, expected.data());
        return Expected{expected};
      },
      tolerance, rows);

  // Backward: one call, two outputs (outputMask [true, true]), each checked against its own largest value.
  const bool mask_values[2] = {true, true};
  aclBoolArray* output_mask = aclCreateBoolArray(mask_values, 2);
  error = setup_error;
  if (error.empty() && output_mask == nullptr) error = std::string("aclCreateBoolArray: ") + RecentErrorMessage();
  if (error.empty()) {
    error = TimedCall(stream,
                      opcall::GridSampler2DBackward{grad_output_dev.tensor(), input_dev.tensor(), grid_dev.tensor(),
                                                    interpolation, padding, align_corners, output_mask,
                                                    input_grad_dev.tensor(), grid_grad_dev.tensor()},
                      &milliseconds);
  }
  if (output_mask != nullptr) aclDestroyBoolArray(output_mask);
  CompleteCall(
      error, milliseconds, TotalBytes({&grad_output_dev, &input_dev, &grid_dev, &input_grad_dev, &grid_grad_dev}),
      {{&input_grad_dev, &input_grad_row}, {&grid_grad_dev, &grid_grad_row}},
      [&] {
        std::vector<double> input_grad(input.size()), grid_grad(grid.size());
        ref::GridSampler2DBackward(grad_output.data(), input.data(), grid.data(), s, interpolation, padding,
                                   align_corners, input_grad.data(), grid_grad.data());
        return Expected{input_grad, grid_grad};
      },
      tolerance, rows);
}

const StepRegistration kRegistration("GridSampler2D", {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE}, RunGridSampler2D);

}  // namespace
}  // namespace demo
