// aclnnScaledMaskedSoftmax and aclnnScaledMaskedSoftmaxBackward against the float64 reference
// (tests/reference/scaled_masked_softmax_reference.h) and against finite differences of the forward.
//
// Tolerances (spec section 3):
// - Every dtype, per element: |actual - round(reference)| <= ulp + E, where E bounds the error of the fp32
//   computation before the single final rounding (derived next to BackwardFp32Bound / ForwardFp32Bound). With E = 0
//   this is "within 1 ulp of the rounded reference"; E only matters where cancellation makes the fp32 result
//   relatively inaccurate (for FLOAT output E is of the order of a few ulp: the fp32 arithmetic is the output's).
// - FLOAT also: relative 2-norm error <= 1e-5 against the reference on the same (exactly widened) inputs.
// - Masked backward elements are exactly 0; fully masked forward rows are exactly 1/S2 (rounded once per format).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "aclnnop/aclnn_scaled_masked_softmax.h"
#include "aclnnop/aclnn_scaled_masked_softmax_backward.h"
#include "scaled_masked_softmax/test/scaled_masked_softmax_calls.h"
#include "op_test_util.h"
#include "scaled_masked_softmax/test/scaled_masked_softmax_reference.h"

namespace {

using optest::DeviceTensor;
using optest::Layout;

constexpr double kUnitRoundoff32 = 0x1p-24;  // u of fp32: half its epsilon
constexpr aclDataType kFloatDTypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};

// ------------------------------------------------------------------------------------------------------------
// Problem description and data

enum class MaskForm { kFull, kPerBatch, kPerHead, kShared };  // mask dims 0-1: (B, N), (B, 1), (1, N), (1, 1)
const char* MaskFormName(MaskForm form) {
  switch (form) {
    case MaskForm::kFull:
      return "MaskBN";
    case MaskForm::kPerBatch:
      return "MaskB1";
    case MaskForm::kPerHead:
      return "Mask1N";
    case MaskForm::kShared:
      return "Mask11";
  }
  return "?";
}
constexpr MaskForm kAllMaskForms[] = {MaskForm::kFull, MaskForm::kPerBatch, MaskForm::kPerHead, MaskForm::kShared};

struct Dims {
  int64_t B, N, S1, S2, maskB, maskN;
  std::vector<int64_t> Shape() const { return {B, N, S1, S2}; }
  std::vector<int64_t> MaskShape() const { return {maskB, maskN, S1, S2}; }
  int64_t Rows() const { return B * N * S1; }
};

Dims MakeDims(int64_t B, int64_t N, int64_t S1, int64_t S2, MaskForm form) {
  const bool per_batch = form == MaskForm::kFull || form == MaskForm::kPerBatch;
  const bool per_head = form == MaskForm::kFull || form == MaskForm::kPerHead;
  return Dims{B, N, S1, S2, per_batch ? B : 1, per_head ? N : 1};
}

// A mask with, in every (maskB, maskN) slice, row s1 = 0 fully masked, row s1 = 1 fully unmasked and the other rows
// masked at random (30%). Masked bytes are random nonzero values: any nonzero byte means "masked".
std::vector<double> RandomMask(std::mt19937_64& rng, const Dims& d) {
  static constexpr double kTrueBytes[] = {1, 2, 37, 128, 255};
  std::bernoulli_distribution masked(0.3);
  std::uniform_int_distribution<int> pick(0, 4);
  std::vector<double> mask(static_cast<size_t>(optest::NumElements(d.MaskShape())));
  for (size_t i = 0; i < mask.size(); ++i) {
    const int64_t s1 = static_cast<int64_t>(i) / d.S2 % d.S1;
    const bool is_masked = s1 == 0 ? true : (s1 == 1 ? false : masked(rng));
    mask[i] = is_masked ? kTrueBytes[pick(rng)] : 0.0;
  }
  return mask;
}

std::vector<uint8_t> MaskBytes(const std::vector<double>& mask) {
  std::vector<uint8_t> bytes(mask.size());
  for (size_t i = 0; i < mask.size(); ++i) bytes[i] = static_cast<uint8_t>(mask[i]);
  return bytes;
}

// Index of the mask element that element i of a (B, N, S1, S2) tensor uses.
int64_t MaskIndex(const Dims& d, int64_t i) {
  const int64_t s2 = i % d.S2;
  const int64_t s1 = i / d.S2 % d.S1;
  const int64_t n = i / (d.S2 * d.S1) % d.N;
  const int64_t b = i / (d.S2 * d.S1 * d.N);
  const int64_t mb = d.maskB == 1 ? 0 : b;
  const int64_t mn = d.maskN == 1 ? 0 : n;
  return ((mb * d.maskN + mn) * d.S1 + s1) * d.S2 + s2;
}

std::vector<double> ReferenceForward(const std::vector<double>& x, const std::vector<double>& mask, const Dims& d,
                                     double scale) {
  std::vector<double> y(x.size());
  const std::vector<uint8_t> bytes = MaskBytes(mask);
  ref::ScaledMaskedSoftmaxForward(x.data(), bytes.data(), d.B, d.N, d.S1, d.S2, d.maskB, d.maskN, scale, y.data());
  return y;
}

std::vector<double> ReferenceBackward(const std::vector<double>& dy, const std::vector<double>& y,
                                      const std::vector<double>& mask, const Dims& d, double scale) {
  std::vector<double> out(dy.size());
  const std::vector<uint8_t> bytes = MaskBytes(mask);
  ref::ScaledMaskedSoftmaxBackward(dy.data(), y.data(), bytes.data(), d.B, d.N, d.S1, d.S2, d.maskB, d.maskN, scale,
                                   out.data());
  return out;
}

struct BackwardData {
  std::vector<double> dy, y, mask;
};

// dy uniform in [-1, 1]; y a realistic softmax output (the reference forward of random logits, rounded to dtype).
BackwardData MakeBackwardData(const Dims& d, aclDataType dtype, double scale, uint64_t seed) {
  std::mt19937_64 rng(seed);
  BackwardData data;
  data.mask = RandomMask(rng, d);
  const std::vector<double> x = optest::RandomValues(rng, optest::NumElements(d.Shape()), -3.0, 3.0, dtype);
  data.y = optest::RoundToDType(ReferenceForward(x, data.mask, d, scale), dtype);
  data.dy = optest::RandomValues(rng, optest::NumElements(d.Shape()), -1.0, 1.0, dtype);
  return data;
}

// ------------------------------------------------------------------------------------------------------------
// Running the operators

aclnnStatus RunBackward(const aclTensor* dy, const aclTensor* y, const aclTensor* mask, double scale, aclTensor* out,
                        aclrtStream stream = nullptr) {
  return opcall::Run(opcall::ScaledMaskedSoftmaxBackward{dy, y, mask, scale, false, out}, stream);
}

aclnnStatus RunForward(const aclTensor* x, const aclTensor* mask, double scale, aclTensor* y,
                       aclrtStream stream = nullptr) {
  return opcall::Run(opcall::ScaledMaskedSoftmax{x, mask, scale, false, y}, stream);
}

// ------------------------------------------------------------------------------------------------------------
// Checking results

// Error bound of the kernel's fp32 backward for one element, before the output's final rounding.
// The kernel computes s = sum(dy*y) in fp32 (any order: |s_f - s| <= S2 * u * sum|dy*y|), then
// scale_f * y * (dy - s_f) with three more roundings and scale_f = fl32(scale) (one more relative u). So
// |out_f - out| <= |scale * y| * u * ((S2 + 2) * sum|dy*y| + 4 * (|dy| + |s|)), keeping first-order terms with room
// to spare for the second-order ones.
double BackwardFp32Bound(double scale, double y, double dy, double s, double sum_abs, int64_t S2) {
  return std::fabs(scale * y) * kUnitRoundoff32 *
         (static_cast<double>(S2 + 2) * sum_abs + 4.0 * (std::fabs(dy) + std::fabs(s)));
}

// Error bound of the kernel's fp32 forward for one element, before the output's final rounding. With V the largest
// |x*scale| over the row's unmasked elements: each logit carries <= 2uV (scale_f and the product), so does the max,
// and v - m adds u|v - m| <= 2uV: 6uV in the exponent, i.e. a relative error 6uV in exp (pacl's Exp adds <= 1 ulp
// = 2u). The sum of S2 exponentials adds S2*u relative, the division u. Relative error of y:
// 2 * (6V + 2) u + S2 u + u <= u * (12V + S2 + 8). Masked logits (-10000) are exact and give exp() = 0 both here
// and in the reference for the logit ranges the tests use; a fully masked row is exact (1/S2 rounded once).
double ForwardFp32Bound(double y, double max_abs_logit, int64_t S2) {
  return std::fabs(y) * kUnitRoundoff32 * (12.0 * max_abs_logit + static_cast<double>(S2) + 8.0);
}

