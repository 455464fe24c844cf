// Float64 reference of NsaSelectedAttention: the forward (aclnnNsaSelectedAttention) and its gradients
// (aclnnNsaSelectedAttentionGrad), written from CANN's documents' formulas and docs/ops/nsa_selected_attention.md's
// decisions, independently of src/: the yardstick of the operator tests.
//
// Semantics. Layout TND; sequence b owns query tokens [qs_b, qe_b) and key/value tokens [ks_b, ke_b) (cumulative
// ends, the arrays' entries). For query token t of sequence b and KV head h, slot c of topkIndices[t, h, :] holds a
// block index i: the key tokens ks_b + i * bs + j, j < bs - the Gather of the formula - if 0 <= i < (ke_b - ks_b) / bs,
// else nothing. Causal (sparseMode 2 with a mask): key position i * bs + j must not exceed t - qs_b (the mask of the
// formula, aligned at the sequences' starts). The surviving keys, in slot order then j, repeated as often as selected,
// are the row's key list (KeyList). For query head n (KV head n / G):
//   forward:  s_k = scale * (q . k_k), m = max s, l = sum exp(s - m), out = sum_k exp(s_k - m) / l * v_k;
//             an empty list gives out = 0, m = -inf, l = 0.
//   backward: with m, l as given: p_k = exp(s_k - m) / l, dp_k = dout . v_k, delta = dout . out (out as given),
//             ds_k = p_k (dp_k - delta); dq = scale * sum_k ds_k k_k; dk_k += scale * ds_k q, dv_k += p_k dout
//             over every occurrence of key k in every row's list; a row whose given max is -inf (the forward
//             gave it no weight) passes nothing back.
#ifndef PACL_OPS_NSA_SELECTED_ATTENTION_TEST_NSA_SELECTED_ATTENTION_REFERENCE_H_
#define PACL_OPS_NSA_SELECTED_ATTENTION_TEST_NSA_SELECTED_ATTENTION_REFERENCE_H_

#include <cstdint>
#include <vector>

namespace ref {

struct NsaSelectedAttentionShape {
  int64_t q_heads = 0, kv_heads = 0;  // N1, N2
  int64_t dim_qk = 0, dim_v = 0;      // D of query/key, of value
  int64_t block_size = 0, block_count = 0;
  bool causal = false;
  double scale = 1.0;
  std::vector<int64_t> q_ends, kv_ends;  // cumulative sequence ends (actualSeqQLen, actualSeqKvLen)

  int64_t QTokens() const { return q_ends.empty() ? 0 : q_ends.back(); }
  int64_t KvTokens() const { return kv_ends.empty() ? 0 : kv_ends.back(); }
};

// The key tokens (indices into key's dim 0) of query token t's list for KV head h. topk: (T1, N2, block_count)
// row-major, any int values.
std::vector<int64_t> NsaSelectedKeyList(const std::vector<int64_t>& topk, const NsaSelectedAttentionShape& s, int64_t t,
                                        int64_t h);

// Dense row-major float64 arrays: query (T1, N1, Dqk), key (T2, N2, Dqk), value (T2, N2, Dv); out (T1, N1, Dv),
// max and sum (T1, N1) - one value per row (the operator writes it 8 times) - are written whole.
void NsaSelectedAttentionForward(const double* query, const double* key, const double* value,
                                 const std::vector<int64_t>& topk, const NsaSelectedAttentionShape& s, double* out,
                                 double* max, double* sum);

// out and out_grad (T1, N1, Dv), max and sum (T1, N1) as given; dq, dk, dv like query, key, value, written whole.
void NsaSelectedAttentionBackward(const double* query, const double* key, const double* value, const double* out,
                                  const double* out_grad, const double* max, const double* sum,
                                  const std::vector<int64_t>& topk, const NsaSelectedAttentionShape& s, double* dq,
                                  double* dk, double* dv);

}  // namespace ref

#endif  // PACL_OPS_NSA_SELECTED_ATTENTION_TEST_NSA_SELECTED_ATTENTION_REFERENCE_H_
