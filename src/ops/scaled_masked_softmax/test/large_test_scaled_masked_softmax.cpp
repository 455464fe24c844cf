// ScaledMaskedSoftmax, forward and backward, on tensors of over 2^31 elements (FLOAT16), spot-checked against the
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
#include "scaled_masked_softmax/test/scaled_masked_softmax_calls.h"
#include "scaled_masked_softmax/test/scaled_masked_softmax_reference.h"

namespace {

using largetest::kTwoPow31;
using largetest::kUnitRoundoff32;
using largetest::MissingMemory;
using largetest::HashedValue;
using largetest::ForRanges;
using largetest::LargeTensor;
using largetest::ExpectHalfClose;

// ScaledMaskedSoftmax: (B, N, S1, S2) = (2, 65, 4096, 4096), 2.18e9 elements; mask (B, 1, S1, S2).

constexpr int64_t kSoftmaxB = 2, kSoftmaxN = 65, kSoftmaxS1 = 4096, kSoftmaxS2 = 4096;
constexpr int64_t kSoftmaxRows = kSoftmaxB * kSoftmaxN * kSoftmaxS1;
constexpr double kSoftmaxScale = 0.75;
static_assert(kSoftmaxRows * kSoftmaxS2 > kTwoPow31, "the softmax tensor must pass 2^31 elements");

std::vector<int64_t> SoftmaxShape() { return {kSoftmaxB, kSoftmaxN, kSoftmaxS1, kSoftmaxS2}; }

// Rows at the start, just before and after element 2^31, in the middle and at the end.
std::vector<int64_t> SoftmaxCheckedRows() {
  const int64_t boundary = kTwoPow31 / kSoftmaxS2;
  return {0, 1, boundary - 1, boundary, boundary + 1, kSoftmaxRows / 2 + 7, kSoftmaxRows - 2, kSoftmaxRows - 1};
}

// Mask element i of (B, 1, S1, S2): masked with probability 1/8.
void FillMask(const LargeTensor& mask) {
  uint8_t* data = mask.bytes();
  ForRanges(mask.size(), [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) data[i] = HashedValue(i, 77) < -1.75 ? 1 : 0;
  });
}

// The mask row that applies to value row `row` of (B, N, S1), as bytes.
std::vector<uint8_t> MaskRow(const LargeTensor& mask, int64_t row) {
  const int64_t s1 = row % kSoftmaxS1;
  const int64_t b = row / (kSoftmaxS1 * kSoftmaxN);
  const uint8_t* start = mask.bytes() + (b * kSoftmaxS1 + s1) * kSoftmaxS2;
  return std::vector<uint8_t>(start, start + kSoftmaxS2);
}

std::vector<double> Row(const LargeTensor& t, int64_t row) {
  std::vector<double> values(static_cast<size_t>(kSoftmaxS2));
  for (int64_t j = 0; j < kSoftmaxS2; ++j) values[static_cast<size_t>(j)] = t.At(row * kSoftmaxS2 + j);
  return values;
}

TEST(LargeTensors, ScaledMaskedSoftmaxForwardPast2To31Elements) {
  const int64_t elements = kSoftmaxRows * kSoftmaxS2;
  const std::string missing = MissingMemory(static_cast<uint64_t>(elements) * 2 * 2 + (uint64_t{1} << 30));
  if (!missing.empty()) GTEST_SKIP() << missing;
  LargeTensor x(SoftmaxShape());
  LargeTensor mask({kSoftmaxB, 1, kSoftmaxS1, kSoftmaxS2}, ACL_BOOL);
  LargeTensor y(SoftmaxShape());
  ASSERT_TRUE(x.ok() && mask.ok() && y.ok());
  x.FillHashed(1);
  FillMask(mask);
  y.FillNaN();

  optest::TestStream stream;
  ASSERT_EQ(opcall::Run(opcall::ScaledMaskedSoftmax{x.get(), mask.get(), kSoftmaxScale, false, y.get()}, stream.get()),
            ACLNN_SUCCESS)
      << optest::RecentErrorMessage();

  for (int64_t row : SoftmaxCheckedRows()) {
    const std::vector<double> x_row = Row(x, row);
    const std::vector<uint8_t> mask_row = MaskRow(mask, row);
    std::vector<double> expected(static_cast<size_t>(kSoftmaxS2));
    ref::ScaledMaskedSoftmaxForward(x_row.data(), mask_row.data(), 1, 1, 1, kSoftmaxS2, 1, 1, kSoftmaxScale,
                                    expected.data());
    // Relative fp32 error of the kernel: u * (12 V + S2 + 8) with V = max |x * scale| (see the operator tests).
    const double relative = kUnitRoundoff32 * (12.0 * 2.0 * kSoftmaxScale + static_cast<double>(kSoftmaxS2) + 8.0);
    for (int64_t j = 0; j < kSoftmaxS2; ++j) {
      const double e = expected[static_cast<size_t>(j)];
      ExpectHalfClose("y row " + std::to_string(row) + " column " + std::to_string(j), y.At(row * kSoftmaxS2 + j), e,
                      std::fabs(e) * relative);
    }
  }
}

