// aclnnGridSampler2D and aclnnGridSampler2DBackward against the float64 reference
// (tests/reference/grid_sampler2d_reference.h, itself checked against PyTorch 1.13's grid_sampler_2d and
// grid_sampler_2d_backward to ~1e-15 for all 18 mode / padding / alignCorners combinations) and against finite
// differences of the operator's own forward.
//
// Tolerances (spec section 3), per element: |actual - round(reference)| <= ulp + E, where ulp is one unit in the
// last place of the output dtype and E bounds the error of the kernel's arithmetic (fp32 for FLOAT16, BFLOAT16 and
// FLOAT, fp64 for DOUBLE) before the output's single rounding, derived from the magnitudes of the terms involved
// (see ErrorBounds). With E = 0 this is "within 1 ulp of the rounded reference"; E only matters where cancellation
// makes a result small compared with its terms. In addition, the spec's norm bounds: FLOAT relative 2-norm error
// <= 1e-5; DOUBLE <= 1e-12 (fp64 arithmetic on these sizes errs by < 1e-14 relative: u = 1.1e-16 times at most ~50
// for the coordinate magnitudes and term counts here, so 1e-12 leaves margin, while any fp32 step would show as
// ~1e-7 and fail).
//
// Decision boundaries: the interpolation is continuous, but which pixels it reads (floor for bilinear/bicubic, the
// rounding of nearest, the clip of border, the bounces of reflection, the in-range test of zeros) changes at source
// coordinates that are multiples of 0.5. Near them a rounding error legitimately flips the decision (a different
// gradient, or a different nearest pixel), so random grids keep their unnormalized coordinates at least
// kBoundaryMargin pixels away from every multiple of 0.5; grids are drawn in the test dtype first (the reference
// sees exactly the values the device holds). Exact ties are tested separately where every arithmetic is exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "aclnnop/aclnn_grid_sampler2d.h"
#include "aclnnop/aclnn_grid_sampler2d_backward.h"
#include "grid_sampler2d/test/grid_sampler2d_calls.h"
#include "op_test_util.h"
#include "grid_sampler2d/test/grid_sampler2d_reference.h"

namespace {

using optest::DeviceTensor;
using optest::Layout;

constexpr aclDataType kDTypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE};
constexpr const char* kInterpolationNames[] = {"Bilinear", "Nearest", "Bicubic"};
constexpr const char* kPaddingNames[] = {"Zeros", "Border", "Reflection"};
constexpr int kBilinear = 0, kNearest = 1, kBicubic = 2;
constexpr int kZeros = 0, kBorder = 1, kReflection = 2;
constexpr double kBoundaryMargin = 1e-3;  // pixels; fp32 coordinate errors here are < 1e-5 pixels
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Modes {
  int interpolation;
  int padding;
  bool align_corners;
};

std::string ModesName(const Modes& m) {
  return std::string(kInterpolationNames[m.interpolation]) + kPaddingNames[m.padding] +
         (m.align_corners ? "_Align" : "_NoAlign");
}

std::vector<Modes> AllModes() {
  std::vector<Modes> modes;
  for (int interpolation = 0; interpolation < 3; ++interpolation) {
    for (int padding = 0; padding < 3; ++padding) {
      for (bool align : {false, true}) modes.push_back({interpolation, padding, align});
    }
  }
  return modes;
}

// ------------------------------------------------------------------------------------------------------------
// Problems

struct Problem {
  ref::GridSamplerShape shape;
  std::vector<double> input, grid, grad_output;  // exactly representable in the test dtype
  std::vector<int64_t> InputShape() const { return {shape.N, shape.C, shape.Hin, shape.Win}; }
  std::vector<int64_t> GridShape() const { return {shape.N, shape.Hout, shape.Wout, 2}; }
  std::vector<int64_t> OutShape() const { return {shape.N, shape.C, shape.Hout, shape.Wout}; }
  int64_t Points() const { return shape.Hout * shape.Wout; }
};

std::string ShapeName(const ref::GridSamplerShape& s) {
  return "N=" + std::to_string(s.N) + " C=" + std::to_string(s.C) + " in=" + std::to_string(s.Hin) + "x" +
         std::to_string(s.Win) + " out=" + std::to_string(s.Hout) + "x" + std::to_string(s.Wout);
}

double Unnormalize(double c, int64_t size, bool align_corners) {
  const double s = static_cast<double>(size);
  return align_corners ? (c + 1.0) / 2.0 * (s - 1.0) : ((c + 1.0) * s - 1.0) / 2.0;
}

// Whether grid value c maps at least `margin` pixels away from every multiple of 0.5 (see the top comment). With
// alignCorners and size 1 every value maps to exactly 0 in any arithmetic, so nothing can flip.
bool AwayFromBoundaries(double c, int64_t size, bool align_corners, double margin) {
  if (align_corners && size == 1) return true;
  const double twice = 2.0 * Unnormalize(c, size, align_corners);
  return std::fabs(twice - std::nearbyint(twice)) >= 2.0 * margin;
}

// Grid values uniform in [lo, hi], rounded to dtype, each kept away from decision boundaries.
std::vector<double> RandomGrid(std::mt19937_64& rng, const ref::GridSamplerShape& s, aclDataType dtype,
                               bool align_corners, double lo = -1.3, double hi = 1.3, double margin = kBoundaryMargin) {
  std::uniform_real_distribution<double> uniform(lo, hi);
  std::vector<double> grid(static_cast<size_t>(s.N * s.Hout * s.Wout * 2));
  for (size_t i = 0; i < grid.size(); ++i) {
    const int64_t size = i % 2 == 0 ? s.Win : s.Hin;
    double v;
    do {
      v = optest::RoundToDType(uniform(rng), dtype);
    } while (!AwayFromBoundaries(v, size, align_corners, margin));
    grid[i] = v;
  }
  return grid;
}

Problem MakeProblem(const ref::GridSamplerShape& s, aclDataType dtype, bool align_corners, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Problem p;
  p.shape = s;
  p.input = optest::RandomValues(rng, s.N * s.C * s.Hin * s.Win, -2.0, 2.0, dtype);
  p.grid = RandomGrid(rng, s, dtype, align_corners);
  p.grad_output = optest::RandomValues(rng, s.N * s.C * s.Hout * s.Wout, -1.0, 1.0, dtype);
  return p;
}

std::vector<double> ReferenceForward(const Problem& p, const Modes& m) {
  std::vector<double> out(static_cast<size_t>(optest::NumElements(p.OutShape())));
  ref::GridSampler2DForward(p.input.data(), p.grid.data(), p.shape, m.interpolation, m.padding, m.align_corners,
                            out.data());
  return out;
}

struct Gradients {
  std::vector<double> input_grad, grid_grad;
};

Gradients ReferenceBackward(const Problem& p, const Modes& m) {
  Gradients g;
  g.input_grad.resize(p.input.size());
  g.grid_grad.resize(p.grid.size());
  ref::GridSampler2DBackward(p.grad_output.data(), p.input.data(), p.grid.data(), p.shape, m.interpolation, m.padding,
                             m.align_corners, g.input_grad.data(), g.grid_grad.data());
  return g;
}

// ------------------------------------------------------------------------------------------------------------
// Running the operators

class BoolArray {
 public:
  explicit BoolArray(std::vector<bool> values) {
    bool storage[8] = {};
    for (size_t i = 0; i < values.size(); ++i) storage[i] = values[i];
    array_ = aclCreateBoolArray(storage, values.size());
  }
  ~BoolArray() {
    if (array_ != nullptr) aclDestroyBoolArray(array_);
  }
  BoolArray(const BoolArray&) = delete;
  BoolArray& operator=(const BoolArray&) = delete;
  const aclBoolArray* get() const { return array_; }

 private:
  aclBoolArray* array_ = nullptr;
};

aclnnStatus RunForward(const aclTensor* input, const aclTensor* grid, const Modes& m, aclTensor* out,
                       aclrtStream stream = nullptr) {
  return opcall::Run(opcall::GridSampler2D{input, grid, m.interpolation, m.padding, m.align_corners, out}, stream);
}

aclnnStatus RunBackward(const aclTensor* grad_output, const aclTensor* input, const aclTensor* grid, const Modes& m,
                        const aclBoolArray* mask, aclTensor* input_grad, aclTensor* grid_grad,
                        aclrtStream stream = nullptr) {
  return opcall::Run(opcall::GridSampler2DBackward{grad_output, input, grid, m.interpolation, m.padding,
                                                   m.align_corners, mask, input_grad, grid_grad},
                     stream);
}

