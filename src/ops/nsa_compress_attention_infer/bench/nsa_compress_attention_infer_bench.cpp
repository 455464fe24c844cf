// Benchmark cases of aclnnNsaCompressAttentionInfer.
//
// Case names: NsaCompressAttentionInfer/<dtype>/<shape>, e.g. "NsaCompressAttentionInfer/BFLOAT16/B20_N64_Nkv4_S1".
// Shapes (BSND; D_qk 192, D_v 128; compressed blocks of 32 every 16, select blocks of 64, 16 selected; pages of 128
// compressed tokens, shuffled through the cache):
// - B20_N64_Nkv4_S1: CANN's sample geometry: one decoding step of 20 sequences of 4096 compressed tokens (65552 raw
//   tokens), 64 query heads over 4 KV heads (groups of 16), one new token each;
// - B20_N64_Nkv4_S4: the same with 4 tokens per sequence (the multi-token form: the raw lengths given, each token
//   seeing the windows complete at its position);
// - small_B2_N4_Nkv1: 2 sequences of 256 compressed tokens: a small case for the bench_smoke test.
// FLOP per call (call->flops: GFLOP/s and % of the machine's FMA peak): 2 V (D_qk + D_v) per query row and head with
// V visible compressed tokens (the two matrix products; the block scores add under 1%). Bytes: query, the block table
// and the outputs once, and the visible cache rows of key and value once per (token, KV head).
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "bench_common.h"
#include "nsa_compress_attention_infer/test/nsa_compress_attention_infer_calls.h"

