// Benchmark cases of aclnnNsaSelectedAttention (forward) and aclnnNsaSelectedAttentionGrad.
//
// Case names: <operator>/<dtype>/<shape>, e.g. "NsaSelectedAttentionGrad/BFLOAT16/1x32768_N16_Nkv4_causal".
// bench/torch_nsa_selected_attention.py times PyTorch's composite formulation on the same table under the same
// names; keep the two in step.
//
// Shapes (D_qk 192, D_v 128, 16 blocks of 64 tokens selected per query token and KV head, layout "TND"):
// - 2x512x2048_N16_Nkv4: the forward document's sample (2 sequences of 512 query and 2048 key tokens, 16 query heads
//   in 4 groups; its sparseMode 2 without a mask computes everything), random distinct blocks;
// - 1x32768_N16_Nkv4_causal: the long context scaled to one sequence of 32K tokens (the 4 sequences
//   of 32K take 4x as long per call and change nothing per token: each sequence's key/value heads are 21 MB of
//   FLOAT16 either way), causal (sparseMode 2 with a mask), each token selecting its own block, block 0, the block
//   before its own and 13 other earlier blocks (NSA's initial, local and top-n blocks);
// - 1x1x1024_N1_D192: the gradient document's sample (one query token, 16 of 16 blocks, D_v 192), tiny;
// - small_N4_Nkv1: 1 sequence of 256 query and 1024 key tokens, 4 blocks: a small case for the bench_smoke test.
// Data: query, key uniform in [-1, 1), value and attentionOutGrad in [-1, 1); the backward's attentionOut and
// statistics are the forward's, computed once before the timing.
// FLOP per call (call->flops, so the cases report GFLOP/s and % of the machine's FMA peak): the forward
// 2 L (D_qk + D_v) per query row with L visible keys (the two matrix products); the backward FlashAttention's count,
// 2 L (3 D_qk + 2 D_v) (recomputed scores, dP, dV, dQ, dK): the kernel executes 2 L (4 D_qk + 3 D_v), recomputing the
// scores and dP once more in its key pass, which the figures do not count. Bytes: every tensor once.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "bench_common.h"
#include "nsa_selected_attention/test/nsa_selected_attention_calls.h"

namespace bench {
namespace {

enum class Direction { kForward, kBackward };

struct SelectedShape {
  std::string name;
  int64_t sequences, q_tokens, kv_tokens;  // per sequence
  int64_t q_heads, kv_heads, dim_qk, dim_v, block_size, block_count;
  bool causal;
};

struct SelectedCase {
  Direction direction;
  aclDataType dtype;
  SelectedShape shape;
};

const SelectedShape kDocumentShape = {"2x512x2048_N16_Nkv4", 2, 512, 2048, 16, 4, 192, 128, 64, 16, false};
const SelectedShape kLongShape = {"1x32768_N16_Nkv4_causal", 1, 32768, 32768, 16, 4, 192, 128, 64, 16, true};
const SelectedShape kGradSampleShape = {"1x1x1024_N1_D192", 1, 1, 1024, 1, 1, 192, 192, 64, 16, false};
const SelectedShape kSmallShape = {"small_N4_Nkv1", 1, 256, 1024, 4, 1, 192, 128, 64, 4, false};

std::vector<SelectedCase> Cases() {
  std::vector<SelectedCase> cases;
  for (Direction direction : {Direction::kBackward, Direction::kForward}) {
    for (const SelectedShape& shape : {kDocumentShape, kLongShape, kGradSampleShape, kSmallShape}) {
      for (aclDataType dtype : {ACL_FLOAT16, ACL_BF16}) cases.push_back({direction, dtype, shape});
    }
  }
  return cases;
}

std::string CaseName(const SelectedCase& c) {
  return std::string(c.direction == Direction::kBackward ? "NsaSelectedAttentionGrad" : "NsaSelectedAttention") + "/" +
         DTypeName(c.dtype) + "/" + c.shape.name;
}

// Small, fast and reproducible (the selection's quality does not matter for timing).
struct Lcg {
  uint64_t state;
  int64_t Below(int64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(n));
  }
};

// topkIndices (T1, N2, count) and the visible keys summed over every (token, KV head).
std::vector<int64_t> Selection(const SelectedShape& s, int64_t* visible_keys) {
  const int64_t blocks = s.kv_tokens / s.block_size;
  Lcg rng{7};
  std::vector<int64_t> topk;
  *visible_keys = 0;
  std::vector<int64_t> order(static_cast<size_t>(blocks));
  for (int64_t b = 0; b < s.sequences; ++b) {
    for (int64_t u = 0; u < s.q_tokens; ++u) {
      for (int64_t h = 0; h < s.kv_heads; ++h) {
        std::vector<int64_t> chosen;
        const int64_t own = std::min(blocks - 1, u / s.block_size);
        if (s.causal) {
          // The own block, block 0, the one before the own; then distinct random earlier blocks; blocks past the
          // own one (masked) only where fewer than `count` exist before it.
          for (int64_t block : {own, int64_t{0}, own - 1}) {
            if (block >= 0 && std::find(chosen.begin(), chosen.end(), block) == chosen.end()) chosen.push_back(block);
          }
          int64_t tries = 0;
          while (static_cast<int64_t>(chosen.size()) < std::min(s.block_count, own + 1) && tries++ < 1000) {
            const int64_t block = rng.Below(own + 1);
            if (std::find(chosen.begin(), chosen.end(), block) == chosen.end()) chosen.push_back(block);
          }
          for (int64_t block = own + 1; static_cast<int64_t>(chosen.size()) < s.block_count; ++block) {
            chosen.push_back(block);
          }
          for (int64_t block : chosen) {
            *visible_keys += block > own ? 0 : block < own ? s.block_size : u - own * s.block_size + 1;
          }
        } else {
          std::iota(order.begin(), order.end(), int64_t{0});
          for (int64_t i = 0; i < s.block_count; ++i) {
            std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(i + rng.Below(blocks - i))]);
          }
          chosen.assign(order.begin(), order.begin() + s.block_count);
          *visible_keys += s.block_count * s.block_size;
        }
        topk.insert(topk.end(), chosen.begin(), chosen.end());
      }
    }
  }
  return topk;
}

