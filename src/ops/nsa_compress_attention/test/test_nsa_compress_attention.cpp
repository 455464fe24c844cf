// aclnnNsaCompressAttention against the float64 reference (nsa_compress_attention_reference.h).
//
// Tolerances (spec section 3). attentionOut, softmaxMax and softmaxSum, per element: |actual - round(reference)| <=
// ulp + E, where E bounds the kernel's fp32 error before the output's single rounding (ErrorBounds: the dot
// products' canonical sums, the exponential, the sums and how a score's error moves a probability), built from the
// magnitudes of the terms. topkIndicesOut: the slots hold distinct candidate blocks (-1 exactly where fewer blocks are
// candidates), and slot k's block has a reference score within its error bound (plus the largest bound of the row)
// of the reference's k-th best score: an order that only differs where the scores are equal within the kernel's
// rounding. A wrong window of the importance formula, a missing head of the group or a wrong mask moves scores by far
// more; FormulaWindowOnOneHotAttention checks the window's direction with exact, hand-computed scores.
//
// Problems mix sequence lengths: query sequences of 0, 1 and many tokens; compressed key sequences of different
// lengths (not multiples of l'/d too); causal attention masks (compressed block i visible once its last token,
// i * d + l - 1, is at or before the query's position) with a few extra masked entries, so that early rows see no key
// at all; top-k masks hiding the select blocks past the query's own and a few others.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_nsa_compress_attention.h"
#include "nsa_compress_attention/test/nsa_compress_attention_calls.h"
#include "nsa_compress_attention/test/nsa_compress_attention_reference.h"
#include "op_test_util.h"

namespace {

using optest::DeviceTensor;
using optest::ExpectClose;
using optest::ExpectGuardsIntact;
using optest::HostIntArray;
using optest::Layout;

constexpr aclDataType kDTypes[] = {ACL_FLOAT16, ACL_BF16};
constexpr double kU = 0x1p-24;  // unit roundoff of the kernel's fp32 arithmetic
constexpr int64_t kStatLanes = 8;
constexpr double kInf = std::numeric_limits<double>::infinity();

// ------------------------------------------------------------------------------------------------------------
// Problems

struct Geometry {
  int64_t q_heads, kv_heads, dim_qk, dim_v, compress_block, compress_stride, select_block, select_count;
};

std::string GeometryName(const Geometry& g) {
  return "N" + std::to_string(g.q_heads) + "_Nkv" + std::to_string(g.kv_heads) + "_D" + std::to_string(g.dim_qk) +
         "x" + std::to_string(g.dim_v) + "_l" + std::to_string(g.compress_block) + "_d" +
         std::to_string(g.compress_stride) + "_ls" + std::to_string(g.select_block) + "_k" +
         std::to_string(g.select_count);
}

struct Masks {
  int64_t sparse_mode = 0;
  bool atten = false;
  bool topk = false;
};

struct Problem {
  ref::NsaCompressAttentionShape s;
  Masks masks;
  aclDataType dtype = ACL_FLOAT16;
  std::vector<double> query, key, value;
  ref::NsaCompressAttentionResult expected;

