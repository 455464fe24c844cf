// NsaCompressAttention's step of aclnn_demo (examples/demo/demo_support.h): the forward (CANN has no backward of its
// own) on a realistic shape.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "demo_support.h"
#include "nsa_compress_attention/test/nsa_compress_attention_calls.h"
#include "nsa_compress_attention/test/nsa_compress_attention_reference.h"

namespace demo {
namespace {

// The selection check: every slot of every (token, KV head) holds a distinct candidate block whose reference score
// is within `tolerance` of the reference's best score for that slot (an order that differs only where scores tie
// within the kernel's fp32 rounding), and -1 exactly where fewer blocks are candidates. Fills the row's error (the
// largest score gap) and verdict.
void CheckSelection(const ref::NsaCompressAttentionShape& s, const ref::NsaCompressAttentionResult& expected,
                    const std::vector<double>& topk, Row* row) {
  double largest_score = 0;
  for (double score : expected.block_score) {
    if (!std::isnan(score)) largest_score = std::max(largest_score, std::fabs(score));
  }
  row->tolerance = RelativeTolerance(ACL_FLOAT) * largest_score;
  // Each score's bound half the tolerance: a slot may differ from its best by the tolerance.
  const ref::SelectionCheck check =
      ref::CheckSelection(s, expected, std::vector<double>(expected.block_score.size(), row->tolerance / 2), topk);
  row->max_abs_error = check.max_gap;
  if (check.problems > 0) row->error = check.messages.front();
  row->pass = check.problems == 0;
}

// NsaCompressAttention (Native Sparse Attention's compressed branch and the choice of blocks for its selected
// branch), one dtype, on the document's geometry (16 query heads in 4 groups, D 192 / 128, compressed blocks of
// l = 32 tokens every d = 16, select blocks of l' = 64 tokens) with 2 sequences of 1024 tokens: 63 compressed keys and
// 16 select blocks each, 8 blocks selected. Causal, as NSA trains: sparseMode 1 with an attenMask that hides a
// compressed key until its last token (16 i + 31) is at or before the query's position, and a topkMask that hides the
// select blocks after the query's own (early tokens then have fewer candidates than slots: -1).
void RunNsaCompressAttention(aclrtStream stream, aclDataType dtype, std::vector<Row>* rows) {
  ref::NsaCompressAttentionShape s;
  s.q_heads = 16;
  s.kv_heads = 4;
  s.dim_qk = 192;
  s.dim_v = 128;
  s.compress_block_size = 32;
  s.compress_stride = 16;
  s.select_block_size = 64;
  s.select_count = 8;
  s.scale = static_cast<double>(static_cast<float>(1.0 / std::sqrt(192.0)));
  s.q_ends = {1024, 2048};
  s.cmp_ends = {63, 126};
  const int64_t t1 = s.QTokens(), t2 = s.KvTokens(), rows_q = s.MaxQLength(), keys = s.MaxKvLength();
  const int64_t blocks = s.MaxSelectBlocks();
  s.atten_mask.resize(static_cast<size_t>(rows_q * keys));
  for (int64_t u = 0; u < rows_q; ++u) {
    for (int64_t i = 0; i < keys; ++i) s.atten_mask[static_cast<size_t>(u * keys + i)] = 16 * i + 31 > u;
  }
  s.topk_mask.resize(static_cast<size_t>(rows_q * blocks));
  for (int64_t u = 0; u < rows_q; ++u) {
    for (int64_t j = 0; j < blocks; ++j) s.topk_mask[static_cast<size_t>(u * blocks + j)] = 64 * j > u;
  }
  const std::vector<int64_t> q_shape = {t1, 16, 192}, k_shape = {t2, 4, 192}, v_shape = {t2, 4, 128};
  const std::vector<int64_t> out_shape = {t1, 16, 128}, stat_shape = {t1, 16, 8}, topk_shape = {t1, 4, 8};

  Row out_row = MakeRow("NsaCompressAttention", "attentionOut", dtype, out_shape);
  Row max_row = MakeRow("NsaCompressAttention", "softmaxMax", ACL_FLOAT, stat_shape);
  Row sum_row = MakeRow("NsaCompressAttention", "softmaxSum", ACL_FLOAT, stat_shape);
  Row topk_row = MakeRow("NsaCompressAttention", "topkIndices", ACL_INT32, topk_shape);

  std::vector<double> query = RandomValues(ElementCount(q_shape), -1.0, 1.0, 31);
  std::vector<double> key = RandomValues(ElementCount(k_shape), -1.0, 1.0, 32);
  std::vector<double> value = RandomValues(ElementCount(v_shape), -1.0, 1.0, 33);
  RoundTo(dtype, &query);
  RoundTo(dtype, &key);
  RoundTo(dtype, &value);
  const std::vector<unsigned char> atten_mask_bytes(s.atten_mask.begin(), s.atten_mask.end());
  const std::vector<unsigned char> topk_mask_bytes(s.topk_mask.begin(), s.topk_mask.end());
  // topkIndices starts as 12345 everywhere, not -1 (the 0xFF fill): a slot left alone must not pass for "no block".
  std::vector<unsigned char> topk_fill(static_cast<size_t>(ElementCount(topk_shape)) * 4);
  for (size_t i = 0; i < topk_fill.size(); i += 4) {
    const int32_t marker = 12345;
    std::memcpy(&topk_fill[i], &marker, 4);
  }

  DeviceTensor q_dev, k_dev, v_dev, atten_dev, topk_mask_dev, max_dev, sum_dev, out_dev, topk_dev;
  std::string setup_error = q_dev.Create(q_shape, dtype, Encode(query, dtype));
  if (setup_error.empty()) setup_error = k_dev.Create(k_shape, dtype, Encode(key, dtype));
  if (setup_error.empty()) setup_error = v_dev.Create(v_shape, dtype, Encode(value, dtype));
  if (setup_error.empty()) setup_error = atten_dev.Create({rows_q, keys}, ACL_BOOL, atten_mask_bytes);
  if (setup_error.empty()) setup_error = topk_mask_dev.Create({rows_q, blocks}, ACL_BOOL, topk_mask_bytes);
  if (setup_error.empty()) setup_error = max_dev.Create(stat_shape, ACL_FLOAT, {});
  if (setup_error.empty()) setup_error = sum_dev.Create(stat_shape, ACL_FLOAT, {});
  if (setup_error.empty()) setup_error = out_dev.Create(out_shape, dtype, {});
  if (setup_error.empty()) setup_error = topk_dev.Create(topk_shape, ACL_INT32, topk_fill);
  const std::vector<int64_t> sel_ends = s.SelEnds();
  aclIntArray* q_ends = aclCreateIntArray(s.q_ends.data(), s.q_ends.size());
  aclIntArray* cmp_ends = aclCreateIntArray(s.cmp_ends.data(), s.cmp_ends.size());
  aclIntArray* sel_ends_array = aclCreateIntArray(sel_ends.data(), sel_ends.size());
  if (setup_error.empty() && (q_ends == nullptr || cmp_ends == nullptr || sel_ends_array == nullptr)) {
    setup_error = "aclCreateIntArray: " + RecentErrorMessage();
  }

  double milliseconds = NAN;
  std::string error = setup_error;
  if (error.empty()) {
    opcall::NsaCompressAttention call;
    call.query = q_dev.tensor();
    call.key = k_dev.tensor();
    call.value = v_dev.tensor();
    call.atten_mask = atten_dev.tensor();
    call.topk_mask = topk_mask_dev.tensor();
    call.actual_seq_q_len = q_ends;
    call.actual_cmp_seq_kv_len = cmp_ends;
    call.actual_sel_seq_kv_len = sel_ends_array;
    call.scale_value = s.scale;
    call.head_num = 16;
    call.sparse_mode = 1;
    call.compress_block_size = 32;
    call.compress_stride = 16;
    call.select_block_size = 64;
    call.select_block_count = 8;
    call.softmax_max = max_dev.tensor();
    call.softmax_sum = sum_dev.tensor();
    call.attention_out = out_dev.tensor();
    call.topk_indices = topk_dev.tensor();
    error = TimedCall(stream, call, &milliseconds);
  }
  for (aclIntArray* array : {q_ends, cmp_ends, sel_ends_array}) {
    if (array != nullptr) aclDestroyIntArray(array);
  }
  ref::NsaCompressAttentionResult expected;
  error = CompleteCall(
      error, milliseconds, TotalBytes({&q_dev, &k_dev, &v_dev, &atten_dev, &topk_mask_dev, &out_dev, &max_dev,
                                       &sum_dev, &topk_dev}),
      {{&out_dev, &out_row}, {&max_dev, &max_row}, {&sum_dev, &sum_row}},
      [&] {
        expected = ref::NsaCompressAttentionForward(query.data(), key.data(), value.data(), s);
        return Expected{expected.out, RepeatEach(expected.max, 8), RepeatEach(expected.sum, 8)};
      },
      0, rows);

  // topkIndices: not a value to compare within a tolerance but a choice, checked against the reference's scores.
  std::vector<unsigned char> topk_bytes;
  if (error.empty()) error = topk_dev.CopyOut(&topk_bytes);
  if (error.empty()) {
    std::vector<double> topk(topk_bytes.size() / 4);
    for (size_t i = 0; i < topk.size(); ++i) {
      int32_t index;
      std::memcpy(&index, &topk_bytes[i * 4], 4);
      topk[i] = index;
    }
    CheckSelection(s, expected, topk, &topk_row);
    topk_row.milliseconds = milliseconds;
    topk_row.gbps = rows->back().gbps;
  } else {
    topk_row.error = error;
  }
  rows->push_back(topk_row);
}

const StepRegistration kRegistration("NsaCompressAttention", {ACL_FLOAT16, ACL_BF16}, RunNsaCompressAttention);

}  // namespace
}  // namespace demo
