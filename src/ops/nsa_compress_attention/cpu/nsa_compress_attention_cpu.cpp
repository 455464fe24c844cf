// NOTE [NsaCompressAttention on the CPU]
//
// Problem. Layout "TND": query (T1, N1, Dqk), compressed key (T2, N2, Dqk) and value (T2, N2, Dv), the sequences back
// to back (the actual-length arrays: cumulative ends; sequence b owns query tokens [qs_b, qe_b) and compressed tokens
// [ks_b, ke_b), K_b = ke_b - ks_b of them, and S_b = ceil(K_b / r) select blocks, r = l' / d). Query head n uses
// key/value head h = n / G. For query token t of sequence b (position u = t - qs_b), compressed key i < K_b is visible
// unless attenMask[u, i] is nonzero; the visible keys, ascending, are the row's key list.
// Attention, for each query row (t, n): s_i = scale * (q . key_i), m = max s, e_i = exp(s_i - m), l = sum e,
// out = (sum_i e_i value_i) / l; softmaxMax = m and softmaxSum = l, each written 8 times (CANN's layout). A row with
// no visible key gets out = 0, max = -inf, sum = 0.
// Importance and selection, for each (t, h): P_cmp[g][i] = e_i / l of query head h * G + g (0 for keys not visible),
// w_i = sum over the group's heads g of P_cmp[g][i], and for each select block j < S_b
//   score_j = sum_{m < r} sum_{n < c} w[r j - m - n]       (c = l / d; indices outside [0, K_b) contribute nothing)
// - CANN's formula, with the sum over the group's heads taken first (the sums commute). Blocks j with
// topkMask[u, j] nonzero are not candidates. topkIndices[t, h, :] lists the selectBlockCount best candidates: higher
// score first, a NaN score above every number, equal scores by ascending j; slots left when fewer blocks are
// candidates hold -1 (which aclnnNsaSelectedAttention reads as "selects nothing").
//
// Arithmetic (the same bits on every SIMD target and thread count). Inputs are widened exactly to fp32 and every
// output element is rounded once. The dot products, softmax rows and weighted sums of value rows are the selected
// attention's vector loops (nsa_selected_attention/cpu/nsa_selected_attention_cpu_simd.h: canonical fused
// multiply-add sums, a fixed tree or a fixed term order per element, never dependent on the vector width). P_cmp is
// one fp32 division per element; w and the scores are scalar fp32 sums in the order written above (g ascending; m
// outer, n inner, both ascending): nsa_block_selection.h, shared with NsaCompressAttentionInfer.
//
// Parallelism and memory. Tasks are chunks of (KV head, query token) items, the head outermost (the threads share one
// head's keys and values at a time); every item writes its own rows of the four outputs, nothing else. Per item: the
// G query rows widened to fp32, the key list as row pointers into key and value (nsa_attention_rows.h: in place where
// the rows have unit stride along D, else gathered into fp32 rows), the G x |list| scores, w and the block scores:
// O(G * max K_b) floats per thread, no T x T buffer, no workspace.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "nsa_compress_attention/cpu/nsa_block_selection.h"
#include "nsa_compress_attention/nsa_compress_attention_params.h"
#include "nsa_selected_attention/cpu/nsa_attention_rows.h"
#include "nsa_selected_attention/cpu/nsa_selected_attention_cpu_simd.h"
#include "pacl/parallel.h"

