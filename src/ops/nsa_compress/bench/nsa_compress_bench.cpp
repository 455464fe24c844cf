// Benchmark cases of aclnnNsaCompress (forward) and aclnnNsaCompressGrad.
//
// Case names: <operator>/<dtype>/<sequences>x<tokens>_N<heads>_D<dim>, e.g. "NsaCompressGrad/FLOAT16/8x4096_N4_D128".
// bench/torch_nsa_compress.py times PyTorch's composite formulation on the same table under the same names; keep
// the two in step.
//
// Shapes (the issue's): compressBlockSize 32, compressStride 16 (so every token but the first and last 16 of a
// sequence lies in two blocks), layout "TND", equal-length sequences given by their cumulative ends:
// - 8x4096_N4_D128: 8 sequences of 4096 tokens, 4 key/value heads of 128 (many tokens, few heads);
// - 4x2048_N128_D192: 4 sequences of 2048 tokens, 128 heads of 192 (few tokens, a wide row per token);
// - 2x512_N2_D64: 2 sequences of 512 tokens, 2 heads of 64: a small case for the bench_smoke test.
// Data: input, outputGrad uniform in [-1, 1); weight uniform in [-1/16, 1/16) (a block's 32 weights then sum to
// values of order 1, as a learned compression would); the outputs zero-filled (first-touched) before the run.
// Bytes per call, each tensor counted once: forward reads input and weight and writes output; backward reads
// input, outputGrad and weight and writes inputGrad and weightGrad.
#include <cstdint>
#include <string>
#include <vector>

#include "nsa_compress/test/nsa_compress_calls.h"
#include "bench_common.h"

namespace bench {
namespace {

enum class Direction { kForward, kBackward };

const int64_t kBlockSize = 32;
const int64_t kStride = 16;

struct NsaShape {
  int64_t sequences, tokens_per_sequence, heads, dim;
};

struct NsaCase {
  Direction direction;
  aclDataType dtype;
  NsaShape shape;
};

const NsaShape kManyTokensShape = {8, 4096, 4, 128};
const NsaShape kWideShape = {4, 2048, 128, 192};
const NsaShape kSmallShape = {2, 512, 2, 64};

std::vector<NsaCase> Cases() {
  std::vector<NsaCase> cases;
  for (Direction direction : {Direction::kBackward, Direction::kForward}) {
    for (const NsaShape& shape : {kManyTokensShape, kWideShape, kSmallShape}) {
      for (aclDataType dtype : {ACL_FLOAT16, ACL_BF16}) cases.push_back({direction, dtype, shape});
    }
  }
  return cases;
}

std::string CaseName(const NsaCase& c) {
  const NsaShape& s = c.shape;
  return std::string(c.direction == Direction::kBackward ? "NsaCompressGrad" : "NsaCompress") + "/" +
         DTypeName(c.dtype) + "/" + std::to_string(s.sequences) + "x" + std::to_string(s.tokens_per_sequence) + "_N" +
         std::to_string(s.heads) + "_D" + std::to_string(s.dim);
}

std::string Prepare(const NsaCase& c, PreparedCall* call) {
  const NsaShape& s = c.shape;
  const int64_t tokens = s.sequences * s.tokens_per_sequence;
  const int64_t blocks_per_sequence =
      s.tokens_per_sequence >= kBlockSize ? (s.tokens_per_sequence - kBlockSize) / kStride + 1 : 0;
  const std::vector<int64_t> input_shape = {tokens, s.heads, s.dim};
  const std::vector<int64_t> weight_shape = {kBlockSize, s.heads};
  const std::vector<int64_t> output_shape = {s.sequences * blocks_per_sequence, s.heads, s.dim};
  const double element_size = static_cast<double>(aclDataTypeSize(c.dtype));
  const double input_bytes = static_cast<double>(ElementCount(input_shape)) * element_size;
  const double weight_bytes = static_cast<double>(ElementCount(weight_shape)) * element_size;
  const double output_bytes = static_cast<double>(ElementCount(output_shape)) * element_size;

  std::vector<int64_t> sequence_ends;
  for (int64_t i = 1; i <= s.sequences; ++i) sequence_ends.push_back(i * s.tokens_per_sequence);
  aclIntArray* act_seq_len = aclCreateIntArray(sequence_ends.data(), sequence_ends.size());
  if (act_seq_len == nullptr) return "aclCreateIntArray returned NULL: " + RecentErrorMessage();
  call->int_arrays.push_back(act_seq_len);

  DeviceTensor input, weight;
  std::string error = AddRandomTensor(call, input_shape, c.dtype, -1.0, 1.0, 41, &input);
  if (error.empty()) error = AddRandomTensor(call, weight_shape, c.dtype, -1.0 / 16, 1.0 / 16, 42, &weight);
  if (!error.empty()) return error;

  aclnnStatus status;
  if (c.direction == Direction::kForward) {
    DeviceTensor output;
    error = AddRandomTensor(call, output_shape, c.dtype, 0.0, 0.0, 43, &output);
    if (!error.empty()) return error;
    status = PlanCall(
        opcall::NsaCompress{input.tensor, weight.tensor, act_seq_len, "TND", kBlockSize, kStride, 0, output.tensor},
        call);
    call->bytes = input_bytes + weight_bytes + output_bytes;
  } else {
    DeviceTensor output_grad, input_grad, weight_grad;
    error = AddRandomTensor(call, output_shape, c.dtype, -1.0, 1.0, 44, &output_grad);
    if (error.empty()) error = AddRandomTensor(call, input_shape, c.dtype, 0.0, 0.0, 45, &input_grad);
    if (error.empty()) error = AddRandomTensor(call, weight_shape, c.dtype, 0.0, 0.0, 46, &weight_grad);
    if (!error.empty()) return error;
    status = PlanCall(opcall::NsaCompressGrad{output_grad.tensor, input.tensor, weight.tensor, act_seq_len, kBlockSize,
                                              kStride, 0, "TND", input_grad.tensor, weight_grad.tensor},
                      call);
    call->bytes = 2 * input_bytes + output_bytes + 2 * weight_bytes;
  }
  if (status != ACLNN_SUCCESS) {
    return "phase 1 failed with " + std::to_string(status) + ": " + RecentErrorMessage();
  }
  return "";
}

// "input 32768x4x128 (TND, 8 sequences of 4096 tokens), weight 32x4, blockSize 32, stride 16".
std::string ShapeText(const NsaShape& s) {
  return "input " + ShapeLabel({s.sequences * s.tokens_per_sequence, s.heads, s.dim}) + " (TND, " +
         std::to_string(s.sequences) + " sequences of " + std::to_string(s.tokens_per_sequence) + " tokens), weight " +
         ShapeLabel({kBlockSize, s.heads}) + ", blockSize " + std::to_string(kBlockSize) + ", stride " +
         std::to_string(kStride);
}

void RegisterCases() {
  for (const NsaCase& c : Cases()) {
    const bool backward = c.direction == Direction::kBackward;
    const CaseInfo info = {CaseName(c), "NsaCompress", backward ? "aclnnNsaCompressGrad" : "aclnnNsaCompress",
                           backward,    c.dtype,       ShapeText(c.shape)};
    RegisterOperatorBenchmark(info, [c](PreparedCall* call) { return Prepare(c, call); });
  }
}

const CaseTableRegistration kRegistration("NsaCompress", RegisterCases);

}  // namespace
}  // namespace bench