// ------------------------------------------------------------------------------------------------------------
// Error bounds of the kernel's arithmetic (unit roundoff u: 2^-24 for the fp32 kernels, 2^-53 for DOUBLE).
//
// The kernel computes each source coordinate (unnormalize, then clip or reflect) with a few roundings of values of
// magnitude <= |coordinate| + size + 1: error e <= 8u (|coordinate| + size + 1). (A clipped coordinate is exact;
// the magnitude is capped at 2 size + 2 for that reason: beyond it only border clipping or zeros-padding "no taps"
// happen, or for bicubic a coordinate that is an integer in fp32 (t = 0 exactly) with every tap clipped.)
// Given the margin from decision boundaries, the same taps are read; a weight then errs by at most
// slope * (e_x + e_y) + weight_roundoff * u, where slope bounds |d weight / d coordinate| (bilinear 1, bicubic 1.5:
// the cubic convolution weights' derivatives stay below 1.35, the weights below 1) and weight_roundoff covers the
// evaluation (bilinear: (1 - t) and one product; bicubic: Horner on polynomials whose terms reach ~36 for |A| =
// 0.75, so up to ~150u of cancellation, taken as 256u). A derivative weight (for gridGrad) errs by
// curvature * (e_x + e_y) + dweight_roundoff * u (bilinear: 1, |d^2 w / dx dy| = 1; bicubic: |w''| <= 4.5 plus
// |w'|^2 <= 1.8, taken as 5, and ~30-magnitude terms, taken as 128u).
// A sum of k products errs by at most (k + 2) u times the sum of the products' magnitudes, in any order.
struct ErrorModel {
  double slope, weight_roundoff, curvature, dweight_roundoff;
};

ErrorModel ModelFor(int interpolation) {
  switch (interpolation) {
    case kBilinear:
      return {1.0, 8.0, 1.0, 8.0};
    case kNearest:
      return {0.0, 0.0, 0.0, 0.0};  // weight 1 exactly, no coordinate sensitivity away from boundaries
    default:
      return {1.5, 256.0, 5.0, 128.0};
  }
}

// Under reflection the error of the unnormalized coordinate carries through the (exact) reduction, however many
// times the coordinate bounces, so its magnitude is not capped there.
double CoordinateError(double coordinate, int64_t size, int padding, double u) {
  const double cap = 2.0 * static_cast<double>(size) + 2.0;
  double magnitude = std::isfinite(coordinate) ? std::fabs(coordinate) : cap;
  if (padding != kReflection) magnitude = std::min(magnitude, cap);
  return 8.0 * u * (magnitude + static_cast<double>(size) + 1.0);
}

double UnitRoundoff(aclDataType dtype) { return dtype == ACL_DOUBLE ? 0x1p-53 : 0x1p-24; }

struct Bounds {
  std::vector<double> out, input_grad, grid_grad;
};

Bounds ErrorBounds(const Problem& p, const Modes& m, aclDataType dtype) {
  const ref::GridSamplerShape& s = p.shape;
  const double u = UnitRoundoff(dtype);
  const ErrorModel model = ModelFor(m.interpolation);
  const int64_t points = p.Points(), pixels = s.Hin * s.Win;
  Bounds b;
  b.out.assign(static_cast<size_t>(s.N * s.C * points), 0.0);
  b.grid_grad.assign(p.grid.size(), 0.0);
  // Per input element: the coordinate part of its inputGrad bound, the magnitude of its terms and their count.
  struct InputGradParts {
    double coordinate_part = 0.0, magnitude = 0.0, terms = 0.0;
  };
  std::vector<InputGradParts> parts(p.input.size());
  // Per point of the image in hand: where it samples, its weights' error bounds and its gridGrad sums over channels.
  // Channels are the outer loop (out and gradOutput are channel-major planes: a point-major walk would stride a
  // whole plane per step); each point's sums still add the channels in order.
  struct PointParts {
    ref::GridSamplerPoint point;
    double weight_error = 0.0, dweight_error = 0.0, gx_terms = 0.0, gx_abs = 0.0, gy_abs = 0.0;
  };
  std::vector<PointParts> point_parts(static_cast<size_t>(points));
  for (int64_t n = 0; n < s.N; ++n) {
    for (int64_t q = 0; q < points; ++q) {
      const size_t gi = static_cast<size_t>((n * points + q) * 2);
      PointParts& pp = point_parts[static_cast<size_t>(q)];
      pp.point = ref::GridSampler2DSamplePoint(p.grid[gi], p.grid[gi + 1], s.Hin, s.Win, m.interpolation, m.padding,
                                               m.align_corners);
      const double e =
          CoordinateError(pp.point.x, s.Win, m.padding, u) + CoordinateError(pp.point.y, s.Hin, m.padding, u);
      pp.weight_error = model.slope * e + model.weight_roundoff * u;
      pp.dweight_error = model.curvature * e + model.dweight_roundoff * u;
      pp.gx_terms = pp.gx_abs = pp.gy_abs = 0.0;
    }
    for (int64_t c = 0; c < s.C; ++c) {
      const size_t image = static_cast<size_t>((n * s.C + c) * pixels);
      for (int64_t q = 0; q < points; ++q) {
        PointParts& pp = point_parts[static_cast<size_t>(q)];
        const size_t out_index = static_cast<size_t>((n * s.C + c) * points + q);
        const double g = p.grad_output[out_index];
        const double taps = static_cast<double>(pp.point.taps.size());
        double value_part = 0.0, product_abs = 0.0;
        for (const ref::GridSamplerTap& tap : pp.point.taps) {
          const size_t index = image + static_cast<size_t>(tap.h * s.Win + tap.w);
          const double v = p.input[index];
          value_part += std::fabs(v) * pp.weight_error;
          product_abs += std::fabs(tap.weight * v);
          parts[index].coordinate_part += std::fabs(g) * pp.weight_error;
          parts[index].magnitude += std::fabs(tap.weight * g);
          parts[index].terms += 1.0;
          pp.gx_terms += std::fabs(v * g);
          pp.gx_abs += std::fabs(v * g * tap.dweight_dx);
          pp.gy_abs += std::fabs(v * g * tap.dweight_dy);
        }
        b.out[out_index] = value_part + (taps + 2.0) * u * product_abs;
      }
    }
    for (int64_t q = 0; q < points; ++q) {
      const PointParts& pp = point_parts[static_cast<size_t>(q)];
      const size_t gi = static_cast<size_t>((n * points + q) * 2);
      const double gy_terms = pp.gx_terms;
      const double sum_terms = static_cast<double>(s.C) * static_cast<double>(pp.point.taps.size()) + 4.0;
      b.grid_grad[gi] = std::fabs(pp.point.x_mult) * (pp.gx_terms * pp.dweight_error + sum_terms * u * pp.gx_abs);
      b.grid_grad[gi + 1] = std::fabs(pp.point.y_mult) * (gy_terms * pp.dweight_error + sum_terms * u * pp.gy_abs);
    }
  }
  b.input_grad.resize(p.input.size());
  for (size_t i = 0; i < p.input.size(); ++i) {
    b.input_grad[i] = parts[i].coordinate_part + (parts[i].terms + 2.0) * u * parts[i].magnitude;
  }
  return b;
}

// Per element: |actual - round(expected)| <= ulp + bound (see the top comment); FLOAT / DOUBLE also in norm.
// `skip` (optional) marks elements not to compare.
void ExpectClose(const char* what, const std::vector<double>& actual, const std::vector<double>& expected,
                 const std::vector<double>& bound, aclDataType dtype, const std::vector<bool>* skip = nullptr) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < actual.size() && failures < 10; ++i) {
    if (skip != nullptr && (*skip)[i]) continue;
    const double a = actual[i];
    const double rounded = optest::RoundToDType(expected[i], dtype);
    const double tolerance = optest::UlpOf(std::max(std::fabs(rounded), std::fabs(a)), dtype) + bound[i];
    if (!(std::fabs(a - rounded) <= tolerance)) {
      ++failures;
      ADD_FAILURE() << what << " element " << i << ": actual " << a << ", reference " << expected[i] << " (rounded "
                    << rounded << "), tolerance " << tolerance;
    }
  }
  // The spec's norm bound, unless the expected values are themselves rounding noise: a gradient that cancels to
  // ~0 (e.g. bicubic gridGrad on a 1-pixel input, where every tap reads the same pixel) has no meaningful relative
  // error; the elementwise check above covers it.
  double expected_norm = 0.0, bound_norm = 0.0;
  for (size_t i = 0; i < expected.size(); ++i) {
    expected_norm += expected[i] * expected[i];
    bound_norm += bound[i] * bound[i];
  }
  if (skip == nullptr && (dtype == ACL_FLOAT || dtype == ACL_DOUBLE) && expected_norm > 1e4 * bound_norm) {
    EXPECT_LE(optest::RelativeNormError(actual, expected), dtype == ACL_FLOAT ? 1e-5 : 1e-12) << what;
  }
}

void ExpectForwardMatches(const std::vector<double>& actual, const Problem& p, const Modes& m, aclDataType dtype) {
  const Bounds bounds = ErrorBounds(p, m, dtype);
  ExpectClose("out", actual, ReferenceForward(p, m), bounds.out, dtype);
}

void ExpectAllZero(const char* what, const std::vector<double>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] != 0.0) {
      ADD_FAILURE() << what << " element " << i << " is " << values[i] << ", expected exactly 0";
      return;
    }
  }
}

void ExpectAllNaN(const char* what, const std::vector<double>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isnan(values[i])) {
      ADD_FAILURE() << what << " element " << i << " is " << values[i] << ": an output not chosen was written";
      return;
    }
  }
}

