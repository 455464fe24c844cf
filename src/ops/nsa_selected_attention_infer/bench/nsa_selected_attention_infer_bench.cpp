// Benchmark cases of aclnnNsaSelectedAttentionInfer.
//
// Case names: NsaSelectedAttentionInfer/<dtype>/<shape>, e.g. "NsaSelectedAttentionInfer/BFLOAT16/B16_N64_Nkv4_S1".
// Shapes (BSND; D_qk 192, D_v 128; pages of 128 positions, shuffled through the cache; each sequence 8192 cached
// positions; 16 blocks of 64 selected per query token and KV head: its last block, then distinct random others):
// - B16_N64_Nkv4_S1: one decoding step of 16 sequences, 64 query heads over 4 KV heads (groups of 16, the document's
//   largest), one new token each;
// - B16_N64_Nkv4_S4: the same with 4 tokens per sequence (speculative decoding's draft tokens, the document's most);
// - small_B2_N4_Nkv1: 2 sequences of 1024 positions, 4 blocks: a small case for the bench_smoke test.
// FLOP per call (call->flops: GFLOP/s and % of the machine's FMA peak): 2 L (D_qk + D_v) per query row and head with
// L visible keys (the two matrix products). Bytes: query, topkIndices, the block table and the output once, and the
// selected cache rows of key and value once per (token, KV head) (not the whole cache: a step reads what it selects).
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "bench_common.h"
#include "nsa_selected_attention_infer/test/nsa_selected_attention_infer_calls.h"

