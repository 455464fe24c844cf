// The phase-1 checks an operator's *_errors test makes of its calls, for a fixture over the operator's argument
// struct: an accepted call hands out an executor (destroyed here); a rejected one returns the expected status, leaves
// a message naming the function and every expected fragment, writes no output and hands out no executor.
//
// A fixture derives from testing::Test (or TestWithParam) and PhaseOneChecks<Args>, and supplies Valid() (one
// accepted call, its workspace size and executor pointing at workspace_size_ and executor_), Call() (phase 1 on the
// arguments), OpName() and Outputs() (the outputs a rejected call must leave untouched).
#ifndef PACL_TESTS_SUPPORT_PHASE1_CHECKS_H_
#define PACL_TESTS_SUPPORT_PHASE1_CHECKS_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "op_test_util.h"

namespace optest {

template <class Args>
class PhaseOneChecks {
 public:
  virtual ~PhaseOneChecks() = default;

 protected:
  virtual Args Valid() = 0;
  virtual aclnnStatus Call(const Args& a) = 0;
  virtual std::string OpName() const = 0;
  virtual std::vector<const DeviceTensor*> Outputs() = 0;
  // What else a rejected call must not have written (an output whose pre-fill is not NaN, ...): nothing by default.
  virtual void ExpectNothingElseWritten() {}

  void ExpectAccepted(const Args& a) {
    executor_ = nullptr;
    ASSERT_EQ(Call(a), ACLNN_SUCCESS) << RecentErrorMessage();
    ASSERT_NE(executor_, nullptr);
    EXPECT_EQ(aclDestroyAclOpExecutor(executor_), ACLNN_SUCCESS);
    executor_ = nullptr;
  }
  void ExpectRejected(const Args& a, aclnnStatus status, const std::vector<std::string>& fragments) {
    executor_ = nullptr;
    EXPECT_EQ(Call(a), status);
    ExpectErrorMessage(OpName(), fragments);
    ExpectOutputsUntouched(Outputs());
    ExpectNothingElseWritten();
    EXPECT_EQ(executor_, nullptr);
  }
  void ExpectInvalid(const Args& a, const std::vector<std::string>& fragments) {
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, fragments);
  }
  // The valid call with one tensor replaced must be invalid.
  void ExpectInvalidWith(const aclTensor* Args::*member, const DeviceTensor& replacement,
                         const std::vector<std::string>& fragments) {
    Args a = Valid();
    a.*member = replacement.get();
    ExpectInvalid(a, fragments);
  }

  uint64_t workspace_size_ = 12345;
  aclOpExecutor* executor_ = nullptr;
};

// A contiguous tensor every dtype rule accepts and phase 1 never reads: 0.5 in floating dtypes, 0 in integer ones.
inline DeviceTensor ValidTensor(std::vector<int64_t> shape, aclDataType dtype, aclFormat format = ACL_FORMAT_ND) {
  const bool integer = dtype == ACL_INT32 || dtype == ACL_INT64 || dtype == ACL_BOOL || dtype == ACL_UINT8;
  const std::vector<double> values(static_cast<size_t>(NumElements(shape)), integer ? 0.0 : 0.5);
  return DeviceTensor(std::move(shape), dtype, Layout::kContiguous, values, format);
}

}  // namespace optest

#endif  // PACL_TESTS_SUPPORT_PHASE1_CHECKS_H_
