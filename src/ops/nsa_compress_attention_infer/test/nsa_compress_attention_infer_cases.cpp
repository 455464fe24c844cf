// nsa_compress_attention_infer's conformance cases (tests/system/op_cases.h): a ready-to-run call in every dtype, six
// variants (layout TND or BSND; key and value 4-D or 3-D; the single-token form, the multi-token form, and the
// multi-token arguments with raw lengths that fall back to the single-token form; the tensors' memory layouts from
// LayoutFor), two sizes, with the float64 reference of both outputs.
//
// The conformance suite compares topKOutput with the reference's selection exactly, so the block scores are far apart
// (NsaCompressAttention's cases' construction): every query is positive along one direction and compressed token k of
// an entry points along it with a length growing by 0.25 per token (plus noise 100x smaller than the step), so each
// token's probability is about 1.7 times the one before and each select block outweighs the one before. Blocks no
// query token sees score exactly 0 in both, ordered by index. The operator's own tests cover close scores.
#include <algorithm>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "nsa_compress_attention_infer/test/nsa_compress_attention_infer_calls.h"
#include "nsa_compress_attention_infer/test/nsa_compress_attention_infer_reference.h"
#include "nsa_selected_attention_infer/test/nsa_selected_attention_infer_reference.h"
#include "system/op_cases.h"

namespace systest {
namespace {

std::unique_ptr<OpCase> MakeInferCase(aclDataType dtype, uint64_t seed, int variant, CaseSize size) {
  std::mt19937_64 rng(seed);
  const bool small = size == CaseSize::kSmall;
  const bool tnd = variant % 2 == 0, key_4d = variant >= 3;
  const int form = variant % 3;  // 0: single-token, 1: multi-token, 2: multi-token arguments falling back
  ref::NsaCompressInferShape s;
  s.q_heads = small ? 2 : 4;
  s.kv_heads = small ? 1 : 2;
  s.dim_qk = 32;
  s.dim_v = small ? 16 : 32;
  s.compress_block_size = 32;
  s.compress_stride = 16;
  s.select_block_size = 32;  // r = 2, c = 2
  s.select_count = 2;
  s.scale = static_cast<double>(static_cast<float>(0.1767767 + 0.01 * static_cast<double>(variant)));
  // Several tokens in some entries, none in one; enough (KV head, row) items for several chunks in the larger size.
  const int64_t s_len = small ? 2 : 4;
  s.q_lengths = small ? std::vector<int64_t>{2, 0, 1} : std::vector<int64_t>{4, 1, 0, 3};
  s.cmp_lengths = small ? std::vector<int64_t>{5, 8, 4} : std::vector<int64_t>{13, 6, 4, 20};
  std::vector<int64_t> sel_lengths;
  for (int64_t cmp : s.cmp_lengths) sel_lengths.push_back((cmp - 1) * 16 + 32 + (form == 2 ? 16 : 3));
  if (form == 1) s.sel_lengths = sel_lengths;
  const int64_t pbs = 16, batch = static_cast<int64_t>(s.q_lengths.size());
  int64_t columns = 1, used = 0;
  for (int64_t cmp : s.cmp_lengths) {
    columns = std::max(columns, (cmp + pbs - 1) / pbs);
    used += (cmp + pbs - 1) / pbs;
  }
  const int64_t pages = used + 1;
  // Pages in reverse order of use: entry 0's first page is the cache's last used one.
  std::vector<int64_t> table(static_cast<size_t>(batch * columns), -1);
  int64_t next = used - 1;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t c = 0; c * pbs < s.cmp_lengths[static_cast<size_t>(b)]; ++c) table[b * columns + c] = next--;
  }
  ref::NsaSelectedInferShape positions;  // NsaSelectedAttentionInfer's test helpers page the compressed tokens
  positions.q_heads = s.q_heads;
  positions.kv_heads = s.kv_heads;
  positions.q_lengths = s.q_lengths;
  positions.kv_lengths = s.cmp_lengths;
  const int64_t t = s.QTokens(), n1 = s.q_heads, n2 = s.kv_heads;
  const std::vector<double> query = optest::RandomValues(rng, t * n1 * s.dim_qk, 0.25, 0.5, dtype);
  std::vector<double> key;
  for (int64_t cmp : s.cmp_lengths) {
    for (int64_t k = 0; k < cmp; ++k) {
      for (int64_t e = 0; e < n2 * s.dim_qk; ++e) {
        key.push_back(0.25 * static_cast<double>(k) + optest::UniformValue(rng, -0.0025, 0.0025));
      }
    }
  }
  key = Rounded(key, dtype);
  const std::vector<double> value = optest::RandomValues(rng, s.CmpTokens() * n2 * s.dim_v, -1.0, 1.0, dtype);
  const ref::NsaCompressInferResult result =
      ref::NsaCompressAttentionInfer(query.data(), key.data(), value.data(), {}, s);