TEST(LargeTensors, ScaledMaskedSoftmaxBackwardPast2To31Elements) {
  const int64_t elements = kSoftmaxRows * kSoftmaxS2;
  const std::string missing = MissingMemory(static_cast<uint64_t>(elements) * 2 * 3 + (uint64_t{1} << 30));
  if (!missing.empty()) GTEST_SKIP() << missing;
  LargeTensor grad_output(SoftmaxShape());
  LargeTensor y(SoftmaxShape());
  LargeTensor mask({kSoftmaxB, 1, kSoftmaxS1, kSoftmaxS2}, ACL_BOOL);
  LargeTensor input_grad(SoftmaxShape());
  ASSERT_TRUE(grad_output.ok() && y.ok() && mask.ok() && input_grad.ok());
  grad_output.FillHashed(2);
  y.FillHashed(3, 1.0 / 4096, 0.5);  // in [0, 1): a plausible softmax output
  FillMask(mask);
  input_grad.FillNaN();

  optest::TestStream stream;
  ASSERT_EQ(opcall::Run(opcall::ScaledMaskedSoftmaxBackward{grad_output.get(), y.get(), mask.get(), kSoftmaxScale,
                                                             false, input_grad.get()},
                        stream.get()),
            ACLNN_SUCCESS)
      << optest::RecentErrorMessage();

  for (int64_t row : SoftmaxCheckedRows()) {
    const std::vector<double> dy_row = Row(grad_output, row);
    const std::vector<double> y_row = Row(y, row);
    const std::vector<uint8_t> mask_row = MaskRow(mask, row);
    std::vector<double> expected(static_cast<size_t>(kSoftmaxS2));
    ref::ScaledMaskedSoftmaxBackward(dy_row.data(), y_row.data(), mask_row.data(), 1, 1, 1, kSoftmaxS2, 1, 1,
                                     kSoftmaxScale, expected.data());
    double sum = 0, sum_abs = 0;
    for (int64_t j = 0; j < kSoftmaxS2; ++j) {
      if (mask_row[static_cast<size_t>(j)] != 0) continue;
      sum += dy_row[static_cast<size_t>(j)] * y_row[static_cast<size_t>(j)];
      sum_abs += std::fabs(dy_row[static_cast<size_t>(j)] * y_row[static_cast<size_t>(j)]);
    }
    for (int64_t j = 0; j < kSoftmaxS2; ++j) {
      const size_t k = static_cast<size_t>(j);
      // The kernel's fp32 error: |scale y| u ((S2 + 2) sum|dy y| + 4 (|dy| + |s|)) (see the operator tests).
      const double bound =
          std::fabs(kSoftmaxScale * y_row[k]) * kUnitRoundoff32 *
          (static_cast<double>(kSoftmaxS2 + 2) * sum_abs + 4.0 * (std::fabs(dy_row[k]) + std::fabs(sum)));
      ExpectHalfClose("inputGrad row " + std::to_string(row) + " column " + std::to_string(j),
                      input_grad.At(row * kSoftmaxS2 + j), expected[k], bound);
    }
  }
}

}  // namespace