namespace bench {
namespace {

struct InferShape {
  std::string name;
  int64_t batch, steps, q_heads, kv_heads, cmp_length;
};

constexpr int64_t kDimQk = 192, kDimV = 128, kPage = 128, kBlock = 32, kStride = 16, kSelect = 64, kCount = 16;

const InferShape kDecodeShape = {"B20_N64_Nkv4_S1", 20, 1, 64, 4, 4096};
const InferShape kDraftShape = {"B20_N64_Nkv4_S4", 20, 4, 64, 4, 4096};
const InferShape kSmallShape = {"small_B2_N4_Nkv1", 2, 1, 4, 1, 256};

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
  return std::string("NsaCompressAttentionInfer/") + DTypeName(c.dtype) + "/" + c.shape.name;
}

std::string Prepare(const InferCase& c, PreparedCall* call) {
  const InferShape& s = c.shape;
  const int64_t columns = (s.cmp_length + kPage - 1) / kPage, pages = s.batch * columns;
  const int64_t raw_length = (s.cmp_length - 1) * kStride + kBlock;
  const std::vector<int64_t> q_shape = {s.batch, s.steps, s.q_heads, kDimQk};
  const std::vector<int64_t> out_shape = {s.batch, s.steps, s.q_heads, kDimV};
  const std::vector<int64_t> k_shape = {pages, kPage, s.kv_heads * kDimQk},
                             v_shape = {pages, kPage, s.kv_heads * kDimV};
  const std::vector<int64_t> topk_shape = {s.batch, s.steps, s.kv_heads, kCount};
  const std::vector<int64_t> q_lengths(static_cast<size_t>(s.batch), s.steps);
  const std::vector<int64_t> cmp_lengths(static_cast<size_t>(s.batch), s.cmp_length);
  const std::vector<int64_t> sel_lengths(static_cast<size_t>(s.batch), raw_length);
  std::vector<aclIntArray*> arrays;
  for (const std::vector<int64_t>* values : {&q_lengths, &cmp_lengths, &sel_lengths}) {
    aclIntArray* array = aclCreateIntArray(values->data(), values->size());
    if (array == nullptr) return "aclCreateIntArray returned NULL: " + RecentErrorMessage();
    call->int_arrays.push_back(array);
    arrays.push_back(array);
  }
  // The pages of the sequences, shuffled through the cache (a fixed permutation: the same every run).
  std::vector<int64_t> table(static_cast<size_t>(pages));
  std::iota(table.begin(), table.end(), int64_t{0});
  for (size_t i = 0; i < table.size(); ++i) std::swap(table[i], table[(i * 7919) % table.size()]);
  int64_t visible_keys = 0;  // per KV head, summed over the query rows
  for (int64_t i = 0; i < s.steps; ++i) {
    const int64_t position = raw_length - s.steps + i;
    visible_keys += s.batch * std::min(s.cmp_length, (position + 1 - kBlock) / kStride + 1);
  }

  DeviceTensor query, key, value, table_tensor, out, topk;
  std::string error = AddRandomTensor(call, q_shape, c.dtype, -1.0, 1.0, 81, &query);
  if (error.empty()) error = AddRandomTensor(call, k_shape, c.dtype, -1.0, 1.0, 82, &key);
  if (error.empty()) error = AddRandomTensor(call, v_shape, c.dtype, -1.0, 1.0, 83, &value);
  if (error.empty()) error = AddRandomTensor(call, out_shape, c.dtype, 0.0, 0.0, 84, &out);
  if (!error.empty()) return error;
  error = CreateTensorFromBytes({s.batch, columns}, ACL_INT32, Int32Bytes(table), &table_tensor);
  call->tensors.push_back(table_tensor);
  if (!error.empty()) return error;
  const std::vector<int64_t> no_selection(static_cast<size_t>(s.batch * s.steps * s.kv_heads * kCount), -1);
  error = CreateTensorFromBytes(topk_shape, ACL_INT32, Int32Bytes(no_selection), &topk);
  call->tensors.push_back(topk);
  if (!error.empty()) return error;

  opcall::NsaCompressAttentionInfer op;
  op.query = query.tensor;
  op.key = key.tensor;
  op.value = value.tensor;
  op.block_table = table_tensor.tensor;
  op.actual_q_seq_len = arrays[0];
  op.actual_cmp_kv_seq_len = arrays[1];
  op.actual_sel_kv_seq_len = s.steps > 1 ? arrays[2] : nullptr;  // one token: the single-token form
  op.num_heads = s.q_heads;
  op.num_key_value_heads = s.kv_heads;
  op.select_block_size = kSelect;
  op.select_block_count = kCount;
  op.compress_block_size = kBlock;
  op.compress_block_stride = kStride;
  op.scale_value = 0.088388;
  op.layout = "BSND";
  op.page_block_size = kPage;
  op.output = out.tensor;
  op.topk_output = topk.tensor;
  const aclnnStatus status = PlanCall(op, call);
  if (status != ACLNN_SUCCESS) return "phase 1 failed with " + std::to_string(status) + ": " + RecentErrorMessage();
  const double element = static_cast<double>(aclDataTypeSize(c.dtype));
  const double rows = static_cast<double>(s.batch * s.steps);
  const double head_rows = static_cast<double>(visible_keys * s.kv_heads);  // cache rows read, per KV head
  call->bytes = element * (rows * static_cast<double>(s.q_heads * (kDimQk + kDimV)) +
                           head_rows * static_cast<double>(kDimQk + kDimV)) +
                4.0 * static_cast<double>(table.size()) + 4.0 * rows * static_cast<double>(s.kv_heads * kCount);
  call->flops = 2.0 * head_rows * static_cast<double>(s.q_heads / s.kv_heads) * static_cast<double>(kDimQk + kDimV);
  return "";
}

// "query 20x1x64x192 (BSND), cache 640 pages of 128 x 768 / 512, 20 sequences of 4096 compressed tokens".
std::string ShapeText(const InferShape& s) {
  const int64_t pages = s.batch * ((s.cmp_length + kPage - 1) / kPage);
  return "query " + ShapeLabel({s.batch, s.steps, s.q_heads, kDimQk}) + " (BSND), cache " + std::to_string(pages) +
         " pages of " + std::to_string(kPage) + " x " + std::to_string(s.kv_heads * kDimQk) + " / " +
         std::to_string(s.kv_heads * kDimV) + ", " + std::to_string(s.batch) + " sequences of " +
         std::to_string(s.cmp_length) + " compressed tokens, " + std::to_string(kCount) + " blocks of " +
         std::to_string(kSelect) + " selected";
}

void RegisterCases() {
  for (const InferCase& c : Cases()) {
    const CaseInfo info = {CaseName(c), "NsaCompressAttentionInfer", "aclnnNsaCompressAttentionInfer", false,
                           c.dtype,     ShapeText(c.shape)};
    RegisterOperatorBenchmark(info, [c](PreparedCall* call) { return Prepare(c, call); });
  }
}

const CaseTableRegistration kRegistration("NsaCompressAttentionInfer", RegisterCases);

}  // namespace
}  // namespace bench
