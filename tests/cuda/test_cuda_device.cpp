// The runtime on a CUDA device (device 0 a GPU: ACLNN_DEVICE unset, auto or cuda, a build with the CUDA backend, a
// GPU and a driver). Skipped elsewhere. Device memory is only touched through the API (copies and sets), never
// dereferenced on the host. scripts/gpu_check.sh runs this suite on a GPU machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_scaled_masked_softmax.h"
#include "pacl/runtime.h"
#include "portable_aclnn/native_stream.h"

#ifdef PACL_TEST_WITH_CUDART
#include <cuda_runtime_api.h>
#endif

namespace {

std::string TakeErrors() {
  const char* text = aclGetRecentErrMsg();
  return text != nullptr ? std::string(text) : std::string();
}

bool Mentions(const std::string& message, const char* part) { return message.find(part) != std::string::npos; }

class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    uint32_t count = 0;
    if (aclrtGetDeviceCount(&count) != ACL_SUCCESS || count == 0) {
      GTEST_SKIP() << "no device: " << TakeErrors();
    }
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS) << TakeErrors();
    set_ = true;
    if (std::string(pacl::rt::DeviceKindKey(pacl::rt::CurrentDevice().kind)) != "cuda") {
      GTEST_SKIP() << "device 0 is not a CUDA GPU (a build without the CUDA backend, no GPU, or ACLNN_DEVICE=cpu)";
    }
  }
  void TearDown() override {
    if (set_) {
      EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS) << TakeErrors();
    }
  }
  static std::vector<unsigned char> RandomBytes(size_t count, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<unsigned char> bytes(count);
    for (auto& byte : bytes) byte = static_cast<unsigned char>(rng());
    return bytes;
  }
  bool set_ = false;
};

TEST_F(CudaDeviceTest, CopiesEveryKindAndSets) {
  constexpr size_t kBytes = (size_t{1} << 20) + 37;
  const std::vector<unsigned char> data = RandomBytes(kBytes, 1);
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(aclrtMalloc(&a, kBytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS) << TakeErrors();
  ASSERT_EQ(aclrtMalloc(&b, kBytes, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS) << TakeErrors();
  ASSERT_EQ(aclrtMemcpy(a, kBytes, data.data(), kBytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS) << TakeErrors();
  ASSERT_EQ(aclrtMemcpy(b, kBytes, a, kBytes, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS) << TakeErrors();
  ASSERT_EQ(aclrtMemset(static_cast<char*>(b) + 100, kBytes - 100, 0xAB, 1000), ACL_SUCCESS) << TakeErrors();
  std::vector<unsigned char> back(kBytes, 0);
  ASSERT_EQ(aclrtMemcpy(back.data(), kBytes, b, kBytes, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS) << TakeErrors();
  for (size_t i = 0; i < kBytes; ++i) {
    ASSERT_EQ(back[i], i >= 100 && i < 1100 ? 0xAB : data[i]) << i;
  }
  // The registry still guards device memory: an overrun is refused before CUDA sees it.
  EXPECT_EQ(aclrtMemcpy(a, kBytes + 1, data.data(), kBytes + 1, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), "overruns"));
  EXPECT_EQ(aclrtFree(a), ACL_SUCCESS) << TakeErrors();
  EXPECT_EQ(aclrtFree(b), ACL_SUCCESS) << TakeErrors();
  EXPECT_EQ(aclrtFree(a), ACL_ERROR_INVALID_PARAM);  // double free
  EXPECT_TRUE(Mentions(TakeErrors(), "already freed"));
}

TEST_F(CudaDeviceTest, AsyncWorkOnStreamsWithEvents) {
  constexpr size_t kBytes = size_t{8} << 20;
  void* host = nullptr;
  ASSERT_EQ(aclrtMallocHost(&host, kBytes), ACL_SUCCESS) << TakeErrors();  // pinned
  const std::vector<unsigned char> data = RandomBytes(kBytes, 2);
  std::memcpy(host, data.data(), kBytes);
  void* device = nullptr;
  ASSERT_EQ(aclrtMalloc(&device, kBytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS) << TakeErrors();
  aclrtStream stream = nullptr;
  aclrtStream other = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS) << TakeErrors();
  ASSERT_EQ(aclrtCreateStream(&other), ACL_SUCCESS) << TakeErrors();
  aclrtEvent start = nullptr;
  aclrtEvent end = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&start), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEvent(&end), ACL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(start, stream), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(device, kBytes, host, kBytes, ACL_MEMCPY_HOST_TO_DEVICE, stream), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemsetAsync(device, kBytes, 0x11, 4096, stream), ACL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(end, stream), ACL_SUCCESS);
  // The other stream reads back only after the first one reached the event.
  std::vector<unsigned char> back(kBytes, 0);
  ASSERT_EQ(aclrtStreamWaitEvent(other, end), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(back.data(), kBytes, device, kBytes, ACL_MEMCPY_DEVICE_TO_HOST, other), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(other), ACL_SUCCESS) << TakeErrors();
  for (size_t i = 0; i < kBytes; ++i) {
    ASSERT_EQ(back[i], i < 4096 ? 0x11 : data[i]) << i;
  }
  aclrtEventRecordedStatus status = ACL_EVENT_RECORDED_STATUS_NOT_READY;
  ASSERT_EQ(aclrtQueryEventStatus(end, &status), ACL_SUCCESS);
  EXPECT_EQ(status, ACL_EVENT_RECORDED_STATUS_COMPLETE);
  float ms = -1;
  ASSERT_EQ(aclrtEventElapsedTime(&ms, start, end), ACL_SUCCESS) << TakeErrors();
  EXPECT_GE(ms, 0.0f);
  EXPECT_EQ(aclrtFree(device), ACL_SUCCESS);  // with no work pending: no wait
  EXPECT_EQ(aclrtFree(host), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), "aclrtMallocHost"));
  EXPECT_EQ(aclrtFreeHost(host), ACL_SUCCESS) << TakeErrors();
  EXPECT_EQ(aclrtDestroyEvent(start), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(end), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(other), ACL_SUCCESS);
}

