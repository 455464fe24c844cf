// NsaSelectedAttention's step of aclnn_demo (examples/demo/demo_support.h): its forward and backward on a realistic
// shape.
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "demo_support.h"
#include "nsa_selected_attention/test/nsa_selected_attention_calls.h"
#include "nsa_selected_attention/test/nsa_selected_attention_reference.h"

namespace demo {
namespace {

// NsaSelectedAttention forward and backward (Native Sparse Attention's selected branch), one dtype: the forward
// document's sample shape with fewer query tokens (2 sequences of 128 query and 2048 key/value tokens, 16 query heads
// in 4 groups, D 192 / 128, 16 blocks of 64 per token and KV head, distinct random blocks), sparseMode 2 with a mask
// (causal: later blocks are masked, the token's own block partly). The backward takes the forward's outputs as
// attentionOut and the statistics, as training would.
void RunNsaSelectedAttention(aclrtStream stream, aclDataType dtype, std::vector<Row>* rows) {
  ref::NsaSelectedAttentionShape s;
  s.q_heads = 16;
  s.kv_heads = 4;
  s.dim_qk = 192;
  s.dim_v = 128;
  s.block_size = 64;
  s.block_count = 16;
  s.causal = true;
  s.scale = static_cast<double>(static_cast<float>(1.0 / std::sqrt(192.0)));
  s.q_ends = {128, 256};
  s.kv_ends = {2048, 4096};
  const int64_t t1 = s.QTokens(), t2 = s.KvTokens();
  const std::vector<int64_t> q_shape = {t1, 16, 192}, k_shape = {t2, 4, 192}, v_shape = {t2, 4, 128};
  const std::vector<int64_t> topk_shape = {t1, 4, 16}, out_shape = {t1, 16, 128}, stat_shape = {t1, 16, 8};

  Row forward_out = MakeRow("NsaSelectedAttention", "attentionOut", dtype, out_shape);
  Row forward_max = MakeRow("NsaSelectedAttention", "softmaxMax", ACL_FLOAT, stat_shape);
  Row forward_sum = MakeRow("NsaSelectedAttention", "softmaxSum", ACL_FLOAT, stat_shape);
  Row dq_row = MakeRow("NsaSelectedAttentionGrad", "dq", dtype, q_shape);
  Row dk_row = MakeRow("NsaSelectedAttentionGrad", "dk", dtype, k_shape);
  Row dv_row = MakeRow("NsaSelectedAttentionGrad", "dv", dtype, v_shape);

  std::vector<double> query = RandomValues(ElementCount(q_shape), -1.0, 1.0, 21);
  std::vector<double> key = RandomValues(ElementCount(k_shape), -1.0, 1.0, 22);
  std::vector<double> value = RandomValues(ElementCount(v_shape), -1.0, 1.0, 23);
  std::vector<double> out_grad = RandomValues(ElementCount(out_shape), -1.0, 1.0, 24);
  RoundTo(dtype, &query);
  RoundTo(dtype, &key);
  RoundTo(dtype, &value);
  RoundTo(dtype, &out_grad);
  // 16 distinct blocks of the token's sequence per (token, KV head): its own block (as NSA always selects the local
  // one), then random others.
  std::vector<int64_t> topk;
  std::mt19937_64 rng(25);
  std::vector<int64_t> blocks(32);
  for (int64_t t = 0; t < t1; ++t) {
    for (int64_t h = 0; h < 4; ++h) {
      std::iota(blocks.begin(), blocks.end(), int64_t{0});
      std::swap(blocks[0], blocks[static_cast<size_t>((t % 128) / 64)]);
      for (size_t i = 1; i < 16; ++i) std::swap(blocks[i], blocks[i + rng() % (32 - i)]);
      topk.insert(topk.end(), blocks.begin(), blocks.begin() + 16);
    }
  }
  const std::vector<unsigned char> topk_bytes = Int32Bytes(topk);
  const std::vector<unsigned char> mask_bytes(2048 * 2048, 1);

  DeviceTensor q_dev, k_dev, v_dev, topk_dev, mask_dev, out_dev, max_dev, sum_dev, grad_dev, dq_dev, dk_dev, dv_dev;
  std::string setup_error = q_dev.Create(q_shape, dtype, Encode(query, dtype));
  if (setup_error.empty()) setup_error = k_dev.Create(k_shape, dtype, Encode(key, dtype));
  if (setup_error.empty()) setup_error = v_dev.Create(v_shape, dtype, Encode(value, dtype));
  if (setup_error.empty()) setup_error = topk_dev.Create(topk_shape, ACL_INT32, topk_bytes);
  if (setup_error.empty()) setup_error = mask_dev.Create({2048, 2048}, ACL_BOOL, mask_bytes);
  if (setup_error.empty()) setup_error = out_dev.Create(out_shape, dtype, {});
  if (setup_error.empty()) setup_error = max_dev.Create(stat_shape, ACL_FLOAT, {});
  if (setup_error.empty()) setup_error = sum_dev.Create(stat_shape, ACL_FLOAT, {});
  if (setup_error.empty()) setup_error = grad_dev.Create(out_shape, dtype, Encode(out_grad, dtype));
  if (setup_error.empty()) setup_error = dq_dev.Create(q_shape, dtype, {});
  if (setup_error.empty()) setup_error = dk_dev.Create(k_shape, dtype, {});
  if (setup_error.empty()) setup_error = dv_dev.Create(v_shape, dtype, {});
  aclIntArray* q_ends = aclCreateIntArray(s.q_ends.data(), s.q_ends.size());
  aclIntArray* kv_ends = aclCreateIntArray(s.kv_ends.data(), s.kv_ends.size());
  if (setup_error.empty() && (q_ends == nullptr || kv_ends == nullptr)) {
    setup_error = "aclCreateIntArray: " + RecentErrorMessage();
  }

  double milliseconds = NAN;
  std::string error = setup_error;
  if (error.empty()) {
    opcall::NsaSelectedAttention call;
    call.query = q_dev.tensor();
    call.key = k_dev.tensor();
    call.value = v_dev.tensor();
    call.topk_indices = topk_dev.tensor();
    call.atten_mask = mask_dev.tensor();
    call.actual_seq_q_len = q_ends;
    call.actual_seq_kv_len = kv_ends;
    call.scale_value = s.scale;
    call.head_num = 16;
    call.sparse_mode = 2;
    call.selected_block_size = 64;
    call.selected_block_count = 16;
    call.softmax_max = max_dev.tensor();
    call.softmax_sum = sum_dev.tensor();
    call.attention_out = out_dev.tensor();
    error = TimedCall(stream, call, &milliseconds);
  }
  std::vector<std::vector<double>> forward_got;
  const std::string forward_error = CompleteCall(
      error, milliseconds, TotalBytes({&q_dev, &k_dev, &v_dev, &topk_dev, &out_dev, &max_dev, &sum_dev}),
      {{&out_dev, &forward_out}, {&max_dev, &forward_max}, {&sum_dev, &forward_sum}},
      [&] {
        std::vector<double> out(static_cast<size_t>(ElementCount(out_shape)));
        std::vector<double> max(static_cast<size_t>(t1 * 16)), sum(max.size());
        ref::NsaSelectedAttentionForward(query.data(), key.data(), value.data(), topk, s, out.data(), max.data(),
                                         sum.data());
        return Expected{out, RepeatEach(max, 8), RepeatEach(sum, 8)};
      },
      0, rows, &forward_got);

  // Backward, on the forward's outputs: one call, three outputs, each checked against its own largest value.
  error = setup_error.empty() && !forward_error.empty() ? "the forward failed: " + forward_error : setup_error;
  if (error.empty()) {
    opcall::NsaSelectedAttentionGrad call;
    call.query = q_dev.tensor();
    call.key = k_dev.tensor();
    call.value = v_dev.tensor();
    call.attention_out = out_dev.tensor();
    call.attention_out_grad = grad_dev.tensor();
    call.softmax_max = max_dev.tensor();
    call.softmax_sum = sum_dev.tensor();
    call.topk_indices = topk_dev.tensor();
    call.actual_seq_q_len = q_ends;
    call.actual_seq_kv_len = kv_ends;
    call.atten_mask = mask_dev.tensor();
    call.scale_value = s.scale;
    call.selected_block_size = 64;
    call.selected_block_count = 16;
    call.head_num = 16;
    call.sparse_mode = 2;
    call.dq = dq_dev.tensor();
    call.dk = dk_dev.tensor();
    call.dv = dv_dev.tensor();
    error = TimedCall(stream, call, &milliseconds);
  }
  if (q_ends != nullptr) aclDestroyIntArray(q_ends);
  if (kv_ends != nullptr) aclDestroyIntArray(kv_ends);
  CompleteCall(
      error, milliseconds,
      TotalBytes({&q_dev, &k_dev, &v_dev, &topk_dev, &out_dev, &max_dev, &sum_dev, &grad_dev, &dq_dev, &dk_dev,
                  &dv_dev}),
      {{&dq_dev, &dq_row}, {&dk_dev, &dk_row}, {&dv_dev, &dv_row}},
      [&] {
        // The statistics as the forward wrote them: lane 0 of each row.
        std::vector<double> max, sum;
        for (size_t i = 0; i < forward_got[1].size(); i += 8) {
          max.push_back(forward_got[1][i]);
          sum.push_back(forward_got[2][i]);
        }
        std::vector<double> dq(query.size()), dk(key.size()), dv(value.size());
        ref::NsaSelectedAttentionBackward(query.data(), key.data(), value.data(), forward_got[0].data(),
                                          out_grad.data(), max.data(), sum.data(), topk, s, dq.data(), dk.data(),
                                          dv.data());
        return Expected{dq, dk, dv};
      },
      0, rows);
}

const StepRegistration kRegistration("NsaSelectedAttention", {ACL_FLOAT16, ACL_BF16}, RunNsaSelectedAttention);

}  // namespace
}  // namespace demo
