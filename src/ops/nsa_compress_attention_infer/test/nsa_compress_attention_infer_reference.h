// Float64 reference of NsaCompressAttentionInfer (aclnnNsaCompressAttentionInfer), written from CANN's document's
// formula and docs/ops/nsa_compress_attention_infer.md's decisions, independently of src/: the yardstick of the
// operator tests. It sees the compressed key/value cache as each batch entry's compressed tokens in order (the tests
// page them with NsaSelectedAttentionInfer's test helpers).
//
// Batch entry b: q_b query tokens and K_b compressed tokens. Token i sees the compressed tokens k < V: K_b in the
// single-token form (sel_lengths empty); in the multi-token form, with raw position p = sel_b - q_b + i, those whose
// window [k d, k d + l) ends at or before p. Tokens marked missing (their page number invalid) are left out. Query
// head n (KV head h = n / G): P = softmax(scale * q . k) over the list, out = P v (0 for an empty list). Per (token,
// h): w_k = sum of the group's P_k, score_j = sum_{m < r} sum_{n < c} w[r j - m - n] (r = l' / d, c = l / d, indices
// outside [0, K_b) left out) for the ceil(K_b / r) blocks j; the selection is the select_count best, higher score
// first, equal scores by lower j, -1 past the blocks.
#ifndef PACL_OPS_NSA_COMPRESS_ATTENTION_INFER_TEST_NSA_COMPRESS_ATTENTION_INFER_REFERENCE_H_
#define PACL_OPS_NSA_COMPRESS_ATTENTION_INFER_TEST_NSA_COMPRESS_ATTENTION_INFER_REFERENCE_H_

#include <cstdint>
#include <vector>

namespace ref {

struct NsaCompressInferShape {
  int64_t q_heads = 0, kv_heads = 0;  // N1, N2
  int64_t dim_qk = 0, dim_v = 0;
  int64_t compress_block_size = 0, compress_stride = 0;  // l, d
  int64_t select_block_size = 0, select_count = 0;       // l', selectBlockCount
  double scale = 1.0;
  std::vector<int64_t> q_lengths, cmp_lengths;  // per batch entry
  std::vector<int64_t> sel_lengths;             // the multi-token form's raw lengths; empty: single-token
  int64_t QTokens() const;                      // sum of q_lengths
  int64_t CmpTokens() const;                    // sum of cmp_lengths
};

struct NsaCompressInferResult {
  std::vector<double> out;                  // (QTokens, N1, Dv)
  std::vector<int64_t> topk;                // (QTokens, N2, select_count)
  std::vector<std::vector<double>> scores;  // per (token, h): the block scores
};

// query (QTokens, N1, Dqk); key (CmpTokens, N2, Dqk), value (CmpTokens, N2, Dv): each entry's compressed tokens in
// order, the entries back to back; missing: empty, or CmpTokens flags.
NsaCompressInferResult NsaCompressAttentionInfer(const double* query, const double* key, const double* value,
                                                 const std::vector<uint8_t>& missing, const NsaCompressInferShape& s);

}  // namespace ref

#endif  // PACL_OPS_NSA_COMPRESS_ATTENTION_INFER_TEST_NSA_COMPRESS_ATTENTION_INFER_REFERENCE_H_