std::string Prepare(const SelectedCase& c, PreparedCall* call) {
  const SelectedShape& s = c.shape;
  const int64_t t1 = s.sequences * s.q_tokens, t2 = s.sequences * s.kv_tokens;
  const std::vector<int64_t> q_shape = {t1, s.q_heads, s.dim_qk}, k_shape = {t2, s.kv_heads, s.dim_qk};
  const std::vector<int64_t> v_shape = {t2, s.kv_heads, s.dim_v}, topk_shape = {t1, s.kv_heads, s.block_count};
  const std::vector<int64_t> out_shape = {t1, s.q_heads, s.dim_v}, stat_shape = {t1, s.q_heads, 8};
  std::vector<int64_t> q_ends, kv_ends;
  for (int64_t i = 1; i <= s.sequences; ++i) {
    q_ends.push_back(i * s.q_tokens);
    kv_ends.push_back(i * s.kv_tokens);
  }
  aclIntArray* q_array = aclCreateIntArray(q_ends.data(), q_ends.size());
  aclIntArray* kv_array = aclCreateIntArray(kv_ends.data(), kv_ends.size());
  if (q_array != nullptr) call->int_arrays.push_back(q_array);
  if (kv_array != nullptr) call->int_arrays.push_back(kv_array);
  if (q_array == nullptr || kv_array == nullptr) return "aclCreateIntArray returned NULL: " + RecentErrorMessage();

  int64_t visible_keys = 0;
  const std::vector<int64_t> topk_values = Selection(s, &visible_keys);
  DeviceTensor query, key, value, topk, mask, out, max, sum;
  std::string error = AddRandomTensor(call, q_shape, c.dtype, -1.0, 1.0, 51, &query);
  if (error.empty()) error = AddRandomTensor(call, k_shape, c.dtype, -1.0, 1.0, 52, &key);
  if (error.empty()) error = AddRandomTensor(call, v_shape, c.dtype, -1.0, 1.0, 53, &value);
  if (!error.empty()) return error;
  error = CreateTensorFromBytes(topk_shape, ACL_INT32, Int32Bytes(topk_values), &topk);
  call->tensors.push_back(topk);
  if (!error.empty()) return error;
  if (s.causal) {
    error = CreateCausalMask({2048, 2048}, &mask);
    call->tensors.push_back(mask);
    if (!error.empty()) return error;
  }
  error = AddRandomTensor(call, out_shape, c.dtype, 0.0, 0.0, 55, &out);
  if (error.empty()) error = AddRandomTensor(call, stat_shape, ACL_FLOAT, 0.0, 0.0, 56, &max);
  if (error.empty()) error = AddRandomTensor(call, stat_shape, ACL_FLOAT, 0.0, 0.0, 57, &sum);
  if (!error.empty()) return error;

  opcall::NsaSelectedAttention forward;
  forward.query = query.tensor;
  forward.key = key.tensor;
  forward.value = value.tensor;
  forward.topk_indices = topk.tensor;
  forward.atten_mask = s.causal ? mask.tensor : nullptr;
  forward.actual_seq_q_len = q_array;
  forward.actual_seq_kv_len = kv_array;
  forward.scale_value = 1.0 / 16.0;
  forward.head_num = s.q_heads;
  forward.sparse_mode = 2;
  forward.selected_block_size = s.block_size;
  forward.selected_block_count = s.block_count;
  forward.softmax_max = max.tensor;
  forward.softmax_sum = sum.tensor;
  forward.attention_out = out.tensor;
  const double element = static_cast<double>(aclDataTypeSize(c.dtype));
  const double q_bytes = static_cast<double>(ElementCount(q_shape)) * element;
  const double k_bytes = static_cast<double>(ElementCount(k_shape)) * element;
  const double v_bytes = static_cast<double>(ElementCount(v_shape)) * element;
  const double out_bytes = static_cast<double>(ElementCount(out_shape)) * element;
  const double topk_bytes = static_cast<double>(ElementCount(topk_shape)) * 4;
  const double stat_bytes = 2.0 * static_cast<double>(ElementCount(stat_shape)) * 4;
  const double rows_keys = static_cast<double>(visible_keys) * static_cast<double>(s.q_heads / s.kv_heads);
  aclnnStatus status;
  if (c.direction == Direction::kForward) {
    status = PlanCall(forward, call);
    call->bytes = q_bytes + k_bytes + v_bytes + topk_bytes + out_bytes + stat_bytes;
    call->flops = 2.0 * rows_keys * static_cast<double>(s.dim_qk + s.dim_v);
  } else {
    // The backward's attentionOut and statistics: the forward's, once, untimed.
    status = opcall::Run(forward, nullptr);
    if (status != ACLNN_SUCCESS) return "the forward failed with " + std::to_string(status) + ": " + RecentErrorMessage();
    DeviceTensor out_grad, dq, dk, dv;
    error = AddRandomTensor(call, out_shape, c.dtype, -1.0, 1.0, 58, &out_grad);
    if (error.empty()) error = AddRandomTensor(call, q_shape, c.dtype, 0.0, 0.0, 59, &dq);
    if (error.empty()) error = AddRandomTensor(call, k_shape, c.dtype, 0.0, 0.0, 60, &dk);
    if (error.empty()) error = AddRandomTensor(call, v_shape, c.dtype, 0.0, 0.0, 61, &dv);
    if (!error.empty()) return error;
    opcall::NsaSelectedAttentionGrad backward;
    backward.query = query.tensor;
    backward.key = key.tensor;
    backward.value = value.tensor;
    backward.attention_out = out.tensor;
    backward.attention_out_grad = out_grad.tensor;
    backward.softmax_max = max.tensor;
    backward.softmax_sum = sum.tensor;
    backward.topk_indices = topk.tensor;
    backward.actual_seq_q_len = q_array;
    backward.actual_seq_kv_len = kv_array;
    backward.atten_mask = forward.atten_mask;
    backward.scale_value = forward.scale_value;
    backward.selected_block_size = s.block_size;
    backward.selected_block_count = s.block_count;
    backward.head_num = s.q_heads;
    backward.sparse_mode = 2;
    backward.dq = dq.tensor;
    backward.dk = dk.tensor;
    backward.dv = dv.tensor;
    status = PlanCall(backward, call);
    call->bytes = 2 * (q_bytes + k_bytes + v_bytes) + topk_bytes + 2 * out_bytes + stat_bytes;
    call->flops = 2.0 * rows_keys * static_cast<double>(3 * s.dim_qk + 2 * s.dim_v);
  }
  if (status != ACLNN_SUCCESS) return "phase 1 failed with " + std::to_string(status) + ": " + RecentErrorMessage();
  return "";
}

