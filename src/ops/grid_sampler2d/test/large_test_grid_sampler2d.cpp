// GridSampler2D, forward and backward, on an input of over 2^31 elements (FLOAT16), spot-checked against the
// float64 reference where the element indices pass 2^31 (tests/large/large_tensor_util.h says how). Each test
// needs 9 to 14 GiB of free memory and is skipped, saying so, on a smaller machine.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "large_tensor_util.h"
#include "grid_sampler2d/test/grid_sampler2d_calls.h"
#include "grid_sampler2d/test/grid_sampler2d_reference.h"

namespace {

using largetest::kTwoPow31;
using largetest::kUnitRoundoff32;
using largetest::MissingMemory;
using largetest::HashedValue;
using largetest::ForRanges;
using largetest::LargeTensor;
using largetest::UnusedOperand;
using largetest::ExpectHalfClose;

// GridSampler2D: input (N, C, H, W) = (2, 16, 8400, 8400), 2.26e9 elements, bilinear, zeros padding,
// alignCorners false; grid (2, 16, 16, 2) with points spread over the whole input, on its edges and corners.

constexpr int64_t kGridN = 2, kGridC = 16, kGridH = 8400, kGridW = 8400, kGridHout = 16, kGridWout = 16;
constexpr int64_t kGridPoints = kGridN * kGridHout * kGridWout;
static_assert(kGridN * kGridC * kGridH * kGridW > kTwoPow31, "the grid sampler input must pass 2^31 elements");

std::vector<int64_t> GridInputShape() { return {kGridN, kGridC, kGridH, kGridW}; }

int64_t InputIndex(int64_t n, int64_t c, int64_t h, int64_t w) { return ((n * kGridC + c) * kGridH + h) * kGridW + w; }

// Grid values in [-1, 1]: most spread uniformly, some on the edges and corners (+-1, and one pixel inside them),
// and the last two points equal to the one before, so that their inputGrad contributions add up.
void FillGrid(const LargeTensor& grid) {
  const std::array<double, 6> edges = {-1.0, 1.0, -1.0 + 1.0 / kGridW, 1.0 - 1.0 / kGridW, 0.999, -0.999};
  for (int64_t p = 0; p < kGridPoints; ++p) {
    for (int64_t axis = 0; axis < 2; ++axis) {
      const int64_t i = p * 2 + axis;
      double v = HashedValue(i, 5) / 2.0;
      if (p % 7 == 3) v = edges[static_cast<size_t>((p / 7 + axis) % static_cast<int64_t>(edges.size()))];
      if (p % (kGridHout * kGridWout) >= kGridHout * kGridWout - 2) v = ref::HalfBitsToDouble(grid.half()[i - 2]);
      grid.half()[i] = ref::DoubleToHalfBits(v);
    }
  }
}

ref::GridSamplerPoint SamplePoint(const LargeTensor& grid, int64_t p) {
  return ref::GridSampler2DSamplePoint(grid.At(p * 2), grid.At(p * 2 + 1), kGridH, kGridW, 0, 0, false);
}

// GridSampler2DBackward (bilinear, zeros padding, alignCorners false) for the outputs output_mask asks for.
void RunGridSamplerBackward(const aclTensor* grad_output, const aclTensor* input, const aclTensor* grid,
                            const std::array<bool, 2>& output_mask, aclTensor* input_grad, aclTensor* grid_grad) {
  aclBoolArray* mask = aclCreateBoolArray(output_mask.data(), output_mask.size());
  optest::TestStream stream;
  const aclnnStatus status = opcall::Run(
      opcall::GridSampler2DBackward{grad_output, input, grid, 0, 0, false, mask, input_grad, grid_grad}, stream.get());
  aclDestroyBoolArray(mask);
  ASSERT_EQ(status, ACLNN_SUCCESS) << optest::RecentErrorMessage();
}

TEST(LargeTensors, GridSampler2DForwardPast2To31Elements) {
  const uint64_t input_elements = static_cast<uint64_t>(kGridN * kGridC * kGridH * kGridW);
  // The FLOAT16 input and the kernel's blocked FLOAT copy of it (workspace).
  const std::string missing = MissingMemory(input_elements * (2 + 4) + (uint64_t{1} << 30));
  if (!missing.empty()) GTEST_SKIP() << missing;
  LargeTensor input(GridInputShape());
  LargeTensor grid({kGridN, kGridHout, kGridWout, 2});
  LargeTensor out({kGridN, kGridC, kGridHout, kGridWout});
  ASSERT_TRUE(input.ok() && grid.ok() && out.ok());
  input.FillHashed(11);
  FillGrid(grid);
  out.FillNaN();

  optest::TestStream stream;
  ASSERT_EQ(opcall::Run(opcall::GridSampler2D{input.get(), grid.get(), 0, 0, false, out.get()}, stream.get()),
            ACLNN_SUCCESS)
      << optest::RecentErrorMessage();

  for (int64_t n = 0; n < kGridN; ++n) {
    for (int64_t q = 0; q < kGridHout * kGridWout; ++q) {
      const ref::GridSamplerPoint point = SamplePoint(grid, n * kGridHout * kGridWout + q);
      for (int64_t c = 0; c < kGridC; ++c) {
        double expected = 0, magnitude = 0;
        for (const ref::GridSamplerTap& tap : point.taps) {
          const double term = tap.weight * HashedValue(InputIndex(n, c, tap.h, tap.w), 11);
          expected += term;
          magnitude += std::fabs(term);
        }
        ExpectHalfClose("out (" + std::to_string(n) + ", " + std::to_string(c) + ", point " + std::to_string(q) + ")",
                        out.At((n * kGridC + c) * kGridHout * kGridWout + q), expected,
                        8 * kUnitRoundoff32 * magnitude);
      }
    }
  }
}

TEST(LargeTensors, GridSampler2DBackwardGridGradPast2To31Elements) {
  const uint64_t input_elements = static_cast<uint64_t>(kGridN * kGridC * kGridH * kGridW);
  const std::string missing = MissingMemory(input_elements * (2 + 4) + (uint64_t{1} << 30));
  if (!missing.empty()) GTEST_SKIP() << missing;
  LargeTensor input(GridInputShape());
  LargeTensor grid({kGridN, kGridHout, kGridWout, 2});
  LargeTensor grad_output({kGridN, kGridC, kGridHout, kGridWout});
  LargeTensor grid_grad({kGridN, kGridHout, kGridWout, 2});
  UnusedOperand input_grad(GridInputShape());
  ASSERT_TRUE(input.ok() && grid.ok() && grad_output.ok() && grid_grad.ok());
  input.FillHashed(11);
  FillGrid(grid);
  grad_output.FillHashed(13, 1.0 / 64);  // keeps gridGrad (about W/2 * C * ...) inside FLOAT16's range
  grid_grad.FillNaN();

  ASSERT_NO_FATAL_FAILURE(RunGridSamplerBackward(grad_output.get(), input.get(), grid.get(), {false, true},
                                                 input_grad.get(), grid_grad.get()));

  for (int64_t p = 0; p < kGridPoints; ++p) {
    const int64_t n = p / (kGridHout * kGridWout);
    const int64_t q = p % (kGridHout * kGridWout);
    const ref::GridSamplerPoint point = SamplePoint(grid, p);
    double expected[2] = {0, 0}, magnitude[2] = {0, 0};
    for (int64_t c = 0; c < kGridC; ++c) {
      const double g = grad_output.At((n * kGridC + c) * kGridHout * kGridWout + q);
      for (const ref::GridSamplerTap& tap : point.taps) {
        const double v = HashedValue(InputIndex(n, c, tap.h, tap.w), 11) * g;
        expected[0] += point.x_mult * tap.dweight_dx * v;
        expected[1] += point.y_mult * tap.dweight_dy * v;
        magnitude[0] += std::fabs(point.x_mult * tap.dweight_dx * v);
        magnitude[1] += std::fabs(point.y_mult * tap.dweight_dy * v);
      }
    }
    for (int axis = 0; axis < 2; ++axis) {
      // fp32 sums of 4 C terms, each with a few roundings of its own.
      const double bound = static_cast<double>(4 * kGridC + 8) * kUnitRoundoff32 * magnitude[axis];
      ExpectHalfClose("gridGrad point " + std::to_string(p) + " axis " + std::to_string(axis),
                      grid_grad.At(p * 2 + axis), expected[axis], bound);
    }
  }
}

TEST(LargeTensors, GridSampler2DBackwardInputGradPast2To31Elements) {
  const uint64_t input_elements = static_cast<uint64_t>(kGridN * kGridC * kGridH * kGridW);
  // The FLOAT16 inputGrad and the kernel's blocked FLOAT sums (workspace); input is not read for inputGrad alone.
  const std::string missing = MissingMemory(input_elements * (2 + 4) + (uint64_t{1} << 30));
  if (!missing.empty()) GTEST_SKIP() << missing;
  UnusedOperand input(GridInputShape());
  LargeTensor grid({kGridN, kGridHout, kGridWout, 2});
  LargeTensor grad_output({kGridN, kGridC, kGridHout, kGridWout});
  LargeTensor input_grad(GridInputShape());
  LargeTensor grid_grad({kGridN, kGridHout, kGridWout, 2});
  ASSERT_TRUE(grid.ok() && grad_output.ok() && input_grad.ok() && grid_grad.ok());
  FillGrid(grid);
  grad_output.FillHashed(13, 1.0 / 64);  // keeps gridGrad (about W/2 * C * ...) inside FLOAT16's range
  input_grad.FillNaN();
  grid_grad.FillNaN();

  ASSERT_NO_FATAL_FAILURE(RunGridSamplerBackward(grad_output.get(), input.get(), grid.get(), {true, false},
                                                 input_grad.get(), grid_grad.get()));

  // The expected nonzero elements: each tap of each point adds weight * gradOutput to its pixel in every channel.
  struct Expected {
    double value = 0, magnitude = 0;
    int terms = 0;
  };
  std::map<int64_t, Expected> expected;
  for (int64_t p = 0; p < kGridPoints; ++p) {
    const int64_t n = p / (kGridHout * kGridWout);
    const int64_t q = p % (kGridHout * kGridWout);
    const ref::GridSamplerPoint point = SamplePoint(grid, p);
    for (int64_t c = 0; c < kGridC; ++c) {
      const double g = grad_output.At((n * kGridC + c) * kGridHout * kGridWout + q);
      for (const ref::GridSamplerTap& tap : point.taps) {
        Expected& e = expected[InputIndex(n, c, tap.h, tap.w)];
        e.value += tap.weight * g;
        e.magnitude += std::fabs(tap.weight * g);
        ++e.terms;
      }
    }
  }
  ASSERT_GT(expected.rbegin()->first, kTwoPow31) << "no tap past element 2^31: the grid misses the test's point";
  for (const auto& [index, e] : expected) {
    ExpectHalfClose("inputGrad element " + std::to_string(index), input_grad.At(index), e.value,
                    static_cast<double>(2 * e.terms + 2) * kUnitRoundoff32 * e.magnitude);
  }
  // Every other element is exactly 0 (the NaN pre-fill, or anything else, would show here).
  std::vector<int64_t> first_wrong(std::max<unsigned>(1, std::thread::hardware_concurrency()), -1);
  std::atomic<int> next_slot{0};
  const uint16_t* data = input_grad.half();
  ForRanges(input_grad.size(), [&](int64_t begin, int64_t end) {
    const int slot = next_slot.fetch_add(1);
    for (int64_t i = begin; i < end; ++i) {
      if ((data[i] & 0x7FFF) != 0 && expected.count(i) == 0) {
        first_wrong[static_cast<size_t>(slot)] = i;
        return;
      }
    }
  });
  for (int64_t wrong : first_wrong) {
    EXPECT_EQ(wrong, -1) << "inputGrad element " << wrong << " should be 0, got " << input_grad.At(wrong);
  }
}

}  // namespace
