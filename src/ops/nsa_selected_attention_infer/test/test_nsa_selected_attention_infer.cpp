// NsaSelectedAttentionInfer against its float64 reference (nsa_selected_attention_infer_reference.h): every layout
// (BSND, BSH, TND; key/value 3-D and 4-D), one and several query tokens per batch entry, pages in a shuffled order with
// the unused cache rows NaN (a read of a row that is not the sequence's shows up), hostile slot indices (negative, past
// the sequence, repeated) and page numbers (negative, past the cache), strided views, CANN's sample, determinism. The
// output is pre-filled with NaN; padding rows must come back 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "nsa_selected_attention_infer/test/nsa_selected_attention_infer_calls.h"
#include "nsa_selected_attention_infer/test/nsa_selected_attention_infer_reference.h"
#include "op_test_util.h"

namespace {

using optest::DeviceTensor;
using optest::HostIntArray;
using optest::Layout;

constexpr int64_t kDimQk = 192, kDimV = 128;

enum class QLayout { kBSND, kBSH, kTND };

const char* LayoutText(QLayout layout) {
  return layout == QLayout::kBSND ? "BSND" : layout == QLayout::kBSH ? "BSH" : "TND";
}

struct Problem {
  ref::NsaSelectedInferShape s;
  QLayout layout = QLayout::kBSND;
  int64_t s_len = 1;  // BSND, BSH: S (rows per batch entry)
  bool topk_3d = false;  // BSND, BSH with S 1: topkIndices (B, N2, count)
  bool key_4d = true;
  int64_t page_block_size = 64;
  int64_t pages = 0, columns = 0;
  aclDataType dtype = ACL_FLOAT16;
  Layout tensor_layout = Layout::kContiguous;  // of query, key, value and output
  std::vector<double> query, key, value;  // logical: (QTokens, N1, Dqk), (KvPositions, N2, D)
  std::vector<int64_t> topk;              // (QTokens, N2, count)
  std::vector<int64_t> table;             // (B, columns)
  std::vector<uint8_t> missing;           // positions whose page number is invalid
  int64_t Batch() const { return static_cast<int64_t>(s.q_lengths.size()); }
};

// Random data, pages shuffled over the cache (one spare page), some slot indices hostile when `hostile`.
Problem MakeProblem(QLayout layout, int64_t s_len, std::vector<int64_t> q_lengths, std::vector<int64_t> kv_lengths,
                    aclDataType dtype, uint64_t seed, bool hostile = true) {
  std::mt19937_64 rng(seed);
  Problem p;
  p.layout = layout;
  p.s_len = s_len;
  p.dtype = dtype;
  p.s.q_heads = 8;
  p.s.kv_heads = 2;
  p.s.dim_qk = kDimQk;
  p.s.dim_v = kDimV;
  p.s.block_size = 32;
  p.s.block_count = 4;
  p.s.scale = static_cast<double>(static_cast<float>(1.0 / std::sqrt(192.0)));
  p.s.q_lengths = std::move(q_lengths);
  p.s.kv_lengths = std::move(kv_lengths);
  const int64_t t = p.s.QTokens(), kv = p.s.KvPositions();
  p.query = optest::RandomValues(rng, t * p.s.q_heads * kDimQk, -2.0, 2.0, dtype);
  p.key = optest::RandomValues(rng, kv * p.s.kv_heads * kDimQk, -2.0, 2.0, dtype);
  p.value = optest::RandomValues(rng, kv * p.s.kv_heads * kDimV, -1.0, 1.0, dtype);
  for (size_t b = 0; b < p.s.q_lengths.size(); ++b) {
    const int64_t blocks = (p.s.kv_lengths[b] + p.s.block_size - 1) / p.s.block_size;
    for (int64_t i = 0; i < p.s.q_lengths[b] * p.s.kv_heads; ++i) {
      for (int64_t slot = 0; slot < p.s.block_count; ++slot) {
        int64_t j = optest::UniformInt(rng, 0, std::max<int64_t>(blocks - 1, 0));
        if (hostile) {
          const int64_t kind = optest::UniformInt(rng, 0, 9);
          if (kind == 0) j = -1;
          if (kind == 1) j = -7;
          if (kind == 2) j = blocks + optest::UniformInt(rng, 0, 3);  // past the sequence
        }
        p.topk.push_back(j);
      }
    }
  }
  return p;
}

// Lays the cache out in pages: each (batch entry, column) holding positions gets a distinct page, in a shuffled
// order; the table's other entries name no page (-1, never read).
void Paginate(Problem* p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int64_t pbs = p->page_block_size;
  p->columns = 1;
  int64_t used = 0;
  for (int64_t kv : p->s.kv_lengths) {
    p->columns = std::max(p->columns, (kv + pbs - 1) / pbs);
    used += (kv + pbs - 1) / pbs;
  }
  p->pages = used + 1;  // a spare page, never named
  std::vector<int64_t> order(static_cast<size_t>(p->pages));
  std::iota(order.begin(), order.end(), int64_t{0});
  for (int64_t i = p->pages - 1; i > 0; --i) {
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(optest::UniformInt(rng, 0, i))]);
  }
  p->table.assign(static_cast<size_t>(p->Batch() * p->columns), -1);
  size_t next = 0;
  for (int64_t b = 0; b < p->Batch(); ++b) {
    for (int64_t c = 0; c * pbs < p->s.kv_lengths[static_cast<size_t>(b)]; ++c) {
      p->table[static_cast<size_t>(b * p->columns + c)] = order[next++];
    }
  }
}