// "query 1024x16x192, key 4096x4x192, value 4096x4x128 (TND, 2 sequences of 512 / 2048 tokens), 16 blocks of 64".
std::string ShapeText(const SelectedShape& s) {
  return "query " + ShapeLabel({s.sequences * s.q_tokens, s.q_heads, s.dim_qk}) + ", key " +
         ShapeLabel({s.sequences * s.kv_tokens, s.kv_heads, s.dim_qk}) + ", value " +
         ShapeLabel({s.sequences * s.kv_tokens, s.kv_heads, s.dim_v}) + " (TND, " + std::to_string(s.sequences) +
         " sequences of " + std::to_string(s.q_tokens) + " / " + std::to_string(s.kv_tokens) + " tokens), " +
         std::to_string(s.block_count) + " blocks of " + std::to_string(s.block_size) + (s.causal ? ", causal" : "");
}

void RegisterCases() {
  for (const SelectedCase& c : Cases()) {
    const bool backward = c.direction == Direction::kBackward;
    const CaseInfo info = {CaseName(c), "NsaSelectedAttention",
                           backward ? "aclnnNsaSelectedAttentionGrad" : "aclnnNsaSelectedAttention", backward, c.dtype,
                           ShapeText(c.shape)};
    RegisterOperatorBenchmark(info, [c](PreparedCall* call) { return Prepare(c, call); });
  }
}

const CaseTableRegistration kRegistration("NsaSelectedAttention", RegisterCases);

}  // namespace
}  // namespace bench