std::string Where(const Dims& d, int64_t i) {
  const int64_t s2 = i % d.S2;
  const int64_t s1 = i / d.S2 % d.S1;
  const int64_t n = i / (d.S2 * d.S1) % d.N;
  const int64_t b = i / (d.S2 * d.S1 * d.N);
  return "element (" + std::to_string(b) + ", " + std::to_string(n) + ", " + std::to_string(s1) + ", " +
         std::to_string(s2) + ")";
}

// FLOAT: the spec's relative 2-norm error <= 1e-5, where it is meaningful: when the fp32 error bounds are small
// against the values (no fp32 computation can meet it for logits of 1e4 and more, whose products x * scale alone
// err by 1e-3 in the exponent; the per-element check covers those).
void ExpectNormWithinSpec(const std::vector<double>& actual, const std::vector<double>& expected, double bound_norm2,
                          aclDataType dtype) {
  if (dtype != ACL_FLOAT) return;
  double expected_norm2 = 0.0;
  for (double e : expected) expected_norm2 += e * e;
  if (expected_norm2 > 1e8 * bound_norm2) {
    EXPECT_LE(optest::RelativeNormError(actual, expected), 1e-5);
  }
}

void ExpectBackwardMatches(const std::vector<double>& actual, const BackwardData& data, const Dims& d, double scale,
                           aclDataType dtype) {
  const std::vector<double> expected = ReferenceBackward(data.dy, data.y, data.mask, d, scale);
  ASSERT_EQ(actual.size(), expected.size());
  int failures = 0;
  double bound_norm2 = 0.0;  // of the fp32 error bounds: the norm check below needs them small against the values
  for (int64_t row = 0; row < d.Rows(); ++row) {
    double s = 0.0, sum_abs = 0.0;
    for (int64_t k = 0; k < d.S2; ++k) {
      const size_t i = static_cast<size_t>(row * d.S2 + k);
      s += data.dy[i] * data.y[i];
      sum_abs += std::fabs(data.dy[i] * data.y[i]);
    }
    for (int64_t k = 0; k < d.S2 && failures < 10; ++k) {
      const int64_t i = row * d.S2 + k;
      const double a = actual[static_cast<size_t>(i)];
      if (data.mask[static_cast<size_t>(MaskIndex(d, i))] != 0) {
        if (a != 0.0) ++failures;
        EXPECT_EQ(a, 0.0) << "masked " << Where(d, i) << " must be exactly 0";
        continue;
      }
      if (!std::isfinite(a)) ++failures;
      EXPECT_TRUE(std::isfinite(a)) << Where(d, i) << " = " << a;
      const double e = expected[static_cast<size_t>(i)];
      const double rounded = optest::RoundToDType(e, dtype);
      const double bound =
          BackwardFp32Bound(scale, data.y[static_cast<size_t>(i)], data.dy[static_cast<size_t>(i)], s, sum_abs, d.S2);
      bound_norm2 += bound * bound;
      const double tolerance = optest::UlpOf(std::max(std::fabs(rounded), std::fabs(a)), dtype) + bound;
      if (!(std::fabs(a - rounded) <= tolerance)) ++failures;
      EXPECT_LE(std::fabs(a - rounded), tolerance)
          << Where(d, i) << ": actual " << a << ", reference " << e << " (rounded " << rounded << ")";
    }
  }
  ExpectNormWithinSpec(actual, expected, bound_norm2, dtype);
}

void ExpectForwardMatches(const std::vector<double>& actual, const std::vector<double>& x,
                          const std::vector<double>& mask, const Dims& d, double scale, aclDataType dtype) {
  const std::vector<double> expected = ReferenceForward(x, mask, d, scale);
  ASSERT_EQ(actual.size(), expected.size());
  const double uniform = optest::RoundToDType(optest::RoundToDType(1.0 / static_cast<double>(d.S2), ACL_FLOAT), dtype);
  int failures = 0;
  double bound_norm2 = 0.0;
  for (int64_t row = 0; row < d.Rows() && failures < 10; ++row) {
    double max_abs_logit = 0.0;
    bool fully_masked = true;
    for (int64_t k = 0; k < d.S2; ++k) {
      const int64_t i = row * d.S2 + k;
      if (mask[static_cast<size_t>(MaskIndex(d, i))] == 0) {
        fully_masked = false;
        max_abs_logit = std::max(max_abs_logit, std::fabs(x[static_cast<size_t>(i)] * scale));
      }
    }
    for (int64_t k = 0; k < d.S2 && failures < 10; ++k) {
      const int64_t i = row * d.S2 + k;
      const double a = actual[static_cast<size_t>(i)];
      if (fully_masked) {
        if (a != uniform) ++failures;
        EXPECT_EQ(a, uniform) << "fully masked row, " << Where(d, i) << " must be 1/S2";
        continue;
      }
      if (!std::isfinite(a)) ++failures;
      EXPECT_TRUE(std::isfinite(a)) << Where(d, i) << " = " << a;
      const double e = expected[static_cast<size_t>(i)];
      const double rounded = optest::RoundToDType(e, dtype);
      const double bound = ForwardFp32Bound(e, max_abs_logit, d.S2);
      bound_norm2 += bound * bound;
      const double tolerance = optest::UlpOf(std::max(std::fabs(rounded), std::fabs(a)), dtype) + bound;
      if (!(std::fabs(a - rounded) <= tolerance)) ++failures;
      EXPECT_LE(std::fabs(a - rounded), tolerance)
          << Where(d, i) << ": actual " << a << ", reference " << e << " (rounded " << rounded << ")";
    }
  }
  ExpectNormWithinSpec(actual, expected, bound_norm2, dtype);
}

// ------------------------------------------------------------------------------------------------------------
// Sweeps: every dtype x S2 x mask form, contiguous.

struct SweepCase {
  aclDataType dtype;
  int64_t S2;
  MaskForm form;
};

std::vector<SweepCase> SweepCases() {
  std::vector<SweepCase> cases;
  for (aclDataType dtype : kFloatDTypes) {
    for (int64_t S2 : {1, 7, 64, 1000, 4096}) {
      for (MaskForm form : kAllMaskForms) cases.push_back({dtype, S2, form});
    }
  }
  return cases;
}

std::string SweepName(const testing::TestParamInfo<SweepCase>& info) {
  return std::string(optest::DTypeName(info.param.dtype)) + "_S2_" + std::to_string(info.param.S2) + "_" +
         MaskFormName(info.param.form);
}

Dims SweepDims(const SweepCase& c) {
  return c.S2 >= 4096 ? MakeDims(2, 3, 3, c.S2, c.form) : MakeDims(2, 3, 4, c.S2, c.form);
}

class BackwardSweep : public testing::TestWithParam<SweepCase> {};