std::vector<int64_t> QueryShape(const Problem& p, int64_t dim, int64_t heads) {
  if (p.layout == QLayout::kTND) return {p.s.QTokens(), heads, dim};
  if (p.layout == QLayout::kBSH) return {p.Batch(), p.s_len, heads * dim};
  return {p.Batch(), p.s_len, heads, dim};
}

// Logical (QTokens, heads, dim) rows as the layout stores them; padding rows `fill`.
std::vector<double> ToLayout(const Problem& p, const std::vector<double>& rows, int64_t row_size, double fill) {
  return p.layout == QLayout::kTND ? rows : ref::PadRows(rows, row_size, p.s, p.s_len, fill);
}

std::vector<double> Cache(const Problem& p, const std::vector<double>& rows, int64_t dim) {
  return ref::PagedCache(rows, p.s.kv_heads * dim, p.s, p.table, p.columns, p.pages, p.page_block_size);
}

std::vector<double> AsDoubles(const std::vector<int64_t>& values) { return {values.begin(), values.end()}; }

struct Result {
  std::vector<double> out;       // as the layout stores it
  std::vector<double> expected;  // likewise, padding rows 0
};

Result RunProblem(const Problem& p, bool null_layout = false) {  // null_layout: layoutOptional null (BSND)
  const int64_t pbs = p.page_block_size, n2 = p.s.kv_heads;
  const std::vector<int64_t> key_shape = p.key_4d ? std::vector<int64_t>{p.pages, pbs, n2, kDimQk}
                                                  : std::vector<int64_t>{p.pages, pbs, n2 * kDimQk};
  const std::vector<int64_t> value_shape = p.key_4d ? std::vector<int64_t>{p.pages, pbs, n2, kDimV}
                                                    : std::vector<int64_t>{p.pages, pbs, n2 * kDimV};
  std::vector<int64_t> topk_shape = {p.s.QTokens(), n2, p.s.block_count};
  if (p.layout != QLayout::kTND) {
    topk_shape = p.topk_3d ? std::vector<int64_t>{p.Batch(), n2, p.s.block_count}
                           : std::vector<int64_t>{p.Batch(), p.s_len, n2, p.s.block_count};
  }
  DeviceTensor query(QueryShape(p, kDimQk, p.s.q_heads), p.dtype, p.tensor_layout,
                     ToLayout(p, p.query, p.s.q_heads * kDimQk, 0.5));
  DeviceTensor key(key_shape, p.dtype, p.tensor_layout, Cache(p, p.key, kDimQk));
  DeviceTensor value(value_shape, p.dtype, p.tensor_layout, Cache(p, p.value, kDimV));
  DeviceTensor topk(topk_shape, ACL_INT32, Layout::kContiguous,
                    ToLayout(p, AsDoubles(p.topk), n2 * p.s.block_count, 1e6));  // padding rows: junk, not read
  DeviceTensor table({p.Batch(), p.columns}, ACL_INT32, Layout::kContiguous, AsDoubles(p.table));
  DeviceTensor out = DeviceTensor::Output(QueryShape(p, kDimV, p.s.q_heads), p.dtype, p.tensor_layout);
  HostIntArray q_lengths(p.s.q_lengths), kv_lengths(p.s.kv_lengths);
  opcall::NsaSelectedAttentionInfer call;
  call.query = query.get();
  call.key = key.get();
  call.value = value.get();
  call.topk_indices = topk.get();
  call.block_table = table.get();
  call.actual_q_seq_len = q_lengths.get();
  call.actual_kv_seq_len = kv_lengths.get();
  call.layout = null_layout ? nullptr : LayoutText(p.layout);
  call.num_heads = p.s.q_heads;
  call.num_key_value_heads = n2;
  call.select_block_size = p.s.block_size;
  call.select_block_count = p.s.block_count;
  call.page_block_size = pbs;
  call.scale_value = p.s.scale;
  call.output = out.get();
  Result r;
  EXPECT_EQ(opcall::Run(call, nullptr), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  optest::ExpectGuardsIntact({&query, &key, &value, &topk, &table, &out});
  r.out = out.Read();
  const std::vector<uint8_t> missing = ref::MissingPositions(p.s, p.table, p.columns, p.pages, pbs);
  std::vector<double> expected(static_cast<size_t>(p.s.QTokens() * p.s.q_heads * kDimV));
  ref::NsaSelectedAttentionInfer(p.query.data(), p.key.data(), p.value.data(), p.topk, missing, p.s,
                                 expected.data());
  r.expected = ToLayout(p, expected, p.s.q_heads * kDimV, 0.0);
  return r;
}

void ExpectMatches(const Problem& p, bool null_layout = false) {
  const Result r = RunProblem(p, null_layout);
  // fp32 arithmetic before the output's one rounding: |value| <= 1, so 1e-5 bounds it (2^-24 per operation).
  optest::ExpectClose("output", r.out, r.expected, std::vector<double>(r.expected.size(), 1e-5), p.dtype);
}

std::string Name(QLayout layout, aclDataType dtype) {
  return std::string(LayoutText(layout)) + (dtype == ACL_FLOAT16 ? "_FLOAT16" : "_BFLOAT16");
}

class NsaSelectedAttentionInferLayouts : public testing::TestWithParam<std::tuple<QLayout, aclDataType>> {};

TEST_P(NsaSelectedAttentionInferLayouts, OneTokenPerEntryMatchesReference) {
  const auto [layout, dtype] = GetParam();
  // Sequences of 97, 200, 1 and 64 positions, one query token each (decoding); pages of 64.
  Problem p = MakeProblem(layout, 1, {1, 1, 1, 1}, {97, 200, 1, 64}, dtype, 11);
  Paginate(&p, 12);
  ExpectMatches(p);
  p.key_4d = false;  // key and value (blockNum, pageBlockSize, N * D)
  ExpectMatches(p);
}

TEST_P(NsaSelectedAttentionInferLayouts, SeveralTokensPerEntryMatchReference) {
  const auto [layout, dtype] = GetParam();
  // Up to 4 query tokens, the last of their sequences, each seeing its own past only; an entry without tokens;
  // pages of 128.
  Problem p = MakeProblem(layout, 4, {4, 2, 0, 3}, {130, 300, 50, 3}, dtype, 13);
  p.page_block_size = 128;
  Paginate(&p, 14);
  ExpectMatches(p);
}

INSTANTIATE_TEST_SUITE_P(NsaSelectedAttentionInfer, NsaSelectedAttentionInferLayouts,
                         testing::Combine(testing::Values(QLayout::kBSND, QLayout::kBSH, QLayout::kTND),
                                          testing::Values(ACL_FLOAT16, ACL_BF16)),
                         [](const auto& param) { return Name(std::get<0>(param.param), std::get<1>(param.param)); });

TEST(NsaSelectedAttentionInferInputs, TopkOfBNCountWhenSIsOneAndTheDefaultLayout) {
  Problem p = MakeProblem(QLayout::kBSND, 1, {1, 1}, {64, 129}, ACL_BF16, 15);
  Paginate(&p, 16);
  p.topk_3d = true;
  ExpectMatches(p);
  ExpectMatches(p, /*null_layout=*/true);  // BSND
}

TEST(NsaSelectedAttentionInferInputs, StridedViews) {
  Problem p = MakeProblem(QLayout::kBSND, 2, {2, 1}, {70, 90}, ACL_FLOAT16, 17);
  Paginate(&p, 18);
  p.tensor_layout = Layout::kPadded;  // offsets and gaps: rows read through their strides
  ExpectMatches(p);
  p.tensor_layout = Layout::kTransposed;  // D not innermost: rows gathered
  ExpectMatches(p);
}

TEST(NsaSelectedAttentionInferInputs, InvalidPageNumbersContributeNothing) {
  Problem p = MakeProblem(QLayout::kTND, 0, {2, 1, 1}, {200, 150, 64}, ACL_FLOAT16, 19, /*hostile=*/false);
  Paginate(&p, 20);
  p.table[1] = -3;                    // entry 0, positions 64..127
  p.table[p.columns + 0] = p.pages;   // entry 1, positions 0..63
  p.table[p.columns + 1] = 1 << 30;   // entry 1, positions 64..127
  p.table[2 * p.columns] = -1;        // entry 2: every position
  ExpectMatches(p);
}

TEST(NsaSelectedAttentionInferInputs, RepeatedIndicesCountTwice) {
  Problem p = MakeProblem(QLayout::kTND, 0, {1}, {128}, ACL_FLOAT16, 21, /*hostile=*/false);
  Paginate(&p, 22);
  for (int64_t h = 0; h < p.s.kv_heads; ++h) {
    for (int64_t slot = 0; slot < p.s.block_count; ++slot) p.topk[static_cast<size_t>(h * 4 + slot)] = slot % 2;
  }
  ExpectMatches(p);
}

// CANN's sample: 21 entries of 97 positions, one query token each, N2 1, G 4, pages of 128, every entry's table
// naming page 0 (blockNum = 21), blocks of 64, slots {0, -1}. With all-ones data every output is 1; with random data
// every entry reads page 0's rows.
TEST(NsaSelectedAttentionInferSample, DocumentSample) {
  for (bool ones : {true, false}) {
    SCOPED_TRACE(ones ? "ones" : "random");
    Problem p = MakeProblem(QLayout::kBSND, 1, std::vector<int64_t>(21, 1), std::vector<int64_t>(21, 97), ACL_FLOAT16,
                            23, /*hostile=*/false);
    p.s.q_heads = 4;
    p.s.kv_heads = 1;
    p.s.block_size = 64;
    p.s.block_count = 2;
    p.s.scale = 1.0;
    p.page_block_size = 128;
    p.pages = 21;
    p.columns = 1;
    p.topk_3d = true;
    p.table.assign(21, 0);
    std::mt19937_64 rng(24);
    p.query = ones ? std::vector<double>(21 * 4 * kDimQk, 1.0)
                   : optest::RandomValues(rng, 21 * 4 * kDimQk, -1.0, 1.0, p.dtype);
    const std::vector<double> key_page = ones ? std::vector<double>(97 * kDimQk, 1.0)
                                              : optest::RandomValues(rng, 97 * kDimQk, -1.0, 1.0, p.dtype);
    const std::vector<double> value_page = ones ? std::vector<double>(97 * kDimV, 1.0)
                                                : optest::RandomValues(rng, 97 * kDimV, -1.0, 1.0, p.dtype);
    p.key.clear();
    p.value.clear();
    p.topk.clear();
    for (int b = 0; b < 21; ++b) {  // every entry's logical sequence is page 0
      p.key.insert(p.key.end(), key_page.begin(), key_page.end());
      p.value.insert(p.value.end(), value_page.begin(), value_page.end());
      p.topk.insert(p.topk.end(), {0, -1});
    }
    const Result r = RunProblem(p);
    if (ones) {
      for (double v : r.out) ASSERT_EQ(v, 1.0);
    }
    optest::ExpectClose("output", r.out, r.expected, std::vector<double>(r.expected.size(), 1e-5), p.dtype);
  }
}

// Determinism: bit-identical run to run, for any thread count and on every SIMD target.
std::vector<uint8_t> DeterminismBytes() {
  Problem p = MakeProblem(QLayout::kBSND, 3, {3, 1, 2, 3}, {300, 97, 64, 180}, ACL_BF16, 25);
  Paginate(&p, 26);
  const Result r = RunProblem(p);
  std::vector<uint8_t> bytes(r.out.size() * sizeof(double));
  std::memcpy(bytes.data(), r.out.data(), bytes.size());
  return bytes;
}

TEST(NsaSelectedAttentionInferDeterminism, BitIdenticalRunToRun) {
  optest::ExpectBitIdenticalRunToRun(DeterminismBytes);
}

TEST(NsaSelectedAttentionInferDeterminism, OutputForComparison) { optest::WriteOutputForParent(DeterminismBytes()); }

TEST(NsaSelectedAttentionInferDeterminism, BitIdenticalForAnyThreadCount) {
  optest::ExpectBitIdenticalForThreadCounts("NsaSelectedAttentionInferDeterminism.OutputForComparison", {2, 3, 8},
                                            DeterminismBytes);
}

TEST(NsaSelectedAttentionInferDeterminism, BitIdenticalOnEverySimdTarget) {
  optest::ExpectBitIdenticalOnEverySimdTarget("NsaSelectedAttentionInferDeterminism.OutputForComparison");
}

}  // namespace
