// The conformance table: every operator, in every dtype it accepts, in six variants of layouts and modes and two
// sizes (op_cases.h, the operator-call table the whole-library tests share), run on the CURRENT DEVICE and checked
// against the float64 references, twice, for the same bits. It is the suite that runs unchanged on every device:
// `ACLNN_DEVICE=cuda conformance_tests` on a GPU. An operator the device has no implementation for (phase 1:
// 161002 "no implementation for ...") is reported as skipped with that message, so the table shows what each
// device covers.
#include <gtest/gtest.h>

#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/opdev/op_errno.h"
#include "system/op_cases.h"

namespace {

using systest::CaseSize;
using systest::OpCase;

struct ConformanceCase {
  const systest::CaseMaker* maker;
  aclDataType dtype;
  int variant;
  CaseSize size;
};

std::vector<ConformanceCase> AllCases() {
  std::vector<ConformanceCase> cases;
  for (const systest::CaseMaker& maker : systest::AllCaseMakers()) {
    for (aclDataType dtype : maker.dtypes) {
      for (int variant = 0; variant < 6; ++variant) cases.push_back({&maker, dtype, variant, CaseSize::kSmall});
      cases.push_back({&maker, dtype, 0, CaseSize::kConcurrency});
    }
  }
  return cases;
}

std::string CaseName(const ::testing::TestParamInfo<ConformanceCase>& info) {
  std::string name = std::string(info.param.maker->op->name) + "_" + optest::DTypeName(info.param.dtype) +
                     "_v" + std::to_string(info.param.variant) +
                     (info.param.size == CaseSize::kSmall ? "_small" : "_large");
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

class Conformance : public ::testing::TestWithParam<ConformanceCase> {
 protected:
  void SetUp() override {
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS) << optest::RecentErrorMessage();
    ASSERT_EQ(aclrtCreateStream(&stream_), ACL_SUCCESS) << optest::RecentErrorMessage();
  }
  void TearDown() override {
    if (stream_ != nullptr) {
      EXPECT_EQ(aclrtDestroyStream(stream_), ACL_SUCCESS);
    }
    EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  }
  aclrtStream stream_ = nullptr;
};

TEST_P(Conformance, MatchesTheReferenceWithTheSameBitsTwice) {
  const ConformanceCase& param = GetParam();
  std::unique_ptr<OpCase> c =
      param.maker->make(param.dtype, 1234 + static_cast<uint64_t>(param.variant), param.variant, param.size);
  // Phase 1 first: a device without an implementation for this operator and dtype says so.
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus status = c->GetWorkspaceSize(&workspace_size, &executor);
  if (status != ACLNN_SUCCESS) {
    const std::string message = optest::RecentErrorMessage();
    if (status == ACLNN_ERR_PARAM_INVALID && message.find("no implementation for") != std::string::npos) {
      GTEST_SKIP() << message;
    }
    FAIL() << c->name() << ": phase 1 returned " << status << ": " << message;
  }
  aclDestroyAclOpExecutor(executor);
  ASSERT_TRUE(c->RunAndWait(stream_));
  EXPECT_EQ(c->CheckAgainstReference(), "");
  EXPECT_EQ(c->CheckGuards(), "");
  const std::vector<uint8_t> first = c->OutputBytes();
  c->ResetOutputs();
  ASSERT_TRUE(c->RunAndWait(stream_));
  EXPECT_TRUE(c->OutputBytes() == first) << c->name() << ": a second run gave other bits";
}

INSTANTIATE_TEST_SUITE_P(EveryOperator, Conformance, ::testing::ValuesIn(AllCases()), CaseName);

// An operator added to the operator-call table (src/ops/<op>/test/<op>_calls.cpp) without conformance cases
// (<op>_cases.cpp) would silently leave the table, the digests and the whole-library tests.
TEST(ConformanceTable, EveryOperatorOfTheCallTableHasCases) {
  for (const opcall::OpInfo* op : opcall::AllOps()) {
    EXPECT_NE(systest::FindCaseMaker(op->name), nullptr) << op->name;
  }
  EXPECT_EQ(systest::AllCaseMakers().size(), opcall::AllOps().size());
  EXPECT_GE(opcall::AllOps().size(), 8u);
}

}  // namespace
