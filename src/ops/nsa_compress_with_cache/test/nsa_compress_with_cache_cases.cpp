// nsa_compress_with_cache's conformance cases (tests/system/op_cases.h): a ready-to-run call in every dtype, six
// variants (paged input and TND, each with blocks / strides of 32 / 16, 64 / 48 and 16 / 16; the tensors' memory
// layouts from LayoutFor), two sizes, with the float64 reference of the cache. The framework fills outputs with NaN
// before each run, so every row of the cache is one an entry writes: as many entries completing a window as rows,
// their slots a permutation.
#include <algorithm>
#include <memory>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "nsa_compress_with_cache/test/nsa_compress_with_cache_calls.h"
#include "nsa_compress_with_cache/test/nsa_compress_with_cache_reference.h"
#include "system/op_cases.h"

namespace systest {
namespace {

std::unique_ptr<OpCase> MakeCompressWithCacheCase(aclDataType dtype, uint64_t seed, int variant, CaseSize size) {
  std::mt19937_64 rng(seed);
  const bool small = size == CaseSize::kSmall;
  const bool paged = variant % 2 == 0;
  const int64_t block_sizes[] = {32, 64, 16}, strides[] = {16, 48, 16};
  ref::NsaCompressWithCacheShape s;
  s.heads = small ? 2 : 6;
  s.dim = small ? 32 : 128;
  s.block_size = block_sizes[variant / 2];
  s.stride = strides[variant / 2];
  const int64_t pbs = 64, pages = 2;
  // Paged: every entry's table names the same two pages (as CANN's sample shares page 0), so the cache's rule
  // resultLen > (blockNum * pageBlockSize - compressBlockSize) / compressStride sets the entries' count.
  s.result_len = paged ? (pages * pbs - s.block_size) / s.stride + 1 : (small ? 3 : 9);
  for (int64_t b = 0; b < s.result_len; ++b) {
    const int64_t most_windows = ((paged ? pages * pbs : 200) - s.block_size) / s.stride;
    s.lengths.push_back(s.block_size + s.stride * optest::UniformInt(rng, 0, most_windows));
  }
  const int64_t batch = s.result_len, row = s.heads * s.dim, tokens = s.Tokens();
  std::vector<int64_t> slots(static_cast<size_t>(batch));
  std::iota(slots.begin(), slots.end(), int64_t{0});
  std::shuffle(slots.begin(), slots.end(), rng);
  // Paged: one sequence of pages * pbs positions (page 1 first, then page 0, in the input), each entry its prefix.
  const std::vector<double> shared = optest::RandomValues(rng, pages * pbs * row, -2.0, 2.0, dtype);
  std::vector<double> sequences;
  if (paged) {
    for (int64_t length : s.lengths) sequences.insert(sequences.end(), shared.begin(), shared.begin() + length * row);
  } else {
    sequences = optest::RandomValues(rng, tokens * row, -2.0, 2.0, dtype);
  }
  const std::vector<double> weight = optest::RandomValues(rng, s.block_size * s.heads, -1.0, 1.0, dtype);
  std::vector<double> cache(static_cast<size_t>(s.result_len * row), 0.0);
  ref::NsaCompressWithCache(sequences.data(), weight.data(), slots, {}, s, cache.data());

  std::vector<double> paged_input(static_cast<size_t>(pages * pbs * row));
  std::copy(shared.begin(), shared.begin() + pbs * row, paged_input.begin() + pbs * row);  // position 0..63: page 1
  std::copy(shared.begin() + pbs * row, shared.end(), paged_input.begin());                // 64..127: page 0
  std::vector<double> table;
  for (int64_t b = 0; b < batch; ++b) table.insert(table.end(), {1.0, 0.0});
  auto inputs = std::make_shared<CaseInputs>();
  inputs->int_array.reset(aclCreateIntArray(s.lengths.data(), s.lengths.size()), aclDestroyIntArray);
  inputs->tensors.emplace_back(
      paged ? std::vector<int64_t>{pages, pbs, s.heads, s.dim} : std::vector<int64_t>{tokens, s.heads, s.dim}, dtype,
      LayoutFor(variant, 0), paged ? paged_input : sequences);
  inputs->tensors.emplace_back(std::vector<int64_t>{s.block_size, s.heads}, dtype, LayoutFor(variant, 1), weight);
  inputs->tensors.emplace_back(std::vector<int64_t>{batch}, ACL_INT32, optest::Layout::kContiguous,
                               std::vector<double>(slots.begin(), slots.end()));
  inputs->tensors.emplace_back(std::vector<int64_t>{batch, pages}, ACL_INT32, optest::Layout::kContiguous, table);
  inputs->expected = {cache};
  const int64_t block_size = s.block_size, stride = s.stride;
  return std::make_unique<OpCase>(
      CaseName(opcall::NsaCompressWithCache::Info(), dtype, variant), std::move(inputs),
      std::vector<OutputSpec>{{{s.result_len, s.heads, s.dim}, dtype, LayoutFor(variant, 2)}},
      [=](const OpCase& c) -> opcall::OpCall {
        opcall::NsaCompressWithCache call;
        call.input = c.input(0);
        call.weight = c.input(1);
        call.slot_mapping = c.input(2);
        call.act_seq_len = c.inputs().int_array.get();
        call.block_table = paged ? c.input(3) : nullptr;
        call.layout = paged ? nullptr : "TND";
        call.compress_block_size = block_size;
        call.compress_stride = stride;
        call.page_block_size = pbs;
        call.output_cache = c.output(0);
        return call;
      });
}

const CaseRegistration kRegistration({
    {&opcall::NsaCompressWithCache::Info(), {ACL_FLOAT16, ACL_BF16}, MakeCompressWithCacheCase},
});

}  // namespace
}  // namespace systest
