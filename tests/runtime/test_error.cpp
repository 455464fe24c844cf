// The thread-local recent error messages behind aclGetRecentErrMsg, and StrFormat.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <utility>

#include "acl/acl.h"
#include "aclnn/opdev/op_errno.h"
#include "pacl/error.h"
#include "runtime_test_util.h"

namespace {

using pacl_test::Mentions;
using pacl_test::TakeErrors;

TEST(RecentErrorMessage, NoMessageGivesNull) {
  TakeErrors();
  EXPECT_EQ(aclGetRecentErrMsg(), nullptr);
  EXPECT_EQ(pacl::RecentErrorMessage(), "");
}

TEST(RecentErrorMessage, MessagesPileUpNewestFirstAndAreTakenOnce) {
  TakeErrors();
  pacl::SetRecentErrorMessage("first");
  pacl::SetRecentErrorMessage("second");
  EXPECT_EQ(pacl::RecentErrorMessage(), "second");
  pacl::SetRecentErrorMessage("third");
  EXPECT_EQ(pacl::RecentErrorMessage(), "third");  // reading does not take
  const char* text = aclGetRecentErrMsg();
  ASSERT_NE(text, nullptr);
  EXPECT_STREQ(text, "third\nsecond\nfirst");
  EXPECT_EQ(aclGetRecentErrMsg(), nullptr);
  EXPECT_EQ(pacl::RecentErrorMessage(), "");
}

TEST(RecentErrorMessage, EmptyMessageIsIgnored) {
  TakeErrors();
  pacl::SetRecentErrorMessage("");
  EXPECT_EQ(aclGetRecentErrMsg(), nullptr);
}

TEST(RecentErrorMessage, KeepsOnlyTheNewest32) {
  TakeErrors();
  for (int i = 0; i < 40; ++i) pacl::SetRecentErrorMessage("message " + std::to_string(i));
  const std::string text = TakeErrors();
  std::string expected;
  for (int i = 39; i >= 8; --i) {
    expected += "message " + std::to_string(i);
    if (i > 8) expected += '\n';
  }
  EXPECT_EQ(text, expected);
}

TEST(RecentErrorMessage, ReturnedTextSurvivesLaterFailures) {
  TakeErrors();
  EXPECT_EQ(aclrtFree(nullptr), ACL_ERROR_INVALID_PARAM);
  const char* text = aclGetRecentErrMsg();
  ASSERT_NE(text, nullptr);
  const std::string copy = text;
  // More failures before the next aclGetRecentErrMsg must not disturb the text handed out.
  for (int i = 0; i < 10; ++i) EXPECT_EQ(aclrtMemset(nullptr, 1, 0, 1), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(std::string(text), copy);
  EXPECT_TRUE(Mentions(copy, {"aclrtFree", "devPtr", "null"}));
  TakeErrors();
}

TEST(RecentErrorMessage, MessagesAreThreadLocal) {
  TakeErrors();
  EXPECT_EQ(aclrtMalloc(nullptr, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  std::string other_thread_sees_before;
  std::string other_thread_own;
  std::thread other([&] {
    other_thread_sees_before = TakeErrors();
    uint32_t* null_count = nullptr;
    EXPECT_EQ(aclrtGetDeviceCount(null_count), ACL_ERROR_INVALID_PARAM);
    other_thread_own = TakeErrors();
  });
  other.join();
  EXPECT_EQ(other_thread_sees_before, "");
  EXPECT_TRUE(Mentions(other_thread_own, {"aclrtGetDeviceCount", "count"}));
  const std::string mine = TakeErrors();
  EXPECT_TRUE(Mentions(mine, {"aclrtMalloc", "devPtr"}));
  EXPECT_EQ(mine.find("aclrtGetDeviceCount"), std::string::npos) << mine;
}

// The aclnn status codes carry the values of CANN's published table, so programs that compare against the
// names or the numbers (or print them) behave the same.
TEST(AclnnStatusCodes, HaveCannsValues) {
  const std::pair<int32_t, int32_t> codes[] = {
      {ACLNN_SUCCESS, 0},
      {ACLNN_ERR_PARAM_NULLPTR, 161001},
      {ACLNN_ERR_PARAM_INVALID, 161002},
      {ACLNN_ERR_RUNTIME_ERROR, 361001},
      {ACLNN_ERR_INNER, 561000},
      {ACLNN_ERR_INNER_INFERSHAPE_ERROR, 561001},
      {ACLNN_ERR_INNER_TILING_ERROR, 561002},
      {ACLNN_ERR_INNER_FIND_KERNEL_ERROR, 561003},
      {ACLNN_ERR_INNER_CREATE_EXECUTOR, 561101},
      {ACLNN_ERR_INNER_NOT_TRANS_EXECUTOR, 561102},
      {ACLNN_ERR_INNER_NULLPTR, 561103},
      {ACLNN_ERR_INNER_WRONG_ATTR_INFO_SIZE, 561104},
      {ACLNN_ERR_INNER_KEY_CONFILICT, 561105},
      {ACLNN_ERR_INNER_KEY_CONFLICT, 561105},
      {ACLNN_ERR_INNER_INVALID_IMPL_MODE, 561106},
      {ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND, 561107},
      {ACLNN_ERR_INNER_LOAD_JSON_FAILED, 561108},
      {ACLNN_ERR_INNER_JSON_VALUE_NOT_FOUND, 561109},
      {ACLNN_ERR_INNER_JSON_FORMAT_INVALID, 561110},
      {ACLNN_ERR_INNER_JSON_DTYPE_INVALID, 561111},
      {ACLNN_ERR_INNER_OPP_KERNEL_PKG_NOT_FOUND, 561112},
      {ACLNN_ERR_INNER_OP_FILE_INVALID, 561113},
      {ACLNN_ERR_INNER_ATTR_NUM_OUT_OF_BOUND, 561114},
      {ACLNN_ERR_INNER_ATTR_LEN_NOT_ENOUGH, 561115},
      {ACLNN_ERR_INNER_INPUT_NUM_IN_JSON_TOO_LARGE, 561116},
      {ACLNN_ERR_INNER_INPUT_JSON_IS_NULL, 561117},
      {ACLNN_ERR_INNER_STATIC_WORKSPACE_INVALID, 561118},
      {ACLNN_ERR_INNER_STATIC_BLOCK_DIM_INVALID, 561119},
  };
  for (const auto& [code, value] : codes) EXPECT_EQ(code, value);
}

TEST(StrFormat, FormatsShortAndLongText) {
  EXPECT_EQ(pacl::StrFormat("%s (%d) must not exceed %zu", "count", 7, size_t{5}), "count (7) must not exceed 5");
  EXPECT_EQ(pacl::StrFormat("%s", ""), "");
  const std::string long_part(5000, 'x');
  const std::string formatted = pacl::StrFormat("<%s>%d", long_part.c_str(), 42);
  EXPECT_EQ(formatted, "<" + long_part + ">42");
}

}  // namespace
