// nsa_selected_attention's conformance cases (tests/system/op_cases.h): a ready-to-run call of the forward and of the
// backward in every dtype, six variants of layouts and modes (sparseMode 0 without a mask, sparseMode 2 with one -
// causal -, sparseMode 0 with one), two sizes, with the float64 reference of the outputs.
#include <algorithm>
#include <memory>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "nsa_selected_attention/test/nsa_selected_attention_calls.h"
#include "nsa_selected_attention/test/nsa_selected_attention_reference.h"
#include "system/op_cases.h"

namespace systest {
namespace {

constexpr int64_t kLanes = 8;  // the statistics' last dim

std::unique_ptr<OpCase> MakeNsaSelectedCase(bool backward, aclDataType dtype, uint64_t seed, int variant,
                                            CaseSize size) {
  std::mt19937_64 rng(seed);
  const bool small = size == CaseSize::kSmall;
  ref::NsaSelectedAttentionShape s;
  s.q_heads = small ? 2 : 4;
  s.kv_heads = small ? 1 : 2;
  s.dim_qk = small ? 128 : 192;
  s.dim_v = 128;
  s.block_size = 16;
  s.block_count = small ? 2 : 4;
  const int64_t sparse_mode = variant % 3 == 1 ? 2 : 0;
  const bool mask = variant % 3 != 0;
  s.causal = sparse_mode == 2 && mask;
  s.scale = static_cast<double>(static_cast<float>(1.0 / 16.0 + 0.01 * static_cast<double>(variant)));
  // An empty query sequence and one of a single token among longer ones; enough (KV head, token) items for several
  // ParallelFor chunks (8 each) in the larger size.
  const std::vector<int64_t> q_lengths = small ? std::vector<int64_t>{9, 0, 5} : std::vector<int64_t>{70, 1, 0, 40};
  const std::vector<int64_t> kv_lengths =
      small ? std::vector<int64_t>{32, 48, 32} : std::vector<int64_t>{128, 64, 64, 96};
  s.q_ends = optest::CumulativeEnds(q_lengths);
  s.kv_ends = optest::CumulativeEnds(kv_lengths);
  const int64_t t1 = s.QTokens(), t2 = s.KvTokens();
  const std::vector<int64_t> q_shape = {t1, s.q_heads, s.dim_qk}, k_shape = {t2, s.kv_heads, s.dim_qk};
  const std::vector<int64_t> v_shape = {t2, s.kv_heads, s.dim_v}, topk_shape = {t1, s.kv_heads, s.block_count};
  const std::vector<int64_t> out_shape = {t1, s.q_heads, s.dim_v}, stat_shape = {t1, s.q_heads, kLanes};
  const std::vector<double> query = optest::RandomValues(rng, optest::NumElements(q_shape), -2.0, 2.0, dtype);
  const std::vector<double> key = optest::RandomValues(rng, optest::NumElements(k_shape), -2.0, 2.0, dtype);
  const std::vector<double> value = optest::RandomValues(rng, optest::NumElements(v_shape), -1.0, 1.0, dtype);
  // Distinct blocks per (token, KV head); causal ones from those up to the token's own block first, so that no row's
  // key list is empty.
  std::vector<int64_t> topk;
  for (size_t b = 0; b < q_lengths.size(); ++b) {
    const int64_t blocks = kv_lengths[b] / s.block_size;
    for (int64_t u = 0; u < q_lengths[b]; ++u) {
      for (int64_t h = 0; h < s.kv_heads; ++h) {
        const int64_t allowed = s.causal ? std::min(blocks, u / s.block_size + 1) : blocks;
        std::vector<int64_t> order(static_cast<size_t>(blocks));
        std::iota(order.begin(), order.end(), int64_t{0});
        for (int64_t i = allowed - 1; i > 0; --i) {
          std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(optest::UniformInt(rng, 0, i))]);
        }
        topk.insert(topk.end(), order.begin(), order.begin() + s.block_count);
      }
    }
  }
  std::vector<double> out(static_cast<size_t>(optest::NumElements(out_shape)));
  std::vector<double> max(static_cast<size_t>(t1 * s.q_heads)), sum(max.size());
  ref::NsaSelectedAttentionForward(query.data(), key.data(), value.data(), topk, s, out.data(), max.data(), sum.data());

