// aclnnGridSampler2D and aclnnGridSampler2DBackward (bilinear, zeros padding, alignCorners false) called the way
// CANN's samples call them - a fresh executor and workspace per call, null strides for contiguous tensors - and
// checked against a bilinear sampler written here in double precision. Exit code 0 only when every value matches.
#include <cmath>
#include <cstdint>
#include <vector>

#include "aclnnop/aclnn_grid_sampler2d.h"
#include "aclnnop/aclnn_grid_sampler2d_backward.h"
#include "cann_style.h"

namespace {

const int64_t N = 1, C = 2, H = 3, W = 4, HO = 2, WO = 3;

// The bilinear taps of grid point (gx, gy): up to 4 (index into an H x W plane, weight, d weight / d gx, d / d gy).
struct Tap {
  int64_t index;
  double weight, dgx, dgy;
};
std::vector<Tap> Taps(double gx, double gy) {
  const double x = ((gx + 1) * W - 1) / 2;
  const double y = ((gy + 1) * H - 1) / 2;
  const double x0 = std::floor(x), y0 = std::floor(y);
  std::vector<Tap> taps;
  for (int dy = 0; dy < 2; ++dy) {
    for (int dx = 0; dx < 2; ++dx) {
      const int64_t xi = static_cast<int64_t>(x0) + dx, yi = static_cast<int64_t>(y0) + dy;
      if (xi < 0 || xi >= W || yi < 0 || yi >= H) continue;
      const double wx = dx ? x - x0 : 1 - (x - x0);
      const double wy = dy ? y - y0 : 1 - (y - y0);
      taps.push_back({yi * W + xi, wx * wy, (dx ? 1 : -1) * wy * W / 2, (dy ? 1 : -1) * wx * H / 2});
    }
  }
  return taps;
}

}  // namespace

int main() {
  int32_t deviceId = 0;
  aclrtStream stream;
  auto ret = Init(deviceId, &stream);
  CHECK_RET(ret == 0, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

  std::vector<int64_t> inputShape = {N, C, H, W}, gridShape = {N, HO, WO, 2}, outShape = {N, C, HO, WO};
  std::vector<float> inputHost(GetShapeSize(inputShape)), gridHost(GetShapeSize(gridShape));
  std::vector<float> gradOutHost(GetShapeSize(outShape));
  for (size_t i = 0; i < inputHost.size(); ++i) inputHost[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  for (size_t i = 0; i < gridHost.size(); ++i) gridHost[i] = 0.37f * static_cast<float>(i % 6) - 1.05f;
  for (size_t i = 0; i < gradOutHost.size(); ++i) gradOutHost[i] = 1.0f - 0.125f * static_cast<float>(i);
  std::vector<float> zeros(GetShapeSize(inputShape), 0.0f), gridZeros(GetShapeSize(gridShape), 0.0f);
  std::vector<float> outZeros(GetShapeSize(outShape), 0.0f);

  void *inputAddr = nullptr, *gridAddr = nullptr, *outAddr = nullptr, *gradOutAddr = nullptr;
  void *inputGradAddr = nullptr, *gridGradAddr = nullptr;
  aclTensor *input = nullptr, *grid = nullptr, *out = nullptr, *gradOut = nullptr, *inputGrad = nullptr;
  aclTensor* gridGrad = nullptr;
  ret = CreateAclTensor(inputHost, inputShape, &inputAddr, aclDataType::ACL_FLOAT, &input, true);
  CHECK_RET(ret == 0, return ret);
  ret = CreateAclTensor(gridHost, gridShape, &gridAddr, aclDataType::ACL_FLOAT, &grid);
  CHECK_RET(ret == 0, return ret);
  ret = CreateAclTensor(outZeros, outShape, &outAddr, aclDataType::ACL_FLOAT, &out, true);
  CHECK_RET(ret == 0, return ret);
  ret = CreateAclTensor(gradOutHost, outShape, &gradOutAddr, aclDataType::ACL_FLOAT, &gradOut, true);
  CHECK_RET(ret == 0, return ret);
  ret = CreateAclTensor(zeros, inputShape, &inputGradAddr, aclDataType::ACL_FLOAT, &inputGrad);
  CHECK_RET(ret == 0, return ret);
  ret = CreateAclTensor(gridZeros, gridShape, &gridGradAddr, aclDataType::ACL_FLOAT, &gridGrad, true);
  CHECK_RET(ret == 0, return ret);

  // Forward.
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnGridSampler2DGetWorkspaceSize(input, grid, 0, 0, false, out, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnGridSampler2DGetWorkspaceSize failed. ERROR: %d: %s\n", ret,
                                          aclGetRecentErrMsg());
            return ret);
  ret = RunWithFreshWorkspace(aclnnGridSampler2D, workspaceSize, executor, stream, "aclnnGridSampler2D");
  CHECK_RET(ret == 0, return ret);

  // Backward, both gradients.
  bool maskValues[2] = {true, true};
  aclBoolArray* outputMask = aclCreateBoolArray(maskValues, 2);
  ret = aclnnGridSampler2DBackwardGetWorkspaceSize(gradOut, input, grid, 0, 0, false, outputMask, inputGrad, gridGrad,
                                                   &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnGridSampler2DBackwardGetWorkspaceSize failed. ERROR: %d: %s\n", ret,
                                          aclGetRecentErrMsg());
            return ret);
  ret = RunWithFreshWorkspace(aclnnGridSampler2DBackward, workspaceSize, executor, stream,
                              "aclnnGridSampler2DBackward");
  CHECK_RET(ret == 0, return ret);

  std::vector<float> outResult(outZeros.size()), inputGradResult(zeros.size()), gridGradResult(gridZeros.size());
  CHECK_RET(CopyToHost(outAddr, &outResult) == 0, return 1);
  CHECK_RET(CopyToHost(inputGradAddr, &inputGradResult) == 0, return 1);
  CHECK_RET(CopyToHost(gridGradAddr, &gridGradResult) == 0, return 1);

  std::vector<double> outExpected(outResult.size(), 0.0), inputGradExpected(zeros.size(), 0.0);
  std::vector<double> gridGradExpected(gridZeros.size(), 0.0);
  for (int64_t p = 0; p < HO * WO; ++p) {
    for (const Tap& tap : Taps(gridHost[2 * p], gridHost[2 * p + 1])) {
      for (int64_t c = 0; c < C; ++c) {
        const double value = inputHost[c * H * W + tap.index];
        const double g = gradOutHost[c * HO * WO + p];
        outExpected[c * HO * WO + p] += tap.weight * value;
        inputGradExpected[c * H * W + tap.index] += tap.weight * g;
        gridGradExpected[2 * p] += tap.dgx * value * g;
        gridGradExpected[2 * p + 1] += tap.dgy * value * g;
      }
    }
  }
  const bool ok = AllClose("out", outResult, outExpected, 1e-6, 1e-5) &&
                  AllClose("inputGrad", inputGradResult, inputGradExpected, 1e-6, 1e-5) &&
                  AllClose("gridGrad", gridGradResult, gridGradExpected, 1e-5, 1e-5);

  aclDestroyTensor(input);
  aclDestroyTensor(grid);
  aclDestroyTensor(out);
  aclDestroyTensor(gradOut);
  aclDestroyTensor(inputGrad);
  aclDestroyTensor(gridGrad);
  aclDestroyBoolArray(outputMask);
  for (void* addr : {inputAddr, gridAddr, outAddr, gradOutAddr, inputGradAddr, gridGradAddr}) aclrtFree(addr);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  LOG_PRINT("GridSampler2D forward and backward: %s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
