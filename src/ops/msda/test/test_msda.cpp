// aclnnMultiScaleDeformableAttnFunction (forward) and aclnnMultiScaleDeformableAttentionGrad against the float64
// reference (tests/reference/msda_reference.h, itself checked against the pure-PyTorch composite by
// tests/parity/msda_parity.py) and against finite differences of the operator's own forward.
//
// Tolerances (spec section 3), per element: |actual - round(reference)| <= ulp + E, where ulp is one unit in the
// last place of the output dtype and E bounds the error of the kernel's fp32 arithmetic (for every dtype) before the
// output's single rounding, derived from the magnitudes of the terms (see ErrorBounds). With E = 0 this is "within
// 1 ulp of the rounded reference"; E only matters where cancellation makes a result small compared with its terms.
// FLOAT results must also meet the spec's relative 2-norm error <= 1e-5.
//
// Decision boundaries: which corners a point reads (floor) and whether it is inside (-1 < x < W, -1 < y < H) change
// at integer pixel coordinates. There a rounding error of the kernel's fp32 coordinate legitimately flips the
// decision, so random locations are drawn (in the test dtype, so the reference sees exactly what the device holds)
// until each point is "determinate" (PointIsDeterminate): its pixel coordinates are more than the fp32 error plus
// kBoundaryMargin away from every integer, or fp32 computes them exactly (fp16 / bf16 locations on small levels often
// land exactly on integers: those test the boundaries too), or no corner near it can be valid at all (e.g. a huge
// level whose keys lie far past nk). ExactPixelEdges puts points on every kind of boundary on purpose.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_multi_scale_deformable_attention_grad.h"
#include "aclnnop/aclnn_multi_scale_deformable_attn_function.h"
#include "msda/test/msda_calls.h"
#include "op_test_util.h"
#include "msda/test/msda_reference.h"

namespace {

using optest::DeviceTensor;
using optest::ExpectAllZero;
using optest::ExpectClose;
using optest::ExpectGuardsIntact;
using optest::Layout;

// DOUBLE (and channel counts outside CANN's multiples of 8 up to 256) run on the CPU's generic kernels: an
// extension beyond CANN, in double arithmetic.
constexpr aclDataType kDTypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE};
constexpr double kU = 0x1p-24;            // unit roundoff of the kernels' fp32 arithmetic
constexpr double kBoundaryMargin = 1e-3;  // pixels, on top of the fp32 coordinate error
constexpr double kLocationLow = -0.1;     // locations are drawn from [kLocationLow, kLocationHigh]: inside, on
constexpr double kLocationHigh = 1.1;     // the border and outside of every level
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

__extension__ typedef __int128 Int128;

// ------------------------------------------------------------------------------------------------------------
// Problems

struct LevelSpec {
  int64_t height, width, start;
};

struct Problem {
  ref::MsdaShape s;
  std::vector<int64_t> spatial_shape;                      // (nl, 2) as (H, W)
  std::vector<int64_t> level_start;                        // (nl)
  std::vector<double> value, location, attn, grad_output;  // exactly representable in the test dtype

  std::vector<int64_t> ValueShape() const { return {s.bs, s.nk, s.nh, s.c}; }
  std::vector<int64_t> SpatialShapeShape() const { return {s.nl, 2}; }
  std::vector<int64_t> LevelStartShape() const { return {s.nl}; }
  std::vector<int64_t> LocationShape() const { return {s.bs, s.nq, s.nh, s.nl, s.np, 2}; }
  std::vector<int64_t> AttnShape() const { return {s.bs, s.nq, s.nh, s.nl, s.np}; }
  std::vector<int64_t> OutShape() const { return {s.bs, s.nq, s.nh * s.c}; }
  std::vector<int64_t> GradOutputShape(int rank) const {
    return rank == 4 ? std::vector<int64_t>{s.bs, s.nq, s.nh, s.c} : OutShape();
  }
  int64_t Points() const { return s.bs * s.nq * s.nh * s.nl * s.np; }
  int64_t LevelOf(int64_t point) const { return (point / s.np) % s.nl; }
  int64_t Height(int64_t level) const { return spatial_shape[static_cast<size_t>(2 * level)]; }
  int64_t Width(int64_t level) const { return spatial_shape[static_cast<size_t>(2 * level + 1)]; }
  int64_t Start(int64_t level) const { return level_start[static_cast<size_t>(level)]; }
  ref::MsdaPoint SamplePoint(int64_t point) const {
    const int64_t l = LevelOf(point);
    return ref::MsdaSamplePoint(location[static_cast<size_t>(2 * point)], location[static_cast<size_t>(2 * point + 1)],
                                Height(l), Width(l), Start(l), s.nk);
  }
};

// Sizes of a well-formed problem: levels (H, W) stored one after another, nk = sum of H * W.
struct Sizes {
  int64_t bs, nh, c, nq, np;
  std::vector<std::pair<int64_t, int64_t>> levels;
};

std::string SizesName(const Sizes& z) {
  std::string name = "bs=" + std::to_string(z.bs) + " nh=" + std::to_string(z.nh) + " c=" + std::to_string(z.c) +
                     " nq=" + std::to_string(z.nq) + " np=" + std::to_string(z.np) + " levels=";
  for (const auto& [h, w] : z.levels) name += "(" + std::to_string(h) + "," + std::to_string(w) + ")";
  return name;
}

std::vector<LevelSpec> StackedLevels(const Sizes& z, int64_t* nk) {
  std::vector<LevelSpec> levels;
  int64_t start = 0;
  for (const auto& [h, w] : z.levels) {
    levels.push_back({h, w, start});
    start += h * w;
  }
  *nk = start;
  return levels;
}

// The floor of a finite pixel coordinate range clamped to [0, size - 1] as int64 bounds; false when empty.
bool ClampedRange(double low, double high, int64_t size, int64_t* first, int64_t* last) {
  if (size <= 0) return false;
  const double lo = std::max(std::floor(low), 0.0);
  const double hi = std::floor(high) + 1.0;
  const double top = static_cast<double>(size - 1);
  if (lo > top || hi < 0.0 || lo > hi) return false;
  *first = static_cast<int64_t>(lo);  // lo <= top <= 2^63 - 1 rounded: lo < 2^63 here as size - 1 < 2^63
  *last = hi >= top ? size - 1 : static_cast<int64_t>(hi);
  return *first <= *last;
}

// The fp32 error of a pixel coordinate computed as loc * W - 0.5 (W converted to fp32): a few roundings of values of
// magnitude <= |coordinate| + 1.
double CoordinateError(double coordinate, double u = kU) { return 8.0 * u * (std::fabs(coordinate) + 1.0); }

// DOUBLE, and more than 256 channels, have only the CPU's generic kernels: on another device such a call gets
// 161002 (no implementation), so those cases run on the CPU alone.
bool CpuOnlyCase(aclDataType dtype, int64_t channels = 8) {
  return !optest::DeviceIsCpu() && (dtype == ACL_DOUBLE || channels > 256);
}
std::string CpuOnlyCaseReason() { return optest::CpuOnlyReason("DOUBLE and c > 256 are CPU extensions"); }

// The unit roundoff of the kernels' arithmetic for dtype: fp32, or fp64 for DOUBLE.
double UnitRoundoff(aclDataType dtype) { return dtype == ACL_DOUBLE ? 0x1p-53 : kU; }

// Whether loc * size - 0.5 comes out exact in fp32 (size and both steps representable).
bool ExactInFloat(double loc, int64_t size) {
  const double scaled = loc * static_cast<double>(size);
  auto representable = [](double v) {
    return std::fabs(v) < 0x1p100 && static_cast<double>(static_cast<float>(v)) == v;
  };
  return representable(static_cast<double>(size)) && representable(scaled) && representable(scaled - 0.5);
}

// Whether every fp32 evaluation of the point's coordinates gives the reference's result (see the top comment).
// allow_exact: also a point whose coordinates fp32 computes exactly, even on an integer (a decision boundary).
bool PointIsDeterminate(double loc_x, double loc_y, int64_t height, int64_t width, int64_t start, int64_t nk,
                        double margin, bool allow_exact = true) {
  const double x = loc_x * static_cast<double>(width) - 0.5, y = loc_y * static_cast<double>(height) - 0.5;
  if (!std::isfinite(x) || !std::isfinite(y)) return true;  // outside in any arithmetic (NaN, or Inf in fp32 too)
  if (allow_exact && ExactInFloat(loc_x, width) && ExactInFloat(loc_y, height)) return true;
  const double ex = margin + CoordinateError(x), ey = margin + CoordinateError(y);
  // Surely outside.
  if (x + ex <= -1.0 || x - ex >= static_cast<double>(width) || y + ey <= -1.0 ||
      y - ey >= static_cast<double>(height)) {
    return true;
  }
  // The same cell (and the same inside decision: -1, W and H are integers) for any coordinate in the window.
  if (std::floor(x - ex) == std::floor(x + ex) && std::floor(y - ey) == std::floor(y + ey)) return true;
  // Otherwise only if no corner the window can reach is valid: keys grow with the row and the column.
  int64_t col_first = 0, col_last = 0, row_first = 0, row_last = 0;
  if (!ClampedRange(x - ex, x + ex, width, &col_first, &col_last) ||
      !ClampedRange(y - ey, y + ey, height, &row_first, &row_last)) {
    return true;
  }
  const Int128 smallest = static_cast<Int128>(start) + static_cast<Int128>(row_first) * width + col_first;
  const Int128 largest = static_cast<Int128>(start) + static_cast<Int128>(row_last) * width + col_last;
  return smallest >= nk || largest < 0;
}

