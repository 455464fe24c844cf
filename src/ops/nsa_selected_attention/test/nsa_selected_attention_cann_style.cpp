// aclnnNsaSelectedAttention and aclnnNsaSelectedAttentionGrad (FLOAT16, layout "TND") called the way CANN's samples
// call them - a fresh executor and workspace per call, null strides for contiguous tensors - on the documents' sample
// shapes, and checked against values computed here in double precision. Exit code 0 only when every value matches.
// - Forward: the forward document's shape (2 sequences of 512 query and 2048 key/value tokens, 16 query heads in 4
//   groups, D 192 / 128, 16 blocks of 64, sparseMode 2 without a mask: everything computed), every slot selecting
//   block 2 (so each row's 1024 keys are block 2's 64 keys 16 times over) and query = 0: every score is 0, so
//   softmaxMax = 0, softmaxSum = 1024 and attentionOut the mean of block 2's value rows.
// - Backward: the gradient document's shape (1 query token, 1024 key/value tokens, 1 head, D 192 / 192, the 16 slots
//   selecting blocks 0 to 15), on the forward's own outputs, against the gradients computed here.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "aclnnop/aclnn_nsa_selected_attention.h"
#include "aclnnop/aclnn_nsa_selected_attention_grad.h"
#include "cann_style.h"

namespace {

// FLOAT16 bits of a float (round to nearest even; the values used here are exact in FLOAT16), and back.
uint16_t ToHalf(float f) { return aclFloatToFloat16(f); }
float FromHalf(uint16_t h) { return aclFloat16ToFloat(h); }
std::vector<uint16_t> ToHalf(const std::vector<float>& values) {
  std::vector<uint16_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = ToHalf(values[i]);
  return out;
}
std::vector<float> FromHalf(const std::vector<uint16_t>& values) {
  std::vector<float> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = FromHalf(values[i]);
  return out;
}

int RunForward(aclrtStream stream) {
  const int64_t batch = 2, s1 = 512, s2 = 2048, d1 = 192, d2 = 128, g = 4, n2 = 4, count = 16, blockSize = 64;
  const std::vector<int64_t> qShape = {batch * s1, n2 * g, d1}, kShape = {batch * s2, n2, d1};
  const std::vector<int64_t> vShape = {batch * s2, n2, d2}, topkShape = {batch * s1, n2, count};
  const std::vector<int64_t> outShape = {batch * s1, n2 * g, d2}, statShape = {batch * s1, n2 * g, 8};
  std::vector<float> value(GetShapeSize(vShape));
  for (size_t i = 0; i < value.size(); ++i) value[i] = 0.125f * static_cast<float>(static_cast<int>(i % 13) - 6);
  std::vector<float> keyValues(GetShapeSize(kShape));
  for (size_t i = 0; i < keyValues.size(); ++i) keyValues[i] = 0.25f * static_cast<float>(static_cast<int>(i % 7) - 3);
  void *qAddr = nullptr, *kAddr = nullptr, *vAddr = nullptr, *topkAddr = nullptr, *outAddr = nullptr;
  void *maxAddr = nullptr, *sumAddr = nullptr;
  aclTensor *q = nullptr, *k = nullptr, *v = nullptr, *topk = nullptr, *out = nullptr, *max = nullptr, *sum = nullptr;
  CHECK_RET(CreateAclTensor(std::vector<uint16_t>(GetShapeSize(qShape), 0), qShape, &qAddr, aclDataType::ACL_FLOAT16,
                            &q, true) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(ToHalf(keyValues), kShape, &kAddr, aclDataType::ACL_FLOAT16, &k, true) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToHalf(value), vShape, &vAddr, aclDataType::ACL_FLOAT16, &v) == 0, return 1);
  CHECK_RET(CreateAclTensor(std::vector<int32_t>(GetShapeSize(topkShape), 2), topkShape, &topkAddr,
                            aclDataType::ACL_INT32, &topk, true) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(std::vector<uint16_t>(GetShapeSize(outShape), 0), outShape, &outAddr,
                            aclDataType::ACL_FLOAT16, &out, true) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(std::vector<float>(GetShapeSize(statShape), 0.0f), statShape, &maxAddr,
                            aclDataType::ACL_FLOAT, &max) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(std::vector<float>(GetShapeSize(statShape), 0.0f), statShape, &sumAddr,
                            aclDataType::ACL_FLOAT, &sum) == 0,
            return 1);
  std::vector<int64_t> qEnds = {512, 1024}, kvEnds = {2048, 4096};
  aclIntArray* actualSeqQLen = aclCreateIntArray(qEnds.data(), qEnds.size());
  aclIntArray* actualSeqKvLen = aclCreateIntArray(kvEnds.data(), kvEnds.size());
  char layout[] = "TND";

  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  auto ret = aclnnNsaSelectedAttentionGetWorkspaceSize(q, k, v, topk, nullptr, actualSeqQLen, actualSeqKvLen, 1.0,
                                                       n2 * g, layout, 2, blockSize, count, max, sum, out,
                                                       &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnNsaSelectedAttentionGetWorkspaceSize failed. ERROR: %d: %s\n", ret,
                                          aclGetRecentErrMsg());
            return ret);
  ret = RunWithFreshWorkspace(aclnnNsaSelectedAttention, workspaceSize, executor, stream, "aclnnNsaSelectedAttention");
  CHECK_RET(ret == 0, return ret);

  std::vector<uint16_t> outBits(GetShapeSize(outShape));
  std::vector<float> maxValues(GetShapeSize(statShape)), sumValues(GetShapeSize(statShape));
  CHECK_RET(CopyToHost(outAddr, &outBits) == 0 && CopyToHost(maxAddr, &maxValues) == 0 &&
                CopyToHost(sumAddr, &sumValues) == 0,
            return 1);
  // Expected: the mean of block 2's value rows (tokens 128..191 of the token's sequence) of the KV head.
  std::vector<double> outExpected(outBits.size());
  for (int64_t t = 0; t < batch * s1; ++t) {
    const int64_t kvStart = (t / s1) * s2;
    for (int64_t n = 0; n < n2 * g; ++n) {
      for (int64_t d = 0; d < d2; ++d) {
        double total = 0.0;
        for (int64_t j = 0; j < blockSize; ++j) total += value[((kvStart + 2 * blockSize + j) * n2 + n / g) * d2 + d];
        outExpected[(t * n2 * g + n) * d2 + d] = total / blockSize;
      }
    }
  }
  const bool ok = AllClose("attentionOut", FromHalf(outBits), outExpected, 1e-6, 1e-3) &&
                  AllClose("softmaxMax", maxValues, std::vector<double>(maxValues.size(), 0.0), 0.0, 0.0) &&
                  AllClose("softmaxSum", sumValues, std::vector<double>(sumValues.size(), 1024.0), 0.0, 1e-6);
  for (aclTensor* t : {q, k, v, topk, out, max, sum}) aclDestroyTensor(t);
  aclDestroyIntArray(actualSeqQLen);
  aclDestroyIntArray(actualSeqKvLen);
  for (void* addr : {qAddr, kAddr, vAddr, topkAddr, outAddr, maxAddr, sumAddr}) aclrtFree(addr);
  return ok ? 0 : 1;
}