  const auto laid = [&](const std::vector<double>& rows, int64_t row_size, double fill) {
    return tnd ? rows : ref::PadRows(rows, row_size, positions, s_len, fill);
  };
  const auto row_shape = [&](int64_t heads, int64_t last) {
    return tnd ? std::vector<int64_t>{t, heads, last} : std::vector<int64_t>{batch, s_len, heads, last};
  };
  const auto cache_shape = [&](int64_t dim) {
    return key_4d ? std::vector<int64_t>{pages, pbs, n2, dim} : std::vector<int64_t>{pages, pbs, n2 * dim};
  };
  auto inputs = std::make_shared<CaseInputs>();
  // BSND without query lengths would make every padding row a token: the lengths are always passed.
  inputs->int_array.reset(aclCreateIntArray(s.q_lengths.data(), s.q_lengths.size()), aclDestroyIntArray);
  std::shared_ptr<aclIntArray> cmp_lengths(aclCreateIntArray(s.cmp_lengths.data(), s.cmp_lengths.size()),
                                           aclDestroyIntArray);
  std::shared_ptr<aclIntArray> sel(aclCreateIntArray(sel_lengths.data(), sel_lengths.size()), aclDestroyIntArray);
  inputs->tensors.emplace_back(row_shape(n1, s.dim_qk), dtype, LayoutFor(variant, 0), laid(query, n1 * s.dim_qk, 0.25));
  inputs->tensors.emplace_back(cache_shape(s.dim_qk), dtype, LayoutFor(variant, 1),
                               ref::PagedCache(key, n2 * s.dim_qk, positions, table, columns, pages, pbs));
  inputs->tensors.emplace_back(cache_shape(s.dim_v), dtype, LayoutFor(variant, 2),
                               ref::PagedCache(value, n2 * s.dim_v, positions, table, columns, pages, pbs));
  inputs->tensors.emplace_back(std::vector<int64_t>{batch, columns}, ACL_INT32, optest::Layout::kContiguous,
                               std::vector<double>(table.begin(), table.end()));
  inputs->expected = {laid(result.out, n1 * s.dim_v, 0.0),
                      laid(std::vector<double>(result.topk.begin(), result.topk.end()), n2 * s.select_count, -1.0)};
  const double scale = s.scale;
  const int64_t dim_v = s.dim_v;
  return std::make_unique<OpCase>(CaseName(opcall::NsaCompressAttentionInfer::Info(), dtype, variant),
                                  std::move(inputs),
                                  std::vector<OutputSpec>{{row_shape(n1, dim_v), dtype, LayoutFor(variant, 3)},
                                                          {row_shape(n2, 2), ACL_INT32, LayoutFor(variant, 4)}},
                                  [=](const OpCase& c) -> opcall::OpCall {
                                    opcall::NsaCompressAttentionInfer call;
                                    call.query = c.input(0);
                                    call.key = c.input(1);
                                    call.value = c.input(2);
                                    call.block_table = c.input(3);
                                    call.actual_q_seq_len = c.inputs().int_array.get();
                                    call.actual_cmp_kv_seq_len = cmp_lengths.get();
                                    call.actual_sel_kv_seq_len = form == 0 ? nullptr : sel.get();
                                    call.num_heads = n1;
                                    call.num_key_value_heads = n2;
                                    call.select_block_size = 32;
                                    call.select_block_count = 2;
                                    call.compress_block_size = 32;
                                    call.compress_block_stride = 16;
                                    call.scale_value = scale;
                                    call.layout = tnd ? "TND" : "BSND";
                                    call.page_block_size = pbs;
                                    call.output = c.output(0);
                                    call.topk_output = c.output(1);
                                    return call;
                                  });
}

const CaseRegistration kRegistration({
    {&opcall::NsaCompressAttentionInfer::Info(), {ACL_FLOAT16, ACL_BF16}, MakeInferCase},
});

}  // namespace
}  // namespace systest