TEST_P(BackwardSweep, MatchesReference) {
  const SweepCase c = GetParam();
  const Dims d = SweepDims(c);
  const double scale = 0.75;
  const BackwardData data = MakeBackwardData(d, c.dtype, scale, 1000 + static_cast<uint64_t>(c.S2));
  DeviceTensor dy(d.Shape(), c.dtype, Layout::kContiguous, data.dy);
  DeviceTensor y(d.Shape(), c.dtype, Layout::kContiguous, data.y);
  DeviceTensor mask(d.MaskShape(), ACL_BOOL, Layout::kContiguous, data.mask);
  DeviceTensor out = DeviceTensor::Output(d.Shape(), c.dtype, Layout::kContiguous);
  optest::TestStream stream;
  ASSERT_EQ(RunBackward(dy.get(), y.get(), mask.get(), scale, out.get(), stream.get()), ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  ExpectBackwardMatches(out.Read(), data, d, scale, c.dtype);
  EXPECT_EQ(out.CheckGuards(), "");
  EXPECT_EQ(dy.Read(), data.dy) << "an input was modified";
  EXPECT_EQ(y.Read(), data.y) << "an input was modified";
}

INSTANTIATE_TEST_SUITE_P(ScaledMaskedSoftmax, BackwardSweep, testing::ValuesIn(SweepCases()), SweepName);

class ForwardSweep : public testing::TestWithParam<SweepCase> {};

TEST_P(ForwardSweep, MatchesReference) {
  const SweepCase c = GetParam();
  const Dims d = SweepDims(c);
  const double scale = 1.25;
  std::mt19937_64 rng(2000 + static_cast<uint64_t>(c.S2));
  const std::vector<double> mask_values = RandomMask(rng, d);
  const std::vector<double> x_values = optest::RandomValues(rng, optest::NumElements(d.Shape()), -4.0, 4.0, c.dtype);
  DeviceTensor x(d.Shape(), c.dtype, Layout::kContiguous, x_values);
  DeviceTensor mask(d.MaskShape(), ACL_BOOL, Layout::kContiguous, mask_values);
  DeviceTensor y = DeviceTensor::Output(d.Shape(), c.dtype, Layout::kContiguous);
  optest::TestStream stream;
  ASSERT_EQ(RunForward(x.get(), mask.get(), scale, y.get(), stream.get()), ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  ExpectForwardMatches(y.Read(), x_values, mask_values, d, scale, c.dtype);
  EXPECT_EQ(y.CheckGuards(), "");
  EXPECT_EQ(x.Read(), x_values) << "the input was modified";
}

INSTANTIATE_TEST_SUITE_P(ScaledMaskedSoftmax, ForwardSweep, testing::ValuesIn(SweepCases()), SweepName);

// An output of 8 MiB or more is written with non-temporal stores where a row is vector-aligned: contiguous rows of
// 1000 elements (aligned or not, row by row) with a causal mask (keys after the query masked: whole vectors of
// logits skip the exponential), and a padded y (an element offset) with the random mask, every dtype.
TEST(ScaledMaskedSoftmaxLargeOutput, StreamedStoresMatchReference) {
  for (aclDataType dtype : kFloatDTypes) {
    const int64_t S1 = aclDataTypeSize(dtype) == 2 ? 1100 : 550;  // y just over 8 MiB
    for (Layout layout : {Layout::kContiguous, Layout::kPadded}) {
      const bool causal = layout == Layout::kContiguous;
      SCOPED_TRACE(std::string(optest::DTypeName(dtype)) + " " + optest::LayoutName(layout) +
                   (causal ? " causal" : " random mask"));
      const Dims d = MakeDims(2, 4, S1, 1000, MaskForm::kShared);
      const double scale = 0.5;
      std::mt19937_64 rng(4500 + static_cast<uint64_t>(dtype));
      std::vector<double> mask_values = RandomMask(rng, d);
      if (causal) {
        for (int64_t i = 0; i < S1 * d.S2; ++i) mask_values[i] = i % d.S2 > i / d.S2 ? 1.0 : 0.0;
      }
      const std::vector<double> x_values = optest::RandomValues(rng, optest::NumElements(d.Shape()), -6.0, 6.0, dtype);
      DeviceTensor x(d.Shape(), dtype, Layout::kContiguous, x_values);
      DeviceTensor mask(d.MaskShape(), ACL_BOOL, Layout::kContiguous, mask_values);
      DeviceTensor y = DeviceTensor::Output(d.Shape(), dtype, layout);
      ASSERT_EQ(RunForward(x.get(), mask.get(), scale, y.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
      ExpectForwardMatches(y.Read(), x_values, mask_values, d, scale, dtype);
      EXPECT_EQ(y.CheckGuards(), "");
    }
  }
}

// Many long rows: on a GPU, over three times as many rows of S2 = 2048 as it holds blocks at once (about 1300 on an
// H100), so that CUDA's pipelined forward (a grid of resident blocks, each cycling its rows through three
// shared-memory stages) reuses every stage; a padded x (misaligned rows: the unpipelined kernel) must give the same
// bits. Every dtype, a causal mask. The CPU device gets fewer rows (its paths do not depend on the count).
TEST(ScaledMaskedSoftmaxValues, ManyLongRowsMatchReference) {
  for (aclDataType dtype : kFloatDTypes) {
    SCOPED_TRACE(optest::DTypeName(dtype));
    const Dims d = MakeDims(1, 2, optest::DeviceIsCpu() ? 96 : 2200, 2048, MaskForm::kShared);
    std::mt19937_64 rng(4700 + static_cast<uint64_t>(dtype));
    std::vector<double> mask_values = RandomMask(rng, d);
    for (int64_t i = 0; i < d.S1 * d.S2; ++i) mask_values[i] = i % d.S2 > i / d.S2 ? 1.0 : 0.0;
    const std::vector<double> x_values = optest::RandomValues(rng, optest::NumElements(d.Shape()), -6.0, 6.0, dtype);
    DeviceTensor mask(d.MaskShape(), ACL_BOOL, Layout::kContiguous, mask_values);
    std::vector<std::vector<uint8_t>> outputs;
    for (Layout layout : {Layout::kContiguous, Layout::kPadded}) {
      DeviceTensor x(d.Shape(), dtype, layout, x_values);
      DeviceTensor y = DeviceTensor::Output(d.Shape(), dtype, Layout::kContiguous);
      ASSERT_EQ(RunForward(x.get(), mask.get(), 0.75, y.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
      ExpectForwardMatches(y.Read(), x_values, mask_values, d, 0.75, dtype);
      EXPECT_EQ(y.CheckGuards(), "");
      outputs.push_back(y.ReadBytes());
    }
    EXPECT_TRUE(outputs[0] == outputs[1]) << "the pipelined and the register kernel differ";
  }
}

// The backward's out likewise (8 MiB or more, non-temporal stores where a row is vector-aligned): contiguous rows
// of 1000 elements (aligned or not, row by row) and a padded out, every dtype.
TEST(ScaledMaskedSoftmaxLargeOutput, BackwardStreamedStoresMatchReference) {
  for (aclDataType dtype : kFloatDTypes) {
    const int64_t S1 = aclDataTypeSize(dtype) == 2 ? 1100 : 550;  // out just over 8 MiB
    for (Layout layout : {Layout::kContiguous, Layout::kPadded}) {
      SCOPED_TRACE(std::string(optest::DTypeName(dtype)) + " " + optest::LayoutName(layout));
      const Dims d = MakeDims(2, 4, S1, 1000, MaskForm::kShared);
      const double scale = 0.5;
      const BackwardData data = MakeBackwardData(d, dtype, scale, 4600 + static_cast<uint64_t>(dtype));
      DeviceTensor dy(d.Shape(), dtype, Layout::kContiguous, data.dy);
      DeviceTensor y(d.Shape(), dtype, Layout::kContiguous, data.y);
      DeviceTensor mask(d.MaskShape(), ACL_BOOL, Layout::kContiguous, data.mask);
      DeviceTensor out = DeviceTensor::Output(d.Shape(), dtype, layout);
      ASSERT_EQ(RunBackward(dy.get(), y.get(), mask.get(), scale, out.get()), ACLNN_SUCCESS)
          << optest::RecentErrorMessage();
      ExpectBackwardMatches(out.Read(), data, d, scale, dtype);
      EXPECT_EQ(out.CheckGuards(), "");
    }
  }
}

// ------------------------------------------------------------------------------------------------------------
// Layouts: one operand (or all of them) transposed, padded, channels-last or (inputs) broadcast with a zero stride,
// every dtype, rows with and without a vector tail.

enum Operand { kGradOrX = 0, kY = 1, kMask = 2, kOut = 3, kAllOperands = 4 };
const char* OperandName(int operand, bool forward) {
  switch (operand) {
    case kGradOrX:
      return forward ? "x" : "gradOutput";
    case kY:
      return "y";
    case kMask:
      return "mask";
    case kOut:
      return "out";
    default:
      return "all";
  }
}

struct LayoutCase {
  aclDataType dtype;
  int64_t S2;
  int operand;  // which operand gets the layout
  Layout layout;
};

std::string LayoutCaseName(const LayoutCase& c, bool forward) {
  return std::string(optest::DTypeName(c.dtype)) + "_S2_" + std::to_string(c.S2) + "_" +
         OperandName(c.operand, forward) + "_" + optest::LayoutName(c.layout);
}

std::vector<LayoutCase> LayoutCases(bool forward) {
  std::vector<LayoutCase> cases;
  for (aclDataType dtype : kFloatDTypes) {
    for (int64_t S2 : {7, 64, 1000}) {
      for (int operand = 0; operand <= kAllOperands; ++operand) {
        if (forward && operand == kOut) continue;  // the forward's output is y
        // An output (and "all", which includes one) cannot be broadcast: its elements would overlap.
        const bool has_output = operand == kOut || operand == kAllOperands || (forward && operand == kY);
        if (has_output) {
          for (Layout layout : optest::kOutputLayouts) cases.push_back({dtype, S2, operand, layout});
        } else {
          for (Layout layout : optest::kInputLayouts) cases.push_back({dtype, S2, operand, layout});
        }
      }
    }
  }
  return cases;
}

Layout LayoutOf(const LayoutCase& c, int operand) {
  return c.operand == operand || c.operand == kAllOperands ? c.layout : Layout::kContiguous;
}

class BackwardLayouts : public testing::TestWithParam<LayoutCase> {};

TEST_P(BackwardLayouts, MatchesReference) {
  const LayoutCase c = GetParam();
  const Dims d = MakeDims(2, 3, 5, c.S2, MaskForm::kPerBatch);
  const double scale = -1.5;
  BackwardData data = MakeBackwardData(d, c.dtype, scale, 3000 + static_cast<uint64_t>(c.S2));
  data.dy = optest::AsStored(data.dy, d.Shape(), LayoutOf(c, kGradOrX));
  data.y = optest::AsStored(data.y, d.Shape(), LayoutOf(c, kY));
  data.mask = optest::AsStored(data.mask, d.MaskShape(), LayoutOf(c, kMask));
  DeviceTensor dy(d.Shape(), c.dtype, LayoutOf(c, kGradOrX), data.dy);
  DeviceTensor y(d.Shape(), c.dtype, LayoutOf(c, kY), data.y);
  DeviceTensor mask(d.MaskShape(), ACL_BOOL, LayoutOf(c, kMask), data.mask);
  DeviceTensor out = DeviceTensor::Output(d.Shape(), c.dtype, LayoutOf(c, kOut));
  ASSERT_EQ(RunBackward(dy.get(), y.get(), mask.get(), scale, out.get()), ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  ExpectBackwardMatches(out.Read(), data, d, scale, c.dtype);
  EXPECT_EQ(out.CheckGuards(), "");
  EXPECT_EQ(dy.CheckGuards(), "");
  EXPECT_EQ(y.CheckGuards(), "");
  EXPECT_EQ(mask.CheckGuards(), "");
}

std::string BackwardLayoutName(const testing::TestParamInfo<LayoutCase>& param_info) {
  return LayoutCaseName(param_info.param, false);
}
INSTANTIATE_TEST_SUITE_P(ScaledMaskedSoftmax, BackwardLayouts, testing::ValuesIn(LayoutCases(false)),
                         BackwardLayoutName);

class ForwardLayouts : public testing::TestWithParam<LayoutCase> {};

TEST_P(ForwardLayouts, MatchesReference) {
  const LayoutCase c = GetParam();
  const Dims d = MakeDims(2, 3, 5, c.S2, MaskForm::kPerHead);
  const double scale = 0.5;
  std::mt19937_64 rng(4000 + static_cast<uint64_t>(c.S2));
  const std::vector<double> mask_values = optest::AsStored(RandomMask(rng, d), d.MaskShape(), LayoutOf(c, kMask));
  const std::vector<double> x_values = optest::AsStored(
      optest::RandomValues(rng, optest::NumElements(d.Shape()), -6.0, 6.0, c.dtype), d.Shape(), LayoutOf(c, kGradOrX));
  DeviceTensor x(d.Shape(), c.dtype, LayoutOf(c, kGradOrX), x_values);
  DeviceTensor mask(d.MaskShape(), ACL_BOOL, LayoutOf(c, kMask), mask_values);
  DeviceTensor y = DeviceTensor::Output(d.Shape(), c.dtype, LayoutOf(c, kY));
  ASSERT_EQ(RunForward(x.get(), mask.get(), scale, y.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  ExpectForwardMatches(y.Read(), x_values, mask_values, d, scale, c.dtype);
  EXPECT_EQ(y.CheckGuards(), "");
  EXPECT_EQ(x.CheckGuards(), "");
  EXPECT_EQ(mask.CheckGuards(), "");
}

std::string ForwardLayoutName(const testing::TestParamInfo<LayoutCase>& param_info) {
  return LayoutCaseName(param_info.param, true);
}
INSTANTIATE_TEST_SUITE_P(ScaledMaskedSoftmax, ForwardLayouts, testing::ValuesIn(LayoutCases(true)), ForwardLayoutName);

// ------------------------------------------------------------------------------------------------------------
// In place: the output is the very same view as an input.

struct InPlaceCase {
  aclDataType dtype;
  Layout layout;
};

std::vector<InPlaceCase> InPlaceCases() {
  std::vector<InPlaceCase> cases;
  for (aclDataType dtype : kFloatDTypes) {
    for (Layout layout : optest::kAllLayouts) cases.push_back({dtype, layout});
  }
  return cases;
}

std::string InPlaceName(const testing::TestParamInfo<InPlaceCase>& info) {
  return std::string(optest::DTypeName(info.param.dtype)) + "_" + optest::LayoutName(info.param.layout);
}

class InPlace : public testing::TestWithParam<InPlaceCase> {};

TEST_P(InPlace, BackwardOutIsGradOutput) {
  const InPlaceCase c = GetParam();
  const Dims d = MakeDims(2, 2, 3, 37, MaskForm::kShared);
  const double scale = 1.0;
  const BackwardData data = MakeBackwardData(d, c.dtype, scale, 5001);
  DeviceTensor dy(d.Shape(), c.dtype, c.layout, data.dy);
  DeviceTensor y(d.Shape(), c.dtype, c.layout, data.y);
  DeviceTensor mask(d.MaskShape(), ACL_BOOL, Layout::kContiguous, data.mask);
  ASSERT_EQ(RunBackward(dy.get(), y.get(), mask.get(), scale, dy.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  ExpectBackwardMatches(dy.Read(), data, d, scale, c.dtype);
  EXPECT_EQ(dy.CheckGuards(), "");
}

TEST_P(InPlace, BackwardOutIsY) {
  const InPlaceCase c = GetParam();
  const Dims d = MakeDims(2, 2, 3, 100, MaskForm::kFull);
  const double scale = 2.0;
  const BackwardData data = MakeBackwardData(d, c.dtype, scale, 5002);
  DeviceTensor dy(d.Shape(), c.dtype, c.layout, data.dy);
  DeviceTensor y(d.Shape(), c.dtype, c.layout, data.y);
  DeviceTensor mask(d.MaskShape(), ACL_BOOL, Layout::kContiguous, data.mask);
  ASSERT_EQ(RunBackward(dy.get(), y.get(), mask.get(), scale, y.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  ExpectBackwardMatches(y.Read(), data, d, scale, c.dtype);
  EXPECT_EQ(y.CheckGuards(), "");
}

TEST_P(InPlace, ForwardYIsX) {
  const InPlaceCase c = GetParam();
  const Dims d = MakeDims(2, 2, 3, 70, MaskForm::kPerBatch);
  const double scale = 0.9;
  std::mt19937_64 rng(5003);
  const std::vector<double> mask_values = RandomMask(rng, d);
  const std::vector<double> x_values = optest::RandomValues(rng, optest::NumElements(d.Shape()), -4.0, 4.0, c.dtype);
  DeviceTensor x(d.Shape(), c.dtype, c.layout, x_values);
  DeviceTensor mask(d.MaskShape(), ACL_BOOL, Layout::kContiguous, mask_values);
  ASSERT_EQ(RunForward(x.get(), mask.get(), scale, x.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  ExpectForwardMatches(x.Read(), x_values, mask_values, d, scale, c.dtype);
  EXPECT_EQ(x.CheckGuards(), "");
}

INSTANTIATE_TEST_SUITE_P(ScaledMaskedSoftmax, InPlace, testing::ValuesIn(InPlaceCases()), InPlaceName);

// ------------------------------------------------------------------------------------------------------------
// The backward against finite differences of the forward.

// Gradient of L(x) = sum(dy * forward(x)) by central differences of the float64 reference forward, one row at a
// time (the rows are independent). h = 1e-6 on logits of size ~1: truncation ~h^2, rounding ~1e-16/h.
std::vector<double> ReferenceGradientByDifferences(const std::vector<double>& x, const std::vector<double>& dy,
                                                   const std::vector<double>& mask, const Dims& d, double scale) {
  constexpr double kStep = 1e-6;
  const std::vector<uint8_t> mask_bytes = MaskBytes(mask);
  std::vector<double> gradient(x.size());
  std::vector<double> row_x(static_cast<size_t>(d.S2)), row_y(static_cast<size_t>(d.S2));
  std::vector<uint8_t> row_mask(static_cast<size_t>(d.S2));
  auto loss = [&](int64_t row) {
    ref::ScaledMaskedSoftmaxForward(row_x.data(), row_mask.data(), 1, 1, 1, d.S2, 1, 1, scale, row_y.data());
    double sum = 0.0;
    for (int64_t k = 0; k < d.S2; ++k) sum += dy[static_cast<size_t>(row * d.S2 + k)] * row_y[static_cast<size_t>(k)];
    return sum;
  };
  for (int64_t row = 0; row < d.Rows(); ++row) {
    for (int64_t k = 0; k < d.S2; ++k) {
      row_x[static_cast<size_t>(k)] = x[static_cast<size_t>(row * d.S2 + k)];
      row_mask[static_cast<size_t>(k)] = mask_bytes[static_cast<size_t>(MaskIndex(d, row * d.S2 + k))];
    }
    for (int64_t k = 0; k < d.S2; ++k) {
      const double saved = row_x[static_cast<size_t>(k)];
      row_x[static_cast<size_t>(k)] = saved + kStep;
      const double plus = loss(row);
      row_x[static_cast<size_t>(k)] = saved - kStep;
      const double minus = loss(row);
      row_x[static_cast<size_t>(k)] = saved;
      gradient[static_cast<size_t>(row * d.S2 + k)] = (plus - minus) / (2.0 * kStep);
    }
  }
  return gradient;
}

TEST(ScaledMaskedSoftmaxGradient, BackwardMatchesDifferencesOfReferenceForward) {
  for (int64_t S2 : {5, 64, 131}) {
    SCOPED_TRACE("S2 = " + std::to_string(S2));
    const Dims d = MakeDims(2, 2, 3, S2, MaskForm::kPerHead);
    const double scale = 0.8;
    std::mt19937_64 rng(6000 + static_cast<uint64_t>(S2));
    const std::vector<double> mask_values = RandomMask(rng, d);
    const std::vector<double> x_values = optest::RandomValues(rng, optest::NumElements(d.Shape()), -2, 2, ACL_FLOAT);
    const std::vector<double> dy_values = optest::RandomValues(rng, optest::NumElements(d.Shape()), -1, 1, ACL_FLOAT);

    // y = forward(x) by the operator, then the operator's backward at (dy, y).
    DeviceTensor x(d.Shape(), ACL_FLOAT, Layout::kContiguous, x_values);
    DeviceTensor mask(d.MaskShape(), ACL_BOOL, Layout::kContiguous, mask_values);
    DeviceTensor y = DeviceTensor::Output(d.Shape(), ACL_FLOAT, Layout::kContiguous);
    ASSERT_EQ(RunForward(x.get(), mask.get(), scale, y.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    DeviceTensor dy(d.Shape(), ACL_FLOAT, Layout::kContiguous, dy_values);
    DeviceTensor gradient = DeviceTensor::Output(d.Shape(), ACL_FLOAT, Layout::kContiguous);
    ASSERT_EQ(RunBackward(dy.get(), y.get(), mask.get(), scale, gradient.get()), ACLNN_SUCCESS)
        << optest::RecentErrorMessage();

    const std::vector<double> expected = ReferenceGradientByDifferences(x_values, dy_values, mask_values, d, scale);
    EXPECT_LE(optest::RelativeNormError(gradient.Read(), expected), 1e-5);
  }
}

// L(x) = sum(dy * forward(x)) evaluated with the operator's fp32 forward; its central difference along a random
// direction v must match <backward(dy, forward(x)), x+ - x->. Step h = 1e-2: the truncation error is about
// h^2 * scale^2 / 6 ~ 2e-5 relative; the fp32 forward's rounding, a few u per y summed over the rows, divided by
// the step, is of the same order at worst. 2e-4 of sum|g_i (x+_i - x-_i)| leaves a margin of 10x on those bounds
// (the observed error is ~5e-7).
TEST(ScaledMaskedSoftmaxGradient, BackwardMatchesDirectionalDifferenceOfOperatorForward) {
  const Dims d = MakeDims(2, 3, 4, 50, MaskForm::kFull);
  const double scale = 1.1;
  constexpr double kStep = 1e-2;
  std::mt19937_64 rng(7000);
  const int64_t count = optest::NumElements(d.Shape());
  const std::vector<double> mask_values = RandomMask(rng, d);
  const std::vector<double> x_values = optest::RandomValues(rng, count, -2, 2, ACL_FLOAT);
  const std::vector<double> dy_values = optest::RandomValues(rng, count, -1, 1, ACL_FLOAT);
  const std::vector<double> direction = optest::RandomValues(rng, count, -1, 1, ACL_FLOAT);
  std::vector<double> x_plus(x_values.size()), x_minus(x_values.size());
  for (size_t i = 0; i < x_values.size(); ++i) {
    x_plus[i] = optest::RoundToDType(x_values[i] + kStep * direction[i], ACL_FLOAT);
    x_minus[i] = optest::RoundToDType(x_values[i] - kStep * direction[i], ACL_FLOAT);
  }
  DeviceTensor mask(d.MaskShape(), ACL_BOOL, Layout::kContiguous, mask_values);
  auto loss = [&](const std::vector<double>& at) {
    DeviceTensor x(d.Shape(), ACL_FLOAT, Layout::kContiguous, at);
    DeviceTensor y = DeviceTensor::Output(d.Shape(), ACL_FLOAT, Layout::kContiguous);
    EXPECT_EQ(RunForward(x.get(), mask.get(), scale, y.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    const std::vector<double> y_values = y.Read();
    double sum = 0.0;
    for (size_t i = 0; i < y_values.size(); ++i) sum += dy_values[i] * y_values[i];
    return sum;
  };
  const double difference = loss(x_plus) - loss(x_minus);

  DeviceTensor x(d.Shape(), ACL_FLOAT, Layout::kContiguous, x_values);
  DeviceTensor y = DeviceTensor::Output(d.Shape(), ACL_FLOAT, Layout::kContiguous);
  ASSERT_EQ(RunForward(x.get(), mask.get(), scale, y.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  DeviceTensor dy(d.Shape(), ACL_FLOAT, Layout::kContiguous, dy_values);
  DeviceTensor gradient = DeviceTensor::Output(d.Shape(), ACL_FLOAT, Layout::kContiguous);
  ASSERT_EQ(RunBackward(dy.get(), y.get(), mask.get(), scale, gradient.get()), ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  const std::vector<double> g = gradient.Read();
  double predicted = 0.0, magnitude = 0.0;
  for (size_t i = 0; i < g.size(); ++i) {
    predicted += g[i] * (x_plus[i] - x_minus[i]);
    magnitude += std::fabs(g[i] * (x_plus[i] - x_minus[i]));
  }
  EXPECT_GT(magnitude, 0.0);
  EXPECT_NEAR(difference, predicted, 2e-4 * magnitude) << "difference " << difference << ", predicted " << predicted;
}

// ------------------------------------------------------------------------------------------------------------
// Determinism, executors and streams.

// Large enough for several ParallelFor chunks (about 64K elements each).
const Dims kDeterminismDims = MakeDims(2, 3, 40, 1000, MaskForm::kPerBatch);
constexpr double kDeterminismScale = 0.6;

std::vector<uint8_t> BackwardBytes(aclDataType dtype) {
  const BackwardData data = MakeBackwardData(kDeterminismDims, dtype, kDeterminismScale, 8000);
  DeviceTensor dy(kDeterminismDims.Shape(), dtype, Layout::kContiguous, data.dy);
  DeviceTensor y(kDeterminismDims.Shape(), dtype, Layout::kTransposed, data.y);
  DeviceTensor mask(kDeterminismDims.MaskShape(), ACL_BOOL, Layout::kContiguous, data.mask);
  DeviceTensor out = DeviceTensor::Output(kDeterminismDims.Shape(), dtype, Layout::kContiguous);
  EXPECT_EQ(RunBackward(dy.get(), y.get(), mask.get(), kDeterminismScale, out.get()), ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  return out.ReadBytes();
}

// The forward twice on the backward's random gradOutput as x: as a transposed view with its random mask, then on
// contiguous rows masked by runs at both ends (of every length modulo 16: the sums that leave out a row's masked
// end must stop where every target stops them).
std::vector<uint8_t> ForwardBytes(aclDataType dtype) {
  const Dims& d = kDeterminismDims;
  const BackwardData data = MakeBackwardData(d, dtype, kDeterminismScale, 8100);
  DeviceTensor x(d.Shape(), dtype, Layout::kTransposed, data.dy);
  DeviceTensor mask(d.MaskShape(), ACL_BOOL, Layout::kContiguous, data.mask);
  DeviceTensor y = DeviceTensor::Output(d.Shape(), dtype, Layout::kContiguous);
  EXPECT_EQ(RunForward(x.get(), mask.get(), kDeterminismScale, y.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  std::vector<uint8_t> bytes = y.ReadBytes();

  std::vector<double> runs(data.mask.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    const int64_t j = static_cast<int64_t>(i) % d.S2;
    const int64_t row = static_cast<int64_t>(i) / d.S2;
    runs[i] = j < (row * 37) % 300 || j >= d.S2 - (row * 53) % 400 ? 1.0 : 0.0;
  }
  DeviceTensor x_rows(d.Shape(), dtype, Layout::kContiguous, data.dy);
  DeviceTensor run_mask(d.MaskShape(), ACL_BOOL, Layout::kContiguous, runs);
  DeviceTensor y_rows = DeviceTensor::Output(d.Shape(), dtype, Layout::kContiguous);
  EXPECT_EQ(RunForward(x_rows.get(), run_mask.get(), kDeterminismScale, y_rows.get()), ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  const std::vector<uint8_t> run_bytes = y_rows.ReadBytes();
  bytes.insert(bytes.end(), run_bytes.begin(), run_bytes.end());
  return bytes;
}

// Forward and backward outputs in every dtype, one after the other.
std::vector<uint8_t> DeterminismBytes() {
  std::vector<uint8_t> bytes;
  for (aclDataType dtype : kFloatDTypes) {
    for (const std::vector<uint8_t>& part : {ForwardBytes(dtype), BackwardBytes(dtype)}) {
      bytes.insert(bytes.end(), part.begin(), part.end());
    }
  }
  return bytes;
}

TEST(ScaledMaskedSoftmaxDeterminism, BitIdenticalRunToRun) { optest::ExpectBitIdenticalRunToRun(DeterminismBytes); }

// Checks the FLOAT backward of the determinism case against the reference; when PACL_TEST_OUTPUT_FILE is set (by
// BitIdenticalForAnyThreadCount and BitIdenticalOnEverySimdTarget below, in a child process), also writes the
// determinism bytes there.
TEST(ScaledMaskedSoftmaxDeterminism, OutputForComparison) {
  const BackwardData data = MakeBackwardData(kDeterminismDims, ACL_FLOAT, kDeterminismScale, 8000);
  const std::vector<uint8_t> bytes = BackwardBytes(ACL_FLOAT);
  std::vector<double> values(bytes.size() / sizeof(float));
  for (size_t i = 0; i < values.size(); ++i) {
    float f;
    std::memcpy(&f, bytes.data() + i * sizeof(float), sizeof f);
    values[i] = f;
  }
  ExpectBackwardMatches(values, data, kDeterminismDims, kDeterminismScale, ACL_FLOAT);
  optest::WriteOutputForParent(DeterminismBytes());
}

TEST(ScaledMaskedSoftmaxDeterminism, BitIdenticalForAnyThreadCount) {
  optest::ExpectBitIdenticalForThreadCounts("ScaledMaskedSoftmaxDeterminism.OutputForComparison", {2, 3, 8},
                                            DeterminismBytes);
}

// The same bits whatever instruction set the kernels run on (pacl/canonical_math-inl.h): every SIMD target this CPU
// has, each in a child process pinned with ACLNN_SIMD_TARGET.
TEST(ScaledMaskedSoftmaxDeterminism, BitIdenticalOnEverySimdTarget) {
  optest::ExpectBitIdenticalOnEverySimdTarget("ScaledMaskedSoftmaxDeterminism.OutputForComparison");
}

TEST(ScaledMaskedSoftmaxExecutor, RepeatableExecutorRunsAgainOnNewData) {
  const Dims d = MakeDims(2, 2, 3, 33, MaskForm::kFull);
  const double scale = 0.5;
  const BackwardData first = MakeBackwardData(d, ACL_FLOAT, scale, 9000);
  const BackwardData second = MakeBackwardData(d, ACL_FLOAT, scale, 9001);
  DeviceTensor dy(d.Shape(), ACL_FLOAT, Layout::kContiguous, first.dy);
  DeviceTensor y(d.Shape(), ACL_FLOAT, Layout::kContiguous, first.y);
  DeviceTensor mask(d.MaskShape(), ACL_BOOL, Layout::kContiguous, first.mask);
  DeviceTensor out = DeviceTensor::Output(d.Shape(), ACL_FLOAT, Layout::kContiguous);
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(opcall::GetWorkspaceSize(opcall::ScaledMaskedSoftmaxBackward{dy.get(), y.get(), mask.get(), scale, false,
                                                                        out.get()},
                                     &workspace_size, &executor),
            ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  EXPECT_EQ(workspace_size, 0u);
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(executor), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  optest::TestStream stream;
  ASSERT_EQ(aclnnScaledMaskedSoftmaxBackward(nullptr, 0, executor, stream.get()), ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  ASSERT_EQ(aclrtSynchronizeStream(stream.get()), ACL_SUCCESS);
  ExpectBackwardMatches(out.Read(), first, d, scale, ACL_FLOAT);

  dy.Write(second.dy);
  y.Write(second.y);
  mask.Write(second.mask);
  ASSERT_EQ(aclnnScaledMaskedSoftmaxBackward(nullptr, 0, executor, nullptr), ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  ExpectBackwardMatches(out.Read(), second, d, scale, ACL_FLOAT);
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
  EXPECT_EQ(out.CheckGuards(), "");
}

TEST(ScaledMaskedSoftmaxExecutor, OneShotExecutorRefusesASecondRun) {
  const Dims d = MakeDims(1, 2, 2, 9, MaskForm::kShared);
  const BackwardData data = MakeBackwardData(d, ACL_FLOAT, 1.0, 9100);
  DeviceTensor dy(d.Shape(), ACL_FLOAT, Layout::kContiguous, data.dy);
  DeviceTensor y(d.Shape(), ACL_FLOAT, Layout::kContiguous, data.y);
  DeviceTensor mask(d.MaskShape(), ACL_BOOL, Layout::kContiguous, data.mask);
  DeviceTensor out = DeviceTensor::Output(d.Shape(), ACL_FLOAT, Layout::kContiguous);
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(opcall::GetWorkspaceSize(opcall::ScaledMaskedSoftmaxBackward{dy.get(), y.get(), mask.get(), 1.0, false,
                                                                        out.get()},
                                     &workspace_size, &executor),
            ACLNN_SUCCESS);
  ASSERT_EQ(aclnnScaledMaskedSoftmaxBackward(nullptr, 0, executor, nullptr), ACLNN_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  ExpectBackwardMatches(out.Read(), data, d, 1.0, ACL_FLOAT);
  EXPECT_EQ(aclnnScaledMaskedSoftmaxBackward(nullptr, 0, executor, nullptr), ACLNN_ERR_PARAM_INVALID);
}

TEST(ScaledMaskedSoftmaxExecutor, RunsOnDefaultAndCreatedStreams) {
  const Dims d = MakeDims(2, 2, 2, 40, MaskForm::kPerHead);
  const double scale = 1.3;
  std::mt19937_64 rng(9200);
  const std::vector<double> mask_values = RandomMask(rng, d);
  const std::vector<double> x_values = optest::RandomValues(rng, optest::NumElements(d.Shape()), -3, 3, ACL_FLOAT);
  DeviceTensor x(d.Shape(), ACL_FLOAT, Layout::kContiguous, x_values);
  DeviceTensor mask(d.MaskShape(), ACL_BOOL, Layout::kContiguous, mask_values);
  optest::TestStream stream;
  for (aclrtStream s : {static_cast<aclrtStream>(nullptr), stream.get()}) {
    DeviceTensor y = DeviceTensor::Output(d.Shape(), ACL_FLOAT, Layout::kContiguous);
    ASSERT_EQ(RunForward(x.get(), mask.get(), scale, y.get(), s), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    ExpectForwardMatches(y.Read(), x_values, mask_values, d, scale, ACL_FLOAT);
    const BackwardData data = MakeBackwardData(d, ACL_FLOAT, scale, 9201);
    DeviceTensor dy(d.Shape(), ACL_FLOAT, Layout::kContiguous, data.dy);
    DeviceTensor yb(d.Shape(), ACL_FLOAT, Layout::kContiguous, data.y);
    DeviceTensor mb(d.MaskShape(), ACL_BOOL, Layout::kContiguous, data.mask);
    DeviceTensor out = DeviceTensor::Output(d.Shape(), ACL_FLOAT, Layout::kContiguous);
    ASSERT_EQ(RunBackward(dy.get(), yb.get(), mb.get(), scale, out.get(), s), ACLNN_SUCCESS)
        << optest::RecentErrorMessage();
    ExpectBackwardMatches(out.Read(), data, d, scale, ACL_FLOAT);
  }
}

// ------------------------------------------------------------------------------------------------------------
// Empty problems: B, N or S1 of 0 succeed and write nothing.

TEST(ScaledMaskedSoftmaxEmpty, ZeroSizedDimsDoNothing) {
  for (const Dims& d : {Dims{0, 2, 3, 8, 1, 2}, Dims{2, 0, 3, 8, 2, 1}, Dims{2, 2, 0, 8, 1, 1}}) {
    SCOPED_TRACE(optest::ShapeString(d.Shape()));
    DeviceTensor dy(d.Shape(), ACL_FLOAT, Layout::kContiguous, {});
    DeviceTensor y(d.Shape(), ACL_FLOAT, Layout::kContiguous, {});
    DeviceTensor mask(d.MaskShape(), ACL_BOOL, Layout::kContiguous,
                      std::vector<double>(static_cast<size_t>(optest::NumElements(d.MaskShape())), 0.0));
    DeviceTensor out = DeviceTensor::Output(d.Shape(), ACL_FLOAT, Layout::kPadded);
    EXPECT_EQ(RunBackward(dy.get(), y.get(), mask.get(), 1.0, out.get()), ACLNN_SUCCESS)
        << optest::RecentErrorMessage();
    EXPECT_EQ(out.CheckGuards(), "");
    DeviceTensor y_out = DeviceTensor::Output(d.Shape(), ACL_BF16, Layout::kContiguous);
    DeviceTensor x(d.Shape(), ACL_BF16, Layout::kContiguous, {});
    EXPECT_EQ(RunForward(x.get(), mask.get(), 1.0, y_out.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    EXPECT_EQ(y_out.CheckGuards(), "");
  }
}

// The masked fill value is exactly -10000: with unmasked logits near -10000, masked elements keep a visible share.
TEST(ScaledMaskedSoftmaxValues, MaskedLogitIsMinus10000) {
  const Dims d = MakeDims(1, 2, 3, 24, MaskForm::kPerHead);
  std::mt19937_64 rng(9400);
  const std::vector<double> mask_values = RandomMask(rng, d);
  const std::vector<double> x_values =
      optest::RandomValues(rng, optest::NumElements(d.Shape()), -9997.0, -9993.0, ACL_FLOAT);
  DeviceTensor x(d.Shape(), ACL_FLOAT, Layout::kContiguous, x_values);
  DeviceTensor mask(d.MaskShape(), ACL_BOOL, Layout::kContiguous, mask_values);
  DeviceTensor y = DeviceTensor::Output(d.Shape(), ACL_FLOAT, Layout::kContiguous);
  ASSERT_EQ(RunForward(x.get(), mask.get(), 1.0, y.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  const std::vector<double> expected = ReferenceForward(x_values, mask_values, d, 1.0);
  EXPECT_LE(optest::RelativeNormError(y.Read(), expected), 1e-5);
  // The share of a masked element in a partially masked row is exp(-10000 - max) / sum: far from 0.
  double largest_masked_share = 0.0;
  for (int64_t i = 0; i < optest::NumElements(d.Shape()); ++i) {
    if (i / d.S2 % d.S1 == 2 && mask_values[static_cast<size_t>(MaskIndex(d, i))] != 0) {
      largest_masked_share = std::max(largest_masked_share, expected[static_cast<size_t>(i)]);
    }
  }
  EXPECT_GT(largest_masked_share, 1e-4);
}

// Extreme but finite inputs: large logits are handled by the max subtraction; NaN never reaches masked outputs.
TEST(ScaledMaskedSoftmaxValues, LargeLogitsAndNonFiniteMaskedInputs) {
  const Dims d = MakeDims(1, 2, 3, 20, MaskForm::kShared);
  std::mt19937_64 rng(9300);
  const std::vector<double> mask_values = RandomMask(rng, d);
  std::vector<double> x_values = optest::RandomValues(rng, optest::NumElements(d.Shape()), 500.0, 520.0, ACL_FLOAT);
  DeviceTensor x(d.Shape(), ACL_FLOAT, Layout::kContiguous, x_values);
  DeviceTensor mask(d.MaskShape(), ACL_BOOL, Layout::kContiguous, mask_values);
  DeviceTensor y = DeviceTensor::Output(d.Shape(), ACL_FLOAT, Layout::kContiguous);
  ASSERT_EQ(RunForward(x.get(), mask.get(), 0.25, y.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  EXPECT_LE(optest::RelativeNormError(y.Read(), ReferenceForward(x_values, mask_values, d, 0.25)), 1e-5);

  // Backward: NaN and Inf in dy/y at masked positions must still give exactly 0 there.
  // (Only in the fully masked rows s1 = 0: elsewhere a NaN would reach sum(dy*y) and every element of its row.)
  BackwardData data = MakeBackwardData(d, ACL_FLOAT, 1.0, 9301);
  for (size_t i = 0; i < data.dy.size(); ++i) {
    if (static_cast<int64_t>(i) / d.S2 % d.S1 == 0) data.dy[i] = i % 2 ? INFINITY : NAN;
  }
  DeviceTensor dy(d.Shape(), ACL_FLOAT, Layout::kContiguous, data.dy);
  DeviceTensor yb(d.Shape(), ACL_FLOAT, Layout::kContiguous, data.y);
  DeviceTensor mb(d.MaskShape(), ACL_BOOL, Layout::kContiguous, data.mask);
  DeviceTensor out = DeviceTensor::Output(d.Shape(), ACL_FLOAT, Layout::kContiguous);
  ASSERT_EQ(RunBackward(dy.get(), yb.get(), mb.get(), 1.0, out.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  ExpectBackwardMatches(out.Read(), data, d, 1.0, ACL_FLOAT);
}

// Negative scales and large logits (|x * scale| up to ~6e4, the fp16 range), forward and backward, every dtype,
// per element against the reference: the max subtraction must keep exp in range, the masked fill (-10000) must
// not win over large negative logits wrongly, and a negative scale reverses which logit is largest.
TEST(ScaledMaskedSoftmaxValues, NegativeScalesAndLargeLogits) {
  struct Case {
    double scale, lo, hi;
  };
  const Case cases[] = {{-1.0, -4.0, 4.0}, {-2.5, -30.0, 30.0}, {1.0, -60000.0, 60000.0}, {-0.125, 20000.0, 60000.0},
                        {1.0, -60000.0, -59990.0}, {3.0, 9000.0, 9010.0}};
  const Dims d = MakeDims(2, 2, 5, 77, MaskForm::kPerBatch);
  uint64_t seed = 9500;
  for (const Case& c : cases) {
    for (aclDataType dtype : kFloatDTypes) {
      SCOPED_TRACE(std::string(optest::DTypeName(dtype)) + " scale " + std::to_string(c.scale) + " x in [" +
                   std::to_string(c.lo) + ", " + std::to_string(c.hi) + "]");
      std::mt19937_64 rng(++seed);
      const std::vector<double> mask_values = RandomMask(rng, d);
      const std::vector<double> x_values = optest::RandomValues(rng, optest::NumElements(d.Shape()), c.lo, c.hi, dtype);
      DeviceTensor x(d.Shape(), dtype, Layout::kContiguous, x_values);
      DeviceTensor mask(d.MaskShape(), ACL_BOOL, Layout::kContiguous, mask_values);
      DeviceTensor y = DeviceTensor::Output(d.Shape(), dtype, Layout::kContiguous);
      ASSERT_EQ(RunForward(x.get(), mask.get(), c.scale, y.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
      ExpectForwardMatches(y.Read(), x_values, mask_values, d, c.scale, dtype);

      // The backward at the rounded forward of these logits, with the same scale.
      BackwardData data;
      data.mask = mask_values;
      data.y = optest::RoundToDType(ReferenceForward(x_values, mask_values, d, c.scale), dtype);
      data.dy = optest::RandomValues(rng, optest::NumElements(d.Shape()), -1.0, 1.0, dtype);
      DeviceTensor dy(d.Shape(), dtype, Layout::kContiguous, data.dy);
      DeviceTensor yb(d.Shape(), dtype, Layout::kContiguous, data.y);
      DeviceTensor out = DeviceTensor::Output(d.Shape(), dtype, Layout::kContiguous);
      ASSERT_EQ(RunBackward(dy.get(), yb.get(), mask.get(), c.scale, out.get()), ACLNN_SUCCESS)
          << optest::RecentErrorMessage();
      ExpectBackwardMatches(out.Read(), data, d, c.scale, dtype);
    }
  }
}

// Rows masked by runs (each row's unmasked part a prefix, of every length from none to all, ending inside and at the
// edge of a vector, with a partial last vector; then the same rows reversed, the masked run first): the masked
// elements are exactly +0 when the unmasked logits are ordinary, a visible share when they lie just above the masked
// fill (so that exp(-10000 - max) does not underflow), most of the row when they lie below it (the fill is the max),
// and NaN when the row holds a NaN logit; every dtype, contiguous and transposed rows.
TEST(ScaledMaskedSoftmaxValues, MaskedRunsAreZerosOrTheirShare) {
  const Dims d = MakeDims(1, 2, 72, 70, MaskForm::kShared);
  struct Case {
    const char* name;
    double lo, hi;
    bool nan_in_row_5;
    bool masked_share;  // whether a masked element's share of its row is above 0 (else exactly 0)
  };
  const Case cases[] = {{"ordinary logits", -4.0, 4.0, false, false},
                        {"logits just above the fill", -9985.0, -9975.0, false, true},
                        {"logits below the fill", -10030.0, -10010.0, false, true},
                        {"a NaN logit in row 5", -4.0, 4.0, true, false}};
  uint64_t seed = 9600;
  for (bool causal : {true, false}) {
    // causal: row s1 keeps its first s1 elements; reversed: its last s1.
    std::vector<double> mask_values(static_cast<size_t>(optest::NumElements(d.MaskShape())));
    for (int64_t s1 = 0; s1 < d.S1; ++s1) {
      for (int64_t j = 0; j < d.S2; ++j) {
        const bool kept = causal ? j < s1 : j >= d.S2 - s1;
        mask_values[static_cast<size_t>(s1 * d.S2 + j)] = kept ? 0.0 : 1.0;
      }
    }
    for (const Case& c : cases) {
      for (aclDataType dtype : kFloatDTypes) {
        for (Layout layout : {Layout::kContiguous, Layout::kTransposed}) {
          SCOPED_TRACE(std::string(causal ? "causal, " : "reversed, ") + c.name + ", " + optest::DTypeName(dtype) +
                       (layout == Layout::kTransposed ? ", transposed" : ""));
          std::mt19937_64 rng(++seed);
          std::vector<double> x_values =
              optest::RandomValues(rng, optest::NumElements(d.Shape()), c.lo, c.hi, dtype);
          if (c.nan_in_row_5) {  // on an unmasked element of row 5 in both patterns
            const int64_t j = causal ? 3 : d.S2 - 3;
            for (int64_t n = 0; n < d.N; ++n) x_values[static_cast<size_t>((n * d.S1 + 5) * d.S2 + j)] = NAN;
          }
          DeviceTensor x(d.Shape(), dtype, layout, x_values);
          DeviceTensor mask(d.MaskShape(), ACL_BOOL, Layout::kContiguous, mask_values);
          DeviceTensor y = DeviceTensor::Output(d.Shape(), dtype, layout);
          ASSERT_EQ(RunForward(x.get(), mask.get(), 1.0, y.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
          const std::vector<double> got = y.Read();
          if (!c.nan_in_row_5) ExpectForwardMatches(got, x_values, mask_values, d, 1.0, dtype);
          const std::vector<double> expected = ReferenceForward(x_values, mask_values, d, 1.0);
          int failures = 0;
          for (int64_t row = 0; row < d.Rows() && failures < 10; ++row) {
            const int64_t s1 = row % d.S1;
            for (int64_t j = 0; j < d.S2 && s1 > 0 && failures < 10; ++j) {
              if (mask_values[static_cast<size_t>(s1 * d.S2 + j)] == 0) continue;
              const double a = got[static_cast<size_t>(row * d.S2 + j)];
              const double e = expected[static_cast<size_t>(row * d.S2 + j)];
              bool ok = false;
              if (c.nan_in_row_5 && s1 == 5) {
                ok = std::isnan(a);
              } else if (!c.masked_share) {
                ok = e == 0.0 && a == 0.0 && !std::signbit(a);
              } else {
                ok = e > 0.0 && (dtype != ACL_FLOAT || a > 0.0);  // fp32 keeps even a share of about 1e-11
              }
              if (!ok) ++failures;
              EXPECT_TRUE(ok) << Where(d, row * d.S2 + j) << ": " << a << ", reference " << e;
            }
          }
        }
      }
    }
  }
}

// Non-finite unmasked logits: a NaN or +Inf makes its whole row NaN (as in PyTorch and the float64 reference),
// a -Inf gives its element exactly 0 and leaves the rest of the row a softmax, a row of -Inf alone (nothing
// masked) is NaN (exp(-inf - -inf)); the same on every instruction set.
TEST(ScaledMaskedSoftmaxValues, NonFiniteUnmaskedLogits) {
  const Dims d = MakeDims(1, 2, 6, 37, MaskForm::kShared);
  std::mt19937_64 rng(9400);
  std::vector<double> mask_values = RandomMask(rng, d);
  for (int64_t j = 0; j < d.S2; ++j) {
    mask_values[static_cast<size_t>(j)] = 0;           // row s1 = 0: nothing masked
    mask_values[static_cast<size_t>(4 * d.S2 + j)] = 0;  // row s1 = 4 too
  }
  for (aclDataType dtype : kFloatDTypes) {
    SCOPED_TRACE(optest::DTypeName(dtype));
    std::vector<double> x_values = optest::RandomValues(rng, optest::NumElements(d.Shape()), -4.0, 4.0, dtype);
    // In each row: s1 = 0 a NaN, s1 = 1 a +Inf, s1 = 2 a -Inf, s1 = 3 a NaN and a -Inf, all at unmasked places
    // (placed on the first unmasked element after a random start); s1 = 4 all -Inf; s1 = 5 stays finite.
    const double specials[4][2] = {{NAN, 0}, {INFINITY, 0}, {-INFINITY, 0}, {NAN, -INFINITY}};
    for (int64_t row = 0; row < d.B * d.N * d.S1; ++row) {
      const int64_t s1 = row % d.S1;
      if (s1 == 4) std::fill_n(x_values.begin() + row * d.S2, d.S2, -INFINITY);
      if (s1 >= 4) continue;
      int64_t placed = 0;
      for (int64_t j = static_cast<int64_t>(rng() % 7); j < d.S2 && placed < 2; j += 3) {
        if (mask_values[static_cast<size_t>(s1 * d.S2 + j)] != 0) continue;
        const double special = specials[s1][placed++];
        if (special != 0) x_values[static_cast<size_t>(row * d.S2 + j)] = special;
      }
      ASSERT_EQ(placed, 2) << "row " << row << " has too few unmasked elements";
    }
    DeviceTensor x(d.Shape(), dtype, Layout::kContiguous, x_values);
    DeviceTensor mask(d.MaskShape(), ACL_BOOL, Layout::kContiguous, mask_values);
    // A finite sentinel rather than the usual NaN pre-fill: the NaN rows below must be written, not left alone.
    DeviceTensor y(d.Shape(), dtype, Layout::kContiguous, std::vector<double>(d.B * d.N * d.S1 * d.S2, 7.0));
    ASSERT_EQ(RunForward(x.get(), mask.get(), 0.5, y.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    const std::vector<double> got = y.Read();
    const std::vector<double> expected = ReferenceForward(x_values, mask_values, d, 0.5);
    for (int64_t row = 0; row < d.B * d.N * d.S1; ++row) {
      const int64_t s1 = row % d.S1;
      for (int64_t j = 0; j < d.S2; ++j) {
        const size_t at = static_cast<size_t>(row * d.S2 + j);
        if (s1 == 0 || s1 == 1 || s1 == 3 || s1 == 4) {
          EXPECT_TRUE(std::isnan(got[at])) << "row " << row << " element " << j << ": " << got[at];
          EXPECT_TRUE(std::isnan(expected[at]));
        } else if (x_values[at] == -INFINITY) {
          EXPECT_EQ(got[at], 0.0) << "row " << row << " element " << j;
        } else {
          EXPECT_NEAR(got[at], expected[at], 4 * optest::UlpOf(expected[at], dtype) + 1e-6)
              << "row " << row << " element " << j;
        }
      }
    }
  }
}

// The arithmetic is fp32 whatever the storage, so a FLOAT16 or BFLOAT16 output is the FLOAT output for the same
// logits rounded once to nearest even: checked bit for bit on rows whose outputs span the whole exponent range down
// to subnormals (logits up to 200 apart), including the stores that leave NaN handling out for NaN-free rows.
TEST(ScaledMaskedSoftmaxValues, HalfOutputsAreTheFloatOutputRoundedOnce) {
  if (!optest::DeviceIsCpu()) {
    // On CUDA a FLOAT16/BFLOAT16 row's exponentials come from the special-function unit's 2^x (a few fp32 ulps from
    // FLOAT's expf) and its sums run over 8-element chunks where FLOAT's run over 4: the fp32 values differ in their
    // last bits, so a rounding can go the other way. ManyLongRowsMatchReference and the sweeps bound their error.
    GTEST_SKIP() << optest::CpuOnlyReason("the FLOAT and 16-bit kernels share their fp32 arithmetic bit for bit");
  }
  const Dims d = MakeDims(4, 8, 32, 1000 + 13, MaskForm::kPerBatch);  // a million outputs: some are ties
  for (aclDataType dtype : {ACL_FLOAT16, ACL_BF16}) {
    SCOPED_TRACE(optest::DTypeName(dtype));
    std::mt19937_64 rng(9600 + static_cast<uint64_t>(dtype));
    const std::vector<double> mask_values = RandomMask(rng, d);
    // Logits representable in dtype, so that both runs see the same values.
    const std::vector<double> x_values = optest::RandomValues(rng, optest::NumElements(d.Shape()), -50.0, 50.0, dtype);
    DeviceTensor mask(d.MaskShape(), ACL_BOOL, Layout::kContiguous, mask_values);
    DeviceTensor x_float(d.Shape(), ACL_FLOAT, Layout::kContiguous, x_values);
    DeviceTensor y_float = DeviceTensor::Output(d.Shape(), ACL_FLOAT, Layout::kContiguous);
    ASSERT_EQ(RunForward(x_float.get(), mask.get(), 2.0, y_float.get()), ACLNN_SUCCESS)
        << optest::RecentErrorMessage();
    DeviceTensor x(d.Shape(), dtype, Layout::kContiguous, x_values);
    DeviceTensor y = DeviceTensor::Output(d.Shape(), dtype, Layout::kContiguous);
    ASSERT_EQ(RunForward(x.get(), mask.get(), 2.0, y.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    const std::vector<double> expected = optest::RoundToDType(y_float.Read(), dtype);
    const std::vector<double> got = y.Read();
    ASSERT_EQ(got.size(), expected.size());
    size_t tiny = 0;
    size_t ties = 0;
    const std::vector<double> float_values = y_float.Read();
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], expected[i]) << "element " << i << ", FLOAT output " << float_values[i];
      if (expected[i] != 0 && expected[i] < 1e-30) ++tiny;
      // A tie: the value mirrored about the FLOAT output is the other neighbour, exactly representable.
      const double gap = std::abs(float_values[i] - expected[i]);
      const double mirrored = 2 * float_values[i] - expected[i];
      if (gap != 0 && optest::RoundToDType(mirrored, dtype) == mirrored) ++ties;
    }
    EXPECT_GT(ties, 0u) << "no output halfway between two " << optest::DTypeName(dtype) << " values";
    if (dtype == ACL_BF16) {
      EXPECT_GT(tiny, 0u) << "no output near the bottom of the exponent range";
    }
  }
}

}  // namespace
