// A program written the way CANN's aclnn samples are written: it runs aclnnScaledMaskedSoftmax and then
// aclnnScaledMaskedSoftmaxBackward through the two-phase API, and checks both results against values it
// computes itself in double precision. It exits with 0 only when both checks pass.
//
// Build it against an installed portable-aclnn (see README.md), e.g.
//   g++ main.cpp -I$PREFIX/include -I$PREFIX/include/aclnnop -L$PREFIX/lib -lascendcl -lnnopbase -lopapi
// The same source builds unchanged against Huawei CANN.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnn_scaled_masked_softmax.h"  // found through -I<prefix>/include/aclnnop
#include "aclnnop/level2/aclnn_scaled_masked_softmax_backward.h"

namespace {

// Attention-score shape (batch, heads, query length, key length); the mask is shared by all heads.
const int64_t kBatch = 2;
const int64_t kHeads = 2;
const int64_t kQueries = 4;
const int64_t kKeys = 8;
const double kScale = 0.5;
// On portable-aclnn device 0 is the CPU.
const int32_t kDeviceId = 0;
// fp32 results against the double-precision values: |got - expected| <= kAbsTol + kRelTol * |expected|.
const double kAbsTol = 1e-6;
const double kRelTol = 1e-5;

// aclGetRecentErrMsg returns the pending messages (and clears them), or NULL when there are none.
const char* RecentErrorMessage() {
  const char* message = aclGetRecentErrMsg();
  return message != nullptr ? message : "";
}

bool Succeeded(int status, const char* call) {
  if (status == ACL_SUCCESS) return true;
  std::printf("%s failed with error %d: %s\n", call, status, RecentErrorMessage());
  return false;
}

int64_t ElementCount(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

// A device buffer and the contiguous ND tensor that describes it.
struct DeviceTensor {
  void* data = nullptr;
  aclTensor* tensor = nullptr;
};

template <typename T>
bool CreateDeviceTensor(const std::vector<T>& host, const std::vector<int64_t>& shape, aclDataType dtype,
                        DeviceTensor* result) {
  const size_t bytes = host.size() * sizeof(T);
  if (!Succeeded(aclrtMalloc(&result->data, bytes, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc")) return false;
  if (!Succeeded(aclrtMemcpy(result->data, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy")) {
    return false;
  }
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size() - 1; d > 0; --d) strides[d - 1] = strides[d] * shape[d];
  result->tensor = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, aclFormat::ACL_FORMAT_ND,
                                   shape.data(), shape.size(), result->data);
  if (result->tensor == nullptr) {
    std::printf("aclCreateTensor failed: %s\n", RecentErrorMessage());
    return false;
  }
  return true;
}

void ReleaseDeviceTensor(DeviceTensor* t) {
  if (t->tensor != nullptr) aclDestroyTensor(t->tensor);
  if (t->data != nullptr) aclrtFree(t->data);
  t->tensor = nullptr;
  t->data = nullptr;
}

bool CopyToHost(const DeviceTensor& t, std::vector<float>* host) {
  const size_t bytes = host->size() * sizeof(float);
  return Succeeded(aclrtMemcpy(host->data(), bytes, t.data, bytes, ACL_MEMCPY_DEVICE_TO_HOST), "aclrtMemcpy");
}

// Runs one prepared operator call: workspace of the size phase 1 asked for, phase 2, wait for the stream.
bool RunOnStream(uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream,
                 aclnnStatus (*phase2)(void*, uint64_t, aclOpExecutor*, aclrtStream), const char* name) {
  void* workspace = nullptr;
  if (workspaceSize > 0 &&
      !Succeeded(aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc(workspace)")) {
    return false;
  }
  bool ok = Succeeded(phase2(workspace, workspaceSize, executor, stream), name) &&
            Succeeded(aclrtSynchronizeStream(stream), "aclrtSynchronizeStream");
  if (workspace != nullptr) aclrtFree(workspace);
  return ok;
}

// Masks: batch 0 is causal (a query sees keys up to its own position), batch 1 pads away its last 3 keys.
bool IsMasked(int64_t b, int64_t q, int64_t k) { return b == 0 ? k > q : k >= kKeys - 3; }

// y = softmax over keys of (x * scale, masked positions set to -10000).
void ExpectedForward(const std::vector<float>& x, std::vector<double>* y) {
  std::vector<double> z(kKeys);
  for (int64_t b = 0; b < kBatch; ++b) {
    for (int64_t h = 0; h < kHeads; ++h) {
      for (int64_t q = 0; q < kQueries; ++q) {
        const int64_t row = ((b * kHeads + h) * kQueries + q) * kKeys;
        double largest = -INFINITY;
        for (int64_t k = 0; k < kKeys; ++k) {
          z[k] = IsMasked(b, q, k) ? -10000.0 : static_cast<double>(x[row + k]) * kScale;
          largest = std::fmax(largest, z[k]);
        }
        double total = 0.0;
        for (int64_t k = 0; k < kKeys; ++k) total += std::exp(z[k] - largest);
        for (int64_t k = 0; k < kKeys; ++k) (*y)[row + k] = std::exp(z[k] - largest) / total;
      }
    }
  }
}

// out = scale * (dy * y - sum_k(dy * y) * y), 0 at masked positions.
void ExpectedBackward(const std::vector<float>& dy, const std::vector<float>& y, std::vector<double>* out) {
  for (int64_t b = 0; b < kBatch; ++b) {
    for (int64_t h = 0; h < kHeads; ++h) {
      for (int64_t q = 0; q < kQueries; ++q) {
        const int64_t row = ((b * kHeads + h) * kQueries + q) * kKeys;
        double dot = 0.0;
        for (int64_t k = 0; k < kKeys; ++k) dot += static_cast<double>(dy[row + k]) * y[row + k];
        for (int64_t k = 0; k < kKeys; ++k) {
          const double grad = kScale * (static_cast<double>(dy[row + k]) - dot) * y[row + k];
          (*out)[row + k] = IsMasked(b, q, k) ? 0.0 : grad;
        }
      }
    }
  }
}

bool Compare(const char* what, const std::vector<float>& got, const std::vector<double>& expected) {
  double worst = 0.0;
  int64_t failures = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double error = std::fabs(static_cast<double>(got[i]) - expected[i]);
    if (!(error <= kAbsTol + kRelTol * std::fabs(expected[i]))) {  // also catches NaN
      if (failures < 5) std::printf("  %s[%zu] = %.8f, expected %.8f\n", what, i, got[i], expected[i]);
      ++failures;
    }
    if (std::isnan(error) || error > worst) worst = error;
  }
  std::printf("%s: max abs error %.3g over %zu elements, %s\n", what, worst, got.size(),
              failures == 0 ? "PASS" : "FAIL");
  return failures == 0;
}

void PrintRow(const char* what, const std::vector<float>& values, int64_t row) {
  std::printf("%s row %lld:", what, static_cast<long long>(row));
  for (int64_t k = 0; k < kKeys; ++k) std::printf(" %9.5f", values[row * kKeys + k]);
  std::printf("\n");
}

struct Resources {
  bool initialized = false;
  bool deviceSet = false;
  aclrtStream stream = nullptr;
  DeviceTensor x, mask, y, gradOutput, gradInput;
};

bool Run(Resources* r) {
  if (!Succeeded(aclInit(nullptr), "aclInit")) return false;
  r->initialized = true;
  if (!Succeeded(aclrtSetDevice(kDeviceId), "aclrtSetDevice")) return false;
  r->deviceSet = true;
  if (!Succeeded(aclrtCreateStream(&r->stream), "aclrtCreateStream")) return false;

  const std::vector<int64_t> shape = {kBatch, kHeads, kQueries, kKeys};
  const std::vector<int64_t> maskShape = {kBatch, 1, kQueries, kKeys};
  const int64_t count = ElementCount(shape);

  // Inputs: reproducible values in [-4, 4) from a small linear congruential generator.
  uint32_t state = 12345u;
  auto next = [&state]() {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 16777216.0f * 8.0f - 4.0f;
  };
  std::vector<float> xHost(count), gradOutputHost(count);
  for (float& v : xHost) v = next();
  for (float& v : gradOutputHost) v = next();
  std::vector<uint8_t> maskHost(ElementCount(maskShape));
  for (int64_t b = 0; b < kBatch; ++b) {
    for (int64_t q = 0; q < kQueries; ++q) {
      for (int64_t k = 0; k < kKeys; ++k) maskHost[(b * kQueries + q) * kKeys + k] = IsMasked(b, q, k) ? 1 : 0;
    }
  }
  // Outputs start as NaN so that an element the library forgets to write fails the check.
  const std::vector<float> nanHost(count, NAN);

  if (!CreateDeviceTensor(xHost, shape, aclDataType::ACL_FLOAT, &r->x) ||
      !CreateDeviceTensor(maskHost, maskShape, aclDataType::ACL_BOOL, &r->mask) ||
      !CreateDeviceTensor(nanHost, shape, aclDataType::ACL_FLOAT, &r->y) ||
      !CreateDeviceTensor(gradOutputHost, shape, aclDataType::ACL_FLOAT, &r->gradOutput) ||
      !CreateDeviceTensor(nanHost, shape, aclDataType::ACL_FLOAT, &r->gradInput)) {
    return false;
  }

  // Forward: y = ScaledMaskedSoftmax(x, mask).
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  if (!Succeeded(aclnnScaledMaskedSoftmaxGetWorkspaceSize(r->x.tensor, r->mask.tensor, kScale, false, r->y.tensor,
                                                          &workspaceSize, &executor),
                 "aclnnScaledMaskedSoftmaxGetWorkspaceSize") ||
      !RunOnStream(workspaceSize, executor, r->stream, aclnnScaledMaskedSoftmax, "aclnnScaledMaskedSoftmax")) {
    return false;
  }

  // Backward: gradInput = ScaledMaskedSoftmaxBackward(gradOutput, y, mask).
  if (!Succeeded(aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(r->gradOutput.tensor, r->y.tensor,
                                                                  r->mask.tensor, kScale, false,
                                                                  r->gradInput.tensor, &workspaceSize, &executor),
                 "aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize") ||
      !RunOnStream(workspaceSize, executor, r->stream, aclnnScaledMaskedSoftmaxBackward,
                   "aclnnScaledMaskedSoftmaxBackward")) {
    return false;
  }

  std::vector<float> yHost(count), gradInputHost(count);
  if (!CopyToHost(r->y, &yHost) || !CopyToHost(r->gradInput, &gradInputHost)) return false;

  PrintRow("y", yHost, 1);
  PrintRow("gradInput", gradInputHost, 1);
  PrintRow("y", yHost, kHeads * kQueries);
  PrintRow("gradInput", gradInputHost, kHeads * kQueries);

  std::vector<double> yExpected(count), gradInputExpected(count);
  ExpectedForward(xHost, &yExpected);
  // The backward is checked on the y the library produced, as a training step would use it.
  ExpectedBackward(gradOutputHost, yHost, &gradInputExpected);
  const bool forwardOk = Compare("aclnnScaledMaskedSoftmax y", yHost, yExpected);
  const bool backwardOk = Compare("aclnnScaledMaskedSoftmaxBackward out", gradInputHost, gradInputExpected);
  return forwardOk && backwardOk;
}

void Release(Resources* r) {
  ReleaseDeviceTensor(&r->x);
  ReleaseDeviceTensor(&r->mask);
  ReleaseDeviceTensor(&r->y);
  ReleaseDeviceTensor(&r->gradOutput);
  ReleaseDeviceTensor(&r->gradInput);
  if (r->stream != nullptr) aclrtDestroyStream(r->stream);
  if (r->deviceSet) aclrtResetDevice(kDeviceId);
  if (r->initialized) aclFinalize();
}

}  // namespace

int main() {
  Resources resources;
  const bool ok = Run(&resources);
  Release(&resources);
  std::printf("%s\n", ok ? "sample PASSED" : "sample FAILED");
  return ok ? 0 : 1;
}
