// aclInit / aclFinalize, the device and the contexts (current per thread, reference-counted default context).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "acl/acl.h"
#include "pacl/runtime.h"
#include "runtime_test_util.h"

namespace {

using pacl_test::DeviceTest;
using pacl_test::Mentions;
using pacl_test::TakeErrors;

// A readable temporary file, removed when the test ends.
class TempFile {
 public:
  TempFile() {
    char name[] = "/tmp/pacl_runtime_config_XXXXXX";
    const int fd = ::mkstemp(name);
    EXPECT_GE(fd, 0);
    if (fd >= 0) {
      const char content[] = "{}\n";
      EXPECT_EQ(::write(fd, content, sizeof content - 1), static_cast<ssize_t>(sizeof content - 1));
      ::close(fd);
    }
    path_ = name;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const char* path() const { return path_.c_str(); }

 private:
  std::string path_;
};

TEST(Init, InitAndFinalizeCodes) {
  TakeErrors();
  // Whatever earlier tests in this process did, they finalised: finalising now is a repeat.
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclFinalize", "not initialised"}));

  EXPECT_EQ(aclInit(nullptr), ACL_SUCCESS);
  EXPECT_EQ(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE);
  EXPECT_EQ(ACL_ERROR_REPEAT_INITIALIZE, 100002);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclInit", "already initialised"}));
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
  EXPECT_EQ(ACL_ERROR_REPEAT_FINALIZE, 100037);
  TakeErrors();

  // Initialising again after finalising works; "" means no configuration.
  EXPECT_EQ(aclInit(""), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(aclGetRecentErrMsg(), nullptr);
}

TEST(Init, ConfigFileMustExistAndBeReadable) {
  TakeErrors();
  const char* missing = "/nonexistent/pacl/acl_config.json";
  EXPECT_EQ(aclInit(missing), ACL_ERROR_INVALID_FILE);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclInit", "configPath", missing}));
  // A failed aclInit leaves the runtime uninitialised.
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
  TakeErrors();

  EXPECT_EQ(aclInit("/tmp"), ACL_ERROR_INVALID_FILE);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclInit", "/tmp", "directory"}));

  TempFile config;
  EXPECT_EQ(aclInit(config.path()), ACL_SUCCESS);
  // A repeat is refused whatever the path.
  EXPECT_EQ(aclInit(missing), ACL_ERROR_REPEAT_INITIALIZE);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  TakeErrors();
}

TEST(Init, RuntimeWorksWithoutInit) {
  TakeErrors();
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  void* memory = nullptr;
  ASSERT_EQ(aclrtMalloc(&memory, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(memory), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
}

TEST(Init, FinalizeDrainsAndDestroysContextsAndStreams) {
  TakeErrors();
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  aclrtContext user_context = nullptr;
  ASSERT_EQ(aclrtCreateContext(&user_context, 0), ACL_SUCCESS);
  std::atomic<int> ran{0};
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(pacl::rt::EnqueueTask(stream, [&ran] {
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
                ++ran;
                return ACL_SUCCESS;
              }),
              ACL_SUCCESS);
  }
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(ran.load(), 5);  // queued work ran before the stream went away
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtSetCurrentContext(user_context), ACL_ERROR_INVALID_PARAM);
  aclrtContext current = nullptr;
  EXPECT_EQ(aclrtGetCurrentContext(&current), ACL_ERROR_RT_CONTEXT_NULL);
  // Resetting the device after finalising is harmless.
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  TakeErrors();
}

TEST(Init, Version) {
  int32_t major = -1, minor = -1, patch = -1;
  EXPECT_EQ(aclrtGetVersion(&major, &minor, &patch), ACL_SUCCESS);
  EXPECT_EQ(major, ACL_MAJOR_VERSION);
  EXPECT_EQ(minor, ACL_MINOR_VERSION);
  EXPECT_EQ(patch, ACL_PATCH_VERSION);
  EXPECT_EQ(aclrtGetVersion(&major, nullptr, &patch), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtGetVersion", "minorVersion"}));
}

TEST(Device, CountRunModeAndBadIds) {
  TakeErrors();
  uint32_t count = 0;
  EXPECT_EQ(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(aclrtGetDeviceCount(nullptr), ACL_ERROR_INVALID_PARAM);
  aclrtRunMode mode = ACL_DEVICE;
  EXPECT_EQ(aclrtGetRunMode(&mode), ACL_SUCCESS);
  EXPECT_EQ(mode, ACL_HOST);
  EXPECT_EQ(aclrtGetRunMode(nullptr), ACL_ERROR_INVALID_PARAM);
  TakeErrors();

  EXPECT_EQ(aclrtSetDevice(1), ACL_ERROR_RT_INVALID_DEVICEID);
  EXPECT_EQ(ACL_ERROR_RT_INVALID_DEVICEID, 107001);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtSetDevice", "deviceId (1)"}));
  EXPECT_EQ(aclrtSetDevice(-1), ACL_ERROR_RT_INVALID_DEVICEID);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtSetDevice", "deviceId (-1)"}));
  EXPECT_EQ(aclrtResetDevice(7), ACL_ERROR_RT_INVALID_DEVICEID);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtResetDevice", "deviceId (7)"}));
  aclrtContext context = nullptr;
  EXPECT_EQ(aclrtCreateContext(&context, 2), ACL_ERROR_RT_INVALID_DEVICEID);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtCreateContext", "deviceId (2)"}));
  EXPECT_EQ(context, nullptr);
  // A bad id does not set a context.
  EXPECT_EQ(aclrtGetCurrentContext(&context), ACL_ERROR_RT_CONTEXT_NULL);
  TakeErrors();
}

// A thread that never set a device or context gets 107002 from everything that needs one.
TEST(Device, NoCurrentContext) {
  std::thread fresh([] {
    aclrtContext context = nullptr;
    EXPECT_EQ(aclrtGetCurrentContext(&context), ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT_EQ(ACL_ERROR_RT_CONTEXT_NULL, 107002);
    EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtGetCurrentContext", "no current context"}));
    int32_t device = -1;
    EXPECT_EQ(aclrtGetDevice(&device), ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtGetDevice"}));
    aclrtStream stream = nullptr;
    EXPECT_EQ(aclrtCreateStream(&stream), ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT_EQ(pacl::rt::EnqueueTask(nullptr, [] { return ACL_SUCCESS; }), ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT_TRUE(Mentions(TakeErrors(), {"EnqueueTask", "no current context"}));
    EXPECT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), ACL_ERROR_RT_CONTEXT_NULL);
    int64_t value = 0;
    EXPECT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &value), ACL_ERROR_RT_CONTEXT_NULL);
    TakeErrors();
  });
  fresh.join();
}

TEST_F(DeviceTest, SetDeviceMakesTheDefaultContextCurrentOnThisThreadOnly) {
  aclrtContext context = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&context), ACL_SUCCESS);
  EXPECT_NE(context, nullptr);
  int32_t device = -1;
  EXPECT_EQ(aclrtGetDevice(&device), ACL_SUCCESS);
  EXPECT_EQ(device, 0);
  EXPECT_EQ(aclrtGetDevice(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtGetCurrentContext(nullptr), ACL_ERROR_INVALID_PARAM);
  TakeErrors();

  std::thread other([context] {
    aclrtContext seen = nullptr;
    EXPECT_EQ(aclrtGetCurrentContext(&seen), ACL_ERROR_RT_CONTEXT_NULL);  // none until it sets one
    TakeErrors();
    EXPECT_EQ(aclrtSetCurrentContext(context), ACL_SUCCESS);
    EXPECT_EQ(aclrtGetCurrentContext(&seen), ACL_SUCCESS);
    EXPECT_EQ(seen, context);
  });
  other.join();

  // A second aclrtSetDevice (any thread) retains the same default context.
  std::thread setter([context] {
    EXPECT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    aclrtContext seen = nullptr;
    EXPECT_EQ(aclrtGetCurrentContext(&seen), ACL_SUCCESS);
    EXPECT_EQ(seen, context);
    EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  });
  setter.join();
  // One reference is left (the fixture's): the context is still alive.
  aclrtContext still = nullptr;
  EXPECT_EQ(aclrtGetCurrentContext(&still), ACL_SUCCESS);
  EXPECT_EQ(still, context);
}

TEST(Device, ResetDeviceCountsReferencesAndDestroysAtZero) {
  TakeErrors();
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  aclrtContext context = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&context), ACL_SUCCESS);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);

  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  aclrtContext seen = nullptr;
  EXPECT_EQ(aclrtGetCurrentContext(&seen), ACL_SUCCESS);
  EXPECT_EQ(seen, context);
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);