  int64_t T1() const { return s.QTokens(); }
  int64_t T2() const { return s.KvTokens(); }
  std::vector<int64_t> QueryShape() const { return {T1(), s.q_heads, s.dim_qk}; }
  std::vector<int64_t> KeyShape() const { return {T2(), s.kv_heads, s.dim_qk}; }
  std::vector<int64_t> ValueShape() const { return {T2(), s.kv_heads, s.dim_v}; }
  std::vector<int64_t> OutShape() const { return {T1(), s.q_heads, s.dim_v}; }
  std::vector<int64_t> StatShape() const { return {T1(), s.q_heads, kStatLanes}; }
  std::vector<int64_t> TopkShape() const { return {T1(), s.kv_heads, s.select_count}; }
  std::vector<int64_t> AttenMaskShape() const { return {s.MaxQLength(), s.MaxKvLength()}; }
  std::vector<int64_t> TopkMaskShape() const { return {s.MaxQLength(), s.MaxSelectBlocks()}; }
};

std::string ProblemName(const Problem& p) {
  std::string name = "q ends [";
  for (size_t i = 0; i < p.s.q_ends.size(); ++i) name += (i > 0 ? ", " : "") + std::to_string(p.s.q_ends[i]);
  name += "], cmp ends [";
  for (size_t i = 0; i < p.s.cmp_ends.size(); ++i) name += (i > 0 ? ", " : "") + std::to_string(p.s.cmp_ends[i]);
  return name + "], sparseMode " + std::to_string(p.masks.sparse_mode) + (p.masks.atten ? ", attenMask" : "") +
         (p.masks.topk ? ", topkMask" : "") + ", " + optest::DTypeName(p.dtype);
}

// Scales exactly representable in FLOAT (the operator rounds scaleValue to float once).
double FloatScale(double scale) { return static_cast<double>(static_cast<float>(scale)); }

// The masks of NSA training: compressed block i (tokens i * d .. i * d + l - 1) is visible to position u once
// i * d + l - 1 <= u; select block j (tokens j * l' ..) is a candidate while j * l' <= u. Plus a few random masked
// entries in each.
void FillMasks(std::mt19937_64& rng, Problem* p) {
  ref::NsaCompressAttentionShape& s = p->s;
  const int64_t rows = s.MaxQLength();
  if (p->masks.atten) {
    const int64_t cols = s.MaxKvLength();
    s.atten_mask.resize(static_cast<size_t>(rows * cols));
    for (int64_t u = 0; u < rows; ++u) {
      for (int64_t i = 0; i < cols; ++i) {
        const bool future = i * s.compress_stride + s.compress_block_size - 1 > u;
        s.atten_mask[static_cast<size_t>(u * cols + i)] = future || optest::UniformInt(rng, 0, 15) == 0;
      }
    }
  }
  if (p->masks.topk) {
    const int64_t cols = s.MaxSelectBlocks();
    s.topk_mask.resize(static_cast<size_t>(rows * cols));
    for (int64_t u = 0; u < rows; ++u) {
      for (int64_t j = 0; j < cols; ++j) {
        const bool future = j * s.select_block_size > u;
        s.topk_mask[static_cast<size_t>(u * cols + j)] = future || optest::UniformInt(rng, 0, 7) == 0;
      }
    }
  }
}

Problem MakeProblem(const Geometry& g, const std::vector<int64_t>& q_lengths, const std::vector<int64_t>& cmp_lengths,
                    Masks masks, aclDataType dtype, uint64_t seed, double query_range = 2.0) {
  std::mt19937_64 rng(seed);
  Problem p;
  p.s.q_heads = g.q_heads;
  p.s.kv_heads = g.kv_heads;
  p.s.dim_qk = g.dim_qk;
  p.s.dim_v = g.dim_v;
  p.s.compress_block_size = g.compress_block;
  p.s.compress_stride = g.compress_stride;
  p.s.select_block_size = g.select_block;
  p.s.select_count = g.select_count;
  p.s.scale = FloatScale(1.0 / std::sqrt(static_cast<double>(g.dim_qk)));
  p.s.q_ends = optest::CumulativeEnds(q_lengths);
  p.s.cmp_ends = optest::CumulativeEnds(cmp_lengths);
  p.masks = masks;
  p.dtype = dtype;
  FillMasks(rng, &p);
  p.query = optest::RandomValues(rng, optest::NumElements(p.QueryShape()), -query_range, query_range, dtype);
  p.key = optest::RandomValues(rng, optest::NumElements(p.KeyShape()), -2.0, 2.0, dtype);
  p.value = optest::RandomValues(rng, optest::NumElements(p.ValueShape()), -1.0, 1.0, dtype);
  p.expected = ref::NsaCompressAttentionForward(p.query.data(), p.key.data(), p.value.data(), p.s);
  return p;
}

// Each row's statistic repeated over the 8 lanes of the tensors.
// ------------------------------------------------------------------------------------------------------------
// Error bounds of the kernel's fp32 arithmetic (see the top comment). A dot product of n terms in the canonical order
// (16 partial sums, a tree of 4 levels) errs by at most (n / 16 + 4) u sum |terms|; (n / 16 + 6) u is used. A sum of
// n terms in a fixed order: (n + 1) u sum |terms|. pacl::Exp: within 4 u.

struct Bounds {
  std::vector<double> out, max, sum;  // max and sum one per row
  std::vector<double> block_score;    // like the reference's block_score
};

Bounds ErrorBounds(const Problem& p) {
  const ref::NsaCompressAttentionShape& s = p.s;
  const int64_t n1 = s.q_heads, n2 = s.kv_heads, g = n1 / n2, max_k = s.MaxKvLength(), max_sel = s.MaxSelectBlocks();
  const int64_t r = s.select_block_size / s.compress_stride, c = s.compress_block_size / s.compress_stride;
  Bounds b;
  b.out.assign(static_cast<size_t>(optest::NumElements(p.OutShape())), 0.0);
  b.max.assign(static_cast<size_t>(p.T1() * n1), 0.0);
  b.sum.assign(b.max.size(), 0.0);
  b.block_score.assign(static_cast<size_t>(p.T1() * n2 * max_sel), 0.0);
  std::vector<double> p_error(static_cast<size_t>(n1 * max_k));  // absolute error bound of each probability
  for (int64_t bi = 0; bi < s.Batch(); ++bi) {
    const int64_t k_b = s.KvLength(bi), ks = s.KvStart(bi);
    for (int64_t t = s.QStart(bi); t < s.q_ends[static_cast<size_t>(bi)]; ++t) {
      const int64_t u = t - s.QStart(bi);
      std::fill(p_error.begin(), p_error.end(), 0.0);
      for (int64_t n = 0; n < n1; ++n) {
        const int64_t h = n / g;
        const size_t row = static_cast<size_t>(t * n1 + n);
        std::vector<int64_t> keys;
        std::vector<double> score, score_error;
        for (int64_t i = 0; i < k_b; ++i) {
          if (!s.atten_mask.empty() && s.atten_mask[static_cast<size_t>(u * max_k + i)] != 0) continue;
          double dot = 0.0, magnitude = 0.0;
          for (int64_t d = 0; d < s.dim_qk; ++d) {
            const double term = p.query[(t * n1 + n) * s.dim_qk + d] * p.key[((ks + i) * n2 + h) * s.dim_qk + d];
            dot += term;
            magnitude += std::fabs(term);
          }
          keys.push_back(i);
          score.push_back(s.scale * dot);
          score_error.push_back(std::fabs(s.scale) * (static_cast<double>(s.dim_qk) / 16.0 + 6.0) * kU * magnitude +
                                2.0 * kU * std::fabs(s.scale * dot));
        }
        if (keys.empty()) continue;
        const double m = *std::max_element(score.begin(), score.end());
        const double max_error = *std::max_element(score_error.begin(), score_error.end());
        const double L = static_cast<double>(keys.size());
        std::vector<double> e_error(keys.size());  // relative error of each exp(s - m)
        double e_error_max = 0.0, l = 0.0;
        for (size_t i = 0; i < keys.size(); ++i) {
          e_error[i] = score_error[i] + max_error + kU * std::fabs(score[i] - m) + 4.0 * kU;
          e_error_max = std::max(e_error_max, e_error[i]);
          l += std::exp(score[i] - m);
        }
        const double l_error = e_error_max + (L + 1.0) * kU;  // relative
        b.max[row] = max_error;
        b.sum[row] = l * l_error;
        double* bound = b.out.data() + row * s.dim_v;
        for (size_t i = 0; i < keys.size(); ++i) {
          const double prob = std::exp(score[i] - m) / l;
          p_error[static_cast<size_t>(n * max_k + keys[i])] = prob * (e_error[i] + l_error + 2.0 * kU);
          const double weight = prob * (e_error[i] + l_error + (L + 3.0) * kU);
          const double* v = p.value.data() + ((ks + keys[i]) * n2 + h) * s.dim_v;
          for (int64_t d = 0; d < s.dim_v; ++d) bound[d] += weight * std::fabs(v[d]);
        }
      }
      // w_i = sum over the group (g + 1 roundings), the block score a sum of r * c of them (r * c + 1 more).
      for (int64_t h = 0; h < n2; ++h) {
        const size_t row = static_cast<size_t>((t * n2 + h) * max_sel);
        for (int64_t j = 0; j < s.SelectBlocks(bi); ++j) {
          double error = 0.0;
          for (int64_t a = 0; a < r; ++a) {
            for (int64_t cc = 0; cc < c; ++cc) {
              const int64_t i = r * j - a - cc;
              if (i < 0 || i >= k_b) continue;
              for (int64_t n = h * g; n < (h + 1) * g; ++n) error += p_error[static_cast<size_t>(n * max_k + i)];
            }
          }
          const double score = p.expected.block_score[row + static_cast<size_t>(j)];
          b.block_score[row + static_cast<size_t>(j)] =
              error + static_cast<double>(g + r * c + 2) * kU * score + 1e-30;
        }
      }
    }
  }
  return b;
}

// ------------------------------------------------------------------------------------------------------------
// Device tensors and the call

using Layouts = std::vector<Layout>;  // query, key, value, softmaxMax, softmaxSum, attentionOut, topkIndices
enum { kQuery, kKey, kValue, kMax, kSum, kOut, kTopk, kTensorCount };

Layouts AllLayouts(Layout layout) { return Layouts(kTensorCount, layout); }

// A mask's values for its tensor (zeros when the problem has none: the tensor is then not passed).
std::vector<double> MaskValues(const std::vector<uint8_t>& mask, const std::vector<int64_t>& shape) {
  if (mask.empty()) return std::vector<double>(static_cast<size_t>(optest::NumElements(shape)), 0.0);
  return std::vector<double>(mask.begin(), mask.end());
}

struct DeviceProblem {
  DeviceProblem(const Problem& p, const Layouts& layouts)
      : query(p.QueryShape(), p.dtype, layouts[kQuery], p.query),
        key(p.KeyShape(), p.dtype, layouts[kKey], p.key),
        value(p.ValueShape(), p.dtype, layouts[kValue], p.value),
        atten_mask(p.AttenMaskShape(), ACL_BOOL, Layout::kContiguous, MaskValues(p.s.atten_mask, p.AttenMaskShape())),
        topk_mask(p.TopkMaskShape(), ACL_UINT8, Layout::kContiguous, MaskValues(p.s.topk_mask, p.TopkMaskShape())),
        max(DeviceTensor::Output(p.StatShape(), ACL_FLOAT, layouts[kMax])),
        sum(DeviceTensor::Output(p.StatShape(), ACL_FLOAT, layouts[kSum])),
        out(DeviceTensor::Output(p.OutShape(), p.dtype, layouts[kOut])),
        topk(DeviceTensor::Output(p.TopkShape(), ACL_INT32, layouts[kTopk])),
        q_ends(p.s.q_ends),
        cmp_ends(p.s.cmp_ends),
        sel_ends(p.s.SelEnds()) {
    // Not -1 (the guard pattern): a slot the kernel leaves alone must not pass for "no block".
    topk.Write(std::vector<double>(static_cast<size_t>(topk.size()), 12345.0));
  }
  DeviceTensor query, key, value, atten_mask, topk_mask, max, sum, out, topk;
  HostIntArray q_ends, cmp_ends, sel_ends;
};

opcall::NsaCompressAttention Call(const Problem& p, const DeviceProblem& d) {
  opcall::NsaCompressAttention call;
  call.query = d.query.get();
  call.key = d.key.get();
  call.value = d.value.get();
  call.atten_mask = p.masks.atten ? d.atten_mask.get() : nullptr;
  call.topk_mask = p.masks.topk ? d.topk_mask.get() : nullptr;
  call.actual_seq_q_len = d.q_ends.get();
  call.actual_cmp_seq_kv_len = d.cmp_ends.get();
  call.actual_sel_seq_kv_len = d.sel_ends.get();
  call.scale_value = p.s.scale;
  call.head_num = p.s.q_heads;
  call.sparse_mode = p.masks.sparse_mode;
  call.compress_block_size = p.s.compress_block_size;
  call.compress_stride = p.s.compress_stride;
  call.select_block_size = p.s.select_block_size;
  call.select_block_count = p.s.select_count;
  call.softmax_max = d.max.get();
  call.softmax_sum = d.sum.get();
  call.attention_out = d.out.get();
  call.topk_indices = d.topk.get();
  return call;
}

// The selection of every (t, h) against the reference's scores and bounds (see the top comment).
void ExpectSelection(const Problem& p, const Bounds& bounds, const std::vector<double>& topk) {
  const ref::SelectionCheck check = ref::CheckSelection(p.s, p.expected, bounds.block_score, topk);
  for (const std::string& message : check.messages) ADD_FAILURE() << message << " (" << ProblemName(p) << ")";
  EXPECT_EQ(check.problems, 0) << ProblemName(p);
}

void RunAndCheck(const Problem& p, const Layouts& layouts) {
  SCOPED_TRACE(ProblemName(p));
  DeviceProblem d(p, layouts);
  ASSERT_EQ(opcall::Run(Call(p, d), nullptr), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  const Bounds bounds = ErrorBounds(p);
  ExpectClose("attentionOut", d.out.Read(), p.expected.out, bounds.out, p.dtype);
  ExpectClose("softmaxMax", d.max.Read(), optest::RepeatEach(p.expected.max, kStatLanes),
              optest::RepeatEach(bounds.max, kStatLanes), ACL_FLOAT);
  ExpectClose("softmaxSum", d.sum.Read(), optest::RepeatEach(p.expected.sum, kStatLanes),
              optest::RepeatEach(bounds.sum, kStatLanes), ACL_FLOAT);
  ExpectSelection(p, bounds, d.topk.Read());
  ExpectGuardsIntact({&d.query, &d.key, &d.value, &d.atten_mask, &d.topk_mask, &d.max, &d.sum, &d.out, &d.topk});
}

// ------------------------------------------------------------------------------------------------------------
// Against the reference

struct Case {
  Geometry g;
  Masks masks;
};

class NsaCompressAttentionForward : public testing::TestWithParam<Case> {};

TEST_P(NsaCompressAttentionForward, MatchesTheReference) {
  const Case& c = GetParam();
  uint64_t seed = 100;
  for (aclDataType dtype : kDTypes) {
    // Sequences: several, one query sequence empty, one of a single token; compressed lengths not multiples of
    // l' / d; queries long enough to pass the causal masks' early rows (no visible key) and reach later blocks.
    const int64_t r = c.g.select_block / c.g.compress_stride, least = c.g.select_count * r;
    const Problem p = MakeProblem(c.g, {40, 0, 1, 70}, {least + 1, least + 3, least, least + 9}, c.masks, dtype, ++seed);
    RunAndCheck(p, AllLayouts(Layout::kContiguous));
  }
}

std::string CaseName(const testing::TestParamInfo<Case>& info) {
  const Masks& m = info.param.masks;
  return GeometryName(info.param.g) + "_mode" + std::to_string(m.sparse_mode) + (m.atten ? "_attenMask" : "") +
         (m.topk ? "_topkMask" : "");
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, NsaCompressAttentionForward,
    testing::Values(
        // The document's sample geometry: G 4, D 192 / 128, l 32, d 16, l' 64.
        Case{{8, 2, 192, 128, 32, 16, 64, 4}, {1, true, true}},
        Case{{8, 2, 192, 128, 32, 16, 64, 4}, {0, false, false}},
        // l = d = l' (one compressed key per select block); G 1.
        Case{{2, 2, 128, 128, 16, 16, 16, 3}, {0, true, false}},
        // The largest sizes: l 128, d 64, l' 128 (r 2, c 2); G 8; D_v < D_qk.
        Case{{8, 1, 64, 32, 128, 64, 128, 2}, {1, true, true}},
        // l 64, d 16, l' 128 (r 8, c 4): wide windows; G 2.
        Case{{4, 2, 32, 32, 64, 16, 128, 2}, {0, false, true}}),
    CaseName);

// The window's direction, with exact scores: a query that attends to one compressed key only (its score 256 above
// every other: exp(-256) is 0 in fp32), at index i = 5, r = l'/d = 4, c = l/d = 2. Block j's score counts the
// pairs (a < 4, c < 2) with 4 j - a - c = 5: block 2 gets two (a + c = 3), every other block none; so block 2
// scores 2 G, the rest 0 (taken by ascending index), the reference agrees.
TEST(NsaCompressAttentionSelection, FormulaWindowOnOneHotAttention) {
  const Geometry g = {4, 1, 16, 16, 32, 16, 64, 4};
  Problem p = MakeProblem(g, {3}, {16}, Masks{}, ACL_FLOAT16, 7);
  p.s.scale = 1.0;
  std::fill(p.query.begin(), p.query.end(), 4.0);
  std::fill(p.key.begin(), p.key.end(), 0.0);
  for (int64_t d = 0; d < g.dim_qk; ++d) p.key[static_cast<size_t>(5 * g.dim_qk + d)] = 4.0;
  p.expected = ref::NsaCompressAttentionForward(p.query.data(), p.key.data(), p.value.data(), p.s);
  DeviceProblem d(p, AllLayouts(Layout::kContiguous));
  ASSERT_EQ(opcall::Run(Call(p, d), nullptr), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  const std::vector<double> topk = d.topk.Read();
  for (int64_t t = 0; t < 3; ++t) {
    const std::vector<double> row(topk.begin() + t * 4, topk.begin() + t * 4 + 4);
    EXPECT_EQ(row, (std::vector<double>{2, 0, 1, 3})) << "token " << t;
    EXPECT_EQ(p.expected.topk[static_cast<size_t>(t * 4)], 2);
    EXPECT_EQ(p.expected.block_score[static_cast<size_t>(t * 4 + 2)], 8.0);  // 2 pairs x 4 heads
  }
  // attentionOut is value row 5 for every head.
  const std::vector<double> out = d.out.Read();
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i], optest::RoundToDType(p.value[static_cast<size_t>(5 * g.dim_v) + i % g.dim_v], ACL_FLOAT16));
  }
}