// The pool keeps freed memory: a loop of 256 MiB allocations and frees does not use more and more of the GPU.
TEST_F(CudaDeviceTest, FreedMemoryStaysInThePool) {
  size_t free_before = 0, total = 0;
  ASSERT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, &free_before, &total), ACL_SUCCESS) << TakeErrors();
  EXPECT_GT(total, size_t{1} << 30);
  EXPECT_LE(free_before, total);
  for (int i = 0; i < 20; ++i) {
    void* p = nullptr;
    ASSERT_EQ(aclrtMalloc(&p, size_t{256} << 20, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS) << TakeErrors();
    ASSERT_EQ(aclrtMemset(p, size_t{256} << 20, 0, size_t{256} << 20), ACL_SUCCESS) << TakeErrors();
    ASSERT_EQ(aclrtFree(p), ACL_SUCCESS) << TakeErrors();
  }
  size_t free_after = 0;
  ASSERT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, &free_after, &total), ACL_SUCCESS);
  EXPECT_GE(free_after + (size_t{512} << 20), free_before);  // at most one block (plus slack) kept
  size_t p2p_free = 1, p2p_total = 1;
  ASSERT_EQ(aclrtGetMemInfo(ACL_HBM_MEM_P2P_NORMAL, &p2p_free, &p2p_total), ACL_SUCCESS);
  EXPECT_EQ(p2p_total, 0u);
}

