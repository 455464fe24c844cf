// aclnnMultiScaleDeformableAttnFunction and aclnnMultiScaleDeformableAttentionGrad called the way CANN's samples
// call them - a fresh executor and workspace per call, null strides for contiguous tensors - and checked against
// multi-scale deformable attention written here in double precision (bilinear sampling with zero padding at pixel
// position location * size - 0.5). Exit code 0 only when every value matches.
#include <cmath>
#include <cstdint>
#include <vector>

#include "aclnnop/aclnn_multi_scale_deformable_attention_grad.h"
#include "aclnnop/aclnn_multi_scale_deformable_attn_function.h"
#include "cann_style.h"

namespace {

const int64_t BS = 1, NH = 2, C = 8, NQ = 3, NL = 2, NP = 2;
const int64_t kLevelH[NL] = {2, 1}, kLevelW[NL] = {3, 2}, kLevelStart[NL] = {0, 6};
const int64_t NK = 8;

// One corner of a sample point: its key, bilinear weight and the weight's derivatives by the pixel position.
struct Corner {
  int64_t key;
  double weight, dx, dy;
};
std::vector<Corner> Corners(int64_t level, double locX, double locY) {
  const double x = locX * kLevelW[level] - 0.5, y = locY * kLevelH[level] - 0.5;
  const double x0 = std::floor(x), y0 = std::floor(y);
  std::vector<Corner> corners;
  for (int dy = 0; dy < 2; ++dy) {
    for (int dx = 0; dx < 2; ++dx) {
      const int64_t xi = static_cast<int64_t>(x0) + dx, yi = static_cast<int64_t>(y0) + dy;
      if (xi < 0 || xi >= kLevelW[level] || yi < 0 || yi >= kLevelH[level]) continue;
      const double wx = dx ? x - x0 : 1 - (x - x0), wy = dy ? y - y0 : 1 - (y - y0);
      corners.push_back({kLevelStart[level] + yi * kLevelW[level] + xi, wx * wy, (dx ? 1 : -1) * wy,
                         (dy ? 1 : -1) * wx});
    }
  }
  return corners;
}

}  // namespace

