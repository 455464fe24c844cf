// NsaSelectedAttentionInfer's step of aclnn_demo (examples/demo/demo_support.h): one decoding step over a paged
// key/value cache.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "demo_support.h"
#include "nsa_selected_attention_infer/test/nsa_selected_attention_infer_calls.h"
#include "nsa_selected_attention_infer/test/nsa_selected_attention_infer_reference.h"

namespace demo {
namespace {

// One decoding step, BSND: 8 sequences of 3000 to 8192 cached tokens in pages of 128 (the cache's pages shuffled
// among the sequences), one new query token each, 32 query heads over 2 KV heads (groups of 16), D 192 / 128, 16
// distinct blocks of 64 per token and KV head (its last block, as NSA always selects the local one, then random
// others).
void RunNsaSelectedAttentionInfer(aclrtStream stream, aclDataType dtype, std::vector<Row>* rows) {
  constexpr int64_t kBatch = 8, kQHeads = 32, kKvHeads = 2, kDimQk = 192, kDimV = 128, kPage = 128;
  constexpr int64_t kBlock = 64, kCount = 16, kColumns = 64;  // 64 pages of 128: 8192 positions per sequence
  ref::NsaSelectedInferShape s;
  s.q_heads = kQHeads;
  s.kv_heads = kKvHeads;
  s.dim_qk = kDimQk;
  s.dim_v = kDimV;
  s.block_size = kBlock;
  s.block_count = kCount;
  s.scale = static_cast<double>(static_cast<float>(1.0 / std::sqrt(192.0)));
  std::mt19937_64 rng(31);
  for (int64_t b = 0; b < kBatch; ++b) {
    s.q_lengths.push_back(1);
    s.kv_lengths.push_back(3000 + static_cast<int64_t>(rng() % 5193));
  }
  const int64_t pages = kBatch * kColumns;
  std::vector<int64_t> table(static_cast<size_t>(pages));
  std::iota(table.begin(), table.end(), int64_t{0});
  std::shuffle(table.begin(), table.end(), rng);
  std::vector<int64_t> topk;
  for (int64_t b = 0; b < kBatch; ++b) {
    const int64_t blocks = (s.kv_lengths[static_cast<size_t>(b)] + kBlock - 1) / kBlock;
    std::vector<int64_t> order(static_cast<size_t>(blocks));
    for (int64_t h = 0; h < kKvHeads; ++h) {
      std::iota(order.begin(), order.end(), int64_t{0});
      std::swap(order[0], order.back());
      for (size_t i = 1; i < static_cast<size_t>(kCount); ++i)
        std::swap(order[i], order[i + rng() % (order.size() - i)]);
      topk.insert(topk.end(), order.begin(), order.begin() + kCount);
    }
  }

  const std::vector<int64_t> q_shape = {kBatch, 1, kQHeads, kDimQk}, out_shape = {kBatch, 1, kQHeads, kDimV};
  const std::vector<int64_t> k_shape = {pages, kPage, kKvHeads, kDimQk}, v_shape = {pages, kPage, kKvHeads, kDimV};
  Row out_row = MakeRow("NsaSelectedAttentionInfer", "output", dtype, out_shape);
  std::vector<double> query = RandomValues(kBatch * kQHeads * kDimQk, -1.0, 1.0, 32);
  std::vector<double> key = RandomValues(s.KvPositions() * kKvHeads * kDimQk, -1.0, 1.0, 33);
  std::vector<double> value = RandomValues(s.KvPositions() * kKvHeads * kDimV, -1.0, 1.0, 34);
  RoundTo(dtype, &query);
  RoundTo(dtype, &key);
  RoundTo(dtype, &value);
  // The cache's unused rows are NaN in the reference's layout helper; the demo stores them as 0 (a real cache holds
  // stale data there; the operator must not read it either way).
  std::vector<double> key_cache = ref::PagedCache(key, kKvHeads * kDimQk, s, table, kColumns, pages, kPage);
  std::vector<double> value_cache = ref::PagedCache(value, kKvHeads * kDimV, s, table, kColumns, pages, kPage);
  for (std::vector<double>* cache : {&key_cache, &value_cache}) {
    for (double& x : *cache) x = std::isnan(x) ? 0.0 : x;
  }

  DeviceTensor q_dev, k_dev, v_dev, topk_dev, table_dev, out_dev;
  std::string error = q_dev.Create(q_shape, dtype, Encode(query, dtype));
  if (error.empty()) error = k_dev.Create(k_shape, dtype, Encode(key_cache, dtype));
  if (error.empty()) error = v_dev.Create(v_shape, dtype, Encode(value_cache, dtype));
  if (error.empty()) error = topk_dev.Create({kBatch, 1, kKvHeads, kCount}, ACL_INT32, Int32Bytes(topk));
  if (error.empty()) error = table_dev.Create({kBatch, kColumns}, ACL_INT32, Int32Bytes(table));
  if (error.empty()) error = out_dev.Create(out_shape, dtype, {});
  aclIntArray* q_lengths = aclCreateIntArray(s.q_lengths.data(), s.q_lengths.size());
  aclIntArray* kv_lengths = aclCreateIntArray(s.kv_lengths.data(), s.kv_lengths.size());
  if (error.empty() && (q_lengths == nullptr || kv_lengths == nullptr)) {
    error = "aclCreateIntArray: " + RecentErrorMessage();
  }
  double milliseconds = NAN;
  if (error.empty()) {
    opcall::NsaSelectedAttentionInfer call;
    call.query = q_dev.tensor();
    call.key = k_dev.tensor();
    call.value = v_dev.tensor();
    call.topk_indices = topk_dev.tensor();
    call.block_table = table_dev.tensor();
    call.actual_q_seq_len = q_lengths;
    call.actual_kv_seq_len = kv_lengths;
    call.layout = "BSND";
    call.num_heads = kQHeads;
    call.num_key_value_heads = kKvHeads;
    call.select_block_size = kBlock;
    call.select_block_count = kCount;
    call.page_block_size = kPage;
    call.scale_value = s.scale;
    call.output = out_dev.tensor();
    error = TimedCall(stream, call, &milliseconds);
  }
  if (q_lengths != nullptr) aclDestroyIntArray(q_lengths);
  if (kv_lengths != nullptr) aclDestroyIntArray(kv_lengths);
  // Bytes: what the step reads of the cache (the selected rows of key and value) and writes, not the whole cache.
  const double selected_rows = static_cast<double>(kBatch * kKvHeads * kCount * kBlock);
  const double bytes = TotalBytes({&q_dev, &topk_dev, &table_dev, &out_dev}) +
                       selected_rows * static_cast<double>(kDimQk + kDimV) * 2.0;  // FLOAT16, BFLOAT16
  CompleteCall(
      error, milliseconds, bytes, {{&out_dev, &out_row}},
      [&] {
        std::vector<double> out(static_cast<size_t>(kBatch * kQHeads * kDimV));
        ref::NsaSelectedAttentionInfer(query.data(), key.data(), value.data(), topk, {}, s, out.data());
        return Expected{out};
      },
      0, rows);
}

const StepRegistration kRegistration("NsaSelectedAttentionInfer", {ACL_FLOAT16, ACL_BF16},
                                     RunNsaSelectedAttentionInfer);

}  // namespace
}  // namespace demo