namespace bench {
namespace {

struct InferShape {
  std::string name;
  int64_t batch, steps, q_heads, kv_heads, kv_length, block_count;
};

constexpr int64_t kDimQk = 192, kDimV = 128, kPage = 128, kBlock = 64;

const InferShape kDecodeShape = {"B16_N64_Nkv4_S1", 16, 1, 64, 4, 8192, 16};
const InferShape kDraftShape = {"B16_N64_Nkv4_S4", 16, 4, 64, 4, 8192, 16};
const InferShape kSmallShape = {"small_B2_N4_Nkv1", 2, 1, 4, 1, 1024, 4};

struct InferCase {
  aclDataType dtype;
  InferShape shape;
};

std::vector<InferCase> Cases() {
  std::vector<InferCase> cases;
  for (const InferShape& shape : {kDecodeShape, kDraftShape, kSmallShape}) {
    for (aclDataType dtype : {ACL_FLOAT16, ACL_BF16}) cases.push_back({dtype, shape});
  }
  return cases;
}

std::string CaseName(const InferCase& c) {
  return std::string("NsaSelectedAttentionInfer/") + DTypeName(c.dtype) + "/" + c.shape.name;
}

struct Lcg {
  uint64_t state;
  int64_t Below(int64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(n));
  }
};

std::string Prepare(const InferCase& c, PreparedCall* call) {
  const InferShape& s = c.shape;
  const int64_t columns = s.kv_length / kPage, pages = s.batch * columns;
  const std::vector<int64_t> q_shape = {s.batch, s.steps, s.q_heads, kDimQk};
  const std::vector<int64_t> out_shape = {s.batch, s.steps, s.q_heads, kDimV};
  const std::vector<int64_t> k_shape = {pages, kPage, s.kv_heads, kDimQk}, v_shape = {pages, kPage, s.kv_heads, kDimV};
  const std::vector<int64_t> topk_shape = {s.batch, s.steps, s.kv_heads, s.block_count};
  const std::vector<int64_t> q_lengths(static_cast<size_t>(s.batch), s.steps);
  const std::vector<int64_t> kv_lengths(static_cast<size_t>(s.batch), s.kv_length);
  aclIntArray* q_array = aclCreateIntArray(q_lengths.data(), q_lengths.size());
  aclIntArray* kv_array = aclCreateIntArray(kv_lengths.data(), kv_lengths.size());
  if (q_array != nullptr) call->int_arrays.push_back(q_array);
  if (kv_array != nullptr) call->int_arrays.push_back(kv_array);
  if (q_array == nullptr || kv_array == nullptr) return "aclCreateIntArray returned NULL: " + RecentErrorMessage();

  Lcg rng{11};
  std::vector<int64_t> table(static_cast<size_t>(pages));
  std::iota(table.begin(), table.end(), int64_t{0});
  for (size_t i = table.size(); i > 1; --i) std::swap(table[i - 1], table[static_cast<size_t>(rng.Below(i))]);
  // Each token's selection: the last block, then distinct random earlier ones (every selected key visible: the
  // tokens sit at the end of the cache and blocks before the last are whole).
  const int64_t blocks = s.kv_length / kBlock;
  std::vector<int64_t> topk, order(static_cast<size_t>(blocks));
  int64_t visible_keys = 0;
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t i = 0; i < s.steps; ++i) {
      const int64_t position = s.kv_length - s.steps + i;
      for (int64_t h = 0; h < s.kv_heads; ++h) {
        std::iota(order.begin(), order.end(), int64_t{0});
        std::swap(order[0], order.back());
        for (int64_t k = 1; k < s.block_count; ++k) {
          std::swap(order[static_cast<size_t>(k)], order[static_cast<size_t>(k + rng.Below(blocks - k))]);
        }
        topk.insert(topk.end(), order.begin(), order.begin() + s.block_count);
        visible_keys += (s.block_count - 1) * kBlock + (position - (blocks - 1) * kBlock + 1);
      }
    }
  }

  DeviceTensor query, key, value, topk_tensor, table_tensor, out;
  std::string error = AddRandomTensor(call, q_shape, c.dtype, -1.0, 1.0, 71, &query);
  if (error.empty()) error = AddRandomTensor(call, k_shape, c.dtype, -1.0, 1.0, 72, &key);
  if (error.empty()) error = AddRandomTensor(call, v_shape, c.dtype, -1.0, 1.0, 73, &value);
  if (error.empty()) error = AddRandomTensor(call, out_shape, c.dtype, 0.0, 0.0, 74, &out);
  if (!error.empty()) return error;
  error = CreateTensorFromBytes(topk_shape, ACL_INT32, Int32Bytes(topk), &topk_tensor);
  call->tensors.push_back(topk_tensor);
  if (!error.empty()) return error;
  error = CreateTensorFromBytes({s.batch, columns}, ACL_INT32, Int32Bytes(table), &table_tensor);
  call->tensors.push_back(table_tensor);
  if (!error.empty()) return error;

  opcall::NsaSelectedAttentionInfer op;
  op.query = query.tensor;
  op.key = key.tensor;
  op.value = value.tensor;
  op.topk_indices = topk_tensor.tensor;
  op.block_table = table_tensor.tensor;
  op.actual_q_seq_len = q_array;
  op.actual_kv_seq_len = kv_array;
  op.layout = "BSND";
  op.num_heads = s.q_heads;
  op.num_key_value_heads = s.kv_heads;
  op.select_block_size = kBlock;
  op.select_block_count = s.block_count;
  op.page_block_size = kPage;
  op.scale_value = 1.0 / 16.0;
  op.output = out.tensor;
  const aclnnStatus status = PlanCall(op, call);
  if (status != ACLNN_SUCCESS) return "phase 1 failed with " + std::to_string(status) + ": " + RecentErrorMessage();
  const double element = static_cast<double>(aclDataTypeSize(c.dtype));
  const double rows = static_cast<double>(s.batch * s.steps);
  call->bytes = element * (rows * static_cast<double>(s.q_heads * (kDimQk + kDimV)) +
                           static_cast<double>(visible_keys) * static_cast<double>(kDimQk + kDimV)) +
                4.0 * static_cast<double>(topk.size() + table.size());
  call->flops = 2.0 * static_cast<double>(visible_keys) * static_cast<double>(s.q_heads / s.kv_heads) *
                static_cast<double>(kDimQk + kDimV);
  return "";
}

// "query 16x1x64x192 (BSND), cache 1024 pages of 128 x 4x192 / 4x128, 16 sequences of 8192, 16 blocks of 64".
std::string ShapeText(const InferShape& s) {
  const int64_t pages = s.batch * (s.kv_length / kPage);
  return "query " + ShapeLabel({s.batch, s.steps, s.q_heads, kDimQk}) + " (BSND), cache " + std::to_string(pages) +
         " pages of " + std::to_string(kPage) + " x " + ShapeLabel({s.kv_heads, kDimQk}) + " / " +
         ShapeLabel({s.kv_heads, kDimV}) + ", " + std::to_string(s.batch) + " sequences of " +
         std::to_string(s.kv_length) + ", " + std::to_string(s.block_count) + " blocks of " + std::to_string(kBlock);
}

void RegisterCases() {
  for (const InferCase& c : Cases()) {
    const CaseInfo info = {CaseName(c), "NsaSelectedAttentionInfer", "aclnnNsaSelectedAttentionInfer", false,
                           c.dtype,     ShapeText(c.shape)};
    RegisterOperatorBenchmark(info, [c](PreparedCall* call) { return Prepare(c, call); });
  }
}

const CaseTableRegistration kRegistration("NsaSelectedAttentionInfer", RegisterCases);

}  // namespace
}  // namespace bench
