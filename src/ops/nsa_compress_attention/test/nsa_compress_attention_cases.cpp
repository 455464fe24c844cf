// nsa_compress_attention's conformance cases (tests/system/op_cases.h): a ready-to-run call in every dtype, six
// variants of layouts and modes (no mask; sparseMode 1 with an attenMask; a topkMask), two sizes, with the float64
// reference of the outputs.
//
// The conformance suite compares topkIndicesOut with the reference's selection exactly, so the cases' block scores
// are far apart: every query is positive along one direction and compressed key i of a sequence points along it with
// a length growing by 0.25 per key (plus noise 100x smaller than the step), so the probabilities grow by a factor of
// about 1.7 per key and each select block's window outweighs the one before by a large margin; the attenMask
// variant's mask is given but masks nothing, the topkMask variant's only removes candidates. The operator's own tests
// (test_nsa_compress_attention.cpp) cover masked keys and close scores.
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "nsa_compress_attention/test/nsa_compress_attention_calls.h"
#include "nsa_compress_attention/test/nsa_compress_attention_reference.h"
#include "system/op_cases.h"

namespace systest {
namespace {

constexpr int64_t kLanes = 8;  // the statistics' last dim

std::unique_ptr<OpCase> MakeForward(aclDataType dtype, uint64_t seed, int variant, CaseSize size) {
  std::mt19937_64 rng(seed);
  const bool small = size == CaseSize::kSmall;
  ref::NsaCompressAttentionShape s;
  s.q_heads = small ? 2 : 4;
  s.kv_heads = small ? 1 : 2;
  s.dim_qk = 32;
  s.dim_v = small ? 16 : 32;
  s.compress_block_size = 32;
  s.compress_stride = 16;
  s.select_block_size = 32;  // r = 2, c = 2
  s.select_count = 2;
  const int64_t sparse_mode = variant % 3 == 1 ? 1 : 0;
  const bool atten_mask = variant % 3 == 1, topk_mask = variant % 3 == 2;
  s.scale = static_cast<double>(static_cast<float>(0.1767767 + 0.01 * static_cast<double>(variant)));
  // An empty query sequence and one of a single token; enough (KV head, token) items for several ParallelFor chunks
  // in the larger size.
  const std::vector<int64_t> q_lengths = small ? std::vector<int64_t>{9, 0, 1} : std::vector<int64_t>{40, 1, 0, 30};
  const std::vector<int64_t> cmp_lengths = small ? std::vector<int64_t>{5, 8, 4} : std::vector<int64_t>{13, 6, 4, 20};
  s.q_ends = optest::CumulativeEnds(q_lengths);
  s.cmp_ends = optest::CumulativeEnds(cmp_lengths);
  const int64_t t1 = s.QTokens(), t2 = s.KvTokens(), rows = s.MaxQLength();
  if (atten_mask) s.atten_mask.assign(static_cast<size_t>(rows * s.MaxKvLength()), 0);
  if (topk_mask) {
    s.topk_mask.resize(static_cast<size_t>(rows * s.MaxSelectBlocks()));
    for (uint8_t& m : s.topk_mask) m = optest::UniformInt(rng, 0, 3) == 0;
  }
  const std::vector<int64_t> q_shape = {t1, s.q_heads, s.dim_qk}, k_shape = {t2, s.kv_heads, s.dim_qk};
  const std::vector<int64_t> v_shape = {t2, s.kv_heads, s.dim_v}, out_shape = {t1, s.q_heads, s.dim_v};
  const std::vector<int64_t> stat_shape = {t1, s.q_heads, kLanes}, topk_shape = {t1, s.kv_heads, s.select_count};
  const std::vector<double> query = optest::RandomValues(rng, optest::NumElements(q_shape), 0.25, 0.5, dtype);
  std::vector<double> key(static_cast<size_t>(optest::NumElements(k_shape)));
  for (int64_t b = 0; b < s.Batch(); ++b) {
    for (int64_t i = 0; i < s.KvLength(b); ++i) {
      for (int64_t e = 0; e < s.kv_heads * s.dim_qk; ++e) {
        key[static_cast<size_t>((s.KvStart(b) + i) * s.kv_heads * s.dim_qk + e)] =
            0.25 * static_cast<double>(i) + optest::UniformValue(rng, -0.0025, 0.0025);
      }
    }
  }
  const std::vector<double> rounded_key = Rounded(key, dtype);
  const std::vector<double> value = optest::RandomValues(rng, optest::NumElements(v_shape), -1.0, 1.0, dtype);
  const ref::NsaCompressAttentionResult result =
      ref::NsaCompressAttentionForward(query.data(), rounded_key.data(), value.data(), s);

  auto inputs = std::make_shared<CaseInputs>();
  inputs->int_array.reset(aclCreateIntArray(s.q_ends.data(), s.q_ends.size()), aclDestroyIntArray);
  std::shared_ptr<aclIntArray> cmp_ends(aclCreateIntArray(s.cmp_ends.data(), s.cmp_ends.size()), aclDestroyIntArray);
  const std::vector<int64_t> sel = s.SelEnds();
  std::shared_ptr<aclIntArray> sel_ends(aclCreateIntArray(sel.data(), sel.size()), aclDestroyIntArray);
  inputs->tensors.emplace_back(q_shape, dtype, LayoutFor(variant, 0), query);
  inputs->tensors.emplace_back(k_shape, dtype, LayoutFor(variant, 1), rounded_key);
  inputs->tensors.emplace_back(v_shape, dtype, LayoutFor(variant, 2), value);
  inputs->tensors.emplace_back(std::vector<int64_t>{rows, s.MaxKvLength()}, ACL_BOOL, optest::Layout::kContiguous,
                               std::vector<double>(static_cast<size_t>(rows * s.MaxKvLength()), 0.0));
  std::vector<double> topk_mask_values(static_cast<size_t>(rows * s.MaxSelectBlocks()), 0.0);
  for (size_t i = 0; i < s.topk_mask.size(); ++i) topk_mask_values[i] = s.topk_mask[i];
  inputs->tensors.emplace_back(std::vector<int64_t>{rows, s.MaxSelectBlocks()}, ACL_BOOL, optest::Layout::kContiguous,
                               topk_mask_values);
  inputs->expected = {optest::RepeatEach(result.max, kLanes), optest::RepeatEach(result.sum, kLanes), result.out,
                      std::vector<double>(result.topk.begin(), result.topk.end())};
  const double scale = s.scale;
  const int64_t heads = s.q_heads, l = s.compress_block_size, d = s.compress_stride, l_select = s.select_block_size;
  const int64_t count = s.select_count;
  return std::make_unique<OpCase>(
      CaseName(opcall::NsaCompressAttention::Info(), dtype, variant), std::move(inputs),
      std::vector<OutputSpec>{{stat_shape, ACL_FLOAT, LayoutFor(variant, 3)},
                              {stat_shape, ACL_FLOAT, LayoutFor(variant, 4)},
                              {out_shape, dtype, LayoutFor(variant, 5)},
                              {topk_shape, ACL_INT32, LayoutFor(variant, 6)}},
      [=](const OpCase& c) -> opcall::OpCall {
        opcall::NsaCompressAttention call;
        call.query = c.input(0);
        call.key = c.input(1);
        call.value = c.input(2);
        call.atten_mask = atten_mask ? c.input(3) : nullptr;
        call.topk_mask = topk_mask ? c.input(4) : nullptr;
        call.actual_seq_q_len = c.inputs().int_array.get();
        call.actual_cmp_seq_kv_len = cmp_ends.get();
        call.actual_sel_seq_kv_len = sel_ends.get();
        call.scale_value = scale;
        call.head_num = heads;
        call.sparse_mode = sparse_mode;
        call.compress_block_size = l;
        call.compress_stride = d;
        call.select_block_size = l_select;
        call.select_block_count = count;
        call.softmax_max = c.output(0);
        call.softmax_sum = c.output(1);
        call.attention_out = c.output(2);
        call.topk_indices = c.output(3);
        return call;
      });
}

const CaseRegistration kRegistration({
    {&opcall::NsaCompressAttention::Info(), {ACL_FLOAT16, ACL_BF16}, MakeForward},
});

}  // namespace
}  // namespace systest