int main() {
  int32_t deviceId = 0;
  aclrtStream stream;
  auto ret = Init(deviceId, &stream);
  CHECK_RET(ret == 0, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

  std::vector<int64_t> valueShape = {BS, NK, NH, C}, shapesShape = {NL, 2}, startShape = {NL};
  std::vector<int64_t> locShape = {BS, NQ, NH, NL, NP, 2}, attnShape = {BS, NQ, NH, NL, NP};
  std::vector<int64_t> outShape = {BS, NQ, NH * C};
  std::vector<float> valueHost(GetShapeSize(valueShape)), locHost(GetShapeSize(locShape));
  std::vector<float> attnHost(GetShapeSize(attnShape)), gradOutHost(GetShapeSize(outShape));
  for (size_t i = 0; i < valueHost.size(); ++i) valueHost[i] = 0.1f * static_cast<float>(i % 13) - 0.6f;
  for (size_t i = 0; i < locHost.size(); ++i) locHost[i] = 0.17f * static_cast<float>(i % 8) - 0.1f;  // some outside
  for (size_t i = 0; i < attnHost.size(); ++i) attnHost[i] = 0.05f + 0.1f * static_cast<float>(i % 5);
  for (size_t i = 0; i < gradOutHost.size(); ++i) gradOutHost[i] = 0.5f - 0.02f * static_cast<float>(i);
  std::vector<int64_t> shapesHost = {kLevelH[0], kLevelW[0], kLevelH[1], kLevelW[1]};
  std::vector<int64_t> startHost = {kLevelStart[0], kLevelStart[1]};

  void *valueAddr = nullptr, *shapesAddr = nullptr, *startAddr = nullptr, *locAddr = nullptr, *attnAddr = nullptr;
  void *outAddr = nullptr, *gradOutAddr = nullptr, *gradValueAddr = nullptr, *gradLocAddr = nullptr;
  void* gradAttnAddr = nullptr;
  aclTensor *value = nullptr, *shapes = nullptr, *start = nullptr, *loc = nullptr, *attn = nullptr, *out = nullptr;
  aclTensor *gradOut = nullptr, *gradValue = nullptr, *gradLoc = nullptr, *gradAttn = nullptr;
  CHECK_RET(CreateAclTensor(valueHost, valueShape, &valueAddr, aclDataType::ACL_FLOAT, &value, true) == 0, return 1);
  CHECK_RET(CreateAclTensor(shapesHost, shapesShape, &shapesAddr, aclDataType::ACL_INT64, &shapes) == 0, return 1);
  CHECK_RET(CreateAclTensor(startHost, startShape, &startAddr, aclDataType::ACL_INT64, &start, true) == 0, return 1);
  CHECK_RET(CreateAclTensor(locHost, locShape, &locAddr, aclDataType::ACL_FLOAT, &loc, true) == 0, return 1);
  CHECK_RET(CreateAclTensor(attnHost, attnShape, &attnAddr, aclDataType::ACL_FLOAT, &attn) == 0, return 1);
  CHECK_RET(CreateAclTensor(std::vector<float>(GetShapeSize(outShape)), outShape, &outAddr, aclDataType::ACL_FLOAT,
                            &out, true) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(gradOutHost, outShape, &gradOutAddr, aclDataType::ACL_FLOAT, &gradOut, true) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(std::vector<float>(valueHost.size()), valueShape, &gradValueAddr, aclDataType::ACL_FLOAT,
                            &gradValue, true) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(std::vector<float>(locHost.size()), locShape, &gradLocAddr, aclDataType::ACL_FLOAT,
                            &gradLoc) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(std::vector<float>(attnHost.size()), attnShape, &gradAttnAddr, aclDataType::ACL_FLOAT,
                            &gradAttn, true) == 0,
            return 1);

  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnMultiScaleDeformableAttnFunctionGetWorkspaceSize(value, shapes, start, loc, attn, out, &workspaceSize,
                                                              &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnMultiScaleDeformableAttnFunctionGetWorkspaceSize failed. ERROR: %d: %s\n", ret,
                      aclGetRecentErrMsg());
            return ret);
  ret = RunWithFreshWorkspace(aclnnMultiScaleDeformableAttnFunction, workspaceSize, executor, stream,
                              "aclnnMultiScaleDeformableAttnFunction");
  CHECK_RET(ret == 0, return ret);
  ret = aclnnMultiScaleDeformableAttentionGradGetWorkspaceSize(value, shapes, start, loc, attn, gradOut, gradValue,
                                                               gradLoc, gradAttn, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnMultiScaleDeformableAttentionGradGetWorkspaceSize failed. ERROR: %d: %s\n", ret,
                      aclGetRecentErrMsg());
            return ret);
  ret = RunWithFreshWorkspace(aclnnMultiScaleDeformableAttentionGrad, workspaceSize, executor, stream,
                              "aclnnMultiScaleDeformableAttentionGrad");
  CHECK_RET(ret == 0, return ret);

  std::vector<float> outResult(GetShapeSize(outShape)), gradValueResult(valueHost.size());
  std::vector<float> gradLocResult(locHost.size()), gradAttnResult(attnHost.size());
  CHECK_RET(CopyToHost(outAddr, &outResult) == 0 && CopyToHost(gradValueAddr, &gradValueResult) == 0 &&
                CopyToHost(gradLocAddr, &gradLocResult) == 0 && CopyToHost(gradAttnAddr, &gradAttnResult) == 0,
            return 1);

  std::vector<double> outExpected(outResult.size(), 0.0), gradValueExpected(valueHost.size(), 0.0);
  std::vector<double> gradLocExpected(locHost.size(), 0.0), gradAttnExpected(attnHost.size(), 0.0);
  for (int64_t q = 0; q < NQ; ++q) {
    for (int64_t h = 0; h < NH; ++h) {
      for (int64_t l = 0; l < NL; ++l) {
        for (int64_t p = 0; p < NP; ++p) {
          const int64_t point = ((q * NH + h) * NL + l) * NP + p;
          const double a = attnHost[point];
          for (const Corner& corner : Corners(l, locHost[2 * point], locHost[2 * point + 1])) {
            for (int64_t c = 0; c < C; ++c) {
              const double v = valueHost[(corner.key * NH + h) * C + c];
              const double g = gradOutHost[(q * NH + h) * C + c];
              outExpected[(q * NH + h) * C + c] += a * corner.weight * v;
              gradValueExpected[(corner.key * NH + h) * C + c] += a * corner.weight * g;
              gradAttnExpected[point] += corner.weight * v * g;
              gradLocExpected[2 * point] += a * corner.dx * kLevelW[l] * v * g;
              gradLocExpected[2 * point + 1] += a * corner.dy * kLevelH[l] * v * g;
            }
          }
        }
      }
    }
  }
  const bool ok = AllClose("output", outResult, outExpected, 1e-6, 1e-5) &&
                  AllClose("gradValue", gradValueResult, gradValueExpected, 1e-6, 1e-5) &&
                  AllClose("gradLocation", gradLocResult, gradLocExpected, 1e-5, 1e-5) &&
                  AllClose("gradAttnWeight", gradAttnResult, gradAttnExpected, 1e-6, 1e-5);

  for (aclTensor* t : {value, shapes, start, loc, attn, out, gradOut, gradValue, gradLoc, gradAttn}) {
    aclDestroyTensor(t);
  }
  for (void* addr : {valueAddr, shapesAddr, startAddr, locAddr, attnAddr, outAddr, gradOutAddr, gradValueAddr,
                     gradLocAddr, gradAttnAddr}) {
    aclrtFree(addr);
  }
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  LOG_PRINT("MultiScaleDeformableAttention forward and backward: %s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
