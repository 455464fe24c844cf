#include "nsa_selected_attention/test/nsa_selected_attention_reference.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

namespace ref {
namespace {

size_t At(int64_t i) { return static_cast<size_t>(i); }

// The sequence holding query token t: its index b (q_ends[b - 1] <= t < q_ends[b]).
size_t SequenceOf(const NsaSelectedAttentionShape& s, int64_t t) {
  size_t b = 0;
  while (s.q_ends[b] <= t) ++b;
  return b;
}

double Dot(const double* a, const double* b, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace

std::vector<int64_t> NsaSelectedKeyList(const std::vector<int64_t>& topk, const NsaSelectedAttentionShape& s, int64_t t,
                                        int64_t h) {
  const size_t b = SequenceOf(s, t);
  const int64_t q_start = b == 0 ? 0 : s.q_ends[b - 1];
  const int64_t kv_start = b == 0 ? 0 : s.kv_ends[b - 1];
  const int64_t kv_length = s.kv_ends[b] - kv_start;
  const int64_t position = t - q_start;
  std::vector<int64_t> keys;
  for (int64_t c = 0; c < s.block_count; ++c) {
    const int64_t block = topk[At((t * s.kv_heads + h) * s.block_count + c)];
    for (int64_t j = 0; j < s.block_size; ++j) {
      const int64_t key_position = block * s.block_size + j;  // within the sequence
      if (block < 0 || key_position >= kv_length) continue;
      if (s.causal && key_position > position) continue;
      keys.push_back(kv_start + key_position);
    }
  }
  return keys;
}

void NsaSelectedAttentionForward(const double* query, const double* key, const double* value,
                                 const std::vector<int64_t>& topk, const NsaSelectedAttentionShape& s, double* out,
                                 double* max, double* sum) {
  const int64_t group = s.q_heads / s.kv_heads;
  for (int64_t t = 0; t < s.QTokens(); ++t) {
    for (int64_t n = 0; n < s.q_heads; ++n) {
      const int64_t h = n / group;
      const std::vector<int64_t> keys = NsaSelectedKeyList(topk, s, t, h);
      const double* q = query + At((t * s.q_heads + n) * s.dim_qk);
      double* o = out + At((t * s.q_heads + n) * s.dim_v);
      std::fill(o, o + s.dim_v, 0.0);
      std::vector<double> scores;
      for (int64_t k : keys) scores.push_back(s.scale * Dot(q, key + At((k * s.kv_heads + h) * s.dim_qk), s.dim_qk));
      double m = -std::numeric_limits<double>::infinity();
      for (double score : scores) m = std::max(m, score);
      double l = 0.0;
      for (double score : scores) l += std::exp(score - m);
      max[At(t * s.q_heads + n)] = m;
      sum[At(t * s.q_heads + n)] = l;
      for (size_t i = 0; i < keys.size(); ++i) {
        const double p = std::exp(scores[i] - m) / l;
        const double* v = value + At((keys[i] * s.kv_heads + h) * s.dim_v);
        for (int64_t d = 0; d < s.dim_v; ++d) o[d] += p * v[d];
      }
    }
  }
}

void NsaSelectedAttentionBackward(const double* query, const double* key, const double* value, const double* out,
                                  const double* out_grad, const double* max, const double* sum,
                                  const std::vector<int64_t>& topk, const NsaSelectedAttentionShape& s, double* dq,
                                  double* dk, double* dv) {
  const int64_t group = s.q_heads / s.kv_heads;
  std::fill(dq, dq + s.QTokens() * s.q_heads * s.dim_qk, 0.0);
  std::fill(dk, dk + s.KvTokens() * s.kv_heads * s.dim_qk, 0.0);
  std::fill(dv, dv + s.KvTokens() * s.kv_heads * s.dim_v, 0.0);
  for (int64_t t = 0; t < s.QTokens(); ++t) {
    for (int64_t n = 0; n < s.q_heads; ++n) {
      const int64_t h = n / group;
      const size_t row = At(t * s.q_heads + n);
      // A row the forward gave no weight (max -inf: no key, or every score -inf) passes nothing back.
      if (max[row] == -std::numeric_limits<double>::infinity()) continue;
      const std::vector<int64_t> keys = NsaSelectedKeyList(topk, s, t, h);
      const double* q = query + row * At(s.dim_qk);
      const double* dout = out_grad + row * At(s.dim_v);
      const double delta = Dot(dout, out + row * At(s.dim_v), s.dim_v);
      double* dq_row = dq + row * At(s.dim_qk);
      for (int64_t k : keys) {
        const double* key_row = key + At((k * s.kv_heads + h) * s.dim_qk);
        const double* value_row = value + At((k * s.kv_heads + h) * s.dim_v);
        const double p = std::exp(s.scale * Dot(q, key_row, s.dim_qk) - max[row]) / sum[row];
        const double ds = p * (Dot(dout, value_row, s.dim_v) - delta);
        double* dk_row = dk + At((k * s.kv_heads + h) * s.dim_qk);
        double* dv_row = dv + At((k * s.kv_heads + h) * s.dim_v);
        for (int64_t d = 0; d < s.dim_qk; ++d) {
          dq_row[d] += s.scale * ds * key_row[d];
          dk_row[d] += s.scale * ds * q[d];
        }
        for (int64_t d = 0; d < s.dim_v; ++d) dv_row[d] += p * dout[d];
      }
    }
  }
}

}  // namespace ref
