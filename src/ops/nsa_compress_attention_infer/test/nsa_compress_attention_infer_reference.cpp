// Float64 reference of NsaCompressAttentionInfer (the header says what it computes).
#include "nsa_compress_attention_infer/test/nsa_compress_attention_infer_reference.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ref {

int64_t NsaCompressInferShape::QTokens() const {
  return std::accumulate(q_lengths.begin(), q_lengths.end(), int64_t{0});
}

int64_t NsaCompressInferShape::CmpTokens() const {
  return std::accumulate(cmp_lengths.begin(), cmp_lengths.end(), int64_t{0});
}

NsaCompressInferResult NsaCompressAttentionInfer(const double* query, const double* key, const double* value,
                                                 const std::vector<uint8_t>& missing, const NsaCompressInferShape& s) {
  const int64_t group = s.q_heads / s.kv_heads;
  const int64_t l = s.compress_block_size, d = s.compress_stride;
  const int64_t r = s.select_block_size / d, c = l / d;
  NsaCompressInferResult result;
  result.out.assign(static_cast<size_t>(s.QTokens() * s.q_heads * s.dim_v), 0.0);
  result.topk.assign(static_cast<size_t>(s.QTokens() * s.kv_heads * s.select_count), -1);
  int64_t t = 0, cmp_start = 0;
  for (size_t b = 0; b < s.q_lengths.size(); ++b) {
    const int64_t q_len = s.q_lengths[b], cmp_len = s.cmp_lengths[b];
    const int64_t blocks = (cmp_len + r - 1) / r;
    for (int64_t i = 0; i < q_len; ++i, ++t) {
      int64_t visible = cmp_len;
      if (!s.sel_lengths.empty()) {
        const int64_t position = s.sel_lengths[b] - q_len + i;
        visible = 0;
        while (visible < cmp_len && visible * d + l - 1 <= position) ++visible;
      }
      for (int64_t h = 0; h < s.kv_heads; ++h) {
        std::vector<int64_t> keys;  // compressed token indices within the entry
        for (int64_t k = 0; k < visible; ++k) {
          if (missing.empty() || !missing[static_cast<size_t>(cmp_start + k)]) keys.push_back(k);
        }
        std::vector<double> w(static_cast<size_t>(cmp_len), 0.0);
        for (int64_t g = 0; g < group && !keys.empty(); ++g) {
          const int64_t n = h * group + g;
          const double* q = query + (t * s.q_heads + n) * s.dim_qk;
          std::vector<double> logits;
          for (int64_t k : keys) {
            const double* key_row = key + ((cmp_start + k) * s.kv_heads + h) * s.dim_qk;
            double dot = 0;
            for (int64_t e = 0; e < s.dim_qk; ++e) dot += q[e] * key_row[e];
            logits.push_back(s.scale * dot);
          }
          const double top = *std::max_element(logits.begin(), logits.end());
          double total = 0;
          for (double& v : logits) total += (v = std::exp(v - top));
          double* o = result.out.data() + (t * s.q_heads + n) * s.dim_v;
          for (size_t k = 0; k < keys.size(); ++k) {
            const double p = logits[k] / total;
            w[static_cast<size_t>(keys[k])] += p;
            const double* value_row = value + ((cmp_start + keys[k]) * s.kv_heads + h) * s.dim_v;
            for (int64_t e = 0; e < s.dim_v; ++e) o[e] += p * value_row[e];
          }
        }
        std::vector<double> scores(static_cast<size_t>(blocks), 0.0);
        for (int64_t j = 0; j < blocks; ++j) {
          for (int64_t m = 0; m < r; ++m) {
            for (int64_t n = 0; n < c; ++n) {
              const int64_t k = r * j - m - n;
              if (k >= 0 && k < cmp_len) scores[static_cast<size_t>(j)] += w[static_cast<size_t>(k)];
            }
          }
        }
        std::vector<int64_t> order(static_cast<size_t>(blocks));
        std::iota(order.begin(), order.end(), int64_t{0});
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b2) {
          return scores[static_cast<size_t>(a)] > scores[static_cast<size_t>(b2)];
        });
        for (int64_t slot = 0; slot < s.select_count && slot < blocks; ++slot) {
          result.topk[static_cast<size_t>((t * s.kv_heads + h) * s.select_count + slot)] =
              order[static_cast<size_t>(slot)];
        }
        result.scores.push_back(std::move(scores));
      }
    }
    cmp_start += cmp_len;
  }
  return result;
}

}  // namespace ref
