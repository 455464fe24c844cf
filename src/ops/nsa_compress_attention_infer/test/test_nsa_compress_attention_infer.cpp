// NsaCompressAttentionInfer against its float64 reference (nsa_compress_attention_infer_reference.h): both layouts
// (TND, BSND; key/value 3-D and 4-D), the single-token and multi-token forms and the document's fall back to the
// single-token form, pages in a shuffled order with the unused cache rows NaN, hostile page numbers, strided views,
// CANN's sample, determinism. Outputs are pre-filled (NaN, and the guard pattern for topKOutput); padding rows must
// come back 0 and -1.
//
// topKOutput is compared with a tolerance for near-ties: each slot's block must score, by the reference, within
// kScoreTolerance of the reference's block in that slot, the blocks distinct, and -1 exactly where the reference has
// run out of blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "nsa_compress_attention_infer/test/nsa_compress_attention_infer_calls.h"
#include "nsa_compress_attention_infer/test/nsa_compress_attention_infer_reference.h"
#include "nsa_selected_attention_infer/test/nsa_selected_attention_infer_reference.h"
#include "op_test_util.h"

namespace {

using optest::DeviceTensor;
using optest::HostIntArray;
using optest::Layout;

struct Problem {
  ref::NsaCompressInferShape s;
  bool tnd = true;
  int64_t s_len = 1;     // BSND: S (rows per batch entry)
  bool topk_3d = false;  // BSND with S 1: topKOutput (B, N2, count)
  bool key_4d = false;
  bool pass_q_lengths = true;
  std::vector<int64_t> sel_lengths;  // passed when not empty (the reference's only when the form is multi-token)
  int64_t page_block_size = 64;
  int64_t pages = 0, columns = 0;
  aclDataType dtype = ACL_FLOAT16;
  Layout tensor_layout = Layout::kContiguous;  // of query, key, value and output
  std::vector<double> query, key, value;       // logical: (QTokens, N1, Dqk), (CmpTokens, N2, D)
  std::vector<int64_t> table;                  // (B, columns)
  int64_t Batch() const { return static_cast<int64_t>(s.q_lengths.size()); }
  // NsaSelectedAttentionInfer's test helpers see the compressed tokens as key/value positions.
  ref::NsaSelectedInferShape Positions() const {
    ref::NsaSelectedInferShape p;
    p.q_heads = s.q_heads;
    p.kv_heads = s.kv_heads;
    p.q_lengths = s.q_lengths;
    p.kv_lengths = s.cmp_lengths;
    return p;
  }
};

// Random data: 8 query heads over 2 KV heads, D 64 / 32, blocks of 32 every 16, select blocks of 64, 4 of them.
Problem MakeProblem(bool tnd, int64_t s_len, std::vector<int64_t> q_lengths, std::vector<int64_t> cmp_lengths,
                    aclDataType dtype, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Problem p;
  p.tnd = tnd;
  p.s_len = s_len;
  p.dtype = dtype;
  p.s.q_heads = 8;
  p.s.kv_heads = 2;
  p.s.dim_qk = 64;
  p.s.dim_v = 32;
  p.s.compress_block_size = 32;
  p.s.compress_stride = 16;
  p.s.select_block_size = 64;
  p.s.select_count = 4;
  p.s.scale = static_cast<double>(static_cast<float>(1.0 / std::sqrt(64.0)));
  p.s.q_lengths = std::move(q_lengths);
  p.s.cmp_lengths = std::move(cmp_lengths);
  const int64_t t = p.s.QTokens(), kv = p.s.CmpTokens();
  p.query = optest::RandomValues(rng, t * p.s.q_heads * p.s.dim_qk, -2.0, 2.0, dtype);
  p.key = optest::RandomValues(rng, kv * p.s.kv_heads * p.s.dim_qk, -2.0, 2.0, dtype);
  p.value = optest::RandomValues(rng, kv * p.s.kv_heads * p.s.dim_v, -1.0, 1.0, dtype);
  return p;
}

// The raw lengths whose compressed lengths are cmp_lengths, plus `extra` (< the stride keeps them consistent).
std::vector<int64_t> SelLengths(const Problem& p, int64_t extra) {
  std::vector<int64_t> sel;
  for (int64_t cmp : p.s.cmp_lengths) {
    sel.push_back((cmp - 1) * p.s.compress_stride + p.s.compress_block_size + extra);
  }
  return sel;
}

// Each (entry, column) holding compressed tokens gets a distinct page, in a shuffled order, plus a spare page; the
// table's other entries are -1 (never read).
void Paginate(Problem* p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int64_t pbs = p->page_block_size;
  p->columns = 1;
  int64_t used = 0;
  for (int64_t cmp : p->s.cmp_lengths) {
    p->columns = std::max(p->columns, (cmp + pbs - 1) / pbs);
    used += (cmp + pbs - 1) / pbs;
  }
  p->pages = used + 1;
  std::vector<int64_t> order(static_cast<size_t>(p->pages));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::shuffle(order.begin(), order.end(), rng);
  p->table.assign(static_cast<size_t>(p->Batch() * p->columns), -1);
  size_t next = 0;
  for (int64_t b = 0; b < p->Batch(); ++b) {
    for (int64_t c = 0; c * pbs < p->s.cmp_lengths[static_cast<size_t>(b)]; ++c) {
      p->table[static_cast<size_t>(b * p->columns + c)] = order[next++];
    }
  }
}

std::vector<int64_t> RowShape(const Problem& p, int64_t heads, int64_t last) {
  if (p.tnd) return {p.s.QTokens(), heads, last};
  return {p.Batch(), p.s_len, heads, last};
}

std::vector<int64_t> TopkShape(const Problem& p) {
  if (p.topk_3d) return {p.Batch(), p.s.kv_heads, p.s.select_count};
  return RowShape(p, p.s.kv_heads, p.s.select_count);
}

// Logical (QTokens, row_size) rows as the layout stores them; padding rows `fill`.
std::vector<double> ToLayout(const Problem& p, const std::vector<double>& rows, int64_t row_size, double fill) {
  return p.tnd ? rows : ref::PadRows(rows, row_size, p.Positions(), p.s_len, fill);
}

std::vector<double> Cache(const Problem& p, const std::vector<double>& rows, int64_t dim) {
  return ref::PagedCache(rows, p.s.kv_heads * dim, p.Positions(), p.table, p.columns, p.pages, p.page_block_size);
}

std::vector<double> AsDoubles(const std::vector<int64_t>& values) { return {values.begin(), values.end()}; }

struct Result {
  std::vector<double> out, topk;  // as the layout stores them
  ref::NsaCompressInferResult expected;
};

Result RunProblem(const Problem& p, bool multi_token, bool null_layout = false) {
  const int64_t pbs = p.page_block_size, n2 = p.s.kv_heads, dqk = p.s.dim_qk, dv = p.s.dim_v;
  const auto cache_shape = [&](int64_t dim) {
    return p.key_4d ? std::vector<int64_t>{p.pages, pbs, n2, dim} : std::vector<int64_t>{p.pages, pbs, n2 * dim};
  };
  DeviceTensor query(RowShape(p, p.s.q_heads, dqk), p.dtype, p.tensor_layout,
                     ToLayout(p, p.query, p.s.q_heads * dqk, 0.5));
  DeviceTensor key(cache_shape(dqk), p.dtype, p.tensor_layout, Cache(p, p.key, dqk));
  DeviceTensor value(cache_shape(dv), p.dtype, p.tensor_layout, Cache(p, p.value, dv));
  DeviceTensor table({p.Batch(), p.columns}, ACL_INT32, Layout::kContiguous, AsDoubles(p.table));
  DeviceTensor out = DeviceTensor::Output(RowShape(p, p.s.q_heads, dv), p.dtype, p.tensor_layout);
  // Pre-filled with a value no slot can hold (the guard pattern would read as -1).
  const std::vector<int64_t> topk_shape = TopkShape(p);
  DeviceTensor topk(topk_shape, ACL_INT32, Layout::kContiguous,
                    std::vector<double>(static_cast<size_t>(optest::NumElements(topk_shape)), 7777.0));
  HostIntArray q_lengths(p.s.q_lengths), cmp_lengths(p.s.cmp_lengths);
  HostIntArray sel_lengths(p.sel_lengths.empty() ? std::vector<int64_t>{0} : p.sel_lengths);
  opcall::NsaCompressAttentionInfer call;
  call.query = query.get();
  call.key = key.get();
  call.value = value.get();
  call.block_table = table.get();
  call.actual_q_seq_len = p.pass_q_lengths ? q_lengths.get() : nullptr;
  call.actual_cmp_kv_seq_len = cmp_lengths.get();
  call.actual_sel_kv_seq_len = p.sel_lengths.empty() ? nullptr : sel_lengths.get();
  call.num_heads = p.s.q_heads;
  call.num_key_value_heads = n2;
  call.select_block_size = p.s.select_block_size;
  call.select_block_count = p.s.select_count;
  call.compress_block_size = p.s.compress_block_size;
  call.compress_block_stride = p.s.compress_stride;
  call.scale_value = p.s.scale;
  call.layout = null_layout ? nullptr : p.tnd ? "TND" : "BSND";
  call.page_block_size = pbs;
  call.output = out.get();
  call.topk_output = topk.get();
  Result r;
  EXPECT_EQ(opcall::Run(call, nullptr), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  optest::ExpectGuardsIntact({&query, &key, &value, &table, &out, &topk});
  r.out = out.Read();
  r.topk = topk.Read();
  ref::NsaCompressInferShape s = p.s;
  if (multi_token) s.sel_lengths = p.sel_lengths;
  const std::vector<uint8_t> missing = ref::MissingPositions(p.Positions(), p.table, p.columns, p.pages, pbs);
  r.expected = ref::NsaCompressAttentionInfer(p.query.data(), p.key.data(), p.value.data(), missing, s);
  return r;
}

// Near-ties in the selection: scores are sums of G probabilities' fp32 roundings.
double ScoreTolerance(const Problem& p) { return 1e-5 * static_cast<double>(p.s.q_heads / p.s.kv_heads); }

void ExpectSelection(const Problem& p, const Result& r) {
  const int64_t n2 = p.s.kv_heads, count = p.s.select_count;
  const std::vector<double> want = ToLayout(p, AsDoubles(r.expected.topk), n2 * count, -1.0);
  ASSERT_EQ(r.topk.size(), want.size());
  // The rows in the layout's order with the logical row each real one is (-1: padding).
  std::vector<int64_t> logical;
  int64_t t = 0;
  for (int64_t b = 0; b < p.Batch(); ++b) {
    const int64_t q = p.s.q_lengths[static_cast<size_t>(b)];
    for (int64_t i = 0; i < (p.tnd ? q : p.s_len); ++i) logical.push_back(i < q ? t + i : -1);
    t += q;
  }
  int mismatches = 0;
  for (size_t row = 0; row < logical.size(); ++row) {
    for (int64_t h = 0; h < n2; ++h) {
      const size_t first = (row * static_cast<size_t>(n2) + static_cast<size_t>(h)) * static_cast<size_t>(count);
      std::set<double> seen;
      for (int64_t slot = 0; slot < count; ++slot) {
        const double got = r.topk[first + static_cast<size_t>(slot)],
                     expected = want[first + static_cast<size_t>(slot)];
        bool ok = (got == -1.0) == (expected == -1.0) && (got == -1.0 || seen.insert(got).second);
        if (ok && got != -1.0) {
          const std::vector<double>& scores = r.expected.scores[static_cast<size_t>(logical[row] * n2 + h)];
          ok = got >= 0 && got < static_cast<double>(scores.size()) &&
               std::fabs(scores[static_cast<size_t>(got)] - scores[static_cast<size_t>(expected)]) <= ScoreTolerance(p);
        }
        if (!ok && ++mismatches <= 5) {
          ADD_FAILURE() << "topKOutput row " << row << " head " << h << " slot " << slot << ": got " << got
                        << ", the reference's " << expected;
        }
      }
    }
  }
}

void ExpectMatches(const Problem& p, bool multi_token, bool null_layout = false) {
  const Result r = RunProblem(p, multi_token, null_layout);
  // fp32 arithmetic before the output's one rounding: |value| <= 1, so 1e-5 bounds it (2^-24 per operation).
  const std::vector<double> want = ToLayout(p, r.expected.out, p.s.q_heads * p.s.dim_v, 0.0);
  optest::ExpectClose("output", r.out, want, std::vector<double>(want.size(), 1e-5), p.dtype);
  ExpectSelection(p, r);
}

std::string Name(bool tnd, aclDataType dtype) {
  return std::string(tnd ? "TND" : "BSND") + (dtype == ACL_FLOAT16 ? "_FLOAT16" : "_BFLOAT16");
}

class NsaCompressAttentionInferLayouts : public testing::TestWithParam<std::tuple<bool, aclDataType>> {};

TEST_P(NsaCompressAttentionInferLayouts, OneTokenPerEntryMatchesReference) {
  const auto [tnd, dtype] = GetParam();
  // Decoding: one query token per entry over 97, 200, 20, 64 and 0 compressed tokens; pages of 64.
  Problem p = MakeProblem(tnd, 1, {1, 1, 1, 1, 1}, {97, 200, 20, 64, 0}, dtype, 11);
  Paginate(&p, 12);
  ExpectMatches(p, false);
  p.key_4d = true;  // key and value (blockNum, pageBlockSize, N, D)
  ExpectMatches(p, false);
}

TEST_P(NsaCompressAttentionInferLayouts, SeveralTokensPerEntrySeeTheirOwnPast) {
  const auto [tnd, dtype] = GetParam();
  // Up to 4 query tokens, the last of their sequences, with the raw lengths: each sees the compressed blocks complete
  // at its position; an entry without tokens; pages of 128.
  Problem p = MakeProblem(tnd, 4, {4, 2, 0, 3}, {99, 30, 49, 20}, dtype, 13);
  p.page_block_size = 128;
  p.sel_lengths = SelLengths(p, 0);
  Paginate(&p, 14);
  ExpectMatches(p, true);
  p.sel_lengths = SelLengths(p, 15);  // a raw length up to stride - 1 longer compresses to the same count
  ExpectMatches(p, true);
}

INSTANTIATE_TEST_SUITE_P(NsaCompressAttentionInfer, NsaCompressAttentionInferLayouts,
                         testing::Combine(testing::Bool(), testing::Values(ACL_FLOAT16, ACL_BF16)),
                         [](const auto& param) { return Name(std::get<0>(param.param), std::get<1>(param.param)); });

TEST(NsaCompressAttentionInferForms, InconsistentRawLengthsFallBackToTheSingleTokenForm) {
  // The document: raw lengths that do not compress to actualCmpKvSeqLenOptional, or no raw lengths, or no query
  // lengths: the single-token form, where every query token sees every compressed token of its entry.
  Problem p = MakeProblem(false, 3, {3, 2}, {40, 70}, ACL_FLOAT16, 15);
  Paginate(&p, 16);
  p.sel_lengths = SelLengths(p, 16);  // one compressed token more than given
  ExpectMatches(p, false);
  p.sel_lengths.clear();
  ExpectMatches(p, false);
  p.s.q_lengths = {3, 3};  // BSND without query lengths: S tokens per entry
  p.query.resize(static_cast<size_t>(6 * p.s.q_heads * p.s.dim_qk), 0.25);
  p.pass_q_lengths = false;
  p.sel_lengths = SelLengths(p, 0);
  ExpectMatches(p, false);
}

TEST(NsaCompressAttentionInferForms, EarlyTokensOfAShortSequenceSeeNoBlock) {
  // Raw length 40, 4 query tokens at positions 36..39, compressed blocks of 32 every 16: block 0 ([0, 32)) is
  // complete for all; with raw length 33 at positions 29..32, the last two tokens see block 0, the first two none
  // (zero rows, and block 0 selected with score 0). Select blocks of 32, so that one compressed token makes one.
  Problem p = MakeProblem(true, 0, {4, 4}, {1, 1}, ACL_BF16, 17);
  p.s.select_block_size = 32;
  p.s.select_count = 1;
  p.sel_lengths = {40, 33};
  Paginate(&p, 18);
  ExpectMatches(p, true);
}

TEST(NsaCompressAttentionInferInputs, TopkOfBNCountWhenSIsOneAndTheDefaultLayout) {
  Problem p = MakeProblem(false, 1, {1, 1}, {64, 129}, ACL_BF16, 19);
  Paginate(&p, 20);
  p.topk_3d = true;
  ExpectMatches(p, false);
  ExpectMatches(p, false, /*null_layout=*/true);  // BSND
}

TEST(NsaCompressAttentionInferInputs, StridedViews) {
  Problem p = MakeProblem(false, 2, {2, 1}, {70, 90}, ACL_FLOAT16, 21);
  Paginate(&p, 22);
  p.tensor_layout = Layout::kPadded;  // offsets and gaps: rows read through their strides
  ExpectMatches(p, false);
  p.tensor_layout = Layout::kTransposed;  // D not innermost: rows gathered
  ExpectMatches(p, false);
}

TEST(NsaCompressAttentionInferInputs, InvalidPageNumbersContributeNothing) {
  Problem p = MakeProblem(true, 0, {2, 1, 1}, {200, 150, 64}, ACL_FLOAT16, 23);
  Paginate(&p, 24);
  p.table[1] = -3;                   // entry 0, compressed tokens 64..127
  p.table[p.columns + 0] = p.pages;  // entry 1, tokens 0..63
  p.table[p.columns + 1] = 1 << 30;  // entry 1, tokens 64..127
  p.table[2 * p.columns] = -1;       // entry 2: every token
  ExpectMatches(p, false);
}

// CANN's sample, with 2 of its 20 entries: one query token each (TND), 64 query heads over 4 KV heads, D 192 / 128,
// 4096 compressed tokens each on pages of 128, every table entry naming page 1, blocks of 32 every 16, select blocks
// of 64, 16 of them. With all-ones data every output is 1 and every score equal but block 0's (1 term of the
// formula, the others 8): the selection is blocks 1..16.
TEST(NsaCompressAttentionInferSample, DocumentSample) {
  for (bool ones : {true, false}) {
    SCOPED_TRACE(ones ? "ones" : "random");
    Problem p = MakeProblem(true, 0, {1, 1}, {0, 0}, ACL_FLOAT16, 25);
    p.s.q_heads = 64;
    p.s.kv_heads = 4;
    p.s.dim_qk = 192;
    p.s.dim_v = 128;
    p.s.select_count = 16;
    p.s.scale = 0.088388;
    p.s.cmp_lengths = {4096, 4096};
    p.page_block_size = 128;
    p.pages = 40;
    p.columns = 32;
    p.table.assign(64, 1);
    std::mt19937_64 rng(26);
    const int64_t row_k = 4 * 192, row_v = 4 * 128;
    p.query =
        ones ? std::vector<double>(2 * 64 * 192, 1.0) : optest::RandomValues(rng, 2 * 64 * 192, -1.0, 1.0, p.dtype);
    // Page 1 holds compressed tokens 0..127 of every entry; the table names it for every column, so token k reads
    // row k % 128 of page 1.
    const std::vector<double> key_page =
        ones ? std::vector<double>(128 * row_k, 1.0) : optest::RandomValues(rng, 128 * row_k, -1.0, 1.0, p.dtype);
    const std::vector<double> value_page =
        ones ? std::vector<double>(128 * row_v, 1.0) : optest::RandomValues(rng, 128 * row_v, -1.0, 1.0, p.dtype);
    p.key.clear();
    p.value.clear();
    for (int64_t k = 0; k < 2 * 4096; ++k) {
      const int64_t row = k % 128;
      p.key.insert(p.key.end(), key_page.begin() + row * row_k, key_page.begin() + (row + 1) * row_k);
      p.value.insert(p.value.end(), value_page.begin() + row * row_v, value_page.begin() + (row + 1) * row_v);
    }
    const Result r = RunProblem(p, false);
    if (ones) {
      for (double v : r.out) ASSERT_EQ(v, 1.0);
      for (size_t i = 0; i < r.topk.size(); ++i) ASSERT_EQ(r.topk[i], static_cast<double>(i % 16 + 1)) << i;
    }
    optest::ExpectClose("output", r.out, r.expected.out, std::vector<double>(r.expected.out.size(), 1e-5), p.dtype);
    ExpectSelection(p, r);
  }
}

// Determinism: bit-identical run to run, for any thread count and on every SIMD target.
std::vector<uint8_t> DeterminismBytes() {
  Problem p = MakeProblem(false, 3, {3, 1, 2, 3}, {300, 97, 64, 180}, ACL_BF16, 27);
  p.sel_lengths = SelLengths(p, 3);
  Paginate(&p, 28);
  const Result r = RunProblem(p, true);
  std::vector<uint8_t> bytes((r.out.size() + r.topk.size()) * sizeof(double));
  std::memcpy(bytes.data(), r.out.data(), r.out.size() * sizeof(double));
  std::memcpy(bytes.data() + r.out.size() * sizeof(double), r.topk.data(), r.topk.size() * sizeof(double));
  return bytes;
}

TEST(NsaCompressAttentionInferDeterminism, BitIdenticalRunToRun) {
  optest::ExpectBitIdenticalRunToRun(DeterminismBytes);
}

TEST(NsaCompressAttentionInferDeterminism, OutputForComparison) { optest::WriteOutputForParent(DeterminismBytes()); }

TEST(NsaCompressAttentionInferDeterminism, BitIdenticalForAnyThreadCount) {
  optest::ExpectBitIdenticalForThreadCounts("NsaCompressAttentionInferDeterminism.OutputForComparison", {2, 3, 8},
                                            DeterminismBytes);
}

TEST(NsaCompressAttentionInferDeterminism, BitIdenticalOnEverySimdTarget) {
  optest::ExpectBitIdenticalOnEverySimdTarget("NsaCompressAttentionInferDeterminism.OutputForComparison");
}

}  // namespace
