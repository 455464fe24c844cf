// Runs a test body once per Highway target compiled into libnnopbase that this CPU can run, with dynamic dispatch
// restricted to that target (pacl::convert_testing), so that the narrower targets are tested on a wide machine.
#ifndef PACL_TESTS_BASE_SIMD_TARGETS_H_
#define PACL_TESTS_BASE_SIMD_TARGETS_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "hwy/targets.h"  // hwy::TargetName and the HWY_* target bits (header-only parts)
#include "pacl/convert.h"

namespace simd_targets {

// Best (lowest bit) first.
inline std::vector<int64_t> AvailableTargets() {
  std::vector<int64_t> targets;
  for (int64_t mask = pacl::convert_testing::AvailableSimdTargetsForTest(); mask != 0; mask &= mask - 1) {
    targets.push_back(mask & -mask);
  }
  return targets;
}

// Restricts dynamic dispatch to one target for its lifetime.
class TargetRestriction {
 public:
  explicit TargetRestriction(int64_t target) { pacl::convert_testing::SetSimdTargetsForTest(target); }
  ~TargetRestriction() { pacl::convert_testing::SetSimdTargetsForTest(0); }
  TargetRestriction(const TargetRestriction&) = delete;
  TargetRestriction& operator=(const TargetRestriction&) = delete;
};

// Calls fn(target_name) once per available target with dispatch restricted to it.
template <class Fn>
void ForEachTarget(Fn&& fn) {
  const std::vector<int64_t> targets = AvailableTargets();
  ASSERT_FALSE(targets.empty());
  for (int64_t target : targets) {
    TargetRestriction restriction(target);
    SCOPED_TRACE(std::string("target ") + hwy::TargetName(target));
    ASSERT_STREQ(pacl::SimdTargetName(), hwy::TargetName(target)) << "dispatch did not switch target";
    fn(std::string(hwy::TargetName(target)));
  }
}

}  // namespace simd_targets

#endif  // PACL_TESTS_BASE_SIMD_TARGETS_H_