  // The last reset synchronises: work queued on the context's streams (the default one included) still runs.
  std::atomic<int> ran{0};
  auto slow_task = [&ran] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ++ran;
    return ACL_SUCCESS;
  };
  ASSERT_EQ(pacl::rt::EnqueueTask(stream, slow_task), ACL_SUCCESS);
  ASSERT_EQ(pacl::rt::EnqueueTask(nullptr, slow_task), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(ran.load(), 2);

  EXPECT_EQ(aclrtGetCurrentContext(&seen), ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_EQ(aclrtSetCurrentContext(context), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtSetCurrentContext", "not a live context"}));
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_ERROR_INVALID_PARAM);
  TakeErrors();
  // Resetting a device that is not set is harmless.
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
}

TEST_F(DeviceTest, CreateSetAndDestroyContexts) {
  aclrtContext default_context = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&default_context), ACL_SUCCESS);

  aclrtContext created = nullptr;
  ASSERT_EQ(aclrtCreateContext(&created, 0), ACL_SUCCESS);
  ASSERT_NE(created, nullptr);
  EXPECT_NE(created, default_context);
  aclrtContext current = nullptr;
  EXPECT_EQ(aclrtGetCurrentContext(&current), ACL_SUCCESS);
  EXPECT_EQ(current, created);  // a new context becomes current

  EXPECT_EQ(aclrtSetCurrentContext(default_context), ACL_SUCCESS);
  EXPECT_EQ(aclrtGetCurrentContext(&current), ACL_SUCCESS);
  EXPECT_EQ(current, default_context);
  EXPECT_EQ(aclrtSetCurrentContext(created), ACL_SUCCESS);

  EXPECT_EQ(aclrtCreateContext(nullptr, 0), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtCreateContext", "context must not be null"}));
  EXPECT_EQ(aclrtDestroyContext(default_context), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtDestroyContext", "default context", "aclrtResetDevice"}));

  EXPECT_EQ(aclrtDestroyContext(created), ACL_SUCCESS);
  // It was current: the thread now has none.
  EXPECT_EQ(aclrtGetCurrentContext(&current), ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_EQ(aclrtDestroyContext(created), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtDestroyContext", "not a live context"}));
  EXPECT_EQ(aclrtDestroyContext(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtSetCurrentContext(nullptr), ACL_ERROR_INVALID_PARAM);
  TakeErrors();
}

// A thread whose current context was destroyed has none, even when a new context reuses the old address.
TEST_F(DeviceTest, DestroyedCurrentContextStaysGoneWhenItsAddressIsReused) {
  bool reused = false;
  for (int attempt = 0; attempt < 50 && !reused; ++attempt) {
    aclrtContext old_context = nullptr;
    ASSERT_EQ(aclrtCreateContext(&old_context, 0), ACL_SUCCESS);  // current on this thread
    aclrtContext new_context = nullptr;
    // Another thread destroys it and creates a new one (a thread-caching allocator hands the address back).
    std::thread other([old_context, &new_context] {
      EXPECT_EQ(aclrtDestroyContext(old_context), ACL_SUCCESS);
      EXPECT_EQ(aclrtCreateContext(&new_context, 0), ACL_SUCCESS);
    });
    other.join();
    reused = new_context == old_context;
    aclrtContext current = nullptr;
    EXPECT_EQ(aclrtGetCurrentContext(&current), ACL_ERROR_RT_CONTEXT_NULL) << "attempt " << attempt;
    EXPECT_EQ(aclrtDestroyContext(new_context), ACL_SUCCESS);
    TakeErrors();
  }
  // Allocators with a quarantine (ASan) never reuse the address; the check above still ran.
  if (!reused) std::printf("note: no context address was reused in 50 attempts\n");
}

TEST_F(DeviceTest, UnknownContextHandlesAreRejected) {
  int not_a_context = 0;
  EXPECT_EQ(aclrtSetCurrentContext(&not_a_context), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtSetCurrentContext", "not a live context"}));
  EXPECT_EQ(aclrtDestroyContext(&not_a_context), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), {"aclrtDestroyContext", "not a live context"}));
  // The current context is unchanged by the failures.
  int32_t device = -1;
  EXPECT_EQ(aclrtGetDevice(&device), ACL_SUCCESS);
}

TEST_F(DeviceTest, DestroyingAContextDrainsItsStreams) {
  aclrtContext created = nullptr;
  ASSERT_EQ(aclrtCreateContext(&created, 0), ACL_SUCCESS);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  std::atomic<int> ran{0};
  for (int i = 0; i < 4; ++i) {
    auto task = [&ran] {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      ++ran;
      return ACL_SUCCESS;
    };
    ASSERT_EQ(pacl::rt::EnqueueTask(stream, task), ACL_SUCCESS);
    ASSERT_EQ(pacl::rt::EnqueueTask(nullptr, task), ACL_SUCCESS);  // the context's default stream
  }
  EXPECT_EQ(aclrtDestroyContext(created), ACL_SUCCESS);
  EXPECT_EQ(ran.load(), 8);
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_ERROR_INVALID_PARAM);
  TakeErrors();
}

// Many threads setting and resetting the device, creating contexts and streams at once.
TEST(Device, ConcurrentContextAndStreamChurn) {
  TakeErrors();
  std::atomic<int> ran{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&ran] {
      for (int i = 0; i < 20; ++i) {
        EXPECT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
        aclrtContext context = nullptr;
        EXPECT_EQ(aclrtCreateContext(&context, 0), ACL_SUCCESS);
        aclrtStream stream = nullptr;
        EXPECT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
        EXPECT_EQ(pacl::rt::EnqueueTask(stream, [&ran] { ++ran; return ACL_SUCCESS; }), ACL_SUCCESS);
        EXPECT_EQ(pacl::rt::EnqueueTask(nullptr, [&ran] { ++ran; return ACL_SUCCESS; }), ACL_SUCCESS);
        EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
        EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
        EXPECT_EQ(aclrtDestroyContext(context), ACL_SUCCESS);
        EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(ran.load(), 4 * 20 * 2);
}

}  // namespace
