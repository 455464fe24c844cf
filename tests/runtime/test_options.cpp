// System options: process-wide and per-context values, their checks, and pacl::rt::DeterministicEnabled.
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "acl/acl.h"
#include "pacl/runtime.h"
#include "runtime_test_util.h"

namespace {

using pacl_test::Mentions;
using pacl_test::TakeErrors;

class OptionsTest : public pacl_test::DeviceTest {
 protected:
  void TearDown() override {
    // Leave the process-wide values as other tests expect them.
    EXPECT_EQ(aclrtSetSysParamOpt(ACL_OPT_DETERMINISTIC, 0), ACL_SUCCESS);
    EXPECT_EQ(aclrtSetSysParamOpt(ACL_OPT_ENABLE_DEBUG_KERNEL, 0), ACL_SUCCESS);
    DeviceTest::TearDown();
  }
};

// No test sets ACL_OPT_STRONG_CONSISTENCY process-wide, so it reads as never set whatever ran before.
TEST_F(OptionsTest, NeverSetReadsZero) {
  int64_t value = -1;
  EXPECT_EQ(aclrtGetSysParamOpt(ACL_OPT_STRONG_CONSISTENCY, &value), ACL_SUCCESS);
  EXPECT_EQ(value, 0);
  aclrtContext fresh = nullptr;
  ASSERT_EQ(aclrtCreateContext(&fresh, 0), ACL_SUCCESS);
  for (int opt = 0; opt < 3; ++opt) {
    value = -1;
    EXPECT_EQ(aclrtCtxGetSysParamOpt(static_cast<aclSysParamOpt>(opt), &value), ACL_SUCCESS);
    EXPECT_EQ(value, 0) << opt;
  }
  EXPECT_EQ(aclrtDestroyContext(fresh), ACL_SUCCESS);
}

TEST_F(OptionsTest, ProcessWideSetAndGet) {
  int64_t value = -1;
  EXPECT_EQ(aclrtSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), ACL_SUCCESS);
  EXPECT_EQ(aclrtGetSysParamOpt(ACL_OPT_DETERMINISTIC, &value), ACL_SUCCESS);
  EXPECT_EQ(value, 1);
  EXPECT_EQ(aclrtSetSysParamOpt(ACL_OPT_ENABLE_DEBUG_KERNEL, 7), ACL_SUCCESS);
  EXPECT_EQ(aclrtGetSysParamOpt(ACL_OPT_ENABLE_DEBUG_KERNEL, &value), ACL_SUCCESS);
  EXPECT_EQ(value, 7);
  // Visible from every thread, with or without a context.
  std::thread other([] {
    int64_t seen = -1;
    EXPECT_EQ(aclrtGetSysParamOpt(ACL_OPT_DETERMINISTIC, &seen), ACL_SUCCESS);
    EXPECT_EQ(seen, 1);
  });
  other.join();
  EXPECT_EQ(aclrtSetSysParamOpt(ACL_OPT_DETERMINISTIC, 0), ACL_SUCCESS);
  EXPECT_EQ(aclrtGetSysParamOpt(ACL_OPT_DETERMINISTIC, &value), ACL_SUCCESS);
  EXPECT_EQ(value, 0);
}

TEST_F(OptionsTest, ContextValuesAreSeparatePerContext) {
  aclrtContext first = nullptr;
  aclrtContext second = nullptr;
  ASSERT_EQ(aclrtCreateContext(&first, 0), ACL_SUCCESS);
  EXPECT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), ACL_SUCCESS);
  EXPECT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_STRONG_CONSISTENCY, -5), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateContext(&second, 0), ACL_SUCCESS);
  int64_t value = -1;
  EXPECT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &value), ACL_SUCCESS);
  EXPECT_EQ(value, 0);
  ASSERT_EQ(aclrtSetCurrentContext(first), ACL_SUCCESS);
  EXPECT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &value), ACL_SUCCESS);
  EXPECT_EQ(value, 1);
  EXPECT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_STRONG_CONSISTENCY, &value), ACL_SUCCESS);
  EXPECT_EQ(value, -5);
  // The process-wide value is a different thing.
  EXPECT_EQ(aclrtGetSysParamOpt(ACL_OPT_DETERMINISTIC, &value), ACL_SUCCESS);
  EXPECT_EQ(value, 0);
  EXPECT_EQ(aclrtDestroyContext(first), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyContext(second), ACL_SUCCESS);
}

