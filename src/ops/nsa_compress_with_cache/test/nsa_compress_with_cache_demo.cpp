// NsaCompressWithCache's step of aclnn_demo (examples/demo/demo_support.h): one decoding step's key compression into
// the compressed-token cache.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "demo_support.h"
#include "nsa_compress_with_cache/test/nsa_compress_with_cache_calls.h"
#include "nsa_compress_with_cache/test/nsa_compress_with_cache_reference.h"

namespace demo {
namespace {

// One decoding step: 16 sequences of 190 to 1000 tokens in pages of 128 (shuffled through the cache), 4 KV heads of
// D 192, windows of 32 every 16 tokens; half the sequences have just completed a window and write their compressed
// token into a cache of 1023 rows (the rest of the cache keeps its values).
void RunNsaCompressWithCache(aclrtStream stream, aclDataType dtype, std::vector<Row>* rows) {
  constexpr int64_t kBatch = 16, kHeads = 4, kDim = 192, kPage = 128, kColumns = 8, kBlock = 32, kStride = 16;
  ref::NsaCompressWithCacheShape s;
  s.heads = kHeads;
  s.dim = kDim;
  s.block_size = kBlock;
  s.stride = kStride;
  const int64_t pages = kBatch * kColumns;
  s.result_len = (pages * kPage - kBlock) / kStride + 1;  // the document's rule
  std::mt19937_64 rng(41);
  for (int64_t b = 0; b < kBatch; ++b) {
    const int64_t windows = 10 + static_cast<int64_t>(rng() % 50);
    s.lengths.push_back(kBlock + windows * kStride + (b % 2 == 0 ? 0 : 1 + static_cast<int64_t>(rng() % 15)));
  }
  std::vector<int64_t> table(static_cast<size_t>(pages));
  std::iota(table.begin(), table.end(), int64_t{0});
  std::shuffle(table.begin(), table.end(), rng);
  std::vector<int64_t> slots(static_cast<size_t>(kBatch));
  for (int64_t b = 0; b < kBatch; ++b) slots[static_cast<size_t>(b)] = (b * 257 + 11) % s.result_len;

  const int64_t row = kHeads * kDim;
  std::vector<double> sequences = RandomValues(s.Tokens() * row, -1.0, 1.0, 42);
  std::vector<double> weight = RandomValues(kBlock * kHeads, -1.0, 1.0, 43);
  std::vector<double> cache = RandomValues(s.result_len * row, -1.0, 1.0, 44);
  RoundTo(dtype, &sequences);
  RoundTo(dtype, &weight);
  RoundTo(dtype, &cache);
  // The paged input: entry b's position p at row p % 128 of page table[b * 8 + p / 128]; other rows 0.
  std::vector<double> paged(static_cast<size_t>(pages * kPage * row), 0.0);
  int64_t start = 0;
  for (int64_t b = 0; b < kBatch; ++b) {
    for (int64_t p = 0; p < s.lengths[static_cast<size_t>(b)]; ++p) {
      const int64_t page = table[static_cast<size_t>(b * kColumns + p / kPage)];
      std::copy_n(sequences.begin() + (start + p) * row, row, paged.begin() + (page * kPage + p % kPage) * row);
    }
    start += s.lengths[static_cast<size_t>(b)];
  }

  const std::vector<int64_t> cache_shape = {s.result_len, kHeads, kDim};
  Row cache_row = MakeRow("NsaCompressWithCache", "outputCache", dtype, cache_shape);
  DeviceTensor input_dev, weight_dev, slots_dev, table_dev, cache_dev;
  std::string error = input_dev.Create({pages, kPage, kHeads, kDim}, dtype, Encode(paged, dtype));
  if (error.empty()) error = weight_dev.Create({kBlock, kHeads}, dtype, Encode(weight, dtype));
  if (error.empty()) error = slots_dev.Create({kBatch}, ACL_INT32, Int32Bytes(slots));
  if (error.empty()) error = table_dev.Create({kBatch, kColumns}, ACL_INT32, Int32Bytes(table));
  if (error.empty()) error = cache_dev.Create(cache_shape, dtype, Encode(cache, dtype));
  aclIntArray* lengths = aclCreateIntArray(s.lengths.data(), s.lengths.size());
  if (error.empty() && lengths == nullptr) error = "aclCreateIntArray: " + RecentErrorMessage();
  double milliseconds = NAN;
  if (error.empty()) {
    opcall::NsaCompressWithCache call;
    call.input = input_dev.tensor();
    call.weight = weight_dev.tensor();
    call.slot_mapping = slots_dev.tensor();
    call.act_seq_len = lengths;
    call.block_table = table_dev.tensor();
    call.compress_block_size = kBlock;
    call.compress_stride = kStride;
    call.page_block_size = kPage;
    call.output_cache = cache_dev.tensor();
    // Timed calls repeat the step: each writes the same rows with the same values.
    error = TimedCall(stream, call, &milliseconds);
  }
  if (lengths != nullptr) aclDestroyIntArray(lengths);
  // Bytes: the windows read and the rows written (8 entries), not the whole cache or input.
  const double bytes = 8.0 * (kBlock + 1) * static_cast<double>(row) * 2.0;
  CompleteCall(
      error, milliseconds, bytes, {{&cache_dev, &cache_row}},
      [&] {
        std::vector<double> expected = cache;
        ref::NsaCompressWithCache(sequences.data(), weight.data(), slots, {}, s, expected.data());
        return Expected{expected};
      },
      0, rows);
}

const StepRegistration kRegistration("NsaCompressWithCache", {ACL_FLOAT16, ACL_BF16}, RunNsaCompressWithCache);

}  // namespace
}  // namespace demo