// Locations uniform in [lo, hi], rounded to dtype, each point drawn again until it is determinate (with
// allow_exact false: until it is at least margin pixels plus the fp32 error from every integer coordinate).
void DrawLocations(std::mt19937_64& rng, Problem* p, aclDataType dtype, double margin = kBoundaryMargin,
                   bool allow_exact = true, double lo = kLocationLow, double hi = kLocationHigh) {
  std::uniform_real_distribution<double> uniform(lo, hi);
  p->location.assign(static_cast<size_t>(2 * p->Points()), 0.0);
  for (int64_t point = 0; point < p->Points(); ++point) {
    const int64_t l = p->LevelOf(point);
    double x = 0, y = 0;
    int attempts = 0;
    do {
      x = optest::RoundToDType(uniform(rng), dtype);
      y = optest::RoundToDType(uniform(rng), dtype);
      ASSERT_LT(++attempts, 10000) << "cannot draw a determinate location for level " << l;
    } while (!PointIsDeterminate(x, y, p->Height(l), p->Width(l), p->Start(l), p->s.nk, margin, allow_exact));
    p->location[static_cast<size_t>(2 * point)] = x;
    p->location[static_cast<size_t>(2 * point + 1)] = y;
  }
}

Problem MakeProblemWithLevels(int64_t bs, int64_t nk, int64_t nh, int64_t c, int64_t nq, int64_t np,
                              const std::vector<LevelSpec>& levels, aclDataType dtype, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Problem p;
  p.s = {bs, nk, nh, c, static_cast<int64_t>(levels.size()), nq, np};
  for (const LevelSpec& level : levels) {
    p.spatial_shape.push_back(level.height);
    p.spatial_shape.push_back(level.width);
    p.level_start.push_back(level.start);
  }
  p.value = optest::RandomValues(rng, bs * nk * nh * c, -2.0, 2.0, dtype);
  p.attn = optest::RandomValues(rng, p.Points(), -0.5, 1.0, dtype);
  p.grad_output = optest::RandomValues(rng, bs * nq * nh * c, -1.0, 1.0, dtype);
  DrawLocations(rng, &p, dtype);
  return p;
}

Problem MakeProblem(const Sizes& z, aclDataType dtype, uint64_t seed) {
  int64_t nk = 0;
  const std::vector<LevelSpec> levels = StackedLevels(z, &nk);
  return MakeProblemWithLevels(z.bs, nk, z.nh, z.c, z.nq, z.np, levels, dtype, seed);
}

std::vector<double> ReferenceForward(const Problem& p) {
  std::vector<double> out(static_cast<size_t>(optest::NumElements(p.OutShape())));
  ref::MsdaForward(p.value.data(), p.spatial_shape.data(), p.level_start.data(), p.location.data(), p.attn.data(), p.s,
                   out.data());
  return out;
}

struct Gradients {
  std::vector<double> value, location, attn;
};

Gradients ReferenceBackward(const Problem& p) {
  Gradients g;
  g.value.resize(p.value.size());
  g.location.resize(p.location.size());
  g.attn.resize(p.attn.size());
  ref::MsdaBackward(p.value.data(), p.spatial_shape.data(), p.level_start.data(), p.location.data(), p.attn.data(),
                    p.grad_output.data(), p.s, g.value.data(), g.location.data(), g.attn.data());
  return g;
}

// ------------------------------------------------------------------------------------------------------------
// Error bounds of the kernels' arithmetic (unit roundoff u = 2^-24 in fp32, 2^-53 in fp64 for DOUBLE; inputs are
// exact in it).
//
// A pixel coordinate errs by e = CoordinateError (see there); given the determinate cell, a bilinear weight
// (products of (1 - l) and l, |d weight / d coordinate| <= 1) then errs by at most e_x + e_y + 8u, and a weight
// derivative (+-(1 - l) or +-l) by at most e_other + 2u. A sum of k products of a few factors errs by at most
// (k + 4) u times the sum of the products' magnitudes, in any order and grouping.
struct Bounds {
  std::vector<double> out, value, location, attn;
};

Bounds ErrorBounds(const Problem& p, double u) {
  const ref::MsdaShape& s = p.s;
  Bounds b;
  b.out.assign(static_cast<size_t>(s.bs * s.nq * s.nh * s.c), 0.0);
  b.value.assign(p.value.size(), 0.0);
  b.location.assign(p.location.size(), 0.0);
  b.attn.assign(p.attn.size(), 0.0);
  std::vector<double> out_magnitude(b.out.size(), 0.0);
  std::vector<double> value_magnitude(b.value.size(), 0.0), value_terms(b.value.size(), 0.0);
  for (int64_t point = 0; point < p.Points(); ++point) {
    const ref::MsdaPoint pt = p.SamplePoint(point);
    if (pt.corners.empty()) continue;
    const int64_t l = p.LevelOf(point);
    const int64_t head_row = point / (s.nl * s.np);  // (b, q, h)
    const int64_t b_index = head_row / (s.nq * s.nh), h = head_row % s.nh;
    const double ex = CoordinateError(pt.x, u), ey = CoordinateError(pt.y, u);
    const double weight_error = ex + ey + 8.0 * u;
    const double a = p.attn[static_cast<size_t>(point)];
    const size_t out_row = static_cast<size_t>(head_row * s.c);
    double attn_part = 0, attn_magnitude = 0, x_part = 0, x_magnitude = 0, y_part = 0, y_magnitude = 0;
    for (const ref::MsdaCorner& corner : pt.corners) {
      const size_t value_row = static_cast<size_t>(((b_index * s.nk + corner.key) * s.nh + h) * s.c);
      for (int64_t ch = 0; ch < s.c; ++ch) {
        const double v = p.value[value_row + static_cast<size_t>(ch)];
        const double g = p.grad_output[out_row + static_cast<size_t>(ch)];
        b.out[out_row + static_cast<size_t>(ch)] += std::fabs(a * v) * weight_error;
        out_magnitude[out_row + static_cast<size_t>(ch)] += std::fabs(a * corner.weight * v);
        attn_part += std::fabs(g * v) * weight_error;
        attn_magnitude += std::fabs(g * corner.weight * v);
        x_part += std::fabs(g * v) * (ey + 2.0 * u);
        x_magnitude += std::fabs(g * v * corner.dweight_dx);
        y_part += std::fabs(g * v) * (ex + 2.0 * u);
        y_magnitude += std::fabs(g * v * corner.dweight_dy);
        b.value[value_row + static_cast<size_t>(ch)] += std::fabs(a * g) * weight_error;
        value_magnitude[value_row + static_cast<size_t>(ch)] += std::fabs(corner.weight * a * g);
        value_terms[value_row + static_cast<size_t>(ch)] += 1.0;
      }
    }
    const double terms = static_cast<double>(pt.corners.size() * static_cast<size_t>(s.c));
    b.attn[static_cast<size_t>(point)] = attn_part + (terms + 4.0) * u * attn_magnitude;
    b.location[static_cast<size_t>(2 * point)] =
        std::fabs(static_cast<double>(p.Width(l)) * a) * (x_part + (terms + 6.0) * u * x_magnitude);
    b.location[static_cast<size_t>(2 * point + 1)] =
        std::fabs(static_cast<double>(p.Height(l)) * a) * (y_part + (terms + 6.0) * u * y_magnitude);
  }
  const double out_terms = static_cast<double>(s.nl * s.np * 4);
  for (size_t i = 0; i < b.out.size(); ++i) b.out[i] += (out_terms + 4.0) * u * out_magnitude[i];
  for (size_t i = 0; i < b.value.size(); ++i) b.value[i] += (value_terms[i] + 4.0) * u * value_magnitude[i];
  return b;
}

void ExpectForwardMatches(const std::vector<double>& actual, const Problem& p, aclDataType dtype) {
  ExpectClose("output", actual, ReferenceForward(p), ErrorBounds(p, UnitRoundoff(dtype)).out, dtype);
}

// The gradients against the reference; a point without a valid corner must get exactly zero gradients.
void ExpectBackwardMatches(const std::vector<double>& grad_value, const std::vector<double>& grad_location,
                           const std::vector<double>& grad_attn, const Problem& p, aclDataType dtype) {
  const Gradients expected = ReferenceBackward(p);
  const Bounds bounds = ErrorBounds(p, UnitRoundoff(dtype));
  ExpectClose("gradValue", grad_value, expected.value, bounds.value, dtype);
  ExpectClose("gradLocation", grad_location, expected.location, bounds.location, dtype);
  ExpectClose("gradAttnWeight", grad_attn, expected.attn, bounds.attn, dtype);
  if (grad_location.size() != p.location.size() || grad_attn.size() != p.attn.size()) return;
  int failures = 0;
  for (int64_t point = 0; point < p.Points() && failures < 5; ++point) {
    if (!p.SamplePoint(point).corners.empty()) continue;
    const size_t i = static_cast<size_t>(point);
    if (grad_attn[i] != 0.0 || grad_location[2 * i] != 0.0 || grad_location[2 * i + 1] != 0.0) {
      ++failures;
      ADD_FAILURE() << "point " << point << " (location " << p.location[2 * i] << ", " << p.location[2 * i + 1]
                    << ") has no valid corner but gradients " << grad_location[2 * i] << ", "
                    << grad_location[2 * i + 1] << ", " << grad_attn[i];
    }
  }
}

