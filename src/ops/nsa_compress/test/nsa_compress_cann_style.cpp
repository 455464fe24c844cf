// aclnnNsaCompress and aclnnNsaCompressGrad (BFLOAT16, layout "TND", two sequences) called the way CANN's samples
// call them - a fresh executor and workspace per call, null strides for contiguous tensors - and checked against
// the block compression written here in double precision. Exit code 0 only when every value matches.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "aclnnop/aclnn_nsa_compress.h"
#include "aclnnop/aclnn_nsa_compress_grad.h"
#include "cann_style.h"

namespace {

const int64_t N = 2, D = 16, kBlockSize = 32, kStride = 16;
const std::vector<int64_t> kSeqEnds = {40, 104};  // sequences of 40 and 64 tokens: 1 and 3 blocks
const int64_t T = 104, kBlocks = 4;

// BFLOAT16 bits of a float (round to nearest even), and back. The values used here are exact in BFLOAT16.
uint16_t ToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}
float FromBf16(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
std::vector<uint16_t> ToBf16(const std::vector<float>& values) {
  std::vector<uint16_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = ToBf16(values[i]);
  return out;
}
std::vector<float> FromBf16(const std::vector<uint16_t>& values) {
  std::vector<float> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = FromBf16(values[i]);
  return out;
}

// The first token of every block, in order.
std::vector<int64_t> BlockStarts() {
  std::vector<int64_t> starts;
  int64_t start = 0;
  for (int64_t end : kSeqEnds) {
    for (int64_t s = start; s + kBlockSize <= end; s += kStride) starts.push_back(s);
    start = end;
  }
  return starts;
}

}  // namespace

int main() {
  int32_t deviceId = 0;
  aclrtStream stream;
  auto ret = Init(deviceId, &stream);
  CHECK_RET(ret == 0, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

  std::vector<int64_t> inputShape = {T, N, D}, weightShape = {kBlockSize, N}, outputShape = {kBlocks, N, D};
  std::vector<float> input(GetShapeSize(inputShape)), weight(GetShapeSize(weightShape));
  std::vector<float> outputGrad(GetShapeSize(outputShape));
  for (size_t i = 0; i < input.size(); ++i) input[i] = 0.125f * static_cast<float>(static_cast<int>(i % 11) - 5);
  for (size_t i = 0; i < weight.size(); ++i) weight[i] = 0.0625f * static_cast<float>(i % 7 + 1);
  for (size_t i = 0; i < outputGrad.size(); ++i) {
    outputGrad[i] = 0.25f * static_cast<float>(static_cast<int>(i % 5) - 2);
  }

  void *inputAddr = nullptr, *weightAddr = nullptr, *outputAddr = nullptr, *outputGradAddr = nullptr;
  void *inputGradAddr = nullptr, *weightGradAddr = nullptr;
  aclTensor *inputT = nullptr, *weightT = nullptr, *outputT = nullptr, *outputGradT = nullptr;
  aclTensor *inputGradT = nullptr, *weightGradT = nullptr;
  CHECK_RET(CreateAclTensor(ToBf16(input), inputShape, &inputAddr, aclDataType::ACL_BF16, &inputT, true) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(ToBf16(weight), weightShape, &weightAddr, aclDataType::ACL_BF16, &weightT) == 0, return 1);
  CHECK_RET(CreateAclTensor(std::vector<uint16_t>(GetShapeSize(outputShape)), outputShape, &outputAddr,
                            aclDataType::ACL_BF16, &outputT, true) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(ToBf16(outputGrad), outputShape, &outputGradAddr, aclDataType::ACL_BF16, &outputGradT,
                            true) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(std::vector<uint16_t>(input.size()), inputShape, &inputGradAddr, aclDataType::ACL_BF16,
                            &inputGradT) == 0,
            return 1);
  CHECK_RET(CreateAclTensor(std::vector<uint16_t>(weight.size()), weightShape, &weightGradAddr, aclDataType::ACL_BF16,
                            &weightGradT, true) == 0,
            return 1);
  aclIntArray* actSeqLen = aclCreateIntArray(kSeqEnds.data(), kSeqEnds.size());
  char layout[] = "TND";

  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnNsaCompressGetWorkspaceSize(inputT, weightT, actSeqLen, layout, kBlockSize, kStride, 0, outputT,
                                         &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnNsaCompressGetWorkspaceSize failed. ERROR: %d: %s\n", ret,
                                          aclGetRecentErrMsg());
            return ret);
  ret = RunWithFreshWorkspace(aclnnNsaCompress, workspaceSize, executor, stream, "aclnnNsaCompress");
  CHECK_RET(ret == 0, return ret);
  ret = aclnnNsaCompressGradGetWorkspaceSize(outputGradT, inputT, weightT, actSeqLen, kBlockSize, kStride, 0, layout,
                                             inputGradT, weightGradT, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnNsaCompressGradGetWorkspaceSize failed. ERROR: %d: %s\n", ret,
                                          aclGetRecentErrMsg());
            return ret);
  ret = RunWithFreshWorkspace(aclnnNsaCompressGrad, workspaceSize, executor, stream, "aclnnNsaCompressGrad");
  CHECK_RET(ret == 0, return ret);

  std::vector<uint16_t> outputBits(GetShapeSize(outputShape)), inputGradBits(input.size());
  std::vector<uint16_t> weightGradBits(weight.size());
  CHECK_RET(CopyToHost(outputAddr, &outputBits) == 0 && CopyToHost(inputGradAddr, &inputGradBits) == 0 &&
                CopyToHost(weightGradAddr, &weightGradBits) == 0,
            return 1);

  std::vector<double> outputExpected(outputBits.size(), 0.0), inputGradExpected(input.size(), 0.0);
  std::vector<double> weightGradExpected(weight.size(), 0.0);
  const std::vector<int64_t> starts = BlockStarts();
  for (int64_t b = 0; b < kBlocks; ++b) {
    for (int64_t j = 0; j < kBlockSize; ++j) {
      for (int64_t n = 0; n < N; ++n) {
        for (int64_t d = 0; d < D; ++d) {
          const int64_t token = (starts[b] + j) * N * D + n * D + d;
          const int64_t row = b * N * D + n * D + d;
          outputExpected[row] += weight[j * N + n] * static_cast<double>(input[token]);
          inputGradExpected[token] += weight[j * N + n] * static_cast<double>(outputGrad[row]);
          weightGradExpected[j * N + n] += static_cast<double>(outputGrad[row]) * input[token];
        }
      }
    }
  }
  // BFLOAT16 results: within a few of its units (2^-8 relative) of the exact values.
  const bool ok = AllClose("output", FromBf16(outputBits), outputExpected, 1e-6, 8e-3) &&
                  AllClose("inputGrad", FromBf16(inputGradBits), inputGradExpected, 1e-6, 8e-3) &&
                  AllClose("weightGrad", FromBf16(weightGradBits), weightGradExpected, 1e-6, 8e-3);

  for (aclTensor* t : {inputT, weightT, outputT, outputGradT, inputGradT, weightGradT}) aclDestroyTensor(t);
  aclDestroyIntArray(actSeqLen);
  for (void* addr : {inputAddr, weightAddr, outputAddr, outputGradAddr, inputGradAddr, weightGradAddr}) aclrtFree(addr);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  LOG_PRINT("NsaCompress forward and backward: %s\n", ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
