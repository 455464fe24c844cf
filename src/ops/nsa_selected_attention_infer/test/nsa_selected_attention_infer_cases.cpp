// nsa_selected_attention_infer's conformance cases (tests/system/op_cases.h): a ready-to-run call in every dtype, six
// variants (the layouts BSND, BSH and TND, each with key and value 4-D and 3-D; the tensors' memory layouts from
// LayoutFor), two sizes, with the float64 reference of the output.
#include <algorithm>
#include <memory>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "nsa_selected_attention_infer/test/nsa_selected_attention_infer_calls.h"
#include "nsa_selected_attention_infer/test/nsa_selected_attention_infer_reference.h"
#include "system/op_cases.h"

namespace systest {
namespace {

std::unique_ptr<OpCase> MakeInferCase(aclDataType dtype, uint64_t seed, int variant, CaseSize size) {
  std::mt19937_64 rng(seed);
  const bool small = size == CaseSize::kSmall;
  const char* layouts[] = {"BSND", "BSH", "TND"};
  const char* layout = layouts[variant % 3];
  const bool tnd = variant % 3 == 2, key_4d = variant < 3;
  ref::NsaSelectedInferShape s;
  s.q_heads = small ? 2 : 4;
  s.kv_heads = small ? 1 : 2;
  s.dim_qk = 192;
  s.dim_v = 128;
  s.block_size = 16;
  s.block_count = small ? 2 : 3;
  s.scale = static_cast<double>(static_cast<float>(0.07 + 0.001 * variant));
  // Several tokens in some entries, none in one; enough (KV head, row) items for several chunks in the larger size.
  const int64_t s_len = small ? 2 : 4;
  s.q_lengths = small ? std::vector<int64_t>{2, 0} : std::vector<int64_t>{4, 1, 0, 3};
  s.kv_lengths = small ? std::vector<int64_t>{40, 17} : std::vector<int64_t>{150, 64, 9, 100};
  const int64_t pbs = 64, batch = static_cast<int64_t>(s.q_lengths.size());
  int64_t columns = 1, used = 0;
  for (int64_t kv : s.kv_lengths) {
    columns = std::max(columns, (kv + pbs - 1) / pbs);
    used += (kv + pbs - 1) / pbs;
  }
  const int64_t pages = used + 1;
  // Pages in reverse order of use: entry 0's first page is the cache's last used one.
  std::vector<int64_t> table(static_cast<size_t>(batch * columns), -1);
  int64_t next = used - 1;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t c = 0; c * pbs < s.kv_lengths[static_cast<size_t>(b)]; ++c) table[b * columns + c] = next--;
  }
  const int64_t t = s.QTokens(), kv = s.KvPositions(), n1 = s.q_heads, n2 = s.kv_heads;
  const std::vector<double> query = optest::RandomValues(rng, t * n1 * 192, -2.0, 2.0, dtype);
  const std::vector<double> key = optest::RandomValues(rng, kv * n2 * 192, -2.0, 2.0, dtype);
  const std::vector<double> value = optest::RandomValues(rng, kv * n2 * 128, -1.0, 1.0, dtype);
  std::vector<int64_t> topk;
  for (size_t b = 0; b < s.q_lengths.size(); ++b) {
    const int64_t blocks = (s.kv_lengths[b] + s.block_size - 1) / s.block_size;
    for (int64_t i = 0; i < s.q_lengths[b] * n2 * s.block_count; ++i) {
      topk.push_back(optest::UniformInt(rng, -1, blocks - 1));  // -1: an empty slot
    }
  }
  std::vector<double> out(static_cast<size_t>(t * n1 * 128));
  ref::NsaSelectedAttentionInfer(query.data(), key.data(), value.data(), topk,
                                 ref::MissingPositions(s, table, columns, pages, pbs), s, out.data());

  const auto laid = [&](const std::vector<double>& rows, int64_t row_size, double fill) {
    return tnd ? rows : ref::PadRows(rows, row_size, s, s_len, fill);
  };
  const auto row_shape = [&](int64_t dim) {
    if (tnd) return std::vector<int64_t>{t, n1, dim};
    if (variant % 3 == 1) return std::vector<int64_t>{batch, s_len, n1 * dim};
    return std::vector<int64_t>{batch, s_len, n1, dim};
  };
  const auto cache_shape = [&](int64_t dim) {
    return key_4d ? std::vector<int64_t>{pages, pbs, n2, dim} : std::vector<int64_t>{pages, pbs, n2 * dim};
  };
  const std::vector<int64_t> topk_shape = tnd ? std::vector<int64_t>{t, n2, s.block_count}
                                              : std::vector<int64_t>{batch, s_len, n2, s.block_count};
  auto inputs = std::make_shared<CaseInputs>();
  inputs->int_array.reset(aclCreateIntArray(s.q_lengths.data(), s.q_lengths.size()), aclDestroyIntArray);
  std::shared_ptr<aclIntArray> kv_lengths(aclCreateIntArray(s.kv_lengths.data(), s.kv_lengths.size()),
                                          aclDestroyIntArray);
  inputs->tensors.emplace_back(row_shape(192), dtype, LayoutFor(variant, 0), laid(query, n1 * 192, 0.25));
  inputs->tensors.emplace_back(cache_shape(192), dtype, LayoutFor(variant, 1),
                               ref::PagedCache(key, n2 * 192, s, table, columns, pages, pbs));
  inputs->tensors.emplace_back(cache_shape(128), dtype, LayoutFor(variant, 2),
                               ref::PagedCache(value, n2 * 128, s, table, columns, pages, pbs));
  inputs->tensors.emplace_back(topk_shape, ACL_INT32, LayoutFor(variant, 3),
                               laid(std::vector<double>(topk.begin(), topk.end()), n2 * s.block_count, 0.0));
  inputs->tensors.emplace_back(std::vector<int64_t>{batch, columns}, ACL_INT32, optest::Layout::kContiguous,
                               std::vector<double>(table.begin(), table.end()));
  inputs->expected = {laid(out, n1 * 128, 0.0)};
  const double scale = s.scale;
  const int64_t block_size = s.block_size, block_count = s.block_count;
  return std::make_unique<OpCase>(
      CaseName(opcall::NsaSelectedAttentionInfer::Info(), dtype, variant), std::move(inputs),
      std::vector<OutputSpec>{{row_shape(128), dtype, LayoutFor(variant, 4)}},
      [=](const OpCase& c) -> opcall::OpCall {
        opcall::NsaSelectedAttentionInfer call;
        call.query = c.input(0);
        call.key = c.input(1);
        call.value = c.input(2);
        call.topk_indices = c.input(3);
        call.block_table = c.input(4);
        call.actual_q_seq_len = c.inputs().int_array.get();
        call.actual_kv_seq_len = kv_lengths.get();
        call.layout = layout;
        call.num_heads = n1;
        call.num_key_value_heads = n2;
        call.select_block_size = block_size;
        call.select_block_count = block_count;
        call.page_block_size = pbs;
        call.scale_value = scale;
        call.output = c.output(0);
        return call;
      });
}

const CaseRegistration kRegistration({
    {&opcall::NsaSelectedAttentionInfer::Info(), {ACL_FLOAT16, ACL_BF16}, MakeInferCase},
});

}  // namespace
}  // namespace systest