double Dot(const float* a, const float* b, int64_t n) {
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) total += static_cast<double>(a[i]) * b[i];
  return total;
}

int RunBackward(aclrtStream stream) {
  const int64_t s2 = 1024, d = 192, count = 16, blockSize = 64;
  const double scale = 0.0625;
  const std::vector<int64_t> qShape = {1, 1, d}, kvShape = {s2, 1, d}, topkShape = {1, 1, count};
  const std::vector<int64_t> statShape = {1, 1, 8};
  std::vector<float> query(d), key(s2 * d), value(s2 * d), outGrad(d);
  for (int64_t i = 0; i < d; ++i) query[i] = 0.125f * static_cast<float>(static_cast<int>(i % 9) - 4);
  for (int64_t i = 0; i < s2 * d; ++i) {
    key[i] = 0.125f * static_cast<float>(static_cast<int>((i * 7) % 11) - 5);
    value[i] = 0.0625f * static_cast<float>(static_cast<int>((i * 3) % 17) - 8);
  }
  for (int64_t i = 0; i < d; ++i) outGrad[i] = 0.25f * static_cast<float>(static_cast<int>(i % 5) - 2);
  std::vector<int32_t> topkIndices(count);
  for (int32_t i = 0; i < count; ++i) topkIndices[i] = i;

  void *qAddr = nullptr, *kAddr = nullptr, *vAddr = nullptr, *topkAddr = nullptr, *outAddr = nullptr;
  void *gradAddr = nullptr, *maxAddr = nullptr, *sumAddr = nullptr, *dqAddr = nullptr, *dkAddr = nullptr;
  void* dvAddr = nullptr;
  aclTensor *q = nullptr, *k = nullptr, *v = nullptr, *topk = nullptr, *out = nullptr, *grad = nullptr;
  aclTensor *max = nullptr, *sum = nullptr, *dq = nullptr, *dk = nullptr, *dv = nullptr;
  CHECK_RET(CreateAclTensor(ToHalf(query), qShape, &qAddr, aclDataType::ACL_FLOAT16, &q, true) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToHalf(key), kvShape, &kAddr, aclDataType::ACL_FLOAT16, &k) == 0, return 1);
  CHECK_RET(CreateAclTensor(ToHalf(value), kvShape, &vAddr, aclDataType::ACL_FLOAT16, &v, true) == 0, return 1);
  CHECK_RET(CreateAclTensor(topkIndices, topkShape, &topkAddr, aclDataType::ACL_INT32, &topk) == 0, return 1);
  CHECK_RET(CreateAclTensor(std::vector<uint16_t>(d, 0), qShape, &outAddr, aclDataType::ACL_FLOAT16, &out) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(ToHalf(outGrad), qShape, &gradAddr, aclDataType::ACL_FLOAT16, &grad, true) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(std::vector<float>(8, 0.0f), statShape, &maxAddr, aclDataType::ACL_FLOAT, &max) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(std::vector<float>(8, 0.0f), statShape, &sumAddr, aclDataType::ACL_FLOAT, &sum) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(std::vector<uint16_t>(d, 0), qShape, &dqAddr, aclDataType::ACL_FLOAT16, &dq) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(std::vector<uint16_t>(s2 * d, 0), kvShape, &dkAddr, aclDataType::ACL_FLOAT16, &dk) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(std::vector<uint16_t>(s2 * d, 0), kvShape, &dvAddr, aclDataType::ACL_FLOAT16, &dv, true) ==
                0,
            return 1);
  int64_t qEnd[1] = {1}, kvEnd[1] = {s2};
  aclIntArray* actualSeqQLen = aclCreateIntArray(qEnd, 1);
  aclIntArray* actualSeqKvLen = aclCreateIntArray(kvEnd, 1);
  char layout[5] = {'T', 'N', 'D', 0};

  // The forward first: attentionOut and the statistics the gradient takes.
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  auto ret = aclnnNsaSelectedAttentionGetWorkspaceSize(q, k, v, topk, nullptr, actualSeqQLen, actualSeqKvLen, scale, 1,
                                                       layout, 0, blockSize, count, max, sum, out, &workspaceSize,
                                                       &executor);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnNsaSelectedAttentionGetWorkspaceSize failed. ERROR: %d: %s\n", ret,
                                          aclGetRecentErrMsg());
            return ret);
  ret = RunWithFreshWorkspace(aclnnNsaSelectedAttention, workspaceSize, executor, stream, "aclnnNsaSelectedAttention");
  CHECK_RET(ret == 0, return ret);
  ret = aclnnNsaSelectedAttentionGradGetWorkspaceSize(q, k, v, out, grad, max, sum, topk, actualSeqQLen,
                                                      actualSeqKvLen, nullptr, scale, blockSize, count, 1, layout, 0,
                                                      dq, dk, dv, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnNsaSelectedAttentionGradGetWorkspaceSize failed. ERROR: %d: %s\n", ret,
                                          aclGetRecentErrMsg());
            return ret);
  ret = RunWithFreshWorkspace(aclnnNsaSelectedAttentionGrad, workspaceSize, executor, stream,
                              "aclnnNsaSelectedAttentionGrad");
  CHECK_RET(ret == 0, return ret);

  std::vector<uint16_t> outBits(d), dqBits(d), dkBits(s2 * d), dvBits(s2 * d);
  std::vector<float> maxValues(8), sumValues(8);
  CHECK_RET(CopyToHost(outAddr, &outBits) == 0 && CopyToHost(maxAddr, &maxValues) == 0 &&
                CopyToHost(sumAddr, &sumValues) == 0 && CopyToHost(dqAddr, &dqBits) == 0 &&
                CopyToHost(dkAddr, &dkBits) == 0 && CopyToHost(dvAddr, &dvBits) == 0,
            return 1);
  // In double: the softmax over the 1024 keys, then the gradients with the statistics and attentionOut as the
  // forward wrote them.
  const std::vector<float> outGiven = FromHalf(outBits);
  std::vector<double> p(s2), ds(s2), dqExpected(d, 0.0), dkExpected(s2 * d), dvExpected(s2 * d);
  double delta = 0.0;
  for (int64_t i = 0; i < d; ++i) delta += static_cast<double>(outGrad[i]) * outGiven[i];
  for (int64_t j = 0; j < s2; ++j) {
    p[j] = std::exp(scale * Dot(query.data(), &key[j * d], d) - maxValues[0]) / sumValues[0];
    ds[j] = p[j] * (Dot(outGrad.data(), &value[j * d], d) - delta);
    for (int64_t i = 0; i < d; ++i) {
      dqExpected[i] += scale * ds[j] * key[j * d + i];
      dkExpected[j * d + i] = scale * ds[j] * query[i];
      dvExpected[j * d + i] = p[j] * outGrad[i];
    }
  }
  const bool ok = AllClose("dq", FromHalf(dqBits), dqExpected, 1e-5, 2e-3) &&
                  AllClose("dk", FromHalf(dkBits), dkExpected, 1e-6, 2e-3) &&
                  AllClose("dv", FromHalf(dvBits), dvExpected, 1e-6, 2e-3);
  for (aclTensor* t : {q, k, v, topk, out, grad, max, sum, dq, dk, dv}) aclDestroyTensor(t);
  aclDestroyIntArray(actualSeqQLen);
  aclDestroyIntArray(actualSeqKvLen);
  for (void* addr : {qAddr, kAddr, vAddr, topkAddr, outAddr, gradAddr, maxAddr, sumAddr, dqAddr, dkAddr, dvAddr}) {
    aclrtFree(addr);
  }
  return ok ? 0 : 1;
}

}  // namespace

int main() {
  int32_t deviceId = 0;
  aclrtStream stream;
  auto ret = Init(deviceId, &stream);
  CHECK_RET(ret == 0, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);
  const bool ok = RunForward(stream) == 0 && RunBackward(stream) == 0;
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  LOG_PRINT("NsaSelectedAttention forward and backward: %s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
