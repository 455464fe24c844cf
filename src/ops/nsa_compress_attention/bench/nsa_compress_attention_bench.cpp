// Benchmark cases of aclnnNsaCompressAttention (forward only: CANN has no backward of its own).
//
// Case names: NsaCompressAttention/<dtype>/<shape>, e.g. "NsaCompressAttention/BFLOAT16/1x32768_N16_Nkv4_causal".
// torch_nsa_compress_attention.py (this folder) times PyTorch's composite formulation on the same table under the
// same names; keep the two in step.
//
// Shapes (layout "TND", D_qk 192, D_v 128, compressed blocks of l = 32 tokens every d = 16, select blocks of
// l' = 64 tokens: the document's geometry):
// - 1x1024x64_N16_Nkv4: the document's sample (1 sequence of 1024 query tokens and 64 compressed keys, 16 query heads
//   in 4 groups, 16 of the 16 select blocks), sparseMode 1 with its all-false attenMask and topkMask;
// - 1x32768_N16_Nkv4_causal: the long context as one sequence of 32K tokens (2047 compressed keys, 512 select
//   blocks, 16 selected), causal as NSA trains: an attenMask that hides compressed key i until its last token
//   (16 i + 31) is at or before the query's position, a topkMask that hides the blocks after the query's own;
// - small_N4_Nkv1: 1 sequence of 256 query tokens and 63 compressed keys, 4 heads, 4 of 16 blocks, no masks: a small
//   case for the bench_smoke test.
// Data: query, key and value uniform in [-1, 1).
// FLOP per call (call->flops, so the cases report GFLOP/s and % of the machine's FMA peak): 2 L (D_qk + D_v) per
// query row and head with L visible compressed keys (the two matrix products); the importance scores (8 adds per
// select block and head of the group) and the top-k choice are not counted (a few percent at these shapes). Bytes:
// every tensor once.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.h"
#include "nsa_compress_attention/test/nsa_compress_attention_calls.h"