// ------------------------------------------------------------------------------------------------------------
// Device tensors and running the operators

enum Operand {
  kValue,
  kSpatialShape,
  kLevelStart,
  kLocation,
  kAttn,
  kGradOutputOrOut,
  kGradValue,
  kGradLocation,
  kGradAttn,
  kOperandCount
};
using Layouts = std::array<Layout, kOperandCount>;

Layouts AllLayouts(Layout layout) {
  Layouts layouts;
  layouts.fill(layout);
  return layouts;
}

// The dtypes and the gradOutput rank of one call.
struct CallConfig {
  aclDataType dtype = ACL_FLOAT;
  aclDataType spatial_dtype = ACL_INT64;
  aclDataType start_dtype = ACL_INT64;
  int grad_rank = 3;
};

std::string ConfigName(const CallConfig& setup) {
  return std::string(optest::DTypeName(setup.dtype)) + "_grad" + std::to_string(setup.grad_rank) + "D_" +
         optest::DTypeName(setup.spatial_dtype) + "_" + optest::DTypeName(setup.start_dtype);
}

std::vector<double> ToDoubles(const std::vector<int64_t>& values) {
  return std::vector<double>(values.begin(), values.end());
}

struct DeviceProblem {
  DeviceTensor value, spatial_shape, level_start, location, attn, grad_output;
  DeviceProblem(const Problem& p, const CallConfig& setup, const Layouts& layouts = AllLayouts(Layout::kContiguous))
      : value(p.ValueShape(), setup.dtype, layouts[kValue], p.value),
        spatial_shape(p.SpatialShapeShape(), setup.spatial_dtype, layouts[kSpatialShape], ToDoubles(p.spatial_shape)),
        level_start(p.LevelStartShape(), setup.start_dtype, layouts[kLevelStart], ToDoubles(p.level_start)),
        location(p.LocationShape(), setup.dtype, layouts[kLocation], p.location),
        attn(p.AttnShape(), setup.dtype, layouts[kAttn], p.attn),
        grad_output(p.GradOutputShape(setup.grad_rank), setup.dtype, layouts[kGradOutputOrOut], p.grad_output) {}

  std::vector<const DeviceTensor*> Inputs() const {
    return {&value, &spatial_shape, &level_start, &location, &attn, &grad_output};
  }
};

// The operators' calls on d's inputs.
opcall::MultiScaleDeformableAttnFunction ForwardCall(const DeviceProblem& d, aclTensor* out) {
  return {d.value.get(), d.spatial_shape.get(), d.level_start.get(), d.location.get(), d.attn.get(), out};
}
opcall::MultiScaleDeformableAttentionGrad BackwardCall(const DeviceProblem& d, aclTensor* grad_value,
                                                       aclTensor* grad_location, aclTensor* grad_attn) {
  return {d.value.get(),       d.spatial_shape.get(), d.level_start.get(), d.location.get(), d.attn.get(),
          d.grad_output.get(), grad_value,            grad_location,       grad_attn};
}

aclnnStatus RunForward(const DeviceProblem& d, aclTensor* out, aclrtStream stream = nullptr) {
  return opcall::Run(ForwardCall(d, out), stream);
}

aclnnStatus RunBackward(const DeviceProblem& d, aclTensor* grad_value, aclTensor* grad_location, aclTensor* grad_attn,
                        aclrtStream stream = nullptr) {
  return opcall::Run(BackwardCall(d, grad_value, grad_location, grad_attn), stream);
}

struct DeviceGradients {
  DeviceTensor value, location, attn;
  DeviceGradients(const Problem& p, aclDataType dtype, const Layouts& layouts = AllLayouts(Layout::kContiguous))
      : value(DeviceTensor::Output(p.ValueShape(), dtype, layouts[kGradValue])),
        location(DeviceTensor::Output(p.LocationShape(), dtype, layouts[kGradLocation])),
        attn(DeviceTensor::Output(p.AttnShape(), dtype, layouts[kGradAttn])) {}
};

// Phase 1 of the backward on d into grads: the executor (null, with a test failure, when it fails), and its
// workspace size.
aclOpExecutor* BackwardExecutor(const DeviceProblem& d, const DeviceGradients& grads, uint64_t* workspace_size) {
  aclOpExecutor* executor = nullptr;
  const aclnnStatus status = opcall::GetWorkspaceSize(
      BackwardCall(d, grads.value.get(), grads.location.get(), grads.attn.get()), workspace_size, &executor);
  EXPECT_EQ(status, ACLNN_SUCCESS) << optest::RecentErrorMessage();
  return status == ACLNN_SUCCESS ? executor : nullptr;
}

