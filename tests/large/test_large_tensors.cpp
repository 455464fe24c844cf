// Tensors of over 2^31 elements (FLOAT16): ScaledMaskedSoftmax and GridSampler2D, forward and backward, each on one
// tensor whose element indices (and byte offsets) pass 2^31, spot-checked against the float64 references.
//
// An index computed in 32 bits anywhere on the way (shapes, strides, offsets, workspace layout, chunking) would
// wrap and read or write the wrong elements, so the checks look where the indices are largest: the softmax rows
// around element 2^31 and at the end, the grid sampler's last image and channel. The data is a function of the
// element index (HashedValue), so the expected values are recomputed from the index alone, without a second copy
// of the tensor. Outputs are pre-filled with NaN; inputGrad, which the backward writes whole, is scanned whole.
//
// Each test needs 9 to 14 GiB of memory: it is skipped, saying so, when /proc/meminfo's MemAvailable is smaller.
// The tests run one at a time (RUN_SERIAL in CMakeLists.txt) so two of them never hold their memory at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "ops/op_test_util.h"
#include "reference/float_formats.h"
#include "reference/grid_sampler2d_reference.h"
#include "reference/scaled_masked_softmax_reference.h"

namespace {

constexpr int64_t kTwoPow31 = int64_t{1} << 31;
constexpr double kUnitRoundoff32 = 0x1p-24;
constexpr uint16_t kHalfNaN = 0x7E00;

uint64_t MemAvailableBytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

// The test's message when the machine cannot hold `bytes` now ("" when it can).
// Why a test that needs this many bytes cannot run here ("" when it can).
std::string MissingMemory(uint64_t bytes) {
  if (!optest::DeviceIsCpu()) return optest::CpuOnlyReason("the data is written and read from the host");
  const uint64_t available = MemAvailableBytes();
  if (available >= bytes) return "";
  char text[160];
  std::snprintf(text, sizeof(text), "needs %.1f GiB of free memory, MemAvailable is %.1f GiB",
                static_cast<double>(bytes) / (1 << 30), static_cast<double>(available) / (1 << 30));
  return text;
}

// Element `index` of the tensor salted `salt`: one of 4096 values k / 1024 - 2 (exact in FLOAT16), spread by a
// multiplicative hash so that neighbours differ.
int64_t HashedLevel(int64_t index, uint64_t salt) {
  return static_cast<int64_t>(((static_cast<uint64_t>(index) + salt) * 0x9E3779B97F4A7C15ull) >> 52);
}
double HashedValue(int64_t index, uint64_t salt) {
  return static_cast<double>(HashedLevel(index, salt) - 2048) / 1024.0;
}

// Runs body(begin, end) over [0, count) on every core (filling and scanning 4 GiB one-threaded is slow under ASan).
template <typename Body>
void ForRanges(int64_t count, const Body& body) {
  const int64_t threads = std::max<int64_t>(1, std::thread::hardware_concurrency());
  std::vector<std::thread> workers;
  for (int64_t t = 0; t < threads; ++t) {
    workers.emplace_back([&body, count, threads, t] { body(count * t / threads, count * (t + 1) / threads); });
  }
  for (std::thread& worker : workers) worker.join();
}

// Device memory holding `shape` contiguously as FLOAT16 (or as `dtype`), with its aclTensor.
class LargeTensor {
 public:
  LargeTensor(std::vector<int64_t> shape, aclDataType dtype = ACL_FLOAT16) : shape_(std::move(shape)), dtype_(dtype) {
    elements_ = optest::NumElements(shape_);
    const size_t bytes = static_cast<size_t>(std::max<int64_t>(elements_, 1)) * optest::ElementBytes(dtype_);
    if (aclrtMalloc(&data_, bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
      ADD_FAILURE() << "aclrtMalloc of " << bytes << " bytes failed: " << optest::RecentErrorMessage();
      data_ = nullptr;
      return;
    }
    const std::vector<int64_t> strides = optest::ContiguousStrides(shape_);
    const int64_t storage[1] = {elements_};
    tensor_ =
        aclCreateTensor(shape_.data(), shape_.size(), dtype_, strides.data(), 0, ACL_FORMAT_ND, storage, 1, data_);
    EXPECT_NE(tensor_, nullptr) << optest::RecentErrorMessage();
  }
  ~LargeTensor() {
    if (tensor_ != nullptr) aclDestroyTensor(tensor_);
    if (data_ != nullptr) aclrtFree(data_);
  }
  LargeTensor(const LargeTensor&) = delete;
  LargeTensor& operator=(const LargeTensor&) = delete;

  bool ok() const { return tensor_ != nullptr; }
  aclTensor* get() const { return tensor_; }
  int64_t size() const { return elements_; }
  uint16_t* half() const { return static_cast<uint16_t*>(data_); }
  uint8_t* bytes() const { return static_cast<uint8_t*>(data_); }

  // Element i = HashedValue(i, salt) * value_scale + value_shift, rounded to FLOAT16 (exact for scale 1, shift 0).
  void FillHashed(uint64_t salt, double value_scale = 1.0, double value_shift = 0.0) const {
    std::vector<uint16_t> levels(4096);
    for (int64_t k = 0; k < 4096; ++k) {
      levels[static_cast<size_t>(k)] =
          ref::DoubleToHalfBits(static_cast<double>(k - 2048) / 1024.0 * value_scale + value_shift);
    }
    uint16_t* data = half();
    const uint16_t* table = levels.data();
    ForRanges(elements_, [=](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) data[i] = table[HashedLevel(i, salt)];
    });
  }
  void FillNaN() const {
    uint16_t* data = half();
    ForRanges(elements_, [=](int64_t begin, int64_t end) { std::fill(data + begin, data + end, kHalfNaN); });
  }
  double At(int64_t i) const { return ref::HalfBitsToDouble(half()[i]); }