TEST_F(OptionsTest, BadArgumentsAreRejected) {
  int64_t value = 0;
  for (int opt : {3, -1, 100}) {
    const auto bad = static_cast<aclSysParamOpt>(opt);
    EXPECT_EQ(aclrtSetSysParamOpt(bad, 0), ACL_ERROR_INVALID_PARAM);
    EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtSetSysParamOpt", "opt", std::to_string(opt).c_str()}));
    EXPECT_EQ(aclrtGetSysParamOpt(bad, &value), ACL_ERROR_INVALID_PARAM);
    EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtGetSysParamOpt", "opt"}));
    EXPECT_EQ(aclrtCtxSetSysParamOpt(bad, 0), ACL_ERROR_INVALID_PARAM);
    EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtCtxSetSysParamOpt", "opt"}));
    EXPECT_EQ(aclrtCtxGetSysParamOpt(bad, &value), ACL_ERROR_INVALID_PARAM);
    EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtCtxGetSysParamOpt", "opt"}));
  }
  for (int64_t bad_value : {int64_t{2}, int64_t{-1}, int64_t{1} << 40}) {
    EXPECT_EQ(aclrtSetSysParamOpt(ACL_OPT_DETERMINISTIC, bad_value), ACL_ERROR_INVALID_PARAM);
    EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtSetSysParamOpt", "ACL_OPT_DETERMINISTIC", "0", "1",
                                        std::to_string(bad_value).c_str()}));
    EXPECT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, bad_value), ACL_ERROR_INVALID_PARAM);
    EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtCtxSetSysParamOpt", "ACL_OPT_DETERMINISTIC"}));
  }
  // Refused values change nothing.
  EXPECT_EQ(aclrtGetSysParamOpt(ACL_OPT_DETERMINISTIC, &value), ACL_SUCCESS);
  EXPECT_EQ(value, 0);
  EXPECT_EQ(aclrtGetSysParamOpt(ACL_OPT_DETERMINISTIC, nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtGetSysParamOpt", "value"}));
  EXPECT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtCtxGetSysParamOpt", "value"}));
}

TEST_F(OptionsTest, DeterministicEnabledPrefersTheContextsValue) {
  aclrtContext context = nullptr;
  ASSERT_EQ(aclrtCreateContext(&context, 0), ACL_SUCCESS);
  // Nothing set anywhere (OptionsTest's TearDown sets the process value, so ask a fresh process): deterministic.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::exit(pacl::rt::DeterministicEnabled() ? 0 : 1), ::testing::ExitedWithCode(0), "");
  ASSERT_EQ(aclrtSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), ACL_SUCCESS);
  EXPECT_TRUE(pacl::rt::DeterministicEnabled());  // the process value, the context has none
  ASSERT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 0), ACL_SUCCESS);
  EXPECT_FALSE(pacl::rt::DeterministicEnabled());  // the context's own value wins
  ASSERT_EQ(aclrtSetSysParamOpt(ACL_OPT_DETERMINISTIC, 0), ACL_SUCCESS);
  ASSERT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), ACL_SUCCESS);
  EXPECT_TRUE(pacl::rt::DeterministicEnabled());

  // A thread without a context sees the process value; one that adopts the context sees the context's.
  std::thread other([context] {
    EXPECT_FALSE(pacl::rt::DeterministicEnabled());
    ASSERT_EQ(aclrtSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), ACL_SUCCESS);
    EXPECT_TRUE(pacl::rt::DeterministicEnabled());
    ASSERT_EQ(aclrtSetSysParamOpt(ACL_OPT_DETERMINISTIC, 0), ACL_SUCCESS);
    ASSERT_EQ(aclrtSetCurrentContext(context), ACL_SUCCESS);
    EXPECT_TRUE(pacl::rt::DeterministicEnabled());
  });
  other.join();
  EXPECT_EQ(aclrtDestroyContext(context), ACL_SUCCESS);
  // Back on the default context (made current again below), which never set a value.
  aclrtContext default_context = nullptr;
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  ASSERT_EQ(aclrtGetCurrentContext(&default_context), ACL_SUCCESS);
  EXPECT_FALSE(pacl::rt::DeterministicEnabled());
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
}

}  // namespace