// The forward on p against the reference, guards of every tensor checked; the inputs must stay as they were.
void CheckForward(const Problem& p, const CallConfig& setup, const Layouts& layouts = AllLayouts(Layout::kContiguous),
                  aclrtStream stream = nullptr) {
  DeviceProblem d(p, setup, layouts);
  std::vector<std::vector<uint8_t>> inputs_before;
  for (const DeviceTensor* t : d.Inputs()) inputs_before.push_back(t->ReadBytes());
  // grad_rank picks the output's form too: (bs, nq, nh * c) or (bs, nq, nh, c).
  DeviceTensor out = DeviceTensor::Output(p.GradOutputShape(setup.grad_rank), setup.dtype, layouts[kGradOutputOrOut]);
  ASSERT_EQ(RunForward(d, out.get(), stream), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  ExpectForwardMatches(out.Read(), p, setup.dtype);
  ExpectGuardsIntact({&out});
  ExpectGuardsIntact(d.Inputs());
  for (size_t i = 0; i < inputs_before.size(); ++i) EXPECT_EQ(d.Inputs()[i]->ReadBytes(), inputs_before[i]) << i;
}

void CheckBackward(const Problem& p, const CallConfig& setup, const Layouts& layouts = AllLayouts(Layout::kContiguous),
                   aclrtStream stream = nullptr) {
  DeviceProblem d(p, setup, layouts);
  std::vector<std::vector<uint8_t>> inputs_before;
  for (const DeviceTensor* t : d.Inputs()) inputs_before.push_back(t->ReadBytes());
  DeviceGradients grads(p, setup.dtype, layouts);
  ASSERT_EQ(RunBackward(d, grads.value.get(), grads.location.get(), grads.attn.get(), stream), ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  ExpectBackwardMatches(grads.value.Read(), grads.location.Read(), grads.attn.Read(), p, setup.dtype);
  ExpectGuardsIntact({&grads.value, &grads.location, &grads.attn});
  ExpectGuardsIntact(d.Inputs());
  for (size_t i = 0; i < inputs_before.size(); ++i) EXPECT_EQ(d.Inputs()[i]->ReadBytes(), inputs_before[i]) << i;
}

// ------------------------------------------------------------------------------------------------------------
// Sweep: every dtype x gradOutput rank x index dtypes (spatialShape, levelStartIndex), forward and backward, on
// shapes with one 1x1 level (every point of a query hits the same key), levels of 1-pixel rows and columns, several
// levels of different sizes, c from 8 to 40 (not a multiple of 16 or 32), c = 4, 30, 71 and 1025 (outside CANN's
// rule: the generic kernels) and repeated keys (nq * points >> nk).

const Sizes kSweepSizes[] = {
    {1, 1, 8, 3, 1, {{1, 1}}},          {2, 2, 8, 5, 2, {{4, 6}, {2, 3}, {1, 5}, {3, 1}}},
    {1, 3, 16, 4, 3, {{5, 7}, {2, 2}}}, {2, 1, 24, 3, 4, {{6, 5}, {3, 3}, {1, 1}}},
    {1, 2, 40, 2, 2, {{7, 3}}},         {1, 4, 8, 7, 1, {{2, 9}, {9, 2}, {3, 4}}},
    // Channel counts beyond CANN's rule (the generic kernels): mmcv's test sizes.
    {1, 2, 4, 3, 2, {{3, 4}, {2, 2}}},  {2, 1, 30, 2, 2, {{4, 3}}},
    {1, 1, 71, 3, 1, {{2, 5}, {1, 1}}}, {1, 1, 1025, 2, 2, {{3, 2}}},
};

std::vector<CallConfig> SweepConfigs() {
  std::vector<CallConfig> setups;
  for (aclDataType dtype : kDTypes) {
    for (int rank : {3, 4}) {
      for (aclDataType spatial : {ACL_INT32, ACL_INT64}) {
        for (aclDataType start : {ACL_INT32, ACL_INT64}) setups.push_back({dtype, spatial, start, rank});
      }
    }
  }
  return setups;
}

uint64_t ConfigSeed(const CallConfig& setup) {
  return 1000 + static_cast<uint64_t>(setup.dtype) * 100 + static_cast<uint64_t>(setup.grad_rank) * 10 +
         (setup.spatial_dtype == ACL_INT64 ? 2 : 0) + (setup.start_dtype == ACL_INT64 ? 1 : 0);
}

class MsdaSweep : public testing::TestWithParam<CallConfig> {};

TEST_P(MsdaSweep, ForwardAndBackwardMatchReference) {
  const CallConfig setup = GetParam();
  if (CpuOnlyCase(setup.dtype)) GTEST_SKIP() << CpuOnlyCaseReason();
  uint64_t seed = ConfigSeed(setup) * 100;
  optest::TestStream stream;
  for (const Sizes& z : kSweepSizes) {
    SCOPED_TRACE(SizesName(z));
    ++seed;
    if (CpuOnlyCase(setup.dtype, z.c)) continue;
    const Problem p = MakeProblem(z, setup.dtype, seed);
    CheckForward(p, setup, AllLayouts(Layout::kContiguous), stream.get());
    CheckBackward(p, setup, AllLayouts(Layout::kContiguous), stream.get());
  }
}

INSTANTIATE_TEST_SUITE_P(MultiScaleDeformableAttention, MsdaSweep, testing::ValuesIn(SweepConfigs()),
                         [](const testing::TestParamInfo<CallConfig>& param_info) {
                           return ConfigName(param_info.param);
                         });

// ------------------------------------------------------------------------------------------------------------
// Layouts: each tensor (and all at once) transposed (last-dim stride != 1; for spatialShape (nl, 2) that is a
// column-major view), padded (an offset and gaps after every dim), channels-last (dim 1 innermost) or, for value,
// location, attnWeight and gradOutput, broadcast (a zero stride along the batch), inputs and outputs. gradOutput's
// rank and the index dtypes rotate across the cases.

const char* OperandName(int operand, bool forward) {
  switch (operand) {
    case kValue:
      return "value";
    case kSpatialShape:
      return "spatialShape";
    case kLevelStart:
      return "levelStartIndex";
    case kLocation:
      return "location";
    case kAttn:
      return "attnWeight";
    case kGradOutputOrOut:
      return forward ? "output" : "gradOutput";
    case kGradValue:
      return "gradValue";
    case kGradLocation:
      return "gradLocation";
    case kGradAttn:
      return "gradAttnWeight";
    default:
      return "all";
  }
}

const Sizes kLayoutSizes = {2, 2, 16, 4, 2, {{3, 5}, {2, 2}, {1, 3}}};

void CheckLayouts(aclDataType dtype, bool forward) {
  if (CpuOnlyCase(dtype)) GTEST_SKIP() << CpuOnlyCaseReason();
  int case_index = 0;
  for (int operand = 0; operand <= kOperandCount; ++operand) {
    if (forward && operand >= kGradValue && operand < kOperandCount) continue;
    // Outputs (and "all") cannot be broadcast; spatialShape and levelStartIndex are not (one level's size or start
    // for all would be another problem, not another layout).
    const bool may_broadcast = operand == kValue || operand == kLocation || operand == kAttn ||
                               (!forward && operand == kGradOutputOrOut);
    for (Layout layout : optest::kInputLayouts) {
      if (layout == Layout::kBroadcast && !may_broadcast) continue;
      // rank < 3: the same as contiguous
      if ((operand == kLevelStart || operand == kSpatialShape) && layout == Layout::kChannelsLast) continue;
      if (operand == kLevelStart && layout == Layout::kTransposed) continue;  // 1-D: the same as contiguous
      SCOPED_TRACE(std::string(OperandName(operand, forward)) + " " + optest::LayoutName(layout));
      Layouts layouts = AllLayouts(Layout::kContiguous);
      if (operand == kOperandCount) {
        layouts.fill(layout);
      } else {
        layouts[static_cast<size_t>(operand)] = layout;
      }
      CallConfig setup;
      setup.dtype = dtype;
      setup.grad_rank = case_index % 2 == 0 ? 3 : 4;
      setup.spatial_dtype = (case_index / 2) % 2 == 0 ? ACL_INT64 : ACL_INT32;
      setup.start_dtype = (case_index / 4) % 2 == 0 ? ACL_INT32 : ACL_INT64;
      Problem p = MakeProblem(kLayoutSizes, dtype, 3000 + static_cast<uint64_t>(case_index));
      p.value = optest::AsStored(p.value, p.ValueShape(), layouts[kValue]);
      p.location = optest::AsStored(p.location, p.LocationShape(), layouts[kLocation]);
      p.attn = optest::AsStored(p.attn, p.AttnShape(), layouts[kAttn]);
      p.grad_output = optest::AsStored(p.grad_output, p.GradOutputShape(setup.grad_rank), layouts[kGradOutputOrOut]);
      if (forward) {
        CheckForward(p, setup, layouts);
      } else {
        CheckBackward(p, setup, layouts);
      }
      ++case_index;
    }
  }
}

class MsdaLayouts : public testing::TestWithParam<aclDataType> {};

TEST_P(MsdaLayouts, ForwardMatchesReference) { CheckLayouts(GetParam(), true); }

TEST_P(MsdaLayouts, BackwardMatchesReference) { CheckLayouts(GetParam(), false); }

INSTANTIATE_TEST_SUITE_P(MultiScaleDeformableAttention, MsdaLayouts, testing::ValuesIn(kDTypes),
                         [](const testing::TestParamInfo<aclDataType>& param_info) {
                           return std::string(optest::DTypeName(param_info.param));
                         });

// ------------------------------------------------------------------------------------------------------------
// The backward against central differences of the operator's own forward (FLOAT). L = sum(gradOutput * forward).
// The forward is bilinear in (x, y) inside a cell and linear in value and attnWeight, so a central difference along
// a direction is exact up to rounding as long as no point leaves its cell: points stay 0.02 pixels from every
// integer coordinate, and a location step moves a point by at most 0.005 pixels. What remains is the fp32
// rounding of L (~1e-7 of its terms), far below the 1e-4 tolerance relative to sum |gradient * step| (which the
// steps' signs make equal to the predicted difference).

double Loss(const Problem& p, const CallConfig& setup) {
  DeviceProblem d(p, setup);
  DeviceTensor out = DeviceTensor::Output(p.OutShape(), setup.dtype, Layout::kContiguous);
  EXPECT_EQ(RunForward(d, out.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  const std::vector<double> values = out.Read();
  double sum = 0.0;
  for (size_t i = 0; i < values.size(); ++i) sum += p.grad_output[i] * values[i];
  return sum;
}

// Checks sum(gradient * (plus - minus)) against L(plus) - L(minus), where `member` of the problem is varied.
void ExpectDirectionalDerivative(const char* what, const Problem& p, const CallConfig& setup,
                                 std::vector<double> Problem::*member, const std::vector<double>& plus,
                                 const std::vector<double>& minus, const std::vector<double>& gradient,
                                 double tolerance) {
  Problem p_plus = p, p_minus = p;
  p_plus.*member = plus;
  p_minus.*member = minus;
  const double difference = Loss(p_plus, setup) - Loss(p_minus, setup);
  double predicted = 0.0, magnitude = 0.0;
  for (size_t i = 0; i < gradient.size(); ++i) {
    predicted += gradient[i] * (plus[i] - minus[i]);
    magnitude += std::fabs(gradient[i] * (plus[i] - minus[i]));
  }
  EXPECT_GT(magnitude, 0.0) << what;
  EXPECT_NEAR(difference, predicted, tolerance * magnitude)
      << what << ": difference " << difference << ", predicted " << predicted;
}

// (gradOutput rank, dtype). DOUBLE (the generic kernels, fp64 throughout) is held to 1e-9 instead of 1e-4, and
// with 12 channels (not a multiple of 8), as mmcv's gradcheck runs it.
class MsdaGradient : public testing::TestWithParam<std::tuple<int, aclDataType>> {};

TEST_P(MsdaGradient, BackwardMatchesDifferencesOfOperatorForward) {
  CallConfig setup;
  setup.grad_rank = std::get<0>(GetParam());
  setup.dtype = std::get<1>(GetParam());
  if (CpuOnlyCase(setup.dtype)) GTEST_SKIP() << CpuOnlyCaseReason();
  const bool fp64 = setup.dtype == ACL_DOUBLE;
  const double tolerance = fp64 ? 1e-9 : 1e-4;
  const Sizes z = {2, 2, fp64 ? 12 : 8, 6, 3, {{6, 8}, {3, 4}, {2, 1}}};
  std::mt19937_64 rng(9000 + static_cast<uint64_t>(setup.grad_rank));
  Problem p = MakeProblem(z, setup.dtype, 9100 + static_cast<uint64_t>(setup.grad_rank));
  DrawLocations(rng, &p, setup.dtype, 0.02, false);

  DeviceProblem d(p, setup);
  DeviceGradients grads(p, setup.dtype);
  ASSERT_EQ(RunBackward(d, grads.value.get(), grads.location.get(), grads.attn.get()), ACLNN_SUCCESS)
      << optest::RecentErrorMessage();

  // Each direction has random step sizes with the signs of the operator's gradient, so that the terms of
  // sum(gradient * step) do not cancel and the 1e-4 tolerance is relative to the derivative itself. (Any direction
  // tests the gradient: a wrong element still changes the prediction but not the difference.)
  std::uniform_real_distribution<double> step_size(0.5, 1.0);
  auto signed_step = [&](double gradient, double scale) { return (gradient < 0 ? -scale : scale) * step_size(rng); };
  // Location: each coordinate moves by at most 0.005 pixels in its level.
  const std::vector<double> grad_location = grads.location.Read();
  std::vector<double> plus(p.location.size()), minus(p.location.size());
  for (size_t i = 0; i < p.location.size(); ++i) {
    const int64_t l = p.LevelOf(static_cast<int64_t>(i / 2));
    const double size = static_cast<double>(i % 2 == 0 ? p.Width(l) : p.Height(l));
    const double step = signed_step(grad_location[i], 0.005 / size);
    plus[i] = optest::RoundToDType(p.location[i] + step, setup.dtype);
    minus[i] = optest::RoundToDType(p.location[i] - step, setup.dtype);
  }
  ExpectDirectionalDerivative("gradLocation", p, setup, &Problem::location, plus, minus, grad_location, tolerance);

  // attnWeight and value: steps of at most 1e-3.
  for (auto [what, member, gradient] : {std::make_tuple("gradAttnWeight", &Problem::attn, grads.attn.Read()),
                                        std::make_tuple("gradValue", &Problem::value, grads.value.Read())}) {
    const std::vector<double>& base = p.*member;
    std::vector<double> up(base.size()), down(base.size());
    for (size_t i = 0; i < base.size(); ++i) {
      const double step = signed_step(gradient[i], 1e-3);
      up[i] = optest::RoundToDType(base[i] + step, setup.dtype);
      down[i] = optest::RoundToDType(base[i] - step, setup.dtype);
    }
    ExpectDirectionalDerivative(what, p, setup, member, up, down, gradient, tolerance);
  }
}

INSTANTIATE_TEST_SUITE_P(MultiScaleDeformableAttention, MsdaGradient,
                         testing::Values(std::make_tuple(3, ACL_FLOAT), std::make_tuple(4, ACL_FLOAT),
                                         std::make_tuple(3, ACL_DOUBLE)),
                         [](const testing::TestParamInfo<std::tuple<int, aclDataType>>& param_info) {
                           return "grad" + std::to_string(std::get<0>(param_info.param)) + "D_" +
                                  optest::DTypeName(std::get<1>(param_info.param));
                         });

// ------------------------------------------------------------------------------------------------------------
// A hand-computed example (independent of the reference: it pins the (x, y) order of location and the pixel
// convention x = loc_x * W - 0.5). One level of H = 2, W = 3, value[key] = key + 1 + ch / 8 (c = 8), attnWeight 1.

TEST(MsdaSample, HandComputedValues) {
  Problem p;
  p.s = {1, 6, 1, 8, 1, 3, 1};
  p.spatial_shape = {2, 3};
  p.level_start = {0};
  for (int key = 0; key < 6; ++key) {
    for (int ch = 0; ch < 8; ++ch) p.value.push_back(key + 1 + ch / 8.0);
  }
  // Query 0: x = 0.5 * 3 - 0.5 = 1, y = 0.25 * 2 - 0.5 = 0: exactly pixel (row 0, col 1), key 1.
  // Query 1: x = 0.75 * 3 - 0.5 = 1.75, y = 0.5 * 2 - 0.5 = 0.5: rows 0-1, cols 1-2 with weights
  //          (0.5 * 0.25, 0.5 * 0.75, 0.5 * 0.25, 0.5 * 0.75) on keys 1, 2, 4, 5.
  // Query 2: x = 0 - 0.5 = -0.5, y = 0 - 0.5 = -0.5: only the corner (0, 0) is inside, weight 0.25.
  p.location = {0.5, 0.25, 0.75, 0.5, 0.0, 0.0};
  p.attn = {1.0, 1.0, 1.0};
  p.grad_output.assign(24, 1.0);
  const std::vector<double> expected_first = {2.0, 2.125, 2.25, 2.375, 2.5, 2.625, 2.75, 2.875};
  std::vector<double> expected(24);
  for (int ch = 0; ch < 8; ++ch) {
    const double frac = ch / 8.0;
    expected[static_cast<size_t>(ch)] = expected_first[static_cast<size_t>(ch)];
    expected[static_cast<size_t>(8 + ch)] =
        0.125 * (2 + frac) + 0.375 * (3 + frac) + 0.125 * (5 + frac) + 0.375 * (6 + frac);
    expected[static_cast<size_t>(16 + ch)] = 0.25 * (1 + frac);
  }
  EXPECT_EQ(ReferenceForward(p), expected) << "the reference disagrees with the hand computation";
  CallConfig setup;
  DeviceProblem d(p, setup);
  DeviceTensor out = DeviceTensor::Output(p.OutShape(), ACL_FLOAT, Layout::kContiguous);
  ASSERT_EQ(RunForward(d, out.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  EXPECT_EQ(out.Read(), expected);
  // gradAttnWeight = sum over channels of the samples; gradLocation of query 0: with gradOutput 1,
  // d out / d x = (value[key 2] - value[key 1]) = 1 per channel (the cell right of x = 1), times W = 3 and 8
  // channels: 24; d / d y = (value[key 4] - value[key 1]) = 3 per channel, times H = 2 and 8 channels: 48.
  DeviceGradients grads(p, ACL_FLOAT);
  ASSERT_EQ(RunBackward(d, grads.value.get(), grads.location.get(), grads.attn.get()), ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  const std::vector<double> grad_location = grads.location.Read();
  EXPECT_EQ(grad_location[0], 24.0);
  EXPECT_EQ(grad_location[1], 48.0);
  const Gradients reference = ReferenceBackward(p);
  EXPECT_EQ(reference.location[0], 24.0);
  EXPECT_EQ(reference.location[1], 48.0);
  ExpectBackwardMatches(grads.value.Read(), grad_location, grads.attn.Read(), p, ACL_FLOAT);
}

// ------------------------------------------------------------------------------------------------------------
// Exact pixel edges: locations k / 64 map to pixel coordinates that every arithmetic computes exactly for the
// levels W, H in {1, 2, 4, 8, 16} (and fp16 / bf16 hold k / 64 for |k| <= 72), so points land exactly on -1 (outside:
// the rule is strict), on -0.5 (half the corner weights in the zero padding), on integers (lx = 0: the cell to the
// right / below is used, with one-sided derivatives), on W - 1 and on W (outside). No margin is needed: the operator
// must agree with the reference on every one of them.

TEST(MsdaBoundaries, ExactPixelEdges) {
  const std::vector<LevelSpec> levels = {{8, 4, 0}, {2, 16, 32}, {1, 1, 64}, {4, 2, 57}};
  const int64_t nk = 65;  // the last level overlaps the others and runs past nk: keys >= 65 are padding
  for (aclDataType dtype : kDTypes) {
    if (CpuOnlyCase(dtype)) continue;  // DOUBLE: a CPU extension
    for (int rank : {3, 4}) {
      SCOPED_TRACE(std::string(optest::DTypeName(dtype)) + " gradOutput " + std::to_string(rank) + "-D");
      Problem p = MakeProblemWithLevels(2, nk, 2, 8, 9, 5, levels, dtype, 4000 + static_cast<uint64_t>(rank));
      std::mt19937_64 rng(4100);
      std::uniform_int_distribution<int> k_dist(-8, 72);
      for (double& v : p.location) v = k_dist(rng) / 64.0;
      // The edges of the first level (H = 8, W = 4: x = k / 16 - 0.5, y = k / 8 - 0.5) for sure, points 0 to 4
      // (np = 5, all in level 0): x = -1, x = W, y = -1, y = H, and (x, y) = (W - 1, 0).
      const int edge_k[5][2] = {{-8, 20}, {72, 20}, {30, -4}, {30, 68}, {56, 4}};
      for (size_t point = 0; point < 5; ++point) {
        p.location[2 * point] = edge_k[point][0] / 64.0;
        p.location[2 * point + 1] = edge_k[point][1] / 64.0;
      }
      CallConfig setup;
      setup.dtype = dtype;
      setup.grad_rank = rank;
      CheckForward(p, setup);
      CheckBackward(p, setup);
    }
  }
}

// ------------------------------------------------------------------------------------------------------------
// Empty problems: bs, nq or nk of 0 succeed; outputs that have elements get zeros (gradValue when nq = 0; output,
// gradLocation and gradAttnWeight when nk = 0, where every corner is padding whatever spatialShape says).

TEST(MsdaEmpty, ZeroSizedDims) {
  struct EmptyCase {
    int64_t bs, nq, nk;
  };
  const std::vector<LevelSpec> levels = {{2, 3, 0}, {1, 2, 6}};  // consistent with nk = 8 only
  for (const EmptyCase e :
       {EmptyCase{0, 3, 8}, EmptyCase{2, 0, 8}, EmptyCase{2, 3, 0}, EmptyCase{0, 0, 0}, EmptyCase{1, 0, 0}}) {
    for (aclDataType dtype : kDTypes) {
      if (CpuOnlyCase(dtype)) continue;  // DOUBLE: a CPU extension
      for (int rank : {3, 4}) {
        SCOPED_TRACE("bs=" + std::to_string(e.bs) + " nq=" + std::to_string(e.nq) + " nk=" + std::to_string(e.nk) +
                     " " + optest::DTypeName(dtype) + " gradOutput " + std::to_string(rank) + "-D");
        const Problem p = MakeProblemWithLevels(e.bs, e.nk, 2, 8, e.nq, 3, levels, dtype, 6000);
        CallConfig setup;
        setup.dtype = dtype;
        setup.grad_rank = rank;
        setup.spatial_dtype = rank == 3 ? ACL_INT32 : ACL_INT64;
        Layouts layouts = AllLayouts(Layout::kPadded);
        layouts[kGradLocation] = Layout::kTransposed;
        DeviceProblem d(p, setup, layouts);
        DeviceTensor out = DeviceTensor::Output(p.OutShape(), dtype, Layout::kPadded);
        ASSERT_EQ(RunForward(d, out.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
        ExpectAllZero("output", out.Read());
        DeviceGradients grads(p, dtype, layouts);
        ASSERT_EQ(RunBackward(d, grads.value.get(), grads.location.get(), grads.attn.get()), ACLNN_SUCCESS)
            << optest::RecentErrorMessage();
        ExpectAllZero("gradValue", grads.value.Read());
        ExpectAllZero("gradLocation", grads.location.Read());
        ExpectAllZero("gradAttnWeight", grads.attn.Read());
        ExpectGuardsIntact({&out, &grads.value, &grads.location, &grads.attn});
        ExpectGuardsIntact(d.Inputs());
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------------------
// Hostile data: spatialShape and levelStartIndex are device data the kernels must survive whatever they hold
// (negative, zero, huge, past nk), and locations may be NaN, +-Inf or huge. Every result must equal the reference
// (which applies the spec's memory-safety rule exactly), every guard must stay intact, and points with no valid corner
// must get exactly zero gradients. Under ASan (CI) an out-of-bounds access fails the run.

constexpr int64_t kInt32Max = 2147483647;
constexpr int64_t kInt32Min = -2147483647 - 1;
constexpr int64_t kTwoTo62 = int64_t{1} << 62;
constexpr int64_t kNear2To63 = 9000000000000000000;  // exactly representable as a double (the harness's input form)

struct HostileSet {
  const char* name;
  bool needs_int64_shape, needs_int64_start;
  std::vector<LevelSpec> levels;
};

const int64_t kHostileNk = 30;

std::vector<HostileSet> HostileSets() {
  return {
      // Consistent levels (the kernels' fast path) with the special locations below.
      {"consistent_levels", false, false, {{3, 4, 0}, {2, 5, 12}, {1, 1, 22}, {2, 3, 24}}},
      {"negative_and_zero_sizes",
       false,
       false,
       {{3, 4, 0}, {-3, 4, 12}, {3, -4, 0}, {0, 5, 0}, {4, 0, 3}, {-1, -1, 0}}},
      {"huge_int32_sizes",
       false,
       false,
       {{1065353216, 3, 0}, {2, 1065353216, 1}, {kInt32Max, kInt32Max, 0}, {kInt32Min, 5, 0}, {1, kInt32Max, 29}}},
      {"starts_outside",
       false,
       false,
       {{3, 3, kInt32Max}, {3, 3, kInt32Min}, {4, 5, -7}, {2, 2, 30}, {2, 2, 31}, {3, 4, 25}, {5, 6, 0}}},
      {"huge_int64_sizes",
       true,
       false,
       {{kTwoTo62, kTwoTo62, 0},
        {kTwoTo62, 3, 0},
        {3, kTwoTo62, 2},
        {kNear2To63, 1, 0},
        {1, kNear2To63, 29},
        {-kTwoTo62, -kTwoTo62, 0}}},
      {"huge_int64_starts",
       false,
       true,
       {{4, 4, kTwoTo62}, {4, 4, -kTwoTo62}, {5, 5, kNear2To63}, {5, 5, -kNear2To63}, {3, 3, 1}}},
      {"huge_int64_both",
       true,
       true,
       {{kTwoTo62, 2, -kTwoTo62}, {2, kTwoTo62, -kTwoTo62}, {kTwoTo62, kTwoTo62, -kNear2To63}, {6, 5, 0}}},
  };
}

// Sets some locations to special values (0 and 1 map to the pixel coordinates -0.5 and W - 0.5; NaN, +-Inf and
// +-1e30 are outside); those that are not determinate are drawn again at random.
void AddSpecialLocations(std::mt19937_64& rng, Problem* p, aclDataType dtype) {
  const double specials[] = {0.0, 1.0, kNaN, kInf, -kInf, 1e30, -1e30, 0.5, -0.0};
  std::uniform_int_distribution<int> which(0, static_cast<int>(std::size(specials)) - 1);
  std::uniform_int_distribution<int> coordinate(0, 3);  // x, y, both, neither
  std::uniform_real_distribution<double> uniform(kLocationLow, kLocationHigh);
  for (int64_t point = 0; point < p->Points(); ++point) {
    const size_t i = static_cast<size_t>(2 * point);
    const int c = coordinate(rng);
    double x = p->location[i], y = p->location[i + 1];
    if (c == 0 || c == 2) x = optest::RoundToDType(specials[which(rng)], dtype);
    if (c == 1 || c == 2) y = optest::RoundToDType(specials[which(rng)], dtype);
    const int64_t l = p->LevelOf(point);
    for (int attempts = 0; !PointIsDeterminate(x, y, p->Height(l), p->Width(l), p->Start(l), p->s.nk, kBoundaryMargin);
         ++attempts) {
      x = attempts < 1000 ? optest::RoundToDType(uniform(rng), dtype) : kNaN;
      y = optest::RoundToDType(uniform(rng), dtype);
    }
    p->location[i] = x;
    p->location[i + 1] = y;
  }
}

class MsdaHostile : public testing::TestWithParam<aclDataType> {};

TEST_P(MsdaHostile, SpatialShapeLevelStartAndLocationsMatchReference) {
  const aclDataType dtype = GetParam();
  if (CpuOnlyCase(dtype)) GTEST_SKIP() << CpuOnlyCaseReason();
  uint64_t seed = 7000 + static_cast<uint64_t>(dtype) * 100;
  int64_t contributing = 0;
  for (const HostileSet& set : HostileSets()) {
    for (aclDataType spatial : {ACL_INT32, ACL_INT64}) {
      for (aclDataType start : {ACL_INT32, ACL_INT64}) {
        if ((set.needs_int64_shape && spatial != ACL_INT64) || (set.needs_int64_start && start != ACL_INT64)) {
          continue;
        }
        SCOPED_TRACE(std::string(set.name) + " " + optest::DTypeName(spatial) + " " + optest::DTypeName(start));
        Problem p = MakeProblemWithLevels(2, kHostileNk, 2, 8, 6, 3, set.levels, dtype, ++seed);
        std::mt19937_64 rng(seed);
        AddSpecialLocations(rng, &p, dtype);
        for (int64_t point = 0; point < p.Points(); ++point) {
          contributing += p.SamplePoint(point).corners.empty() ? 0 : 1;
        }
        CallConfig setup;
        setup.dtype = dtype;
        setup.spatial_dtype = spatial;
        setup.start_dtype = start;
        setup.grad_rank = spatial == start ? 3 : 4;
        Layouts layouts = AllLayouts(Layout::kPadded);
        layouts[kValue] = Layout::kContiguous;  // value's guards sit right next to its first and last keys
        CheckForward(p, setup, layouts);
        CheckBackward(p, setup, layouts);
      }
    }
  }
  EXPECT_GT(contributing, 100) << "the hostile sets should still have points that read valid corners";
}

// Points that read valid corners of hostile levels only through the exact-zero location (x or y = -0.5): e.g. a
// level 2^62 high whose row 0 is the only one within nk, a level whose start is negative so that only its last keys
// are valid, and a 2^62 x 2^62 level where start + yy * W + xx only lands in [0, nk) if computed with wrapping
// 64-bit arithmetic (it must not: the exact value is far past nk).
TEST_P(MsdaHostile, ExactZeroLocationsOnHugeLevels) {
  const aclDataType dtype = GetParam();
  if (CpuOnlyCase(dtype)) GTEST_SKIP() << CpuOnlyCaseReason();
  const std::vector<LevelSpec> levels = {{kTwoTo62, 3, 0}, {3, kTwoTo62, 4},        {1065353216, 2, 10},
                                         {4, 4, -12},      {kTwoTo62, kTwoTo62, 0}, {4, 4, 28}};
  Problem p = MakeProblemWithLevels(1, kHostileNk, 2, 8, 4, 2, levels, dtype, 7500);
  std::mt19937_64 rng(7501);
  std::uniform_int_distribution<int> pick(0, 5);
  const double choices[] = {0.0, 0.5, 0.25, 1.0, 0.75, -0.0};
  for (double& v : p.location) v = choices[pick(rng)];
  // Point 8 is in level 4 (2^62 x 2^62): x = -0.5 (col 0), y = 0.5 * 2^62 - 0.5: row 2^61 - 1 or 2^61, key
  // 2^61 * 2^62 = 2^123 past nk; with wrapping int64 arithmetic it would be 0 (or 2^62 * (2^61 - 1) mod 2^64).
  p.location[16] = 0.0;
  p.location[17] = 0.5;
  for (int64_t point = 0; point < p.Points(); ++point) {
    const int64_t l = p.LevelOf(point);
    ASSERT_TRUE(PointIsDeterminate(p.location[static_cast<size_t>(2 * point)],
                                   p.location[static_cast<size_t>(2 * point + 1)], p.Height(l), p.Width(l), p.Start(l),
                                   p.s.nk, kBoundaryMargin))
        << "point " << point;
  }
  for (int rank : {3, 4}) {
    CallConfig setup;
    setup.dtype = dtype;
    setup.grad_rank = rank;
    setup.start_dtype = ACL_INT32;
    SCOPED_TRACE(ConfigName(setup));
    CheckForward(p, setup);
    CheckBackward(p, setup);
  }
}

// A point inside its map whose corners' keys all fall outside [0, nk) (levels inconsistent with nk) contributes
// nothing, so its gradients are exactly 0 whatever its attention weight: also NaN, +-Inf or one whose product with
// the map's width overflows (the spec's rule for points with no valid corner).
TEST_P(MsdaHostile, NoValidCornerGivesZeroGradientsForAnyAttentionWeight) {
  const aclDataType dtype = GetParam();
  if (CpuOnlyCase(dtype)) GTEST_SKIP() << CpuOnlyCaseReason();
  // Level 0 lies past nk, level 1 before 0, level 2 is 2^62 wide past nk; level 3 is valid (contributions).
  const std::vector<LevelSpec> levels = {{3, 3, kHostileNk}, {2, 4, -20}, {2, kTwoTo62, 40}, {3, 4, 10}};
  Problem p = MakeProblemWithLevels(2, kHostileNk, 2, 8, 5, 3, levels, dtype, 7600);
  const double weights[] = {kNaN, kInf, -kInf, optest::RoundToDType(3e38, dtype)};
  int64_t cornerless = 0;
  for (int64_t point = 0; point < p.Points(); ++point) {
    if (!p.SamplePoint(point).corners.empty()) continue;
    p.attn[static_cast<size_t>(point)] = weights[cornerless++ % 4];
  }
  ASSERT_GT(cornerless, 40);
  CallConfig setup;
  setup.dtype = dtype;
  setup.spatial_dtype = ACL_INT64;
  setup.start_dtype = ACL_INT64;
  CheckForward(p, setup);
  CheckBackward(p, setup);
}

INSTANTIATE_TEST_SUITE_P(MultiScaleDeformableAttention, MsdaHostile, testing::ValuesIn(kDTypes),
                         [](const testing::TestParamInfo<aclDataType>& param_info) {
                           return std::string(optest::DTypeName(param_info.param));
                         });

// ------------------------------------------------------------------------------------------------------------
// The largest allowed sizes: c = 256, nh = nl = np = 16.

TEST(MsdaLimits, LargestAllowedSizes) {
  Sizes z = {1, 16, 256, 2, 16, {}};
  for (int l = 0; l < 16; ++l) z.levels.push_back({1 + l % 3, 1 + (l / 3) % 4});
  for (aclDataType dtype : {ACL_FLOAT, ACL_BF16}) {
    SCOPED_TRACE(optest::DTypeName(dtype));
    const Problem p = MakeProblem(z, dtype, 8000);
    CallConfig setup;
    setup.dtype = dtype;
    setup.grad_rank = dtype == ACL_FLOAT ? 3 : 4;
    CheckForward(p, setup);
    CheckBackward(p, setup);
  }
}

// An output that shares memory with value, with few corner reads per value row (where a value with unit channel
// stride is otherwise read in place, in every dtype): the results must be computed from value as it was, and they
// are, because value is then copied first. (value is the input that the in-place paths would otherwise read while
// an output overwrites it; gradValue over value needs no copy on CUDA, where it is written after the last read.)
TEST(MsdaAliasing, OutputsSharingValueMemoryUseTheOriginalValue) {
  const Sizes z = {1, 2, 16, 5, 2, {{8, 9}, {4, 3}}};  // nk 84, nq 5: 160 corner reads for 168 value rows
  for (aclDataType dtype : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
    SCOPED_TRACE(optest::DTypeName(dtype));
    const Problem p = MakeProblem(z, dtype, 8700);
    CallConfig setup;
    setup.dtype = dtype;
    {
      SCOPED_TRACE("forward: output over value's first elements");
      DeviceProblem d(p, setup);
      const optest::RawTensor out(p.OutShape(), dtype, d.value.data());
      ASSERT_EQ(RunForward(d, out.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
      std::vector<double> actual = d.value.Read();
      actual.resize(static_cast<size_t>(optest::NumElements(p.OutShape())));
      ExpectForwardMatches(actual, p, dtype);
    }
    {
      SCOPED_TRACE("backward: gradValue is value's memory");
      DeviceProblem d(p, setup);
      const optest::RawTensor grad_value(p.ValueShape(), dtype, d.value.data());
      DeviceGradients grads(p, dtype);
      ASSERT_EQ(RunBackward(d, grad_value.get(), grads.location.get(), grads.attn.get()), ACLNN_SUCCESS)
          << optest::RecentErrorMessage();
      ExpectBackwardMatches(d.value.Read(), grads.location.Read(), grads.attn.Read(), p, dtype);
    }
    {
      SCOPED_TRACE("backward: gradAttnWeight over value's first elements");
      DeviceProblem d(p, setup);
      const optest::RawTensor grad_attn(p.AttnShape(), dtype, d.value.data());
      DeviceGradients grads(p, dtype);
      ASSERT_EQ(RunBackward(d, grads.value.get(), grads.location.get(), grad_attn.get()), ACLNN_SUCCESS)
          << optest::RecentErrorMessage();
      std::vector<double> attn = d.value.Read();
      attn.resize(static_cast<size_t>(optest::NumElements(p.AttnShape())));
      ExpectBackwardMatches(grads.value.Read(), grads.location.Read(), attn, p, dtype);
    }
  }
}

// The same with many corner reads per value row, where the forward's tasks are whole (image, head) planes (bs x nh
// >= 4 x threads: here up to 16 threads) that may each copy their own plane of value just before walking it: not
// when the output lies over value, since earlier tasks' outputs would overwrite the value of later ones.
TEST(MsdaAliasing, ForwardOutputOverValueWithManyCornerReads) {
  const Sizes z = {4, 16, 8, 10, 4, {{4, 4}}};  // nk 16, nq 10: 10240 corner reads for 1024 value rows
  const Problem p = MakeProblem(z, ACL_FLOAT, 8710);
  CallConfig setup;
  setup.dtype = ACL_FLOAT;
  DeviceProblem d(p, setup);
  // Shifted by one head row (c floats), so that the first task's output rows lie over the next head's value rows.
  const int64_t shift = z.c;
  const optest::RawTensor out(p.OutShape(), ACL_FLOAT, static_cast<float*>(d.value.data()) + shift);
  ASSERT_EQ(RunForward(d, out.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  const std::vector<double> memory = d.value.Read();
  const std::vector<double> actual(memory.begin() + shift,
                                   memory.begin() + shift + optest::NumElements(p.OutShape()));
  ExpectForwardMatches(actual, p, ACL_FLOAT);
}

// More queries than one forward task takes (1024 per (image, head)): the query runs of a head split across tasks,
// the last one partial. Once with value read through the fp32 copy (many corner reads per value row) and once in
// place (FLOAT with few reads per row: a single 40 x 40 level, one point).
TEST(MsdaTaskSplit, MoreQueriesThanOneTask) {
  const Sizes sizes[] = {{2, 2, 24, 2300, 2, {{12, 10}, {6, 5}, {3, 2}}}, {1, 2, 16, 2100, 1, {{40, 40}}}};
  for (const Sizes& z : sizes) {
    for (aclDataType dtype : {ACL_FLOAT, ACL_FLOAT16}) {
      SCOPED_TRACE(SizesName(z) + " " + optest::DTypeName(dtype));
      const Problem p = MakeProblem(z, dtype, 8600);
      CallConfig setup;
      setup.dtype = dtype;
      CheckForward(p, setup);
      CheckBackward(p, setup);
    }
  }
}

// The backward's two fp32 planes (value copy, gradValue sums) start half a 4 KiB page apart: here each is
// bs x nh x nk x c x 4 = 4096 bytes, so 2048 bytes of padding lie between them (the sums start at 6144, plus the 64
// bytes of alignment slack), in FLOAT16 (planes because of the dtype) and FLOAT (planes because every value row is
// read 8 times or more). The results are those of the reference.
TEST(MsdaWorkspace, BackwardPlanesStartHalfAPageApart) {
  if (!optest::DeviceIsCpu()) GTEST_SKIP() << "the CPU implementation's workspace layout";
  const Sizes z = {2, 2, 8, 64, 4, {{4, 8}}};  // nk = 32
  for (aclDataType dtype : {ACL_FLOAT16, ACL_FLOAT}) {
    SCOPED_TRACE(optest::DTypeName(dtype));
    const Problem p = MakeProblem(z, dtype, 8650);
    CallConfig setup;
    setup.dtype = dtype;
    DeviceProblem d(p, setup);
    DeviceGradients grads(p, dtype);
    uint64_t workspace_size = 0;
    aclOpExecutor* executor = BackwardExecutor(d, grads, &workspace_size);
    ASSERT_NE(executor, nullptr);
    EXPECT_EQ(workspace_size, 4096u + 2048u + 4096u + 64u);
    EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
    CheckBackward(p, setup);
  }
}

// Outputs of 8 MiB and more are written with non-temporal stores: the forward's FLOAT16/BFLOAT16 output (and a FLOAT
// one where its tasks are whole planes, bs x nh >= 4 x threads: here up to 16 threads), the backward's gradValue
// from its fp32 sums, gradLocation and gradAttnWeight. Each problem is the smallest that streams what it tests.
void CheckStreamed(const Sizes& z, std::initializer_list<aclDataType> dtypes, bool backward) {
  for (aclDataType dtype : dtypes) {
    SCOPED_TRACE(SizesName(z) + " " + optest::DTypeName(dtype));
    const Problem p = MakeProblem(z, dtype, 8700);
    CallConfig setup;
    setup.dtype = dtype;
    if (backward) {
      CheckBackward(p, setup);
    } else {
      CheckForward(p, setup);
    }
  }
}

TEST(MsdaLargeOutputs, ForwardOutput) {
  // output (bs, nq, nh * c): 8 MiB in FLOAT16/BFLOAT16, 16 MiB in FLOAT.
  CheckStreamed({8, 8, 32, 2048, 1, {{4, 4}}}, {ACL_FLOAT16, ACL_BF16, ACL_FLOAT}, false);
}

TEST(MsdaLargeOutputs, BackwardGradValueFromSums) {
  // gradValue (bs, nk, nh, c): 8 MiB in FLOAT16/BFLOAT16, from the fp32 sums of a few queries.
  CheckStreamed({1, 8, 32, 64, 1, {{128, 128}}}, {ACL_FLOAT16, ACL_BF16}, true);
}

TEST(MsdaLargeOutputs, BackwardEveryOutputInFloat) {
  // gradValue 8.4 MiB through the sums (many corner reads per value row), gradLocation 16 MiB, gradAttnWeight 8 MiB.
  CheckStreamed({1, 8, 8, 16384, 16, {{182, 182}}}, {ACL_FLOAT}, true);
}

// A moderately realistic shape (Deformable-DETR-like, scaled down): 4 levels, nh = 8, np = 4, c = 32, nq = 300.
TEST(MsdaRealistic, DeformableDetrLikeShape) {
  const Sizes z = {1, 8, 32, 300, 4, {{20, 30}, {10, 15}, {5, 8}, {3, 4}}};
  for (aclDataType dtype : {ACL_FLOAT, ACL_FLOAT16}) {
    SCOPED_TRACE(optest::DTypeName(dtype));
    Problem p = MakeProblem(z, dtype, 8500);
    // Softmax-like positive attention weights, as the model has.
    std::mt19937_64 rng(8501);
    p.attn = optest::RandomValues(rng, p.Points(), 0.0, 0.125, dtype);
    CallConfig setup;
    setup.dtype = dtype;
    setup.spatial_dtype = ACL_INT64;
    setup.start_dtype = ACL_INT64;
    CheckForward(p, setup);
    CheckBackward(p, setup);
  }
}

// ------------------------------------------------------------------------------------------------------------
// Determinism: bit-identical run to run, and for any thread count (a child process per ACLNN_NUM_THREADS, which is
// read once per process). The problem is large enough for the kernels to split the work, and many points hit the
// same keys, so gradValue's summation order matters.

const Sizes kDeterminismSizes = {2, 4, 32, 200, 4, {{16, 20}, {8, 10}, {4, 5}, {2, 3}}};

std::vector<uint8_t> DeterminismBytes() {
  std::vector<uint8_t> bytes;
  for (aclDataType dtype : kDTypes) {
    if (CpuOnlyCase(dtype)) continue;  // DOUBLE: a CPU extension
    const Problem p = MakeProblem(kDeterminismSizes, dtype, 9500);
    CallConfig setup;
    setup.dtype = dtype;
    Layouts layouts = AllLayouts(Layout::kContiguous);
    layouts[kLocation] = Layout::kPadded;
    DeviceProblem d(p, setup, layouts);
    DeviceTensor out = DeviceTensor::Output(p.OutShape(), dtype, Layout::kContiguous);
    EXPECT_EQ(RunForward(d, out.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    DeviceGradients grads(p, dtype);
    EXPECT_EQ(RunBackward(d, grads.value.get(), grads.location.get(), grads.attn.get()), ACLNN_SUCCESS)
        << optest::RecentErrorMessage();
    const std::vector<uint8_t> part = optest::ConcatenatedBytes({&out, &grads.value, &grads.location, &grads.attn});
    bytes.insert(bytes.end(), part.begin(), part.end());
  }
  return bytes;
}

TEST(MsdaDeterminism, BitIdenticalRunToRun) { optest::ExpectBitIdenticalRunToRun(DeterminismBytes); }

// The forward's output bits do not depend on value's layout: contiguous value rows are read 8 channels at a time on
// CUDA (GroupForwardKernel), padded and transposed ones (no aligned 8-channel pieces) a channel at a time, with the
// same terms in the same order; the CPU's paths agree the same way. Every CANN dtype, c 32 and 40.
TEST(MsdaDeterminism, ForwardBitsIndependentOfValueLayout) {
  for (const Sizes& z : {kDeterminismSizes, Sizes{2, 3, 40, 50, 3, {{9, 7}, {4, 5}}}}) {
    for (aclDataType dtype : kDTypes) {
      if (CpuOnlyCase(dtype)) continue;
      SCOPED_TRACE(std::string(optest::DTypeName(dtype)) + " c " + std::to_string(z.c));
      const Problem p = MakeProblem(z, dtype, 9600);
      CallConfig setup;
      setup.dtype = dtype;
      std::vector<std::vector<uint8_t>> outputs;
      for (Layout layout : {Layout::kContiguous, Layout::kPadded, Layout::kTransposed}) {
        Layouts layouts = AllLayouts(Layout::kContiguous);
        layouts[kValue] = layout;
        DeviceProblem d(p, setup, layouts);
        DeviceTensor out = DeviceTensor::Output(p.OutShape(), dtype, Layout::kContiguous);
        ASSERT_EQ(RunForward(d, out.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
        outputs.push_back(out.ReadBytes());
      }
      EXPECT_TRUE(outputs[0] == outputs[1]) << "padded value";
      EXPECT_TRUE(outputs[0] == outputs[2]) << "transposed value";
    }
  }
}

// Computes the determinism bytes, checks the FLOAT backward against the reference, and, when PACL_TEST_OUTPUT_FILE
// is set (by BitIdenticalForAnyThreadCount and BitIdenticalOnEverySimdTarget, in a child process), writes the
// bytes there.
TEST(MsdaDeterminism, OutputForComparison) {
  const std::vector<uint8_t> bytes = DeterminismBytes();
  const Problem p = MakeProblem(kDeterminismSizes, ACL_FLOAT, 9500);
  CheckBackward(p, CallConfig{});
  optest::WriteOutputForParent(bytes);
}

TEST(MsdaDeterminism, BitIdenticalForAnyThreadCount) {
  optest::ExpectBitIdenticalForThreadCounts("MsdaDeterminism.OutputForComparison", {2, 3, 8}, DeterminismBytes);
}

// The same bits whatever instruction set the kernels run on (pacl/canonical_math-inl.h): every SIMD target this CPU
// has, each in a child process pinned with ACLNN_SIMD_TARGET.
TEST(MsdaDeterminism, BitIdenticalOnEverySimdTarget) {
  optest::ExpectBitIdenticalOnEverySimdTarget("MsdaDeterminism.OutputForComparison");
}

// A repeatable executor runs again on new data (new locations and spatialShape values too: device data is read at
// run time, not captured in phase 1).
TEST(MsdaExecutor, RepeatableBackwardRunsAgainOnNewData) {
  const Sizes z = {2, 2, 8, 4, 2, {{3, 4}, {2, 2}}};
  const Problem first = MakeProblem(z, ACL_FLOAT, 9700);
  Problem second = MakeProblem(z, ACL_FLOAT, 9701);
  second.spatial_shape = {2, 2, 3, 4};  // the levels swapped (starts 0 and 12 now read other keys)
  std::mt19937_64 rng(9702);
  DrawLocations(rng, &second, ACL_FLOAT);
  CallConfig setup;
  DeviceProblem d(first, setup);
  DeviceGradients grads(first, ACL_FLOAT);
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = BackwardExecutor(d, grads, &workspace_size);
  ASSERT_NE(executor, nullptr);
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(executor), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  const optest::DeviceWorkspace workspace(workspace_size);
  ASSERT_TRUE(workspace.ok());
  optest::TestStream stream;
  for (const Problem* p : {&first, static_cast<const Problem*>(&second)}) {
    d.value.Write(p->value);
    d.spatial_shape.Write(ToDoubles(p->spatial_shape));
    d.location.Write(p->location);
    d.attn.Write(p->attn);
    d.grad_output.Write(p->grad_output);
    ASSERT_EQ(aclnnMultiScaleDeformableAttentionGrad(workspace.get(), workspace_size, executor, stream.get()),
              ACLNN_SUCCESS)
        << optest::RecentErrorMessage();
    ASSERT_EQ(aclrtSynchronizeStream(stream.get()), ACL_SUCCESS);
    ExpectBackwardMatches(grads.value.Read(), grads.location.Read(), grads.attn.Read(), *p, ACL_FLOAT);
  }
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
}

}  // namespace