 private:
  std::vector<int64_t> shape_;
  aclDataType dtype_;
  int64_t elements_ = 0;
  void* data_ = nullptr;
  aclTensor* tensor_ = nullptr;
};

// A FLOAT16 tensor of `shape` whose elements all alias one element (stride 0): an operand a call does not use.
class UnusedOperand {
 public:
  explicit UnusedOperand(const std::vector<int64_t>& shape) {
    const std::vector<int64_t> strides(shape.size(), 0);
    const int64_t storage[1] = {1};
    tensor_ = aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT16, strides.data(), 0, ACL_FORMAT_ND, storage, 1,
                              &element_);
    EXPECT_NE(tensor_, nullptr) << optest::RecentErrorMessage();
  }
  ~UnusedOperand() {
    if (tensor_ != nullptr) aclDestroyTensor(tensor_);
  }
  UnusedOperand(const UnusedOperand&) = delete;
  UnusedOperand& operator=(const UnusedOperand&) = delete;
  aclTensor* get() const { return tensor_; }

 private:
  uint16_t element_ = 0;
  aclTensor* tensor_ = nullptr;
};

// |actual - round(expected)| <= 1 ulp + fp32_bound (the kernel's fp32 error before its single rounding).
void ExpectHalfClose(const std::string& where, double actual, double expected, double fp32_bound) {
  const double rounded = ref::RoundToFormat(expected, ref::kHalf);
  if (std::isinf(rounded)) {
    EXPECT_EQ(actual, rounded) << where << ": expected " << expected << " (rounded " << rounded << ")";
    return;
  }
  const double ulp = ref::UlpOf(std::max(std::fabs(rounded), std::fabs(actual)), ref::kHalf);
  EXPECT_LE(std::fabs(actual - rounded), ulp + fp32_bound)
      << where << ": got " << actual << ", expected " << expected << " (rounded " << rounded << ")";
}

// ------------------------------------------------------------------------------------------------------------
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

// ------------------------------------------------------------------------------------------------------------
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
