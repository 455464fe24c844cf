// Float64 reference of NsaCompressAttention (aclnnNsaCompressAttention), written from CANN's document's formulas and
// docs/ops/nsa_compress_attention.md's decisions, independently of src/: the yardstick of the operator tests.
//
// Semantics. Layout TND; sequence b owns query tokens [qs_b, qe_b) and compressed key/value tokens [ks_b, ke_b)
// (cumulative ends), K_b = ke_b - ks_b, and S_b = ceil(K_b / (l' / d)) select blocks. For query token t (position
// u = t - qs_b) compressed key i < K_b takes part unless atten_mask[u][i] is nonzero. Query head n (KV head n / G):
//   s_i = scale * (q . k_i), m = max s, l = sum exp(s - m), P[n][i] = exp(s_i - m) / l (0 for masked keys),
//   out = sum_i P[n][i] v_i; softmaxMax = m, softmaxSum = l; no visible key: out = 0, m = -inf, l = 0, P = 0.
// Importance, per (t, KV head h) and block j < S_b:
//   score[j] = sum over the G heads n of group h of sum_{a < l'/d} sum_{c < l/d} P[n][(l'/d) j - a - c]
// (indices outside [0, K_b) contribute nothing). Blocks with topk_mask[u][j] nonzero are not candidates; the
// selection lists the selectBlockCount best candidates by score (higher first, equal scores by ascending j), then -1.
#ifndef PACL_OPS_NSA_COMPRESS_ATTENTION_TEST_NSA_COMPRESS_ATTENTION_REFERENCE_H_
#define PACL_OPS_NSA_COMPRESS_ATTENTION_TEST_NSA_COMPRESS_ATTENTION_REFERENCE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ref {

struct NsaCompressAttentionShape {
  int64_t q_heads = 0, kv_heads = 0;  // N1, N2
  int64_t dim_qk = 0, dim_v = 0;      // D of query/key, of value
  int64_t compress_block_size = 0, compress_stride = 0, select_block_size = 0, select_count = 0;
  double scale = 1.0;
  std::vector<int64_t> q_ends, cmp_ends;  // cumulative sequence ends (actualSeqQLen, actualCmpSeqKvLen)
  // Row-major masks, empty when not given: atten_mask (max S_q, max K_b), topk_mask (max S_q, max S_b).
  std::vector<uint8_t> atten_mask, topk_mask;

  int64_t QTokens() const { return q_ends.empty() ? 0 : q_ends.back(); }
  int64_t KvTokens() const { return cmp_ends.empty() ? 0 : cmp_ends.back(); }
  int64_t Batch() const { return static_cast<int64_t>(q_ends.size()); }
  int64_t QStart(int64_t b) const { return b == 0 ? 0 : q_ends[static_cast<size_t>(b - 1)]; }
  int64_t KvStart(int64_t b) const { return b == 0 ? 0 : cmp_ends[static_cast<size_t>(b - 1)]; }
  int64_t KvLength(int64_t b) const { return cmp_ends[static_cast<size_t>(b)] - KvStart(b); }
  int64_t SelectBlocks(int64_t b) const;  // ceil(K_b / (l' / d))
  int64_t MaxQLength() const;
  int64_t MaxKvLength() const;
  int64_t MaxSelectBlocks() const;
  std::vector<int64_t> SelEnds() const;  // actualSelSeqKvLen: cumulative S_b
};

struct NsaCompressAttentionResult {
  std::vector<double> out;       // (T1, N1, Dv)
  std::vector<double> max, sum;  // (T1, N1): one value per row (the operator writes it 8 times)
  // (T1, N2, max S_b): score[j] of each (t, h) for j < S_b of t's sequence, NaN beyond; and whether block j is a
  // candidate (topk_mask allows it, j < S_b).
  std::vector<double> block_score;
  std::vector<uint8_t> candidate;
  std::vector<int64_t> topk;  // (T1, N2, select_count): the selection by these exact scores
};

// Dense row-major float64 arrays: query (T1, N1, Dqk), key (T2, N2, Dqk), value (T2, N2, Dv).
NsaCompressAttentionResult NsaCompressAttentionForward(const double* query, const double* key, const double* value,
                                                       const NsaCompressAttentionShape& s);

// A selection (topkIndices, (T1, N2, select_count), as doubles) checked against the reference's scores, for the
// operator tests and the demo: every slot holds a distinct candidate block, -1 exactly where fewer blocks are
// candidates than slots, and slot k's block scores within `allowed` of the k-th best candidate score, where
// allowed = score_bound[block] + the largest score_bound among the row's candidates (score_bound: (T1, N2, max S_b),
// a bound on the operator's error in each score; the fp32 scores may order near-ties differently).
struct SelectionCheck {
  double max_gap = 0;                 // the largest |score of the chosen block - the slot's best score|
  int64_t problems = 0;               // slots that break a rule
  std::vector<std::string> messages;  // the first ten of them: "topkIndices[t, h, slot] = x: what"
};
SelectionCheck CheckSelection(const NsaCompressAttentionShape& s, const NsaCompressAttentionResult& expected,
                              const std::vector<double>& score_bound, const std::vector<double>& topk);

}  // namespace ref

#endif  // PACL_OPS_NSA_COMPRESS_ATTENTION_TEST_NSA_COMPRESS_ATTENTION_REFERENCE_H_
