// NsaCompressAttentionInfer's step of aclnn_demo (examples/demo/demo_support.h): one decoding step over a paged cache
// of compressed keys and values.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "demo_support.h"
#include "nsa_compress_attention_infer/test/nsa_compress_attention_infer_calls.h"
#include "nsa_compress_attention_infer/test/nsa_compress_attention_infer_reference.h"
#include "nsa_selected_attention_infer/test/nsa_selected_attention_infer_reference.h"

namespace demo {
namespace {

// The selection check: every slot holds a distinct block whose reference score is within the row's tolerance of the
// reference's block for that slot (an order that differs only where scores tie within fp32 rounding), and -1
// exactly where the reference has run out of blocks.
void CheckSelection(const ref::NsaCompressInferResult& expected, const std::vector<int32_t>& topk, int64_t count,
                    Row* row) {
  double largest = 0;
  for (const std::vector<double>& scores : expected.scores) {
    for (double score : scores) largest = std::max(largest, std::fabs(score));
  }
  row->tolerance = RelativeTolerance(ACL_FLOAT) * largest;
  row->max_abs_error = 0;
  row->pass = topk.size() == expected.topk.size();
  for (size_t item = 0; row->pass && item < expected.scores.size(); ++item) {
    const std::vector<double>& scores = expected.scores[item];
    std::vector<int32_t> seen;
    for (int64_t slot = 0; slot < count; ++slot) {
      const size_t at = item * static_cast<size_t>(count) + static_cast<size_t>(slot);
      const int64_t want = expected.topk[at];
      const int32_t got = topk[at];
      const bool distinct = got == -1 || std::find(seen.begin(), seen.end(), got) == seen.end();
      seen.push_back(got);
      if ((want == -1) != (got == -1) || !distinct || got >= static_cast<int32_t>(scores.size())) {
        row->pass = false;
        row->error = "topKOutput item " + std::to_string(item) + " slot " + std::to_string(slot) + ": got " +
                     std::to_string(got) + ", the reference's " + std::to_string(want);
        break;
      }
      if (got == -1) continue;
      const double gap = std::fabs(scores[static_cast<size_t>(got)] - scores[static_cast<size_t>(want)]);
      row->max_abs_error = std::max(row->max_abs_error, gap);
    }
  }
  if (row->pass && row->max_abs_error > row->tolerance) {
    row->pass = false;
    row->error = "a selected block's score is off by more than the tolerance";
  }
}

// One decoding step, BSND: 8 sequences of 3000 to 8192 raw tokens, compressed by blocks of 32 every 16 (186 to 511
// compressed tokens) in pages of 128 shuffled over the cache, one new query token each, 32 query heads over 2 KV heads
// (groups of 16), D 192 / 128; the 16 best select blocks of 64 per KV head.
void RunNsaCompressAttentionInfer(aclrtStream stream, aclDataType dtype, std::vector<Row>* rows) {
  constexpr int64_t kBatch = 8, kQHeads = 32, kKvHeads = 2, kDimQk = 192, kDimV = 128, kPage = 128;
  constexpr int64_t kCount = 16, kColumns = 4;  // 4 pages of 128: 512 compressed tokens per sequence
  ref::NsaCompressInferShape s;
  s.q_heads = kQHeads;
  s.kv_heads = kKvHeads;
  s.dim_qk = kDimQk;
  s.dim_v = kDimV;
  s.compress_block_size = 32;
  s.compress_stride = 16;
  s.select_block_size = 64;
  s.select_count = kCount;
  s.scale = static_cast<double>(static_cast<float>(1.0 / std::sqrt(192.0)));
  std::mt19937_64 rng(41);
  for (int64_t b = 0; b < kBatch; ++b) {
    const int64_t raw = 3000 + static_cast<int64_t>(rng() % 5193);
    s.q_lengths.push_back(1);
    s.cmp_lengths.push_back((raw - 32) / 16 + 1);
  }
  ref::NsaSelectedInferShape positions;  // the compressed tokens as NsaSelectedAttentionInfer's helpers page them
  positions.q_lengths = s.q_lengths;
  positions.kv_lengths = s.cmp_lengths;
  const int64_t pages = kBatch * kColumns;
  std::vector<int64_t> table(static_cast<size_t>(pages));
  std::iota(table.begin(), table.end(), int64_t{0});
  std::shuffle(table.begin(), table.end(), rng);

  const std::vector<int64_t> q_shape = {kBatch, 1, kQHeads, kDimQk}, out_shape = {kBatch, 1, kQHeads, kDimV};
  const std::vector<int64_t> k_shape = {pages, kPage, kKvHeads * kDimQk}, v_shape = {pages, kPage, kKvHeads * kDimV};
  const std::vector<int64_t> topk_shape = {kBatch, 1, kKvHeads, kCount};
  Row out_row = MakeRow("NsaCompressAttentionInfer", "output", dtype, out_shape);
  Row topk_row = MakeRow("NsaCompressAttentionInfer", "topKOutput", ACL_INT32, topk_shape);
  std::vector<double> query = RandomValues(kBatch * kQHeads * kDimQk, -1.0, 1.0, 42);
  std::vector<double> key = RandomValues(s.CmpTokens() * kKvHeads * kDimQk, -1.0, 1.0, 43);
  std::vector<double> value = RandomValues(s.CmpTokens() * kKvHeads * kDimV, -1.0, 1.0, 44);
  RoundTo(dtype, &query);
  RoundTo(dtype, &key);
  RoundTo(dtype, &value);
  // The cache's unused rows: 0 (a real cache holds stale data there; the operator must not read it either way).
  std::vector<double> key_cache = ref::PagedCache(key, kKvHeads * kDimQk, positions, table, kColumns, pages, kPage);
  std::vector<double> value_cache = ref::PagedCache(value, kKvHeads * kDimV, positions, table, kColumns, pages, kPage);
  for (std::vector<double>* cache : {&key_cache, &value_cache}) {
    for (double& x : *cache) x = std::isnan(x) ? 0.0 : x;
  }

  DeviceTensor q_dev, k_dev, v_dev, table_dev, out_dev, topk_dev;
  std::string error = q_dev.Create(q_shape, dtype, Encode(query, dtype));
  if (error.empty()) error = k_dev.Create(k_shape, dtype, Encode(key_cache, dtype));
  if (error.empty()) error = v_dev.Create(v_shape, dtype, Encode(value_cache, dtype));
  if (error.empty()) error = table_dev.Create({kBatch, kColumns}, ACL_INT32, Int32Bytes(table));
  if (error.empty()) error = out_dev.Create(out_shape, dtype, {});
  if (error.empty()) error = topk_dev.Create(topk_shape, ACL_INT32, {});
  aclIntArray* cmp_lengths = aclCreateIntArray(s.cmp_lengths.data(), s.cmp_lengths.size());
  if (error.empty() && cmp_lengths == nullptr) error = "aclCreateIntArray: " + RecentErrorMessage();
  double milliseconds = NAN;
  if (error.empty()) {
    opcall::NsaCompressAttentionInfer call;
    call.query = q_dev.tensor();
    call.key = k_dev.tensor();
    call.value = v_dev.tensor();
    call.block_table = table_dev.tensor();
    call.actual_cmp_kv_seq_len = cmp_lengths;
    call.layout = "BSND";
    call.num_heads = kQHeads;
    call.num_key_value_heads = kKvHeads;
    call.select_block_size = 64;
    call.select_block_count = kCount;
    call.compress_block_size = 32;
    call.compress_block_stride = 16;
    call.page_block_size = kPage;
    call.scale_value = s.scale;
    call.output = out_dev.tensor();
    call.topk_output = topk_dev.tensor();
    error = TimedCall(stream, call, &milliseconds);
  }
  if (cmp_lengths != nullptr) aclDestroyIntArray(cmp_lengths);
  // Bytes: every compressed token of every sequence read once per KV head, the query read, the outputs written.
  const double bytes = TotalBytes({&q_dev, &table_dev, &out_dev, &topk_dev}) +
                       static_cast<double>(s.CmpTokens() * kKvHeads * (kDimQk + kDimV)) * 2.0;
  ref::NsaCompressInferResult expected;
  error = CompleteCall(
      error, milliseconds, bytes, {{&out_dev, &out_row}},
      [&] {
        expected = ref::NsaCompressAttentionInfer(query.data(), key.data(), value.data(), {}, s);
        return Expected{expected.out};
      },
      0, rows);

  // topKOutput: a choice, checked against the reference's scores.
  std::vector<unsigned char> topk_bytes;
  if (error.empty()) error = topk_dev.CopyOut(&topk_bytes);
  if (error.empty()) {
    std::vector<int32_t> topk(topk_bytes.size() / 4);
    std::memcpy(topk.data(), topk_bytes.data(), topk.size() * 4);
    CheckSelection(expected, topk, kCount, &topk_row);
    topk_row.milliseconds = milliseconds;
    topk_row.gbps = rows->back().gbps;
  } else {
    topk_row.error = error;
  }
  rows->push_back(topk_row);
}

const StepRegistration kRegistration("NsaCompressAttentionInfer", {ACL_FLOAT16, ACL_BF16},
                                     RunNsaCompressAttentionInfer);

}  // namespace
}  // namespace demo