// A host pointer given to a device function, or a stream of another device: a status and a message, no crash.
TEST_F(CudaDeviceTest, BadPointersAndStreamsGetErrors) {
  std::vector<unsigned char> host(4096, 1);
  // Refused before CUDA sees it: a system with HMM would accept it in cudaMemset and then fault on the GPU.
  EXPECT_EQ(aclrtMemset(host.data(), host.size(), 0, host.size()), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), "pageable host memory"));
  EXPECT_EQ(aclrtMemsetAsync(host.data(), host.size(), 0, host.size(), nullptr), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), "pageable host memory"));
  uint32_t count = 0;
  ASSERT_EQ(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  if (count < 2) return;
  aclrtStream stream_of_1 = nullptr;
  ASSERT_EQ(aclrtSetDevice(1), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateStream(&stream_of_1), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  void* device = nullptr;
  ASSERT_EQ(aclrtMalloc(&device, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemsetAsync(device, 64, 0, 64, stream_of_1), ACL_ERROR_RT_STREAM_CONTEXT);
  EXPECT_TRUE(Mentions(TakeErrors(), "belongs to device 1"));
  EXPECT_EQ(aclrtFree(device), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream_of_1), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(1), ACL_SUCCESS);
}

// Phase 1 binds the operator's CUDA kernel; phase 2 runs it on the stream's GPU stream (a softmax of known rows,
// checked against float64 on the host). The detailed checks of every operator are op_tests and conformance_tests
// with ACLNN_DEVICE=cuda.
TEST_F(CudaDeviceTest, OperatorsRunTheirCudaKernel) {
  const int64_t shape[4] = {1, 1, 2, 8};
  const int64_t strides[4] = {16, 16, 8, 1};
  std::vector<float> x_host(16);
  for (size_t i = 0; i < x_host.size(); ++i) x_host[i] = 0.25f * static_cast<float>(i % 8) - static_cast<float>(i / 8);
  std::vector<uint8_t> mask_host(16, 0);
  mask_host[3] = 1;  // row 0, element 3 masked
  void* x_data = nullptr;
  void* y_data = nullptr;
  void* mask_data = nullptr;
  ASSERT_EQ(aclrtMalloc(&x_data, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&y_data, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&mask_data, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(x_data, 64, x_host.data(), 64, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(mask_data, 16, mask_host.data(), 16, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  aclTensor* x = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 4, x_data);
  aclTensor* y = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 4, y_data);
  aclTensor* mask = aclCreateTensor(shape, 4, ACL_BOOL, strides, 0, ACL_FORMAT_ND, shape, 4, mask_data);
  ASSERT_NE(x, nullptr);
  uint64_t workspace = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(aclnnScaledMaskedSoftmaxGetWorkspaceSize(x, mask, 2.0, false, y, &workspace, &executor), ACLNN_SUCCESS)
      << TakeErrors();
  EXPECT_EQ(workspace, 0u);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  ASSERT_EQ(aclnnScaledMaskedSoftmax(nullptr, 0, executor, stream), ACLNN_SUCCESS) << TakeErrors();
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << TakeErrors();
  std::vector<float> y_host(16, -1.0f);
  ASSERT_EQ(aclrtMemcpy(y_host.data(), 64, y_data, 64, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  for (int row = 0; row < 2; ++row) {
    double logits[8];
    double total = 0.0;
    for (int k = 0; k < 8; ++k) {
      logits[k] = mask_host[row * 8 + k] != 0 ? -10000.0 : 2.0 * x_host[row * 8 + k];
      total += std::exp(logits[k]);
    }
    for (int k = 0; k < 8; ++k) {
      EXPECT_NEAR(y_host[row * 8 + k], std::exp(logits[k]) / total, 1e-6) << "row " << row << ", element " << k;
    }
  }
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
  aclDestroyTensor(x);
  aclDestroyTensor(y);
  aclDestroyTensor(mask);
  EXPECT_EQ(aclrtFree(x_data), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(y_data), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(mask_data), ACL_SUCCESS);
}

}  // namespace

namespace {

// Tensor data that a GPU kernel cannot use (host memory, pinned host memory) is refused in phase 1.
TEST_F(CudaDeviceTest, HostDataIsRefusedInPhaseOne) {
  const int64_t shape[4] = {1, 1, 2, 8};
  const int64_t strides[4] = {16, 16, 8, 1};
  std::vector<float> host_x(16, 0.5f);
  void* pinned = nullptr;
  ASSERT_EQ(aclrtMallocHost(&pinned, 64), ACL_SUCCESS);
  void* device_y = nullptr;
  void* device_mask = nullptr;
  ASSERT_EQ(aclrtMalloc(&device_y, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&device_mask, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  for (void* x_data : {static_cast<void*>(host_x.data()), pinned}) {
    aclTensor* x = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 4, x_data);
    aclTensor* y = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 4, device_y);
    aclTensor* mask = aclCreateTensor(shape, 4, ACL_BOOL, strides, 0, ACL_FORMAT_ND, shape, 4, device_mask);
    uint64_t workspace = 0;
    aclOpExecutor* executor = nullptr;
    EXPECT_EQ(aclnnScaledMaskedSoftmaxGetWorkspaceSize(x, mask, 1.0, false, y, &workspace, &executor), 161002);
    const std::string message = TakeErrors();
    EXPECT_TRUE(Mentions(message, "x data")) << message;
    EXPECT_TRUE(Mentions(message, "is not memory of device 0 (CUDA)")) << message;
    aclDestroyTensor(x);
    aclDestroyTensor(y);
    aclDestroyTensor(mask);
  }
  EXPECT_EQ(aclrtFreeHost(pinned), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(device_y), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(device_mask), ACL_SUCCESS);
}

}  // namespace

#ifdef PACL_TEST_WITH_CUDART
namespace {

// Float64 softmax of mask ? -10000 : scale * x over rows of `columns`.
std::vector<double> SoftmaxRows(const std::vector<float>& x, const std::vector<uint8_t>& mask, double scale,
                                size_t columns) {
  std::vector<double> y(x.size());
  for (size_t row = 0; row < x.size() / columns; ++row) {
    double largest = -1e300;
    for (size_t k = 0; k < columns; ++k) {
      const size_t i = row * columns + k;
      y[i] = mask[i] != 0 ? -10000.0 : scale * x[i];
      largest = std::max(largest, y[i]);
    }
    double total = 0.0;
    for (size_t k = 0; k < columns; ++k) total += (y[row * columns + k] = std::exp(y[row * columns + k] - largest));
    for (size_t k = 0; k < columns; ++k) y[row * columns + k] /= total;
  }
  return y;
}

// An aclrtStream over the application's own cudaStream_t runs each call in order with the application's work on
// that stream: here an asynchronous upload before the call and a download after it, with no synchronisation in
// between, on a rows-long enough input that an out-of-order run would read the buffer before the upload. The
// stream is the test's: aclrtDestroyStream leaves it alive. Also over the legacy null stream.
TEST_F(CudaDeviceTest, StreamsOverNativeStreamsRunInTheApplicationsOrder) {
  constexpr size_t kRows = 4096;
  constexpr size_t kColumns = 1024;
  constexpr size_t kCount = kRows * kColumns;
  const int64_t shape[4] = {1, 4, kRows / 4, kColumns};
  const int64_t strides[4] = {static_cast<int64_t>(kCount), static_cast<int64_t>(kCount / 4), kColumns, 1};
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uniform(-3.0f, 3.0f);
  std::vector<float> x_host(kCount);
  for (float& v : x_host) v = uniform(rng);
  std::vector<uint8_t> mask_host(kCount);
  for (uint8_t& m : mask_host) m = (rng() % 5) == 0;
  const std::vector<double> expected = SoftmaxRows(x_host, mask_host, 0.5, kColumns);

  float* x_pinned = nullptr;
  float* y_pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&x_pinned), kCount * 4), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&y_pinned), kCount * 4), cudaSuccess);
  void* x_data = nullptr;
  void* y_data = nullptr;
  void* mask_data = nullptr;
  ASSERT_EQ(cudaMalloc(&x_data, kCount * 4), cudaSuccess);  // memory of the application's, not aclrtMalloc's
  ASSERT_EQ(cudaMalloc(&y_data, kCount * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&mask_data, kCount), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(mask_data, mask_host.data(), kCount, cudaMemcpyHostToDevice), cudaSuccess);
  aclTensor* x = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 4, x_data);
  aclTensor* y = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 4, y_data);
  aclTensor* mask = aclCreateTensor(shape, 4, ACL_BOOL, strides, 0, ACL_FORMAT_ND, shape, 4, mask_data);
  ASSERT_NE(mask, nullptr);

  cudaStream_t own = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking), cudaSuccess);
  for (cudaStream_t native : {own, static_cast<cudaStream_t>(nullptr)}) {
    SCOPED_TRACE(native == nullptr ? "the legacy null stream" : "a stream of the application's");
    aclrtStream stream = nullptr;
    ASSERT_EQ(paclrtCreateStreamFromNative(&stream, native), ACL_SUCCESS) << TakeErrors();
    for (int round = 0; round < 3; ++round) {
      for (size_t i = 0; i < kCount; ++i) x_pinned[i] = x_host[i];
      std::fill(y_pinned, y_pinned + kCount, std::nanf(""));
      ASSERT_EQ(cudaMemsetAsync(x_data, 0xFF, kCount * 4, native), cudaSuccess);  // NaN until the upload lands
      ASSERT_EQ(cudaMemcpyAsync(x_data, x_pinned, kCount * 4, cudaMemcpyHostToDevice, native), cudaSuccess);
      uint64_t workspace = 0;
      aclOpExecutor* executor = nullptr;
      ASSERT_EQ(aclnnScaledMaskedSoftmaxGetWorkspaceSize(x, mask, 0.5, false, y, &workspace, &executor),
                ACLNN_SUCCESS)
          << TakeErrors();
      ASSERT_EQ(aclnnScaledMaskedSoftmax(nullptr, 0, executor, stream), ACLNN_SUCCESS) << TakeErrors();
      ASSERT_EQ(cudaMemcpyAsync(y_pinned, y_data, kCount * 4, cudaMemcpyDeviceToHost, native), cudaSuccess);
      ASSERT_EQ(cudaMemsetAsync(y_data, 0xFF, kCount * 4, native), cudaSuccess);  // after the download only
      ASSERT_EQ(cudaStreamSynchronize(native), cudaSuccess);
      size_t wrong = 0;
      for (size_t i = 0; i < kCount; ++i) wrong += !(std::fabs(y_pinned[i] - expected[i]) <= 2e-6);
      EXPECT_EQ(wrong, 0u) << "round " << round;
    }
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << TakeErrors();
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS) << TakeErrors();
  }
  EXPECT_EQ(cudaStreamQuery(own), cudaSuccess);  // still a live stream
  EXPECT_EQ(cudaStreamDestroy(own), cudaSuccess);
  aclDestroyTensor(x);
  aclDestroyTensor(y);
  aclDestroyTensor(mask);
  cudaFree(x_data);
  cudaFree(y_data);
  cudaFree(mask_data);
  cudaFreeHost(x_pinned);
  cudaFreeHost(y_pinned);
}

// A native stream of another GPU, and a null output argument, are refused with messages.
TEST_F(CudaDeviceTest, StreamsOverNativeStreamsCheckTheirArguments) {
  EXPECT_EQ(paclrtCreateStreamFromNative(nullptr, nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), "stream must not be null"));
  int gpus = 0;
  ASSERT_EQ(cudaGetDeviceCount(&gpus), cudaSuccess);
  if (gpus < 2) return;
  cudaStream_t of_device_1 = nullptr;
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaStreamCreate(&of_device_1), cudaSuccess);
  aclrtStream stream = nullptr;
  EXPECT_EQ(paclrtCreateStreamFromNative(&stream, of_device_1), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(Mentions(TakeErrors(), "belongs to CUDA device 1"));
  cudaStreamDestroy(of_device_1);
}

}  // namespace
#endif  // PACL_TEST_WITH_CUDART
