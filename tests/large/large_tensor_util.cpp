#include "large_tensor_util.h"

#include <cmath>
#include <cstdio>
#include <fstream>

namespace largetest {
namespace {

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

}  // namespace

std::string MissingMemory(uint64_t bytes) {
  if (!optest::DeviceIsCpu()) return optest::CpuOnlyReason("the data is written and read from the host");
  const uint64_t available = MemAvailableBytes();
  if (available >= bytes) return "";
  char text[160];
  std::snprintf(text, sizeof(text), "needs %.1f GiB of free memory, MemAvailable is %.1f GiB",
                static_cast<double>(bytes) / (1 << 30), static_cast<double>(available) / (1 << 30));
  return text;
}

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

}  // namespace largetest