namespace bench {
namespace {

struct CompressShape {
  std::string name;
  int64_t q_tokens, cmp_tokens;  // one sequence
  int64_t q_heads, kv_heads, select_count;
  bool masks, causal;  // masks: sparseMode 1 with attenMask and topkMask (all false unless causal)
};

constexpr int64_t kDimQk = 192, kDimV = 128, kBlock = 32, kStride = 16, kSelectBlock = 64;
constexpr int64_t kCompressedPerSelect = kSelectBlock / kStride;

const CompressShape kDocumentShape = {"1x1024x64_N16_Nkv4", 1024, 64, 16, 4, 16, true, false};
const CompressShape kLongShape = {"1x32768_N16_Nkv4_causal", 32768, 2047, 16, 4, 16, true, true};
const CompressShape kSmallShape = {"small_N4_Nkv1", 256, 63, 4, 1, 4, false, false};

struct CompressCase {
  aclDataType dtype;
  CompressShape shape;
};

std::vector<CompressCase> Cases() {
  std::vector<CompressCase> cases;
  for (const CompressShape& shape : {kDocumentShape, kLongShape, kSmallShape}) {
    for (aclDataType dtype : {ACL_FLOAT16, ACL_BF16}) cases.push_back({dtype, shape});
  }
  return cases;
}

std::string CaseName(const CompressCase& c) {
  return "NsaCompressAttention/" + std::string(DTypeName(c.dtype)) + "/" + c.shape.name;
}

// Whether query position u sees compressed key i (causal: once the key's last token, i * d + l - 1, is at or before
// u), and whether select block j is hidden from u's top-k (causal: it starts after u).
bool KeyHidden(const CompressShape& s, int64_t u, int64_t i) { return s.causal && i * kStride + kBlock - 1 > u; }
bool BlockHidden(const CompressShape& s, int64_t u, int64_t j) { return s.causal && j * kSelectBlock > u; }

std::string Prepare(const CompressCase& c, PreparedCall* call) {
  const CompressShape& s = c.shape;
  const int64_t select_blocks = (s.cmp_tokens + kCompressedPerSelect - 1) / kCompressedPerSelect;
  const std::vector<int64_t> q_shape = {s.q_tokens, s.q_heads, kDimQk}, k_shape = {s.cmp_tokens, s.kv_heads, kDimQk};
  const std::vector<int64_t> v_shape = {s.cmp_tokens, s.kv_heads, kDimV}, out_shape = {s.q_tokens, s.q_heads, kDimV};
  const std::vector<int64_t> stat_shape = {s.q_tokens, s.q_heads, 8};
  const std::vector<int64_t> topk_shape = {s.q_tokens, s.kv_heads, s.select_count};
  const std::vector<int64_t> q_ends = {s.q_tokens}, cmp_ends = {s.cmp_tokens}, sel_ends = {select_blocks};
  for (const std::vector<int64_t>* ends : {&q_ends, &cmp_ends, &sel_ends}) {
    aclIntArray* array = aclCreateIntArray(ends->data(), ends->size());
    if (array == nullptr) return "aclCreateIntArray returned NULL: " + RecentErrorMessage();
    call->int_arrays.push_back(array);
  }

  DeviceTensor query, key, value, atten_mask, topk_mask, max, sum, out, topk;
  std::string error = AddRandomTensor(call, q_shape, c.dtype, -1.0, 1.0, 71, &query);
  if (error.empty()) error = AddRandomTensor(call, k_shape, c.dtype, -1.0, 1.0, 72, &key);
  if (error.empty()) error = AddRandomTensor(call, v_shape, c.dtype, -1.0, 1.0, 73, &value);
  if (error.empty()) error = AddRandomTensor(call, out_shape, c.dtype, 0.0, 0.0, 74, &out);
  if (error.empty()) error = AddRandomTensor(call, stat_shape, ACL_FLOAT, 0.0, 0.0, 75, &max);
  if (error.empty()) error = AddRandomTensor(call, stat_shape, ACL_FLOAT, 0.0, 0.0, 76, &sum);
  if (!error.empty()) return error;
  error = CreateTensorFromBytes(topk_shape, ACL_INT32,
                                std::vector<unsigned char>(static_cast<size_t>(ElementCount(topk_shape)) * 4, 0),
                                &topk);
  call->tensors.push_back(topk);
  if (!error.empty()) return error;
  double mask_bytes = 0;
  if (s.masks) {
    std::vector<unsigned char> hidden_keys(static_cast<size_t>(s.q_tokens * s.cmp_tokens));
    std::vector<unsigned char> hidden_blocks(static_cast<size_t>(s.q_tokens * select_blocks));
    for (int64_t u = 0; u < s.q_tokens; ++u) {
      for (int64_t i = 0; i < s.cmp_tokens; ++i) {
        hidden_keys[static_cast<size_t>(u * s.cmp_tokens + i)] = KeyHidden(s, u, i);
      }
      for (int64_t j = 0; j < select_blocks; ++j) {
        hidden_blocks[static_cast<size_t>(u * select_blocks + j)] = BlockHidden(s, u, j);
      }
    }
    error = CreateTensorFromBytes({s.q_tokens, s.cmp_tokens}, ACL_BOOL, hidden_keys, &atten_mask);
    call->tensors.push_back(atten_mask);
    if (!error.empty()) return error;
    error = CreateTensorFromBytes({s.q_tokens, select_blocks}, ACL_BOOL, hidden_blocks, &topk_mask);
    call->tensors.push_back(topk_mask);
    if (!error.empty()) return error;
    mask_bytes = static_cast<double>(hidden_keys.size() + hidden_blocks.size());
  }

  opcall::NsaCompressAttention forward;
  forward.query = query.tensor;
  forward.key = key.tensor;
  forward.value = value.tensor;
  forward.atten_mask = s.masks ? atten_mask.tensor : nullptr;
  forward.topk_mask = s.masks ? topk_mask.tensor : nullptr;
  forward.actual_seq_q_len = call->int_arrays[0];
  forward.actual_cmp_seq_kv_len = call->int_arrays[1];
  forward.actual_sel_seq_kv_len = call->int_arrays[2];
  forward.scale_value = 1.0 / 16.0;
  forward.head_num = s.q_heads;
  forward.sparse_mode = s.masks ? 1 : 0;
  forward.compress_block_size = kBlock;
  forward.compress_stride = kStride;
  forward.select_block_size = kSelectBlock;
  forward.select_block_count = s.select_count;
  forward.softmax_max = max.tensor;
  forward.softmax_sum = sum.tensor;
  forward.attention_out = out.tensor;
  forward.topk_indices = topk.tensor;
  const aclnnStatus status = PlanCall(forward, call);
  if (status != ACLNN_SUCCESS) return "phase 1 failed with " + std::to_string(status) + ": " + RecentErrorMessage();

  int64_t visible_keys = 0;  // over the query tokens, per head
  for (int64_t u = 0; u < s.q_tokens; ++u) {
    for (int64_t i = 0; i < s.cmp_tokens; ++i) visible_keys += KeyHidden(s, u, i) ? 0 : 1;
  }
  const double element = static_cast<double>(aclDataTypeSize(c.dtype));
  call->bytes = element * static_cast<double>(ElementCount(q_shape) + ElementCount(k_shape) + ElementCount(v_shape) +
                                              ElementCount(out_shape)) +
                4.0 * static_cast<double>(2 * ElementCount(stat_shape) + ElementCount(topk_shape)) + mask_bytes;
  call->flops = 2.0 * static_cast<double>(visible_keys) * static_cast<double>(s.q_heads) *
                static_cast<double>(kDimQk + kDimV);
  return "";
}

// "query 1024x16x192, key 64x4x192, value 64x4x128 (TND, 1 sequence), 16 of 16 blocks, masks".
std::string ShapeText(const CompressShape& s) {
  const int64_t select_blocks = (s.cmp_tokens + kCompressedPerSelect - 1) / kCompressedPerSelect;
  return "query " + ShapeLabel({s.q_tokens, s.q_heads, kDimQk}) + ", key " +
         ShapeLabel({s.cmp_tokens, s.kv_heads, kDimQk}) + ", value " + ShapeLabel({s.cmp_tokens, s.kv_heads, kDimV}) +
         " (TND, 1 sequence; l 32, d 16, l' 64), " + std::to_string(s.select_count) + " of " +
         std::to_string(select_blocks) + " blocks" + (s.causal ? ", causal masks" : s.masks ? ", all-false masks" : "");
}

void RegisterCases() {
  for (const CompressCase& c : Cases()) {
    const CaseInfo info = {CaseName(c), "NsaCompressAttention", "aclnnNsaCompressAttention", false, c.dtype,
                           ShapeText(c.shape)};
    RegisterOperatorBenchmark(info, [c](PreparedCall* call) { return Prepare(c, call); });
  }
}

const CaseTableRegistration kRegistration("NsaCompressAttention", RegisterCases);

}  // namespace
}  // namespace bench