  auto inputs = std::make_shared<CaseInputs>();
  inputs->int_array.reset(aclCreateIntArray(s.q_ends.data(), s.q_ends.size()), aclDestroyIntArray);
  std::shared_ptr<aclIntArray> kv_ends(aclCreateIntArray(s.kv_ends.data(), s.kv_ends.size()), aclDestroyIntArray);
  inputs->tensors.emplace_back(q_shape, dtype, LayoutFor(variant, 0), query);
  inputs->tensors.emplace_back(k_shape, dtype, LayoutFor(variant, 1), key);
  inputs->tensors.emplace_back(v_shape, dtype, LayoutFor(variant, 2), value);
  inputs->tensors.emplace_back(topk_shape, ACL_INT32, LayoutFor(variant, 3), std::vector<double>(topk.begin(), topk.end()));
  inputs->tensors.emplace_back(std::vector<int64_t>{64, 64}, ACL_BOOL, optest::Layout::kContiguous,
                               std::vector<double>(64 * 64, 0.0));
  const double scale = s.scale;
  const int64_t heads = s.q_heads, block_size = s.block_size, block_count = s.block_count;
  if (!backward) {
    inputs->expected = {optest::RepeatEach(max, kLanes), optest::RepeatEach(sum, kLanes), out};
    return std::make_unique<OpCase>(
        CaseName(opcall::NsaSelectedAttention::Info(), dtype, variant), std::move(inputs),
        std::vector<OutputSpec>{{stat_shape, ACL_FLOAT, LayoutFor(variant, 4)},
                                {stat_shape, ACL_FLOAT, LayoutFor(variant, 5)},
                                {out_shape, dtype, LayoutFor(variant, 6)}},
        [=](const OpCase& c) -> opcall::OpCall {
          opcall::NsaSelectedAttention call;
          call.query = c.input(0);
          call.key = c.input(1);
          call.value = c.input(2);
          call.topk_indices = c.input(3);
          call.atten_mask = mask ? c.input(4) : nullptr;
          call.actual_seq_q_len = c.inputs().int_array.get();
          call.actual_seq_kv_len = kv_ends.get();
          call.scale_value = scale;
          call.head_num = heads;
          call.sparse_mode = sparse_mode;
          call.selected_block_size = block_size;
          call.selected_block_count = block_count;
          call.softmax_max = c.output(0);
          call.softmax_sum = c.output(1);
          call.attention_out = c.output(2);
          return call;
        });
  }
  // The backward takes the forward's results as the forward writes them.
  const std::vector<double> given_out = optest::RoundToDType(out, dtype);
  const std::vector<double> given_max = optest::RoundToDType(max, ACL_FLOAT);
  const std::vector<double> given_sum = optest::RoundToDType(sum, ACL_FLOAT);
  const std::vector<double> out_grad = optest::RandomValues(rng, optest::NumElements(out_shape), -1.0, 1.0, dtype);
  std::vector<double> dq(query.size()), dk(key.size()), dv(value.size());
  ref::NsaSelectedAttentionBackward(query.data(), key.data(), value.data(), given_out.data(), out_grad.data(),
                                    given_max.data(), given_sum.data(), topk, s, dq.data(), dk.data(), dv.data());
  inputs->tensors.emplace_back(out_shape, dtype, LayoutFor(variant, 4), given_out);
  inputs->tensors.emplace_back(out_shape, dtype, LayoutFor(variant, 5), out_grad);
  inputs->tensors.emplace_back(stat_shape, ACL_FLOAT, LayoutFor(variant, 6), optest::RepeatEach(given_max, kLanes));
  inputs->tensors.emplace_back(stat_shape, ACL_FLOAT, LayoutFor(variant, 7), optest::RepeatEach(given_sum, kLanes));
  inputs->expected = {dq, dk, dv};
  return std::make_unique<OpCase>(
      CaseName(opcall::NsaSelectedAttentionGrad::Info(), dtype, variant), std::move(inputs),
      std::vector<OutputSpec>{{q_shape, dtype, LayoutFor(variant, 2)},
                              {k_shape, dtype, LayoutFor(variant, 0)},
                              {v_shape, dtype, LayoutFor(variant, 1)}},
      [=](const OpCase& c) -> opcall::OpCall {
        opcall::NsaSelectedAttentionGrad call;
        call.query = c.input(0);
        call.key = c.input(1);
        call.value = c.input(2);
        call.topk_indices = c.input(3);
        call.atten_mask = mask ? c.input(4) : nullptr;
        call.attention_out = c.input(5);
        call.attention_out_grad = c.input(6);
        call.softmax_max = c.input(7);
        call.softmax_sum = c.input(8);
        call.actual_seq_q_len = c.inputs().int_array.get();
        call.actual_seq_kv_len = kv_ends.get();
        call.scale_value = scale;
        call.selected_block_size = block_size;
        call.selected_block_count = block_count;
        call.head_num = heads;
        call.sparse_mode = sparse_mode;
        call.dq = c.output(0);
        call.dk = c.output(1);
        call.dv = c.output(2);
        return call;
      });
}

std::unique_ptr<OpCase> MakeForward(aclDataType dtype, uint64_t seed, int variant, CaseSize size) {
  return MakeNsaSelectedCase(false, dtype, seed, variant, size);
}
std::unique_ptr<OpCase> MakeBackward(aclDataType dtype, uint64_t seed, int variant, CaseSize size) {
  return MakeNsaSelectedCase(true, dtype, seed, variant, size);
}

const CaseRegistration kRegistration({
    {&opcall::NsaSelectedAttention::Info(), {ACL_FLOAT16, ACL_BF16}, MakeForward},
    {&opcall::NsaSelectedAttentionGrad::Info(), {ACL_FLOAT16, ACL_BF16}, MakeBackward},
});

}  // namespace
}  // namespace systest