void ExpectInputGradMatches(const std::vector<double>& actual, const Problem& p, const Modes& m, aclDataType dtype) {
  const Bounds bounds = ErrorBounds(p, m, dtype);
  ExpectClose("inputGrad", actual, ReferenceBackward(p, m).input_grad, bounds.input_grad, dtype);
}

void ExpectGridGradMatches(const std::vector<double>& actual, const Problem& p, const Modes& m, aclDataType dtype) {
  if (m.interpolation == kNearest) {
    ExpectAllZero("gridGrad (nearest)", actual);
    return;
  }
  const Bounds bounds = ErrorBounds(p, m, dtype);
  ExpectClose("gridGrad", actual, ReferenceBackward(p, m).grid_grad, bounds.grid_grad, dtype);
}

// Device tensors of one problem, in the given layouts.
struct DeviceProblem {
  DeviceTensor input, grid, grad_output;
  DeviceProblem(const Problem& p, aclDataType dtype, Layout input_layout = Layout::kContiguous,
                Layout grid_layout = Layout::kContiguous, Layout grad_output_layout = Layout::kContiguous)
      : input(p.InputShape(), dtype, input_layout, p.input),
        grid(p.GridShape(), dtype, grid_layout, p.grid),
        grad_output(p.OutShape(), dtype, grad_output_layout, p.grad_output) {}
};

// ------------------------------------------------------------------------------------------------------------
// Sweep: every dtype x interpolation x padding x alignCorners, forward and backward, on shapes with 1-pixel inputs,
// single rows / columns, non-square maps, output sizes unlike the input's, C of 1 and 5.

const ref::GridSamplerShape kSweepShapes[] = {
    {1, 1, 1, 1, 2, 3},
    {2, 5, 4, 7, 3, 5},
    {1, 3, 6, 3, 4, 6},
    {2, 1, 1, 5, 3, 2},
    {1, 2, 5, 1, 2, 4},
    {1, 4, 9, 11, 7, 8},
    // More channels than one 16-channel block, the last block partial (the fp32 kernels work in such blocks).
    {1, 20, 7, 40, 5, 33},
};

struct SweepCase {
  aclDataType dtype;
  Modes modes;
};

std::vector<SweepCase> SweepCases() {
  std::vector<SweepCase> cases;
  for (aclDataType dtype : kDTypes) {
    for (const Modes& m : AllModes()) cases.push_back({dtype, m});
  }
  return cases;
}

std::string SweepName(const testing::TestParamInfo<SweepCase>& info) {
  return std::string(optest::DTypeName(info.param.dtype)) + "_" + ModesName(info.param.modes);
}

uint64_t CaseSeed(const SweepCase& c) {
  return 1000 + static_cast<uint64_t>(c.dtype) * 100 + static_cast<uint64_t>(c.modes.interpolation) * 10 +
         static_cast<uint64_t>(c.modes.padding) * 2 + (c.modes.align_corners ? 1 : 0);
}

class GridSamplerSweep : public testing::TestWithParam<SweepCase> {};

void SweepForward(const SweepCase& c) {
  uint64_t seed = CaseSeed(c) * 100;
  optest::TestStream stream;
  for (const ref::GridSamplerShape& s : kSweepShapes) {
    SCOPED_TRACE(ShapeName(s));
    const Problem p = MakeProblem(s, c.dtype, c.modes.align_corners, ++seed);
    DeviceProblem d(p, c.dtype);
    DeviceTensor out = DeviceTensor::Output(p.OutShape(), c.dtype, Layout::kContiguous);
    ASSERT_EQ(RunForward(d.input.get(), d.grid.get(), c.modes, out.get(), stream.get()), ACLNN_SUCCESS)
        << optest::RecentErrorMessage();
    ExpectForwardMatches(out.Read(), p, c.modes, c.dtype);
    EXPECT_EQ(out.CheckGuards(), "");
    EXPECT_EQ(d.input.Read(), p.input) << "input was modified";
    EXPECT_EQ(d.grid.Read(), p.grid) << "grid was modified";
  }
}

void SweepBackward(const SweepCase& c) {
  uint64_t seed = CaseSeed(c) * 100 + 50;
  const BoolArray both({true, true});
  for (const ref::GridSamplerShape& s : kSweepShapes) {
    SCOPED_TRACE(ShapeName(s));
    const Problem p = MakeProblem(s, c.dtype, c.modes.align_corners, ++seed);
    DeviceProblem d(p, c.dtype);
    DeviceTensor input_grad = DeviceTensor::Output(p.InputShape(), c.dtype, Layout::kContiguous);
    DeviceTensor grid_grad = DeviceTensor::Output(p.GridShape(), c.dtype, Layout::kContiguous);
    ASSERT_EQ(RunBackward(d.grad_output.get(), d.input.get(), d.grid.get(), c.modes, both.get(), input_grad.get(),
                          grid_grad.get()),
              ACLNN_SUCCESS)
        << optest::RecentErrorMessage();
    ExpectInputGradMatches(input_grad.Read(), p, c.modes, c.dtype);
    ExpectGridGradMatches(grid_grad.Read(), p, c.modes, c.dtype);
    EXPECT_EQ(input_grad.CheckGuards(), "");
    EXPECT_EQ(grid_grad.CheckGuards(), "");
    EXPECT_EQ(d.grad_output.Read(), p.grad_output) << "gradOutput was modified";
    EXPECT_EQ(d.input.Read(), p.input) << "input was modified";
    EXPECT_EQ(d.grid.Read(), p.grid) << "grid was modified";
  }
}

// Forward and backward in one test per case (fewer test processes under ctest).
TEST_P(GridSamplerSweep, ForwardAndBackwardMatchReference) {
  SweepForward(GetParam());
  SweepBackward(GetParam());
}

INSTANTIATE_TEST_SUITE_P(GridSampler2D, GridSamplerSweep, testing::ValuesIn(SweepCases()), SweepName);

// ------------------------------------------------------------------------------------------------------------
// Layouts: each tensor (and all at once) transposed (last-dim stride != 1), padded (offset and gaps), channels-last
// (NHWC memory) or, for inputs, broadcast (a zero stride along N: one image or grid for the whole batch), inputs and
// outputs. The modes rotate through all eighteen combinations across the cases.

enum Operand { kInput = 0, kGrid = 1, kGradOutputOrOut = 2, kInputGrad = 3, kGridGrad = 4, kAllOperands = 5 };

const char* OperandName(int operand, bool forward) {
  switch (operand) {
    case kInput:
      return "input";
    case kGrid:
      return "grid";
    case kGradOutputOrOut:
      return forward ? "out" : "gradOutput";
    case kInputGrad:
      return "inputGrad";
    case kGridGrad:
      return "gridGrad";
    default:
      return "all";
  }
}

struct LayoutCase {
  aclDataType dtype;
  int operand;
  Layout layout;
  Modes modes;
};

std::vector<LayoutCase> LayoutCases(bool forward) {
  std::vector<LayoutCase> cases;
  const std::vector<Modes> modes = AllModes();
  size_t next_mode = 0;
  for (aclDataType dtype : kDTypes) {
    for (int operand = 0; operand <= kAllOperands; ++operand) {
      if (forward && (operand == kInputGrad || operand == kGridGrad)) continue;
      // Outputs (and "all", which includes them) cannot be broadcast: their elements would overlap.
      const bool output = operand == kInputGrad || operand == kGridGrad || operand == kAllOperands ||
                          (forward && operand == kGradOutputOrOut);
      for (Layout layout : output ? std::vector<Layout>(std::begin(optest::kOutputLayouts),
                                                        std::end(optest::kOutputLayouts))
                                  : std::vector<Layout>(std::begin(optest::kInputLayouts),
                                                        std::end(optest::kInputLayouts))) {
        cases.push_back({dtype, operand, layout, modes[next_mode++ % modes.size()]});
      }
    }
  }
  return cases;
}

std::string LayoutName(const LayoutCase& c, bool forward) {
  return std::string(optest::DTypeName(c.dtype)) + "_" + OperandName(c.operand, forward) + "_" +
         optest::LayoutName(c.layout) + "_" + ModesName(c.modes);
}

Layout LayoutOf(const LayoutCase& c, int operand) {
  return c.operand == operand || c.operand == kAllOperands ? c.layout : Layout::kContiguous;
}

const ref::GridSamplerShape kLayoutShape = {2, 19, 5, 6, 4, 7};  // C spans two 16-channel blocks

// The problem with the values a broadcast input holds (repeated along its first dim).
Problem StoredAs(Problem p, const LayoutCase& c) {
  p.input = optest::AsStored(p.input, p.InputShape(), LayoutOf(c, kInput));
  p.grid = optest::AsStored(p.grid, p.GridShape(), LayoutOf(c, kGrid));
  p.grad_output = optest::AsStored(p.grad_output, p.OutShape(), LayoutOf(c, kGradOutputOrOut));
  return p;
}