// Fewer candidates than slots: the rest of the row is -1; ties (every score 0: all keys masked) by ascending index.
TEST(NsaCompressAttentionSelection, FewCandidatesLeaveMinusOne) {
  const Geometry g = {2, 1, 32, 32, 16, 16, 32, 3};
  for (aclDataType dtype : kDTypes) {
    const Problem p = MakeProblem(g, {70}, {12}, Masks{1, true, true}, dtype, 11);
    DeviceProblem d(p, AllLayouts(Layout::kContiguous));
    ASSERT_EQ(opcall::Run(Call(p, d), nullptr), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    const std::vector<double> topk = d.topk.Read();
    int64_t minus_one = 0;
    for (double v : topk) minus_one += v == -1.0;
    EXPECT_GT(minus_one, 0) << "the problem should have rows with fewer candidates than slots";
    ExpectSelection(p, ErrorBounds(p), topk);
    // Row 0 sees no compressed key (block 0's last token is 15): max -inf, sum 0, out 0, all block scores 0.
    const std::vector<double> max = d.max.Read(), sum = d.sum.Read(), out = d.out.Read();
    EXPECT_EQ(max[0], -kInf);
    EXPECT_EQ(sum[0], 0.0);
    EXPECT_EQ(out[0], 0.0);
  }
}

// Non-contiguous views of every input and output give the same results as contiguous ones (the gathered rows'
// path, strided outputs).
TEST(NsaCompressAttentionLayouts, EveryInputAndOutputLayout) {
  const Geometry g = {4, 2, 64, 32, 32, 16, 64, 2};
  uint64_t seed = 300;
  for (Layout layout : optest::kOutputLayouts) {
    const Problem p = MakeProblem(g, {20, 9}, {7, 10}, Masks{1, true, true}, ACL_BF16, ++seed);
    RunAndCheck(p, AllLayouts(layout));
  }
  for (Layout layout : optest::kInputLayouts) {
    if (layout == Layout::kBroadcast) continue;  // random inputs do not repeat along a dim
    Layouts layouts = AllLayouts(Layout::kContiguous);
    layouts[kQuery] = layouts[kKey] = layouts[kValue] = layout;
    const Problem p = MakeProblem(g, {20, 9}, {7, 10}, Masks{0, false, true}, ACL_FLOAT16, ++seed);
    RunAndCheck(p, layouts);
  }
}

// The document's sample program's shapes: 1 sequence of 1024 query tokens, 64 compressed keys, N1 16, N2 4,
// D 192 / 128, l 32, d 16, l' 64, 16 blocks selected, sparseMode 1 with its all-false attenMask, and a topkMask.
TEST(NsaCompressAttentionForwardSample, DocumentSampleShapes) {
  const Geometry g = {16, 4, 192, 128, 32, 16, 64, 16};
  Problem p = MakeProblem(g, {1024}, {64}, Masks{1, true, true}, ACL_FLOAT16, 4242);
  std::fill(p.s.atten_mask.begin(), p.s.atten_mask.end(), 0);
  std::fill(p.s.topk_mask.begin(), p.s.topk_mask.end(), 0);
  p.expected = ref::NsaCompressAttentionForward(p.query.data(), p.key.data(), p.value.data(), p.s);
  RunAndCheck(p, AllLayouts(Layout::kContiguous));
}

// ------------------------------------------------------------------------------------------------------------
// Determinism: bit-identical run to run, for any thread count and on every SIMD target; rows read in place and
// gathered give the same bits.

std::vector<uint8_t> DeterminismBytes(Layout layout = Layout::kContiguous) {
  const Geometry g = {8, 2, 192, 128, 32, 16, 64, 4};
  const Problem p = MakeProblem(g, {45, 30, 0, 2}, {21, 17, 16, 30}, Masks{1, true, true}, ACL_BF16, 777);
  Layouts layouts = AllLayouts(Layout::kContiguous);
  layouts[kQuery] = layouts[kKey] = layouts[kValue] = layout;
  DeviceProblem d(p, layouts);
  EXPECT_EQ(opcall::Run(Call(p, d), nullptr), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  return optest::ConcatenatedBytes({&d.out, &d.max, &d.sum, &d.topk});
}

TEST(NsaCompressAttentionDeterminism, BitIdenticalRunToRun) {
  optest::ExpectBitIdenticalRunToRun([] { return DeterminismBytes(); });
}

TEST(NsaCompressAttentionDeterminism, OutputForComparison) { optest::WriteOutputForParent(DeterminismBytes()); }

TEST(NsaCompressAttentionDeterminism, BitIdenticalForAnyThreadCount) {
  optest::ExpectBitIdenticalForThreadCounts("NsaCompressAttentionDeterminism.OutputForComparison", {2, 3, 8},
                                            [] { return DeterminismBytes(); });
}

TEST(NsaCompressAttentionDeterminism, BitIdenticalOnEverySimdTarget) {
  optest::ExpectBitIdenticalOnEverySimdTarget("NsaCompressAttentionDeterminism.OutputForComparison");
}

TEST(NsaCompressAttentionDeterminism, GatheredRowsGiveTheSameBits) {
  EXPECT_TRUE(DeterminismBytes(Layout::kContiguous) == DeterminismBytes(Layout::kTransposed));
}

}  // namespace
