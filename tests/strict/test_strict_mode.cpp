// Strict mode (docs/strict_mode.md), run with ACLNN_STRICT=1 (tests/CMakeLists.txt): small CANN-style programs,
// each once with a mistake that an NPU punishes (the call fails with its status and message, and one
// "ACLNN_STRICT:" report goes to stderr, or the process stops with the report) and once without it (it runs, and
// nothing is reported).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_scaled_masked_softmax.h"

namespace {

constexpr int64_t kShape[4] = {1, 2, 3, 8};
constexpr int64_t kMaskShape[4] = {1, 1, 3, 8};
constexpr size_t kElements = 48;
constexpr size_t kMaskElements = 24;

class StrictMode : public ::testing::Test {
 protected:
  void SetUp() override {
    const aclError init = aclInit(nullptr);
    ASSERT_TRUE(init == ACL_SUCCESS || init == ACL_ERROR_REPEAT_INITIALIZE);
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateStream(&stream_), ACL_SUCCESS);
  }
  void TearDown() override { EXPECT_EQ(aclrtDestroyStream(stream_), ACL_SUCCESS); }

  void* DeviceCopyOf(const void* host, size_t bytes) {
    void* device = nullptr;
    EXPECT_EQ(aclrtMalloc(&device, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    EXPECT_EQ(aclrtMemcpy(device, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    return device;
  }

  // Phase 1 of a softmax with x's data at x_data (mask and y on the device); its status, stderr and message.
  aclnnStatus SoftmaxPhaseOne(void* x_data, std::string* stderr_text, std::string* message) {
    std::vector<uint8_t> mask(kMaskElements, 0);
    void* mask_device = DeviceCopyOf(mask.data(), mask.size());
    void* y_device = nullptr;
    EXPECT_EQ(aclrtMalloc(&y_device, kElements * 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    aclTensor* x = aclCreateTensor(kShape, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, kShape, 4, x_data);
    aclTensor* m = aclCreateTensor(kMaskShape, 4, ACL_BOOL, nullptr, 0, ACL_FORMAT_ND, kMaskShape, 4, mask_device);
    aclTensor* y = aclCreateTensor(kShape, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, kShape, 4, y_device);
    uint64_t workspace_size = 0;
    aclOpExecutor* executor = nullptr;
    ::testing::internal::CaptureStderr();
    const aclnnStatus status = aclnnScaledMaskedSoftmaxGetWorkspaceSize(x, m, 1.0, false, y, &workspace_size,
                                                                       &executor);
    *stderr_text = ::testing::internal::GetCapturedStderr();
    const char* text = aclGetRecentErrMsg();
    *message = text != nullptr ? text : "";
    if (status == ACLNN_SUCCESS) {
      EXPECT_EQ(aclnnScaledMaskedSoftmax(nullptr, 0, executor, stream_), ACLNN_SUCCESS);
      EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
      std::vector<float> result(kElements);
      EXPECT_EQ(aclrtMemcpy(result.data(), kElements * 4, y_device, kElements * 4, ACL_MEMCPY_DEVICE_TO_HOST),
                ACL_SUCCESS);
      for (float v : result) EXPECT_TRUE(v > 0.0f && v < 1.0f) << v;
    }
    aclDestroyTensor(x);
    aclDestroyTensor(m);
    aclDestroyTensor(y);
    EXPECT_EQ(aclrtFree(mask_device), ACL_SUCCESS);
    EXPECT_EQ(aclrtFree(y_device), ACL_SUCCESS);
    return status;
  }

  static std::vector<float> Logits() {
    std::vector<float> x(kElements);
    for (size_t i = 0; i < kElements; ++i) x[i] = std::sin(0.7f * static_cast<float>(i));
    return x;
  }

  aclrtStream stream_ = nullptr;
};

TEST_F(StrictMode, FreshDeviceMemoryIsNanInEveryFloatDtype) {
  void* device = nullptr;
  ASSERT_EQ(aclrtMalloc(&device, 1000, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  std::vector<uint8_t> bytes(1000, 0);
  ASSERT_EQ(aclrtMemcpy(bytes.data(), 1000, device, 1000, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  for (uint8_t b : bytes) ASSERT_EQ(b, 0xFF);
  float f = 0;
  double d = 0;
  uint16_t half = 0;
  std::memcpy(&f, bytes.data(), sizeof f);
  std::memcpy(&d, bytes.data(), sizeof d);
  std::memcpy(&half, bytes.data(), sizeof half);
  EXPECT_TRUE(std::isnan(f));
  EXPECT_TRUE(std::isnan(d));
  EXPECT_EQ(half & 0x7C00, 0x7C00);  // FLOAT16 and BFLOAT16 (0x7F80) NaN: all exponent bits and a mantissa bit
  EXPECT_EQ(half & 0x7F80, 0x7F80);
  EXPECT_NE(half & 0x007F, 0);
  EXPECT_EQ(aclrtFree(device), ACL_SUCCESS);
}

TEST_F(StrictMode, HostPointerAsTensorDataIsRefused) {
  std::vector<float> logits = Logits();
  std::string report;
  std::string message;
  EXPECT_EQ(SoftmaxPhaseOne(logits.data(), &report, &message), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(message.find("x data"), std::string::npos) << message;
  EXPECT_NE(message.find("is not device memory"), std::string::npos) << message;
  EXPECT_EQ(report.rfind("ACLNN_STRICT: ", 0), 0u) << report;
  EXPECT_NE(report.find("aclnnScaledMaskedSoftmax"), std::string::npos) << report;

  // The same program with x copied to the device runs, and reports nothing.
  void* x_device = DeviceCopyOf(logits.data(), kElements * 4);
  EXPECT_EQ(SoftmaxPhaseOne(x_device, &report, &message), ACLNN_SUCCESS) << message;
  EXPECT_EQ(report, "");
  EXPECT_EQ(aclrtFree(x_device), ACL_SUCCESS);
}

TEST_F(StrictMode, FreedDeviceMemoryAsTensorDataIsRefusedWithBothStacks) {
  std::vector<float> logits = Logits();
  void* x_device = DeviceCopyOf(logits.data(), kElements * 4);
  ASSERT_EQ(aclrtFree(x_device), ACL_SUCCESS);
  std::string report;
  std::string message;
  EXPECT_EQ(SoftmaxPhaseOne(x_device, &report, &message), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(message.find("memory freed by aclrtFree (an allocation of 192 bytes"), std::string::npos) << message;
  EXPECT_EQ(report.rfind("ACLNN_STRICT: ", 0), 0u) << report;
  EXPECT_NE(report.find("allocated (aclrtMalloc) at:"), std::string::npos) << report;
  EXPECT_NE(report.find("freed (aclrtFree) at:"), std::string::npos) << report;
}

TEST_F(StrictMode, CopyFromFreedDeviceMemoryFails) {
  void* device = nullptr;
  ASSERT_EQ(aclrtMalloc(&device, 256, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  std::vector<uint8_t> host(256, 1);
  ASSERT_EQ(aclrtMemcpy(host.data(), 256, device, 256, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  ASSERT_EQ(aclrtFree(device), ACL_SUCCESS);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(aclrtMemcpy(host.data(), 256, device, 256, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM);
  const std::string report = ::testing::internal::GetCapturedStderr();
  const std::string message = aclGetRecentErrMsg();
  EXPECT_NE(message.find("src"), std::string::npos) << message;
  EXPECT_NE(message.find("memory freed by aclrtFree"), std::string::npos) << message;
  EXPECT_EQ(report.rfind("ACLNN_STRICT: aclrtMemcpy: src", 0), 0u) << report;
}

// Faults: the report, then the process stops (as a sanitizer's would).
TEST_F(StrictMode, HostReadAfterFreeStopsWithAReport) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        void* device = nullptr;
        if (aclrtMalloc(&device, 4096, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) std::exit(3);
        if (aclrtFree(device) != ACL_SUCCESS) std::exit(4);
        volatile float* stale = static_cast<float*>(device);
        std::fprintf(stderr, "%f\n", stale[10]);
      },
      "ACLNN_STRICT: use of device memory after aclrtFree: 0x[0-9a-f]+ lies \\+40 bytes from the start of a freed "
      "allocation of 4096 bytes(.|\n)*allocated \\(aclrtMalloc\\) at:(.|\n)*freed \\(aclrtFree\\) at:(.|\n)*the "
      "access");
}

TEST_F(StrictMode, HostAccessToLiveDeviceMemoryStopsWithAReport) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        void* device = nullptr;
        if (aclrtMalloc(&device, 256, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) std::exit(3);
        std::vector<float> host(64, 2.0f);
        if (aclrtMemcpy(device, 256, host.data(), 256, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS) std::exit(4);
        std::fprintf(stderr, "%f\n", static_cast<volatile float*>(device)[5]);  // as if it were host memory
      },
      "ACLNN_STRICT: the host read or wrote device memory directly: 0x[0-9a-f]+ lies 20 bytes into a live "
      "allocation of 256 bytes(.|\n)*allocated \\(aclrtMalloc\\) at:(.|\n)*the access");
}

TEST_F(StrictMode, HostWritePastTheEndStopsWithAReport) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        void* device = nullptr;
        if (aclrtMalloc(&device, 100, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) std::exit(3);
        // The block is rounded up to 64 bytes and ends at the guard page.
        static_cast<volatile char*>(device)[128] = 1;
      },
      "ACLNN_STRICT: access past the end of device memory: 0x[0-9a-f]+ is 28 bytes past the end of the allocation "
      "of 100 bytes");
}

// A softmax whose phase 2 has been called on stream_, not yet synchronised.
struct QueuedSoftmax {
  void* x = nullptr;
  void* mask = nullptr;
  void* y = nullptr;
  aclTensor* tensors[3] = {};
};

class StrictStreams : public StrictMode {
 protected:
  QueuedSoftmax Enqueue() {
    QueuedSoftmax q;
    std::vector<float> logits = Logits();
    std::vector<uint8_t> mask(kMaskElements, 0);
    q.x = DeviceCopyOf(logits.data(), kElements * 4);
    q.mask = DeviceCopyOf(mask.data(), mask.size());
    EXPECT_EQ(aclrtMalloc(&q.y, kElements * 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    q.tensors[0] = aclCreateTensor(kShape, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, kShape, 4, q.x);
    q.tensors[1] = aclCreateTensor(kMaskShape, 4, ACL_BOOL, nullptr, 0, ACL_FORMAT_ND, kMaskShape, 4, q.mask);
    q.tensors[2] = aclCreateTensor(kShape, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, kShape, 4, q.y);
    uint64_t workspace_size = 0;
    aclOpExecutor* executor = nullptr;
    EXPECT_EQ(aclnnScaledMaskedSoftmaxGetWorkspaceSize(q.tensors[0], q.tensors[1], 1.0, false, q.tensors[2],
                                                       &workspace_size, &executor),
              ACLNN_SUCCESS);
    EXPECT_EQ(aclnnScaledMaskedSoftmax(nullptr, 0, executor, stream_), ACLNN_SUCCESS);
    return q;
  }
  void Finish(QueuedSoftmax& q) {
    EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
    for (aclTensor* t : q.tensors) aclDestroyTensor(t);
    for (void* p : {q.x, q.mask, q.y}) EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  }
};

TEST_F(StrictStreams, WorkWaitsForTheSynchronisation) {
  QueuedSoftmax q = Enqueue();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // 50 ms later the kernel has still not run: reading y is refused because its work has not finished.
  std::vector<float> y(kElements);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(aclrtMemcpy(y.data(), kElements * 4, q.y, kElements * 4, ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_ERROR_INVALID_PARAM);
  ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(y.data(), kElements * 4, q.y, kElements * 4, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  for (float v : y) EXPECT_TRUE(v > 0.0f && v < 1.0f) << v;
  Finish(q);
}

TEST_F(StrictStreams, ReadingResultsBeforeSynchronisingFails) {
  QueuedSoftmax q = Enqueue();
  std::vector<float> y(kElements, 0.0f);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(aclrtMemcpy(y.data(), kElements * 4, q.y, kElements * 4, ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_ERROR_INVALID_PARAM);
  const std::string report = ::testing::internal::GetCapturedStderr();
  const std::string message = aclGetRecentErrMsg();
  EXPECT_NE(message.find("src"), std::string::npos) << message;
  EXPECT_NE(message.find("aclnnScaledMaskedSoftmax's y"), std::string::npos) << message;
  EXPECT_NE(message.find("written by work queued on stream"), std::string::npos) << message;
  EXPECT_EQ(report.rfind("ACLNN_STRICT: aclrtMemcpy: src", 0), 0u) << report;
  // Overwriting an input the queued kernel has not read yet fails too; reading an input does not.
  std::vector<float> logits = Logits();
  EXPECT_EQ(aclrtMemcpy(q.x, kElements * 4, logits.data(), kElements * 4, ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("aclnnScaledMaskedSoftmax's x"), std::string::npos);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(aclrtMemcpy(logits.data(), kElements * 4, q.x, kElements * 4, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  // The same program with the synchronisation: no report, right values.
  ::testing::internal::CaptureStderr();
  ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpy(y.data(), kElements * 4, q.y, kElements * 4, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  for (float v : y) EXPECT_TRUE(v > 0.0f && v < 1.0f) << v;
  Finish(q);
}

TEST_F(StrictStreams, FreeingMemoryQueuedWorkUsesFails) {
  QueuedSoftmax q = Enqueue();
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(aclrtFree(q.x), ACL_ERROR_INVALID_PARAM);
  const std::string report = ::testing::internal::GetCapturedStderr();
  const std::string message = aclGetRecentErrMsg();
  EXPECT_NE(message.find("is still used by aclnnScaledMaskedSoftmax's x"), std::string::npos) << message;
  EXPECT_EQ(report.rfind("ACLNN_STRICT: aclrtFree: devPtr", 0), 0u) << report;
  EXPECT_NE(report.find("allocated (aclrtMalloc) at:"), std::string::npos) << report;
  Finish(q);  // synchronised first: every free succeeds
}

TEST_F(StrictStreams, AsyncCopiesAreTrackedToo) {
  std::vector<float> host(64, 1.0f);
  void* device = nullptr;
  ASSERT_EQ(aclrtMalloc(&device, 256, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(device, 256, host.data(), 256, ACL_MEMCPY_HOST_TO_DEVICE, stream_), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(device), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("aclrtMemcpyAsync's dst"), std::string::npos);
  ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(device), ACL_SUCCESS);
}

TEST_F(StrictMode, CorrectUseOfFreshMemoryRunsWithoutReports) {
  // A program that initialises what it allocates (here with aclrtMemset) and synchronises before reading.
  void* device = nullptr;
  ASSERT_EQ(aclrtMalloc(&device, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ::testing::internal::CaptureStderr();
  ASSERT_EQ(aclrtMemset(device, 4096, 0, 4096), ACL_SUCCESS);
  std::vector<uint8_t> host(4096, 7);
  ASSERT_EQ(aclrtMemcpy(host.data(), 4096, device, 4096, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  ASSERT_EQ(aclrtFree(device), ACL_SUCCESS);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  for (uint8_t b : host) ASSERT_EQ(b, 0);
}

}  // namespace
