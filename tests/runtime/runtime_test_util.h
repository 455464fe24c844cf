// Helpers shared by the runtime tests.
#ifndef PACL_TESTS_RUNTIME_RUNTIME_TEST_UTIL_H_
#define PACL_TESTS_RUNTIME_RUNTIME_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

#include "acl/acl.h"

namespace pacl_test {

// Takes (and clears) the calling thread's pending error messages; "" when there are none.
inline std::string TakeErrors() {
  const char* text = aclGetRecentErrMsg();
  return text == nullptr ? std::string() : std::string(text);
}

// Asserts that message contains every one of parts.
inline ::testing::AssertionResult Mentions(const std::string& message, std::initializer_list<const char*> parts) {
  for (const char* part : parts) {
    if (message.find(part) == std::string::npos) {
      return ::testing::AssertionFailure() << "message \"" << message << "\" does not mention \"" << part << "\"";
    }
  }
  return ::testing::AssertionSuccess();
}

// A one-shot gate. Waits time out, so a broken runtime fails a test instead of hanging it.
class Gate {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    opened_.notify_all();
  }
  bool Wait(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> lock(mutex_);
    return opened_.wait_for(lock, timeout, [&] { return open_; });
  }
  bool IsOpen() {
    std::lock_guard<std::mutex> lock(mutex_);
    return open_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
};

// Runs each test with device 0 set on the test thread (its default context current) and releases it afterwards.
class DeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TakeErrors();
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  }
  void TearDown() override {
    EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
    TakeErrors();
  }
};

}  // namespace pacl_test

#endif  // PACL_TESTS_RUNTIME_RUNTIME_TEST_UTIL_H_