namespace pacl::nsa_compress_attention {

namespace {

namespace vec = pacl::nsa_selected_attention;

// (KV head, query token) items per chunk.
constexpr int64_t kItemsPerChunk = 8;
// Floats after each row of scores, so that the G rows of an item do not all map to the same cache sets when the key
// count is a large power of two.
constexpr int64_t kScoresPadding = 16;

constexpr float kInf = std::numeric_limits<float>::infinity();

using nsa_attention_rows::ReadRow;
using nsa_attention_rows::RowList;
using nsa_attention_rows::SequenceOfToken;
using nsa_attention_rows::WriteRow;
using nsa_attention_rows::WriteStatistic;
using nsa_block_selection::Candidate;

// A 2-D BOOL / UINT8 mask's element (row, column): nonzero = masked.
bool Masked(const TensorDesc& mask, int64_t row, int64_t column) {
  return *reinterpret_cast<const uint8_t*>(mask.ElementAt(mask.offset + row * mask.strides[0] +
                                                          column * mask.strides[1])) != 0;
}

struct Scratch {
  Scratch(const ForwardParams& p)
      : stride(p.max_kv_length + kScoresPadding),
        q(static_cast<size_t>(p.shape.group * p.shape.dim_qk)),
        scores(static_cast<size_t>(p.shape.group * stride)),
        acc(static_cast<size_t>(p.shape.group * p.shape.dim_v)),
        row(static_cast<size_t>(p.shape.dim_v)),
        weights(static_cast<size_t>(p.max_kv_length)),
        visible(static_cast<size_t>(p.max_kv_length)),
        keys(p.key, p.max_kv_length),
        values(p.value, p.max_kv_length) {
    best.reserve(static_cast<size_t>(p.shape.select_count) + 1);
  }
  int64_t stride;
  std::vector<float> q, scores, acc, row, weights;
  std::vector<int64_t> visible;
  std::vector<vec::RowStatistics> stats;
  std::vector<Candidate> best;
  RowList keys, values;
};

// Attention of the G query rows of (t, h) over the key list; adds each row's probabilities to x->weights.
void Attend(const ForwardParams& p, int64_t h, int64_t t, Scratch* x) {
  const AttentionShape& s = p.shape;
  const int64_t g_count = s.group;
  const int64_t keys = x->keys.count();
  if (keys == 0) {
    std::fill(x->row.begin(), x->row.end(), 0.0f);
    for (int64_t g = 0; g < g_count; ++g) {
      WriteRow(p.out, t, h * g_count + g, x->row.data());
      WriteStatistic(p.softmax_max, t, h * g_count + g, -kInf);
      WriteStatistic(p.softmax_sum, t, h * g_count + g, 0.0f);
    }
    return;
  }
  for (int64_t g = 0; g < g_count; ++g) ReadRow(p.query, t, h * g_count + g, x->q.data() + g * s.dim_qk);
  nsa_attention_rows::AttendKeyList(x->q.data(), g_count, s.dim_qk, s.dim_v, s.scale, x->keys, x->values,
                                    x->scores.data(), x->stride, &x->stats, x->acc.data());
  for (int64_t g = 0; g < g_count; ++g) {
    const vec::RowStatistics& st = x->stats[static_cast<size_t>(g)];
    const float* e = x->scores.data() + g * x->stride;
    float* row = x->row.data();
    nsa_attention_rows::FinishRow(st, x->acc.data() + g * s.dim_v, s.dim_v, row);
    nsa_block_selection::AddProbabilities(st, e, keys, x->visible.data(), x->weights.data());
    WriteRow(p.out, t, h * g_count + g, row);
    WriteStatistic(p.softmax_max, t, h * g_count + g, st.max);
    WriteStatistic(p.softmax_sum, t, h * g_count + g, st.sum);
  }
}

// The block scores of (t, h) from x->weights, the top-k selection and its row of topkIndices.
void Select(const ForwardParams& p, const Sequence& seq, int64_t h, int64_t t, Scratch* x) {
  const AttentionShape& s = p.shape;
  const int64_t u = t - seq.q_start;
  const int64_t keys = seq.kv_end - seq.kv_start;
  const float* w = x->weights.data();
  nsa_block_selection::SelectBlocks(
      w, keys, s.select_per_cmp, s.cmp_per_stride, seq.select_blocks, s.select_count,
      [&](int64_t j) { return !(p.has_topk_mask && Masked(p.topk_mask, u, j)); }, &x->best);
  const TensorDesc& topk = p.topk;
  for (int64_t slot = 0; slot < s.select_count; ++slot) {
    const int32_t index = nsa_block_selection::SlotIndex(x->best, slot);
    std::memcpy(topk.ElementAt(topk.offset + t * topk.strides[0] + h * topk.strides[1] + slot * topk.strides[2]),
                &index, sizeof index);
  }
}

void RunItem(const ForwardParams& p, const Sequence& seq, int64_t h, int64_t t, Scratch* x) {
  const int64_t u = t - seq.q_start;
  const int64_t keys = seq.kv_end - seq.kv_start;
  x->keys.Clear();
  x->values.Clear();
  for (int64_t i = 0; i < keys; ++i) {
    if (p.has_atten_mask && Masked(p.atten_mask, u, i)) continue;
    x->visible[static_cast<size_t>(x->keys.count())] = i;
    x->keys.Add(seq.kv_start + i, h);
    x->values.Add(seq.kv_start + i, h);
  }
  std::fill(x->weights.begin(), x->weights.begin() + keys, 0.0f);
  Attend(p, h, t, x);
  Select(p, seq, h, t, x);
}

}  // namespace

aclnnStatus RunForwardCpu(const ForwardParams& params, void* /*workspace*/) {
  const AttentionShape& s = params.shape;
  if (s.q_tokens == 0) return ACLNN_SUCCESS;
  const std::vector<Sequence>& sequences = params.sequences;
  ParallelFor(s.kv_heads * s.q_tokens, kItemsPerChunk, [&](int64_t begin, int64_t end) {
    Scratch scratch(params);
    size_t seq = SequenceOfToken(sequences, begin % s.q_tokens);
    for (int64_t i = begin; i < end; ++i) {
      const int64_t h = i / s.q_tokens;
      const int64_t t = i % s.q_tokens;
      if (t < sequences[seq].q_start || t >= sequences[seq].q_end) seq = SequenceOfToken(sequences, t);
      RunItem(params, sequences[seq], h, t, &scratch);
    }
  });
  return ACLNN_SUCCESS;
}

}  // namespace pacl::nsa_compress_attention
