// The harness of the large-tensor tests (tests of over 2^31 elements; each operator's are
// src/ops/<op>/test/large_test_<op>.cpp, compiled into large_tests):
// An index computed in 32 bits anywhere on the way (shapes, strides, offsets, workspace layout, chunking) would
// wrap and read or write the wrong elements, so the checks look where the indices are largest: the softmax rows
// around element 2^31 and at the end, the grid sampler's last image and channel. The data is a function of the
// element index (HashedValue), so the expected values are recomputed from the index alone, without a second copy
// of the tensor. Outputs are pre-filled with NaN; inputGrad, which the backward writes whole, is scanned whole.
//
// Each test needs 9 to 14 GiB of memory: it is skipped, saying so, when /proc/meminfo's MemAvailable is smaller.
// The tests run one at a time (RUN_SERIAL in CMakeLists.txt) so two of them never hold their memory at once.
#ifndef PACL_TESTS_LARGE_LARGE_TENSOR_UTIL_H_
#define PACL_TESTS_LARGE_LARGE_TENSOR_UTIL_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "float_formats.h"
#include "op_test_util.h"

namespace largetest {


inline constexpr int64_t kTwoPow31 = int64_t{1} << 31;
inline constexpr double kUnitRoundoff32 = 0x1p-24;
inline constexpr uint16_t kHalfNaN = 0x7E00;

// Why a test that needs `bytes` of free memory cannot run here now ("" when it can): the device is not the CPU, or
// /proc/meminfo's MemAvailable is smaller.
std::string MissingMemory(uint64_t bytes);

// Element `index` of the tensor salted `salt`: one of 4096 values k / 1024 - 2 (exact in FLOAT16), spread by a
// multiplicative hash so that neighbours differ.
inline int64_t HashedLevel(int64_t index, uint64_t salt) {
  return static_cast<int64_t>(((static_cast<uint64_t>(index) + salt) * 0x9E3779B97F4A7C15ull) >> 52);
}
inline double HashedValue(int64_t index, uint64_t salt) {
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
void ExpectHalfClose(const std::string& where, double actual, double expected, double fp32_bound);

}  // namespace largetest

#endif  // PACL_TESTS_LARGE_LARGE_TENSOR_UTIL_H_