void CheckForwardLayout(const LayoutCase& c) {
  const Problem p = StoredAs(MakeProblem(kLayoutShape, c.dtype, c.modes.align_corners, 3000 + c.operand), c);
  DeviceProblem d(p, c.dtype, LayoutOf(c, kInput), LayoutOf(c, kGrid));
  DeviceTensor out = DeviceTensor::Output(p.OutShape(), c.dtype, LayoutOf(c, kGradOutputOrOut));
  ASSERT_EQ(RunForward(d.input.get(), d.grid.get(), c.modes, out.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  ExpectForwardMatches(out.Read(), p, c.modes, c.dtype);
  EXPECT_EQ(out.CheckGuards(), "");
  EXPECT_EQ(d.input.CheckGuards(), "");
  EXPECT_EQ(d.grid.CheckGuards(), "");
}

void CheckBackwardLayout(const LayoutCase& c) {
  const Problem p = StoredAs(MakeProblem(kLayoutShape, c.dtype, c.modes.align_corners, 4000 + c.operand), c);
  DeviceProblem d(p, c.dtype, LayoutOf(c, kInput), LayoutOf(c, kGrid), LayoutOf(c, kGradOutputOrOut));
  DeviceTensor input_grad = DeviceTensor::Output(p.InputShape(), c.dtype, LayoutOf(c, kInputGrad));
  DeviceTensor grid_grad = DeviceTensor::Output(p.GridShape(), c.dtype, LayoutOf(c, kGridGrad));
  const BoolArray both({true, true});
  ASSERT_EQ(RunBackward(d.grad_output.get(), d.input.get(), d.grid.get(), c.modes, both.get(), input_grad.get(),
                        grid_grad.get()),
            ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  ExpectInputGradMatches(input_grad.Read(), p, c.modes, c.dtype);
  ExpectGridGradMatches(grid_grad.Read(), p, c.modes, c.dtype);
  for (const DeviceTensor* t : {&input_grad, &grid_grad, &d.input, &d.grid, &d.grad_output}) {
    EXPECT_EQ(t->CheckGuards(), "");
  }
}

// One test per dtype (the cases loop inside: fewer test processes under ctest).
class GridSamplerLayouts : public testing::TestWithParam<aclDataType> {};

TEST_P(GridSamplerLayouts, ForwardMatchesReference) {
  for (const LayoutCase& c : LayoutCases(true)) {
    if (c.dtype != GetParam()) continue;
    SCOPED_TRACE(LayoutName(c, true));
    CheckForwardLayout(c);
  }
}

TEST_P(GridSamplerLayouts, BackwardMatchesReference) {
  for (const LayoutCase& c : LayoutCases(false)) {
    if (c.dtype != GetParam()) continue;
    SCOPED_TRACE(LayoutName(c, false));
    CheckBackwardLayout(c);
  }
}

INSTANTIATE_TEST_SUITE_P(GridSampler2D, GridSamplerLayouts, testing::ValuesIn(kDTypes),
                         [](const testing::TestParamInfo<aclDataType>& param_info) {
                           return std::string(optest::DTypeName(param_info.param));
                         });

// The cases of the streamed-store tests: FLOAT with 33 channels, FLOAT16 and BFLOAT16 with 66 (the same bytes, just
// past 8 MiB for the shapes below), each with the output contiguous (aligned) and padded (an element offset).
template <class Check>
void ForEachStreamedStoreCase(Check&& check) {
  for (aclDataType dtype : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
    const int64_t channels = dtype == ACL_FLOAT ? 33 : 66;
    for (Layout layout : {Layout::kContiguous, Layout::kPadded}) {
      SCOPED_TRACE(std::string(optest::DTypeName(dtype)) + " " + optest::LayoutName(layout));
      check(dtype, channels, layout);
    }
  }
}

// An inputGrad of 8 MiB or more is written with non-temporal stores (vector-aligned middle, scalar head and tail):
// the same values as any other way, aligned (contiguous) or not (padded: an element offset), in FLOAT, FLOAT16 and
// BFLOAT16.
TEST(GridSampler2DLargeInputGrad, StreamedStoresMatchReference) {
  const Modes m{kBilinear, kZeros, false};
  const BoolArray both({true, true});
  ForEachStreamedStoreCase([&](aclDataType dtype, int64_t channels, Layout layout) {
    const ref::GridSamplerShape shape = {1, channels, 256, 256, 48, 40};  // inputGrad 8.25 MiB
    const Problem p = MakeProblem(shape, dtype, m.align_corners, 5100);
    DeviceProblem d(p, dtype);
    DeviceTensor input_grad = DeviceTensor::Output(p.InputShape(), dtype, layout);
    DeviceTensor grid_grad = DeviceTensor::Output(p.GridShape(), dtype, Layout::kContiguous);
    ASSERT_EQ(RunBackward(d.grad_output.get(), d.input.get(), d.grid.get(), m, both.get(), input_grad.get(),
                          grid_grad.get()),
              ACLNN_SUCCESS)
        << optest::RecentErrorMessage();
    ExpectInputGradMatches(input_grad.Read(), p, m, dtype);
    ExpectGridGradMatches(grid_grad.Read(), p, m, dtype);
    EXPECT_EQ(input_grad.CheckGuards(), "");
    EXPECT_EQ(grid_grad.CheckGuards(), "");
  });
}

// An output of 8 MiB or more with unit stride along W is written with non-temporal stores too, a tile's row pieces
// at a time (330 pixels a row: tiles of 256 pixels straddle rows, so pieces start at every alignment): the same
// values, contiguous or padded, in FLOAT, FLOAT16 and BFLOAT16.
TEST(GridSampler2DLargeOutput, StreamedStoresMatchReference) {
  const Modes m{kBilinear, kZeros, false};
  ForEachStreamedStoreCase([&](aclDataType dtype, int64_t channels, Layout layout) {
    const ref::GridSamplerShape shape = {1, channels, 64, 64, 200, 330};  // out 8.3 MiB
    const Problem p = MakeProblem(shape, dtype, m.align_corners, 5150);
    DeviceProblem d(p, dtype);
    DeviceTensor out = DeviceTensor::Output(p.OutShape(), dtype, layout);
    ASSERT_EQ(RunForward(d.input.get(), d.grid.get(), m, out.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    ExpectForwardMatches(out.Read(), p, m, dtype);
    EXPECT_EQ(out.CheckGuards(), "");
  });
}

// The fp32 forward copies its input a pass of images at a time (as many as fit in 8 MiB of blocked copy): with
// 33 channels (3 blocks of 16) of 128 x 128, 3 MiB per image, 5 images take two passes of 2 and one of 1. Every
// image must be sampled from its own copy, in every float dtype.
TEST(GridSampler2DForwardPasses, ImagesOfEveryPassMatchReference) {
  const ref::GridSamplerShape shape = {5, 33, 128, 128, 12, 10};
  for (aclDataType dtype : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
    for (const Modes& m : {Modes{kBilinear, kZeros, false}, Modes{kBicubic, kReflection, true}}) {
      SCOPED_TRACE(std::string(optest::DTypeName(dtype)) + " " + ModesName(m));
      const Problem p = MakeProblem(shape, dtype, m.align_corners, 5200);
      DeviceProblem d(p, dtype);
      DeviceTensor out = DeviceTensor::Output(p.OutShape(), dtype, Layout::kPadded);
      ASSERT_EQ(RunForward(d.input.get(), d.grid.get(), m, out.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
      ExpectForwardMatches(out.Read(), p, m, dtype);
      EXPECT_EQ(out.CheckGuards(), "");
    }
  }
}

// ------------------------------------------------------------------------------------------------------------
// outputMask: null computes nothing; [a, b] chooses inputGrad / gridGrad; an output not chosen keeps its NaN fill.

struct MaskCase {
  bool present, input_grad, grid_grad;
};

// Every dtype (the fp32 blocked path and DOUBLE's plane path choose their outputs separately) with each
// interpolation (nearest has no gridGrad to compute; bicubic's taps are padded per tap).
TEST(GridSampler2DOutputMask, ChoosesTheOutputs) {
  const Modes modes[] = {{kBilinear, kReflection, false}, {kNearest, kBorder, true}, {kBicubic, kZeros, false},
                         {kBicubic, kReflection, true}};
  for (aclDataType dtype : kDTypes) {
    for (const Modes& m : modes) {
      const Problem p = MakeProblem({2, 3, 4, 5, 3, 4}, dtype, m.align_corners, 5000);
      DeviceProblem d(p, dtype);
      for (const MaskCase mc : {MaskCase{false, false, false}, MaskCase{true, true, false}, MaskCase{true, false, true},
                                MaskCase{true, false, false}, MaskCase{true, true, true}}) {
        SCOPED_TRACE(std::string(optest::DTypeName(dtype)) + " " + ModesName(m) + (mc.present ? "" : " null mask") +
                     " [" + (mc.input_grad ? "true" : "false") + ", " + (mc.grid_grad ? "true" : "false") + "]");
        DeviceTensor input_grad = DeviceTensor::Output(p.InputShape(), dtype, Layout::kPadded);
        DeviceTensor grid_grad = DeviceTensor::Output(p.GridShape(), dtype, Layout::kTransposed);
        const BoolArray mask({mc.input_grad, mc.grid_grad});
        ASSERT_EQ(RunBackward(d.grad_output.get(), d.input.get(), d.grid.get(), m, mc.present ? mask.get() : nullptr,
                              input_grad.get(), grid_grad.get()),
                  ACLNN_SUCCESS)
            << optest::RecentErrorMessage();
        const bool want_input_grad = mc.present && mc.input_grad;
        const bool want_grid_grad = mc.present && mc.grid_grad;
        if (want_input_grad) {
          ExpectInputGradMatches(input_grad.Read(), p, m, dtype);
        } else {
          ExpectAllNaN("inputGrad", input_grad.Read());
        }
        if (want_grid_grad) {
          ExpectGridGradMatches(grid_grad.Read(), p, m, dtype);
        } else {
          ExpectAllNaN("gridGrad", grid_grad.Read());
        }
        EXPECT_EQ(input_grad.CheckGuards(), "");
        EXPECT_EQ(grid_grad.CheckGuards(), "");
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------------------
// Exact coordinates. Where a sampled position is exactly a pixel or exactly on an edge, the taps, the weights and
// PyTorch's gradient conventions there (a clip's derivative is 0 on its limits, a reflection flips its sign) decide
// the result. The grids below are exact in every dtype and so are their unnormalized positions in any arithmetic,
// so the operator and the reference must take the same decisions: every dtype and mode, against the reference.

// Runs forward and backward on p and checks out, inputGrad and gridGrad against the reference.
void CheckAgainstReference(const Problem& p, const Modes& m, aclDataType dtype) {
  DeviceProblem d(p, dtype);
  DeviceTensor out = DeviceTensor::Output(p.OutShape(), dtype, Layout::kContiguous);
  ASSERT_EQ(RunForward(d.input.get(), d.grid.get(), m, out.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  ExpectForwardMatches(out.Read(), p, m, dtype);
  DeviceTensor input_grad = DeviceTensor::Output(p.InputShape(), dtype, Layout::kContiguous);
  DeviceTensor grid_grad = DeviceTensor::Output(p.GridShape(), dtype, Layout::kContiguous);
  const BoolArray both({true, true});
  ASSERT_EQ(
      RunBackward(d.grad_output.get(), d.input.get(), d.grid.get(), m, both.get(), input_grad.get(), grid_grad.get()),
      ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  ExpectInputGradMatches(input_grad.Read(), p, m, dtype);
  ExpectGridGradMatches(grid_grad.Read(), p, m, dtype);
  for (const DeviceTensor* t : {&out, &input_grad, &grid_grad}) EXPECT_EQ(t->CheckGuards(), "");
}

// The identity grid with alignCorners on a 5 x 9 input ((size - 1) a power of two: the grid values -1 + k / 2 and
// -1 + k / 4 are exact in every dtype): output pixel (h, w) samples input pixel (h, w) exactly. So in every mode
// out == input and inputGrad == gradOutput exactly (every other tap has weight exactly 0), and gridGrad is the
// derivative at a pixel (bilinear: the difference to the next pixel; on the last pixel, the padding's rule).
TEST(GridSampler2DExact, IdentityGridWithAlignCorners) {
  const ref::GridSamplerShape s = {2, 3, 5, 9, 5, 9};
  for (aclDataType dtype : kDTypes) {
    for (int interpolation = 0; interpolation < 3; ++interpolation) {
      for (int padding = 0; padding < 3; ++padding) {
        const Modes m{interpolation, padding, true};
        SCOPED_TRACE(std::string(optest::DTypeName(dtype)) + " " + ModesName(m));
        std::mt19937_64 rng(5200 + static_cast<uint64_t>(interpolation * 3 + padding));
        Problem p;
        p.shape = s;
        p.input = optest::RandomValues(rng, s.N * s.C * s.Hin * s.Win, -2.0, 2.0, dtype);
        p.grad_output = optest::RandomValues(rng, s.N * s.C * s.Hout * s.Wout, -1.0, 1.0, dtype);
        for (int64_t n = 0; n < s.N; ++n) {
          for (int64_t h = 0; h < s.Hout; ++h) {
            for (int64_t w = 0; w < s.Wout; ++w) {
              p.grid.push_back(-1.0 + 2.0 * static_cast<double>(w) / static_cast<double>(s.Win - 1));
              p.grid.push_back(-1.0 + 2.0 * static_cast<double>(h) / static_cast<double>(s.Hin - 1));
            }
          }
        }
        DeviceProblem d(p, dtype);
        DeviceTensor out = DeviceTensor::Output(p.OutShape(), dtype, Layout::kContiguous);
        ASSERT_EQ(RunForward(d.input.get(), d.grid.get(), m, out.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
        EXPECT_EQ(out.Read(), p.input) << "the identity grid must reproduce the input exactly";
        DeviceTensor input_grad = DeviceTensor::Output(p.InputShape(), dtype, Layout::kContiguous);
        DeviceTensor grid_grad = DeviceTensor::Output(p.GridShape(), dtype, Layout::kContiguous);
        const BoolArray both({true, true});
        ASSERT_EQ(RunBackward(d.grad_output.get(), d.input.get(), d.grid.get(), m, both.get(), input_grad.get(),
                              grid_grad.get()),
                  ACLNN_SUCCESS)
            << optest::RecentErrorMessage();
        EXPECT_EQ(input_grad.Read(), p.grad_output) << "the identity grid must pass gradOutput through exactly";
        ExpectGridGradMatches(grid_grad.Read(), p, m, dtype);
        CheckAgainstReference(p, m, dtype);
      }
    }
  }
}

// Grid values on and beyond the edges, exactly: every pair from {-3, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3} (the
// corners, the edges, the centre, and positions that reflection bounces once or twice, landing exactly on an edge
// or on the centre), on inputs whose unnormalized positions are exact (sizes 4 and 8 without alignCorners, 5 and 9
// with it), every dtype and mode.
TEST(GridSampler2DExact, GridOnAndBeyondTheEdges) {
  const double values[] = {-3, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3};
  const int64_t count = sizeof values / sizeof values[0];
  for (aclDataType dtype : kDTypes) {
    for (const Modes& m : AllModes()) {
      SCOPED_TRACE(std::string(optest::DTypeName(dtype)) + " " + ModesName(m));
      const ref::GridSamplerShape s = m.align_corners ? ref::GridSamplerShape{1, 2, 5, 9, count, count}
                                                      : ref::GridSamplerShape{1, 2, 4, 8, count, count};
      std::mt19937_64 rng(5300);
      Problem p;
      p.shape = s;
      p.input = optest::RandomValues(rng, s.N * s.C * s.Hin * s.Win, -2.0, 2.0, dtype);
      p.grad_output = optest::RandomValues(rng, s.N * s.C * s.Hout * s.Wout, -1.0, 1.0, dtype);
      for (int64_t i = 0; i < count; ++i) {
        for (int64_t j = 0; j < count; ++j) {
          p.grid.push_back(values[j]);
          p.grid.push_back(values[i]);
        }
      }
      CheckAgainstReference(p, m, dtype);
    }
  }
}

// Reflection that bounces many times: random grids in [-7, 7] (up to 7 reflections on each axis), kept away from
// the decision boundaries as the sweep's grids are, every dtype, interpolation and alignCorners (and the other
// paddings on the same far-out grids).
TEST(GridSampler2DFarGrids, ManyReflectionsMatchReference) {
  const ref::GridSamplerShape s = {2, 5, 6, 7, 9, 8};
  for (aclDataType dtype : kDTypes) {
    for (const Modes& m : AllModes()) {
      SCOPED_TRACE(std::string(optest::DTypeName(dtype)) + " " + ModesName(m));
      std::mt19937_64 rng(5400);
      Problem p;
      p.shape = s;
      p.input = optest::RandomValues(rng, s.N * s.C * s.Hin * s.Win, -2.0, 2.0, dtype);
      p.grid = RandomGrid(rng, s, dtype, m.align_corners, -7.0, 7.0);
      p.grad_output = optest::RandomValues(rng, s.N * s.C * s.Hout * s.Wout, -1.0, 1.0, dtype);
      CheckAgainstReference(p, m, dtype);
    }
  }
}

// More output pixels than one tile of every path: the fp32 blocked path's 256-pixel tiles, DOUBLE's 2048-pixel
// plane tiles (512 for bicubic), with rows that straddle tile ends; every dtype and mode.
class GridSamplerTiles : public testing::TestWithParam<aclDataType> {};

TEST_P(GridSamplerTiles, ManyTilesMatchReference) {
  const aclDataType dtype = GetParam();
  const ref::GridSamplerShape s = {2, 18, 12, 20, 47, 53};  // 2491 output pixels per image, C over two blocks
  uint64_t seed = 5500;
  for (const Modes& m : AllModes()) {
    SCOPED_TRACE(ModesName(m));
    CheckAgainstReference(MakeProblem(s, dtype, m.align_corners, ++seed), m, dtype);
  }
}

INSTANTIATE_TEST_SUITE_P(GridSampler2D, GridSamplerTiles, testing::ValuesIn(kDTypes),
                         [](const testing::TestParamInfo<aclDataType>& param_info) {
                           return std::string(optest::DTypeName(param_info.param));
                         });

// ------------------------------------------------------------------------------------------------------------
// Empty tensors: N, C, Hout or Wout of 0. Nothing is read; a chosen inputGrad of a non-empty input gets zeros, and
// so does a non-empty gridGrad when C = 0 (a sum over no channels).

TEST(GridSampler2DEmpty, ZeroSizedDims) {
  const ref::GridSamplerShape shapes[] = {
      {0, 3, 4, 5, 2, 3}, {2, 0, 4, 5, 2, 3}, {2, 3, 4, 5, 0, 3}, {2, 3, 4, 5, 3, 0}, {0, 0, 1, 1, 0, 0}};
  for (const ref::GridSamplerShape& s : shapes) {
    for (aclDataType dtype : {ACL_FLOAT, ACL_FLOAT16}) {
      for (int interpolation = 0; interpolation < 3; ++interpolation) {
        const Modes m{interpolation, kBorder, false};
        SCOPED_TRACE(ShapeName(s) + " " + optest::DTypeName(dtype) + " " + ModesName(m));
        const Problem p = MakeProblem(s, dtype, m.align_corners, 6000);
        DeviceProblem d(p, dtype, Layout::kPadded, Layout::kContiguous, Layout::kTransposed);
        DeviceTensor out = DeviceTensor::Output(p.OutShape(), dtype, Layout::kPadded);
        ASSERT_EQ(RunForward(d.input.get(), d.grid.get(), m, out.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
        EXPECT_EQ(out.CheckGuards(), "");

        DeviceTensor input_grad = DeviceTensor::Output(p.InputShape(), dtype, Layout::kPadded);
        DeviceTensor grid_grad = DeviceTensor::Output(p.GridShape(), dtype, Layout::kTransposed);
        const BoolArray both({true, true});
        ASSERT_EQ(RunBackward(d.grad_output.get(), d.input.get(), d.grid.get(), m, both.get(), input_grad.get(),
                              grid_grad.get()),
                  ACLNN_SUCCESS)
            << optest::RecentErrorMessage();
        ExpectAllZero("inputGrad", input_grad.Read());
        ExpectAllZero("gridGrad", grid_grad.Read());
        EXPECT_EQ(input_grad.CheckGuards(), "");
        EXPECT_EQ(grid_grad.CheckGuards(), "");
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------------------
// Nearest rounds half to even. The grids put source coordinates exactly on k + 0.5, which every arithmetic computes
// exactly here (sizes 4 and 5, grid values multiples of 1/4): align false, size 4: x = -1, -0.5, 0, 0.5, 1 map to
// -0.5, 0.5, 1.5, 2.5, 3.5 -> pixels 0 (-0.5 rounds to -0), 0, 2, 2, 4 (outside); align true, size 5: x = -0.75,
// -0.25, 0.25, 0.75 map to 0.5, 1.5, 2.5, 3.5 -> pixels 0, 2, 2, 4.

TEST(GridSampler2DNearest, RoundsHalfToEven) {
  for (aclDataType dtype : kDTypes) {
    for (bool align : {false, true}) {
      for (int padding = 0; padding < 3; ++padding) {
        const Modes m{kNearest, padding, align};
        SCOPED_TRACE(std::string(optest::DTypeName(dtype)) + " " + ModesName(m));
        const int64_t size = align ? 5 : 4;
        const std::vector<double> ties =
            align ? std::vector<double>{-0.75, -0.25, 0.25, 0.75} : std::vector<double>{-1, -0.5, 0, 0.5, 1};
        const int64_t count = static_cast<int64_t>(ties.size());
        Problem p;
        p.shape = {1, 2, size, size, count, count};
        std::mt19937_64 rng(7000);
        p.input = optest::RandomValues(rng, 2 * size * size, -2, 2, dtype);
        for (int64_t i = 0; i < count; ++i) {
          for (int64_t j = 0; j < count; ++j) {
            p.grid.push_back(ties[static_cast<size_t>(j)]);                // x
            p.grid.push_back(ties[static_cast<size_t>((i + j) % count)]);  // y
          }
        }
        p.grad_output = optest::RandomValues(rng, 2 * count * count, -1, 1, dtype);
        DeviceProblem d(p, dtype);
        DeviceTensor out = DeviceTensor::Output(p.OutShape(), dtype, Layout::kContiguous);
        ASSERT_EQ(RunForward(d.input.get(), d.grid.get(), m, out.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
        EXPECT_EQ(out.Read(), ReferenceForward(p, m)) << "nearest must read exactly the half-to-even pixel";
        DeviceTensor input_grad = DeviceTensor::Output(p.InputShape(), dtype, Layout::kContiguous);
        DeviceTensor grid_grad = DeviceTensor::Output(p.GridShape(), dtype, Layout::kContiguous);
        const BoolArray both({true, true});
        ASSERT_EQ(RunBackward(d.grad_output.get(), d.input.get(), d.grid.get(), m, both.get(), input_grad.get(),
                              grid_grad.get()),
                  ACLNN_SUCCESS)
            << optest::RecentErrorMessage();
        ExpectInputGradMatches(input_grad.Read(), p, m, dtype);
        ExpectAllZero("gridGrad", grid_grad.Read());
      }
    }
  }
}

// The spec's own sample (seed 002): bilinear, zeros, alignCorners false, a 5x8 ramp sampled on a 3x3 grid of
// {-1, 0, 1}, gradOutput all ones. The reference must agree with the operator, and the ramp makes values easy to
// reason about: out at (0, 0) reads the corner pixel value 1 with weight 1/4 (the other three corners are outside).
TEST(GridSampler2DSample, SeedExample) {
  Problem p;
  p.shape = {1, 1, 5, 8, 3, 3};
  for (int i = 1; i <= 40; ++i) p.input.push_back(i);
  p.grid = {-1, -1, 0, -1, 1, -1, -1, 0, 0, 0, 1, 0, -1, 1, 0, 1, 1, 1};
  p.grad_output.assign(9, 1.0);
  const Modes m{kBilinear, kZeros, false};
  DeviceProblem d(p, ACL_FLOAT);
  DeviceTensor out = DeviceTensor::Output(p.OutShape(), ACL_FLOAT, Layout::kContiguous);
  ASSERT_EQ(RunForward(d.input.get(), d.grid.get(), m, out.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  const std::vector<double> values = out.Read();
  EXPECT_EQ(values[0], 0.25);
  EXPECT_EQ(values[4], 20.5);  // centre: source (3.5, 2), halfway between pixels (row 2, cols 3 and 4) = 20, 21
  ExpectForwardMatches(values, p, m, ACL_FLOAT);
  DeviceTensor input_grad = DeviceTensor::Output(p.InputShape(), ACL_FLOAT, Layout::kContiguous);
  DeviceTensor grid_grad = DeviceTensor::Output(p.GridShape(), ACL_FLOAT, Layout::kContiguous);
  const BoolArray both({true, true});
  ASSERT_EQ(
      RunBackward(d.grad_output.get(), d.input.get(), d.grid.get(), m, both.get(), input_grad.get(), grid_grad.get()),
      ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  ExpectInputGradMatches(input_grad.Read(), p, m, ACL_FLOAT);
  ExpectGridGradMatches(grid_grad.Read(), p, m, ACL_FLOAT);
}

// ------------------------------------------------------------------------------------------------------------
// Non-finite and huge grid values in every mode. Each grid point gets a special value (NaN, +-Inf, +-1e30, rounded
// to the dtype) in x, in y or in both, or stays random. What must hold:
// - zeros padding: such points are far out of range: output 0, no inputGrad contribution, gridGrad 0 (the project's
//   decision; PyTorch 1.13 gives NaN for bilinear and bicubic there), compared with the reference.
// - border: +-Inf and +-1e30 clip to the edge (bicubic: +-1e30 is an integer, every tap clips to the edge) and are
//   compared with the reference. NaN, and +-Inf for bicubic, have no defined value ("determinate" is false): PyTorch
//   gives position 0 for bilinear / nearest and NaN for bicubic.
// - reflection: non-finite or huge (|coordinate| > 2^20 pixels, where the reflected position depends on the
//   arithmetic's precision) points have no defined value.
// Points without a defined value must give finite outputs bounded by the input (bilinear and nearest: max |input|;
// bicubic: 2 max |input|, the largest sum of |weights| being 1.375^2 < 2) and finite gridGrads; their inputGrad
// contributions go somewhere with at most their weight mass: per (n, c), the L1 distance between inputGrad and the
// reference computed without them is at most (weight mass) * sum of their |gradOutput|, plus the rounding bounds.

bool Determinate(double x, double y, const ref::GridSamplerShape& s, const Modes& m) {
  if (m.padding == kZeros) return true;
  if (std::isnan(x) || std::isnan(y)) return false;
  if (m.padding == kBorder) return m.interpolation != kBicubic || (std::isfinite(x) && std::isfinite(y));
  const double ux = Unnormalize(x, s.Win, m.align_corners), uy = Unnormalize(y, s.Hin, m.align_corners);
  return std::isfinite(ux) && std::isfinite(uy) && std::fabs(ux) < 0x1p20 && std::fabs(uy) < 0x1p20;
}

class GridSamplerNonFinite : public testing::TestWithParam<Modes> {};

TEST_P(GridSamplerNonFinite, NoUndefinedBehaviourAndDefinedValuesMatch) {
  const Modes m = GetParam();
  const ref::GridSamplerShape s = {2, 3, 4, 5, 5, 6};
  const double specials[] = {kNaN, kInf, -kInf, 1e30, -1e30};
  for (aclDataType dtype : kDTypes) {
    SCOPED_TRACE(optest::DTypeName(dtype));
    Problem p = MakeProblem(s, dtype, m.align_corners, 8000 + static_cast<uint64_t>(m.interpolation * 6 + m.padding));
    // Points 0..14 of each image: special value k % 5 in x (k / 5 == 0), y (== 1) or both (== 2).
    for (int64_t n = 0; n < s.N; ++n) {
      for (int64_t k = 0; k < 15; ++k) {
        const size_t gi = static_cast<size_t>((n * p.Points() + k + n) * 2);  // shifted per image
        const double v = optest::RoundToDType(specials[k % 5], dtype);
        if (k / 5 != 1) p.grid[gi] = v;
        if (k / 5 != 0) p.grid[gi + 1] = v * (k / 5 == 2 ? -1.0 : 1.0);
      }
    }
    std::vector<bool> point_determinate(static_cast<size_t>(s.N * p.Points()));
    for (size_t q = 0; q < point_determinate.size(); ++q) {
      point_determinate[q] = Determinate(p.grid[2 * q], p.grid[2 * q + 1], s, m);
    }
    double max_input = 0.0;
    for (double v : p.input) max_input = std::max(max_input, std::fabs(v));
    const double value_limit = (m.interpolation == kBicubic ? 2.0 : 1.0) * max_input * (1 + 1e-6);

    DeviceProblem d(p, dtype, Layout::kPadded, Layout::kPadded, Layout::kContiguous);
    DeviceTensor out = DeviceTensor::Output(p.OutShape(), dtype, Layout::kContiguous);
    ASSERT_EQ(RunForward(d.input.get(), d.grid.get(), m, out.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    const std::vector<double> out_values = out.Read();
    std::vector<bool> out_skip(out_values.size());
    for (size_t i = 0; i < out_values.size(); ++i) {
      const size_t q = static_cast<size_t>(static_cast<int64_t>(i) / (s.C * p.Points()) * p.Points() +
                                           static_cast<int64_t>(i) % p.Points());
      out_skip[i] = !point_determinate[q];
      if (out_skip[i]) {
        EXPECT_TRUE(std::fabs(out_values[i]) <= value_limit) << "out element " << i << " = " << out_values[i];
      }
    }
    const Bounds bounds = ErrorBounds(p, m, dtype);
    ExpectClose("out", out_values, ReferenceForward(p, m), bounds.out, dtype, &out_skip);
    EXPECT_EQ(out.CheckGuards(), "");

    DeviceTensor input_grad = DeviceTensor::Output(p.InputShape(), dtype, Layout::kTransposed);
    DeviceTensor grid_grad = DeviceTensor::Output(p.GridShape(), dtype, Layout::kPadded);
    const BoolArray both({true, true});
    ASSERT_EQ(
        RunBackward(d.grad_output.get(), d.input.get(), d.grid.get(), m, both.get(), input_grad.get(), grid_grad.get()),
        ACLNN_SUCCESS)
        << optest::RecentErrorMessage();
    EXPECT_EQ(input_grad.CheckGuards(), "");
    EXPECT_EQ(grid_grad.CheckGuards(), "");

    // gridGrad: defined points against the reference, the others finite.
    const std::vector<double> grid_grad_values = grid_grad.Read();
    std::vector<bool> grid_skip(grid_grad_values.size());
    for (size_t i = 0; i < grid_grad_values.size(); ++i) {
      grid_skip[i] = !point_determinate[i / 2];
      if (grid_skip[i]) {
        EXPECT_TRUE(std::isfinite(grid_grad_values[i])) << "gridGrad element " << i;
      }
    }
    const Gradients expected = ReferenceBackward(p, m);
    if (m.interpolation == kNearest) {
      ExpectAllZero("gridGrad", grid_grad_values);
    } else {
      ExpectClose("gridGrad", grid_grad_values, expected.grid_grad, bounds.grid_grad, dtype, &grid_skip);
    }

    // inputGrad: the reference without the undefined points (their gradOutput set to 0), per (n, c) in L1 with
    // the undefined points' weight mass as slack, and elementwise where an image has no undefined point.
    Problem defined_only = p;
    std::vector<double> undefined_mass(static_cast<size_t>(s.N * s.C), 0.0);
    for (size_t i = 0; i < p.grad_output.size(); ++i) {
      const size_t q = static_cast<size_t>(static_cast<int64_t>(i) / (s.C * p.Points()) * p.Points() +
                                           static_cast<int64_t>(i) % p.Points());
      if (!point_determinate[q]) {
        undefined_mass[i / static_cast<size_t>(p.Points())] +=
            std::fabs(p.grad_output[i]) * (m.interpolation == kBicubic ? 2.0 : 1.0);
        defined_only.grad_output[i] = 0.0;
      }
    }
    const std::vector<double> input_grad_values = input_grad.Read();
    const std::vector<double> defined_expected = ReferenceBackward(defined_only, m).input_grad;
    const Bounds defined_bounds = ErrorBounds(defined_only, m, dtype);
    const size_t pixels = static_cast<size_t>(s.Hin * s.Win);
    for (size_t image = 0; image < undefined_mass.size(); ++image) {
      double distance = 0.0, slack = undefined_mass[image];
      for (size_t k = image * pixels; k < (image + 1) * pixels; ++k) {
        EXPECT_TRUE(std::isfinite(input_grad_values[k])) << "inputGrad element " << k;
        distance += std::fabs(input_grad_values[k] - defined_expected[k]);
        slack += defined_bounds.input_grad[k] +
                 optest::UlpOf(std::max(std::fabs(defined_expected[k]), std::fabs(input_grad_values[k])), dtype) +
                 undefined_mass[image] * optest::EpsilonOf(dtype);
      }
      EXPECT_LE(distance, slack) << "inputGrad image " << image;
    }
    std::vector<bool> input_skip(input_grad_values.size());
    for (size_t k = 0; k < input_skip.size(); ++k) input_skip[k] = undefined_mass[k / pixels] > 0.0;
    ExpectClose("inputGrad", input_grad_values, defined_expected, defined_bounds.input_grad, dtype, &input_skip);
  }
}

INSTANTIATE_TEST_SUITE_P(GridSampler2D, GridSamplerNonFinite, testing::ValuesIn(AllModes()),
                         [](const testing::TestParamInfo<Modes>& param_info) { return ModesName(param_info.param); });

// ------------------------------------------------------------------------------------------------------------
// The backward against finite differences of the operator's own forward. L(input, grid) = sum(gradOutput *
// forward(input, grid)).
// - gridGrad: the central difference of L along a random grid direction v, (L(grid + h v) - L(grid - h v)) / 2h,
//   against sum(gridGrad * v). DOUBLE with h = 1e-6 (grid units): the truncation error is ~h^2 times third
//   derivatives of size ~10 (bicubic), the rounding ~1e-16 / h relative: both far below the 1e-7 tolerance relative
//   to sum |gridGrad * v|. Points stay 0.02 pixels from decision boundaries, far more than h * size.
// - inputGrad: L is linear in the input, so the central difference along a random input direction e is exact up to
//   rounding: against sum(inputGrad * e).
// FLOAT with h = 1e-3 (at most 0.0035 pixels here, inside the margin): tolerance 1e-3 (truncation ~h^2 * 10 is
// negligible; the fp32 forward's rounding, ~1e-5 absolute in L, against differences of ~0.1).

struct DifferenceSetup {
  aclDataType dtype;
  double step, tolerance;
};

double Loss(const Problem& p, const std::vector<double>& input, const std::vector<double>& grid, const Modes& m,
            aclDataType dtype) {
  DeviceTensor input_tensor(p.InputShape(), dtype, Layout::kContiguous, input);
  DeviceTensor grid_tensor(p.GridShape(), dtype, Layout::kContiguous, grid);
  DeviceTensor out = DeviceTensor::Output(p.OutShape(), dtype, Layout::kContiguous);
  EXPECT_EQ(RunForward(input_tensor.get(), grid_tensor.get(), m, out.get()), ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  const std::vector<double> values = out.Read();
  double sum = 0.0;
  for (size_t i = 0; i < values.size(); ++i) sum += p.grad_output[i] * values[i];
  return sum;
}

class GridSamplerGradient : public testing::TestWithParam<Modes> {};

TEST_P(GridSamplerGradient, BackwardMatchesDifferencesOfOperatorForward) {
  const Modes m = GetParam();
  for (const DifferenceSetup setup :
       {DifferenceSetup{ACL_DOUBLE, 1e-6, 1e-7}, DifferenceSetup{ACL_FLOAT, 1e-3, 1e-3}}) {
    const aclDataType dtype = setup.dtype;
    SCOPED_TRACE(optest::DTypeName(dtype));
    const ref::GridSamplerShape s = {2, 3, 5, 6, 4, 5};
    std::mt19937_64 rng(9000 + static_cast<uint64_t>(m.interpolation * 6 + m.padding * 2 + m.align_corners));
    Problem p;
    p.shape = s;
    p.input = optest::RandomValues(rng, s.N * s.C * s.Hin * s.Win, -2, 2, dtype);
    p.grad_output = optest::RandomValues(rng, s.N * s.C * s.Hout * s.Wout, -1, 1, dtype);
    // Directions: a grid direction v whose +-h steps stay inside the margin, an input direction e.
    const double margin = 0.02;
    p.grid = RandomGrid(rng, s, dtype, m.align_corners, -1.3, 1.3, margin);
    const std::vector<double> v = optest::RandomValues(rng, static_cast<int64_t>(p.grid.size()), -1, 1, dtype);
    const std::vector<double> e = optest::RandomValues(rng, static_cast<int64_t>(p.input.size()), -1, 1, dtype);

    DeviceProblem d(p, dtype);
    DeviceTensor input_grad = DeviceTensor::Output(p.InputShape(), dtype, Layout::kContiguous);
    DeviceTensor grid_grad = DeviceTensor::Output(p.GridShape(), dtype, Layout::kContiguous);
    const BoolArray both({true, true});
    ASSERT_EQ(
        RunBackward(d.grad_output.get(), d.input.get(), d.grid.get(), m, both.get(), input_grad.get(), grid_grad.get()),
        ACLNN_SUCCESS)
        << optest::RecentErrorMessage();

    // Grid direction, the steps rounded to the dtype (the difference uses the actual step taken).
    std::vector<double> grid_plus(p.grid.size()), grid_minus(p.grid.size());
    for (size_t i = 0; i < p.grid.size(); ++i) {
      grid_plus[i] = optest::RoundToDType(p.grid[i] + setup.step * v[i], dtype);
      grid_minus[i] = optest::RoundToDType(p.grid[i] - setup.step * v[i], dtype);
    }
    const double grid_difference = Loss(p, p.input, grid_plus, m, dtype) - Loss(p, p.input, grid_minus, m, dtype);
    const std::vector<double> gg = grid_grad.Read();
    double predicted = 0.0, magnitude = 0.0;
    for (size_t i = 0; i < gg.size(); ++i) {
      predicted += gg[i] * (grid_plus[i] - grid_minus[i]);
      magnitude += std::fabs(gg[i] * (grid_plus[i] - grid_minus[i]));
    }
    EXPECT_GT(magnitude, 0.0);
    EXPECT_NEAR(grid_difference, predicted, setup.tolerance * magnitude)
        << "gridGrad: difference " << grid_difference << ", predicted " << predicted;

    // Input direction.
    std::vector<double> input_plus(p.input.size()), input_minus(p.input.size());
    for (size_t i = 0; i < p.input.size(); ++i) {
      input_plus[i] = optest::RoundToDType(p.input[i] + setup.step * e[i], dtype);
      input_minus[i] = optest::RoundToDType(p.input[i] - setup.step * e[i], dtype);
    }
    const double input_difference = Loss(p, input_plus, p.grid, m, dtype) - Loss(p, input_minus, p.grid, m, dtype);
    const std::vector<double> ig = input_grad.Read();
    predicted = 0.0;
    magnitude = 0.0;
    for (size_t i = 0; i < ig.size(); ++i) {
      predicted += ig[i] * (input_plus[i] - input_minus[i]);
      magnitude += std::fabs(ig[i] * (input_plus[i] - input_minus[i]));
    }
    EXPECT_GT(magnitude, 0.0);
    EXPECT_NEAR(input_difference, predicted, setup.tolerance * magnitude)
        << "inputGrad: difference " << input_difference << ", predicted " << predicted;
  }
}

std::vector<Modes> DifferentiableModes() {
  std::vector<Modes> modes;
  for (const Modes& m : AllModes()) {
    if (m.interpolation != kNearest) modes.push_back(m);
  }
  return modes;
}

INSTANTIATE_TEST_SUITE_P(GridSampler2D, GridSamplerGradient, testing::ValuesIn(DifferentiableModes()),
                         [](const testing::TestParamInfo<Modes>& param_info) { return ModesName(param_info.param); });

// ------------------------------------------------------------------------------------------------------------
// Determinism: bit-identical run to run, and for any thread count (a child process per ACLNN_NUM_THREADS, which is
// read once per process). The problem is large enough for the kernels to split the work across threads.

const ref::GridSamplerShape kDeterminismShape = {2, 16, 24, 20, 22, 26};

// Forward out, inputGrad and gridGrad bytes of the determinism problem, for every dtype and interpolation.
std::vector<uint8_t> DeterminismBytes() {
  std::vector<uint8_t> bytes;
  for (aclDataType dtype : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE}) {
    for (const Modes m :
         {Modes{kBilinear, kZeros, false}, Modes{kBicubic, kReflection, true}, Modes{kNearest, kBorder, false}}) {
      const Problem p = MakeProblem(kDeterminismShape, dtype, m.align_corners, 9500);
      DeviceProblem d(p, dtype, Layout::kContiguous, Layout::kPadded);
      DeviceTensor out = DeviceTensor::Output(p.OutShape(), dtype, Layout::kContiguous);
      EXPECT_EQ(RunForward(d.input.get(), d.grid.get(), m, out.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
      DeviceTensor input_grad = DeviceTensor::Output(p.InputShape(), dtype, Layout::kContiguous);
      DeviceTensor grid_grad = DeviceTensor::Output(p.GridShape(), dtype, Layout::kContiguous);
      const BoolArray both({true, true});
      EXPECT_EQ(RunBackward(d.grad_output.get(), d.input.get(), d.grid.get(), m, both.get(), input_grad.get(),
                            grid_grad.get()),
                ACLNN_SUCCESS)
          << optest::RecentErrorMessage();
      const std::vector<uint8_t> part = optest::ConcatenatedBytes({&out, &input_grad, &grid_grad});
      bytes.insert(bytes.end(), part.begin(), part.end());
    }
  }
  return bytes;
}

TEST(GridSampler2DDeterminism, BitIdenticalRunToRun) { optest::ExpectBitIdenticalRunToRun(DeterminismBytes); }

// Computes the determinism bytes, checks the FLOAT bilinear forward and backward against the reference, and, when
// PACL_TEST_OUTPUT_FILE is set (by BitIdenticalForAnyThreadCount and BitIdenticalOnEverySimdTarget, in a child
// process), writes the bytes there.
TEST(GridSampler2DDeterminism, OutputForComparison) {
  const std::vector<uint8_t> bytes = DeterminismBytes();
  const Modes m{kBilinear, kZeros, false};
  CheckAgainstReference(MakeProblem(kDeterminismShape, ACL_FLOAT, m.align_corners, 9500), m, ACL_FLOAT);
  optest::WriteOutputForParent(bytes);
}

TEST(GridSampler2DDeterminism, BitIdenticalForAnyThreadCount) {
  optest::ExpectBitIdenticalForThreadCounts("GridSampler2DDeterminism.OutputForComparison", {2, 3, 8},
                                            DeterminismBytes);
}

// The same bits whatever instruction set the kernels run on (pacl/canonical_math-inl.h): every SIMD target this CPU
// has, each in a child process pinned with ACLNN_SIMD_TARGET.
TEST(GridSampler2DDeterminism, BitIdenticalOnEverySimdTarget) {
  optest::ExpectBitIdenticalOnEverySimdTarget("GridSampler2DDeterminism.OutputForComparison");
}

// A repeatable executor runs again on new data in the same tensors.
TEST(GridSampler2DExecutor, RepeatableBackwardRunsAgainOnNewData) {
  const Modes m{kBicubic, kBorder, true};
  const Problem first = MakeProblem({2, 3, 5, 4, 3, 6}, ACL_FLOAT, m.align_corners, 9700);
  const Problem second = MakeProblem({2, 3, 5, 4, 3, 6}, ACL_FLOAT, m.align_corners, 9701);
  DeviceProblem d(first, ACL_FLOAT);
  DeviceTensor input_grad = DeviceTensor::Output(first.InputShape(), ACL_FLOAT, Layout::kContiguous);
  DeviceTensor grid_grad = DeviceTensor::Output(first.GridShape(), ACL_FLOAT, Layout::kContiguous);
  const BoolArray both({true, true});
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  const opcall::GridSampler2DBackward call{d.grad_output.get(), d.input.get(), d.grid.get(), m.interpolation,
                                           m.padding,           m.align_corners, both.get(), input_grad.get(),
                                           grid_grad.get()};
  ASSERT_EQ(opcall::GetWorkspaceSize(call, &workspace_size, &executor), ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(executor), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  const optest::DeviceWorkspace workspace(workspace_size);
  ASSERT_TRUE(workspace.ok());
  optest::TestStream stream;
  for (const Problem* p : {&first, &second}) {
    d.input.Write(p->input);
    d.grid.Write(p->grid);
    d.grad_output.Write(p->grad_output);
    ASSERT_EQ(aclnnGridSampler2DBackward(workspace.get(), workspace_size, executor, stream.get()), ACLNN_SUCCESS)
        << optest::RecentErrorMessage();
    ASSERT_EQ(aclrtSynchronizeStream(stream.get()), ACL_SUCCESS);
    ExpectInputGradMatches(input_grad.Read(), *p, m, ACL_FLOAT);
    ExpectGridGradMatches(grid_grad.Read(), *p, m, ACL_FLOAT);
  }
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
}

}  // namespace
