// NsaCompressWithCache against its float64 reference (nsa_compress_with_cache_reference.h) and against NsaCompress:
// paged input (pages shuffled, every row no sequence holds NaN) and TND, entries that complete a window and entries
// that do not, both dtypes, block sizes and strides of the document, strided views, hostile device data (slots out of
// range, repeated slots, invalid page numbers), CANN's sample, determinism. The cache starts with random values: rows
// no entry writes must come back bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "nsa_compress/test/nsa_compress_calls.h"
#include "nsa_compress_with_cache/test/nsa_compress_with_cache_calls.h"
#include "nsa_compress_with_cache/test/nsa_compress_with_cache_reference.h"
#include "op_test_util.h"

namespace {

using optest::DeviceTensor;
using optest::HostIntArray;
using optest::Layout;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Problem {
  ref::NsaCompressWithCacheShape s;
  bool paged = true;
  int64_t page_block_size = 64;
  int64_t pages = 0, columns = 0;
  aclDataType dtype = ACL_FLOAT16;
  Layout layout = Layout::kContiguous;  // of input, weight and outputCache
  std::vector<double> sequences;        // logical (Tokens, N, D)
  std::vector<double> weight;           // (block_size, N)
  std::vector<double> cache;            // (result_len, N, D): the cache before the call
  std::vector<int64_t> slots;           // (B)
  std::vector<int64_t> table;           // paged: (B, columns)
  int64_t Batch() const { return static_cast<int64_t>(s.lengths.size()); }
};

// Random data; slots: a random permutation of the cache's rows (distinct), for the entries in order.
Problem MakeProblem(std::vector<int64_t> lengths, int64_t block_size, int64_t stride, aclDataType dtype,
                    uint64_t seed) {
  std::mt19937_64 rng(seed);
  Problem p;
  p.dtype = dtype;
  p.s.heads = 4;
  p.s.dim = 48;
  p.s.block_size = block_size;
  p.s.stride = stride;
  p.s.lengths = std::move(lengths);
  p.s.result_len = 2 * p.Batch() + 3;
  const int64_t row = p.s.heads * p.s.dim;
  p.sequences = optest::RandomValues(rng, p.s.Tokens() * row, -2.0, 2.0, dtype);
  p.weight = optest::RandomValues(rng, block_size * p.s.heads, -1.0, 1.0, dtype);
  p.cache = optest::RandomValues(rng, p.s.result_len * row, -4.0, 4.0, dtype);
  std::vector<int64_t> order(static_cast<size_t>(p.s.result_len));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::shuffle(order.begin(), order.end(), rng);
  p.slots.assign(order.begin(), order.begin() + p.Batch());
  return p;
}

// Lays the sequences out in pages: each (entry, column) holding positions gets a distinct page, in a shuffled order,
// plus a spare page never named; the table's other entries are -1 (never read).
void Paginate(Problem* p, int64_t page_block_size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  p->paged = true;
  p->page_block_size = page_block_size;
  p->columns = 1;
  int64_t used = 0;
  for (int64_t length : p->s.lengths) {
    p->columns = std::max(p->columns, (length + page_block_size - 1) / page_block_size);
    used += (length + page_block_size - 1) / page_block_size;
  }
  p->pages = used + 1;
  // The document's rule: resultLen > (blockNum * pageBlockSize - compressBlockSize) / compressStride.
  p->s.result_len = std::max(p->s.result_len, (p->pages * page_block_size - p->s.block_size) / p->s.stride + 1);
  p->cache = optest::RandomValues(rng, p->s.result_len * p->s.heads * p->s.dim, -4.0, 4.0, p->dtype);
  std::vector<int64_t> order(static_cast<size_t>(p->pages));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::shuffle(order.begin(), order.end(), rng);
  p->table.assign(static_cast<size_t>(p->Batch() * p->columns), -1);
  size_t next = 0;
  for (int64_t b = 0; b < p->Batch(); ++b) {
    for (int64_t c = 0; c * page_block_size < p->s.lengths[static_cast<size_t>(b)]; ++c) {
      p->table[static_cast<size_t>(b * p->columns + c)] = order[next++];
    }
  }
}

// The paged input (pages, page_block_size, N, D): each entry's positions where its table puts them, NaN elsewhere.
std::vector<double> PagedInput(const Problem& p) {
  const int64_t row = p.s.heads * p.s.dim;
  std::vector<double> pages(static_cast<size_t>(p.pages * p.page_block_size * row), kNaN);
  int64_t start = 0;
  for (int64_t b = 0; b < p.Batch(); ++b) {
    for (int64_t pos = 0; pos < p.s.lengths[static_cast<size_t>(b)]; ++pos) {
      const int64_t page = p.table[static_cast<size_t>(b * p.columns + pos / p.page_block_size)];
      if (page < 0 || page >= p.pages) continue;
      std::copy_n(p.sequences.begin() + (start + pos) * row, row,
                  pages.begin() + (page * p.page_block_size + pos % p.page_block_size) * row);
    }
    start += p.s.lengths[static_cast<size_t>(b)];
  }
  return pages;
}

// Which entries' windows lie on valid pages (the reference's `writable`).
std::vector<uint8_t> Writable(const Problem& p) {
  std::vector<uint8_t> writable(static_cast<size_t>(p.Batch()), 1);
  if (!p.paged) return writable;
  for (int64_t b = 0; b < p.Batch(); ++b) {
    const int64_t length = p.s.lengths[static_cast<size_t>(b)];
    for (int64_t pos = std::max<int64_t>(length - p.s.block_size, 0); pos < length; ++pos) {
      const int64_t page = p.table[static_cast<size_t>(b * p.columns + pos / p.page_block_size)];
      if (page < 0 || page >= p.pages) writable[static_cast<size_t>(b)] = 0;
    }
  }
  return writable;
}

std::vector<double> AsDoubles(const std::vector<int64_t>& values) { return {values.begin(), values.end()}; }

struct Result {
  std::vector<double> cache;     // after the call
  std::vector<double> expected;  // the reference's
  std::vector<uint8_t> written;  // per cache row
};

Result RunProblem(const Problem& p) {
  const int64_t n = p.s.heads, d = p.s.dim;
  const std::vector<int64_t> input_shape =
      p.paged ? std::vector<int64_t>{p.pages, p.page_block_size, n, d} : std::vector<int64_t>{p.s.Tokens(), n, d};
  DeviceTensor input(input_shape, p.dtype, p.layout, p.paged ? PagedInput(p) : p.sequences);
  DeviceTensor weight({p.s.block_size, n}, p.dtype, p.layout, p.weight);
  DeviceTensor slots({p.Batch()}, ACL_INT32, Layout::kContiguous, AsDoubles(p.slots));
  DeviceTensor table({p.Batch(), p.paged ? p.columns : 1}, ACL_INT32, Layout::kContiguous,
                     p.paged ? AsDoubles(p.table) : std::vector<double>(static_cast<size_t>(p.Batch()), 0.0));
  DeviceTensor cache({p.s.result_len, n, d}, p.dtype, p.layout, p.cache);
  HostIntArray lengths(p.s.lengths);
  opcall::NsaCompressWithCache call;
  call.input = input.get();
  call.weight = weight.get();
  call.slot_mapping = slots.get();
  call.act_seq_len = lengths.get();
  call.block_table = p.paged ? table.get() : nullptr;
  call.layout = p.paged ? nullptr : "TND";
  call.compress_block_size = p.s.block_size;
  call.compress_stride = p.s.stride;
  call.page_block_size = p.page_block_size;
  call.output_cache = cache.get();
  Result r;
  EXPECT_EQ(opcall::Run(call, nullptr), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  optest::ExpectGuardsIntact({&input, &weight, &slots, &table, &cache});
  r.cache = cache.Read();
  r.expected = p.cache;
  r.written =
      ref::NsaCompressWithCache(p.sequences.data(), p.weight.data(), p.slots, Writable(p), p.s, r.expected.data());
  return r;
}

// Written rows within one ulp plus the fp32 sums' error of the reference; every other row exactly as it was.
void ExpectMatches(const Problem& p, int64_t expected_writes) {
  const Result r = RunProblem(p);
  const int64_t row = p.s.heads * p.s.dim;
  // |terms| <= 2 and block_size <= 64 terms: fp32's error before the rounding stays below 64 * 2 * 64 * 2^-24.
  const double bound = 64.0 * 2.0 * 64.0 * 0x1p-24;
  std::vector<double> got, want;
  int64_t writes = 0;
  for (int64_t slot = 0; slot < p.s.result_len; ++slot) {
    const auto first = static_cast<size_t>(slot * row), last = first + static_cast<size_t>(row);
    if (r.written[static_cast<size_t>(slot)] != 0) {
      ++writes;
      got.insert(got.end(), r.cache.begin() + first, r.cache.begin() + last);
      want.insert(want.end(), r.expected.begin() + first, r.expected.begin() + last);
    } else {
      for (size_t i = first; i < last; ++i) ASSERT_EQ(r.cache[i], p.cache[i]) << "row " << slot << " was changed";
    }
  }
  EXPECT_EQ(writes, expected_writes);
  optest::ExpectClose("outputCache", got, want, std::vector<double>(want.size(), bound), p.dtype);
}

std::string DTypeSuffix(aclDataType dtype) { return dtype == ACL_FLOAT16 ? "FLOAT16" : "BFLOAT16"; }

class NsaCompressWithCacheDTypes : public testing::TestWithParam<aclDataType> {};

TEST_P(NsaCompressWithCacheDTypes, PagedEntriesThatCompleteAWindowWriteTheirSlot) {
  // Blocks of 32, stride 16: lengths 32, 48 and 208 complete a window (0, 1 and 11), 40, 31 and 0 do not; a window
  // across two pages (48: positions 16..47 in one page of 64; 208: 176..207 across pages 2 and 3 of 64).
  for (int64_t page_block_size : {64, 128}) {
    SCOPED_TRACE(page_block_size);
    Problem p = MakeProblem({32, 40, 48, 31, 208, 0}, 32, 16, GetParam(), 31);
    Paginate(&p, page_block_size, 32);
    ExpectMatches(p, 3);
  }
}

TEST_P(NsaCompressWithCacheDTypes, TndEntriesThatCompleteAWindowWriteTheirSlot) {
  // Blocks of 64, stride 48 (the document's largest block with a stride that does not divide it): 64 and 160
  // complete a window, 100 and 63 do not.
  Problem p = MakeProblem({64, 100, 160, 63}, 64, 48, GetParam(), 33);
  p.paged = false;
  ExpectMatches(p, 2);
}

INSTANTIATE_TEST_SUITE_P(NsaCompressWithCache, NsaCompressWithCacheDTypes, testing::Values(ACL_FLOAT16, ACL_BF16),
                         [](const auto& param) { return DTypeSuffix(param.param); });

TEST(NsaCompressWithCacheInputs, EveryBlockSizeAndStride) {
  for (int64_t block_size : {16, 32, 48, 64}) {
    for (int64_t stride : {16, 32, 48, 64}) {
      if (stride > block_size) continue;
      SCOPED_TRACE(std::to_string(block_size) + "/" + std::to_string(stride));
      // Lengths block_size + k * stride for k = 0, 1, 3 complete a window; one more token does not.
      Problem p = MakeProblem({block_size, block_size + stride, block_size + 3 * stride, block_size + stride + 1},
                              block_size, stride, ACL_FLOAT16, static_cast<uint64_t>(block_size * 100 + stride));
      Paginate(&p, 64, 35);
      ExpectMatches(p, 3);
    }
  }
}

TEST(NsaCompressWithCacheInputs, StridedViews) {
  for (Layout layout : {Layout::kPadded, Layout::kTransposed}) {
    SCOPED_TRACE(optest::LayoutName(layout));
    Problem p = MakeProblem({32, 80, 33}, 32, 16, ACL_BF16, 37);
    Paginate(&p, 64, 38);
    p.layout = layout;  // transposed: D not innermost, rows gathered
    ExpectMatches(p, 2);
    p.paged = false;
    ExpectMatches(p, 2);
  }
}

TEST(NsaCompressWithCacheInputs, HostileSlotsAndPagesWriteNothingAndTheLastOfRepeatedSlotsWins) {
  Problem p = MakeProblem({32, 48, 64, 80, 96, 112, 128}, 32, 16, ACL_FLOAT16, 39);
  Paginate(&p, 64, 40);
  p.slots[0] = -1;              // below the cache
  p.slots[1] = p.s.result_len;  // past it
  p.slots[3] = p.slots[2];      // entries 2 and 3 name one slot: entry 3's row stays
  p.slots[5] = p.slots[4];      // likewise, but entry 5's window lies on an invalid page: entry 4's stays
  p.table[static_cast<size_t>(5 * p.columns + 1)] = p.pages;  // entry 5, positions 64..127 (its window 80..111)
  p.table[static_cast<size_t>(6 * p.columns + 0)] = -5;       // entry 6, positions 0..63: not its window (96..127)
  ExpectMatches(p, 3);                                        // entries 3, 4 and 6
}

// The result equals NsaCompress's block of the same window, bit for bit (the same loop, the same rounding).
TEST(NsaCompressWithCacheInputs, BitIdenticalToNsaCompressOfTheWindow) {
  for (aclDataType dtype : {ACL_FLOAT16, ACL_BF16}) {
    SCOPED_TRACE(DTypeSuffix(dtype));
    const int64_t length = 32 + 7 * 16;  // window 7
    Problem p = MakeProblem({length}, 32, 16, dtype, 41);
    p.paged = false;
    const Result r = RunProblem(p);
    const int64_t n = p.s.heads, d = p.s.dim, blocks = (length - 32) / 16 + 1;
    DeviceTensor input({length, n, d}, dtype, Layout::kContiguous, p.sequences);
    DeviceTensor weight({32, n}, dtype, Layout::kContiguous, p.weight);
    DeviceTensor out = DeviceTensor::Output({blocks, n, d}, dtype, Layout::kContiguous);
    HostIntArray ends(std::vector<int64_t>{length});
    opcall::NsaCompress call;
    call.input = input.get();
    call.weight = weight.get();
    call.act_seq_len = ends.get();
    call.layout = "TND";
    call.compress_block_size = 32;
    call.compress_stride = 16;
    call.output = out.get();
    ASSERT_EQ(opcall::Run(call, nullptr), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    const std::vector<double> blocks_out = out.Read();
    const int64_t row = n * d, slot = p.slots[0];
    for (int64_t i = 0; i < row; ++i) {
      ASSERT_EQ(r.cache[static_cast<size_t>(slot * row + i)], blocks_out[static_cast<size_t>((blocks - 1) * row + i)])
          << "element " << i;
    }
  }
}

// CANN's sample: 4 entries of lengths {32, 0, 0, 0}, every slot 0 and every table entry page 0, N 24, D 192, blocks
// of 32, stride 16, pages of 128 (16 of them), a cache of 512 rows, all data 1: row 0 becomes 32, the rest stays 1.
TEST(NsaCompressWithCacheSample, DocumentSample) {
  Problem p;
  p.dtype = ACL_FLOAT16;
  p.s.heads = 24;
  p.s.dim = 192;
  p.s.block_size = 32;
  p.s.stride = 16;
  p.s.result_len = 512;
  p.s.lengths = {32, 0, 0, 0};
  p.page_block_size = 128;
  p.pages = 16;
  p.columns = 4;
  p.table.assign(16, 0);
  p.slots.assign(4, 0);
  const int64_t row = 24 * 192;
  p.sequences.assign(static_cast<size_t>(32 * row), 1.0);
  p.weight.assign(32 * 24, 1.0);
  p.cache.assign(static_cast<size_t>(512 * row), 1.0);
  const Result r = RunProblem(p);
  for (int64_t i = 0; i < 512 * row; ++i) ASSERT_EQ(r.cache[static_cast<size_t>(i)], i < row ? 32.0 : 1.0) << i;
}

// Determinism: bit-identical run to run, for any thread count and on every SIMD target.
std::vector<uint8_t> DeterminismBytes() {
  Problem p = MakeProblem({64, 80, 96, 112, 128, 144, 160, 176}, 64, 16, ACL_BF16, 43);
  Paginate(&p, 64, 44);
  const Result r = RunProblem(p);
  std::vector<uint8_t> bytes(r.cache.size() * sizeof(double));
  std::memcpy(bytes.data(), r.cache.data(), bytes.size());
  return bytes;
}

TEST(NsaCompressWithCacheDeterminism, BitIdenticalRunToRun) { optest::ExpectBitIdenticalRunToRun(DeterminismBytes); }

TEST(NsaCompressWithCacheDeterminism, OutputForComparison) { optest::WriteOutputForParent(DeterminismBytes()); }

TEST(NsaCompressWithCacheDeterminism, BitIdenticalForAnyThreadCount) {
  optest::ExpectBitIdenticalForThreadCounts("NsaCompressWithCacheDeterminism.OutputForComparison", {2, 3, 8},
                                            DeterminismBytes);
}

TEST(NsaCompressWithCacheDeterminism, BitIdenticalOnEverySimdTarget) {
  optest::ExpectBitIdenticalOnEverySimdTarget("NsaCompressWithCacheDeterminism.OutputForComparison");
}

}  // namespace
