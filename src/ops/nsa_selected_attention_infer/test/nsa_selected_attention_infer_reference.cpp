// Float64 reference of NsaSelectedAttentionInfer (the header says what it computes).
#include "nsa_selected_attention_infer/test/nsa_selected_attention_infer_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ref {

int64_t NsaSelectedInferShape::QTokens() const {
  int64_t total = 0;
  for (int64_t n : q_lengths) total += n;
  return total;
}

int64_t NsaSelectedInferShape::KvPositions() const {
  int64_t total = 0;
  for (int64_t n : kv_lengths) total += n;
  return total;
}

void NsaSelectedAttentionInfer(const double* query, const double* key, const double* value,
                               const std::vector<int64_t>& topk, const std::vector<uint8_t>& missing,
                               const NsaSelectedInferShape& s, double* out) {
  const int64_t group = s.q_heads / s.kv_heads;
  int64_t t = 0, kv_start = 0;
  for (size_t b = 0; b < s.q_lengths.size(); ++b) {
    const int64_t q_len = s.q_lengths[b], kv_len = s.kv_lengths[b];
    for (int64_t i = 0; i < q_len; ++i, ++t) {
      const int64_t position = kv_len - q_len + i;
      for (int64_t h = 0; h < s.kv_heads; ++h) {
        std::vector<int64_t> keys;  // global key rows, in slot order
        for (int64_t slot = 0; slot < s.block_count; ++slot) {
          const int64_t j = topk[static_cast<size_t>((t * s.kv_heads + h) * s.block_count + slot)];
          if (j < 0) continue;
          for (int64_t p = j * s.block_size; p < (j + 1) * s.block_size && p < kv_len && p <= position; ++p) {
            if (!missing.empty() && missing[static_cast<size_t>(kv_start + p)]) continue;
            keys.push_back(kv_start + p);
          }
        }
        for (int64_t g = 0; g < group; ++g) {
          const int64_t n = h * group + g;
          double* o = out + (t * s.q_heads + n) * s.dim_v;
          std::fill(o, o + s.dim_v, 0.0);
          if (keys.empty()) continue;
          const double* q = query + (t * s.q_heads + n) * s.dim_qk;
          std::vector<double> logits;
          for (int64_t k : keys) {
            const double* key_row = key + (k * s.kv_heads + h) * s.dim_qk;
            double dot = 0;
            for (int64_t d = 0; d < s.dim_qk; ++d) dot += q[d] * key_row[d];
            logits.push_back(s.scale * dot);
          }
          const double top = *std::max_element(logits.begin(), logits.end());
          double total = 0;
          for (double& l : logits) total += (l = std::exp(l - top));
          for (size_t k = 0; k < keys.size(); ++k) {
            const double* value_row = value + (keys[k] * s.kv_heads + h) * s.dim_v;
            for (int64_t d = 0; d < s.dim_v; ++d) o[d] += logits[k] / total * value_row[d];
          }
        }
      }
    }
    kv_start += kv_len;
  }
}

std::vector<double> PagedCache(const std::vector<double>& rows, int64_t row_size, const NsaSelectedInferShape& s,
                               const std::vector<int64_t>& table, int64_t columns, int64_t pages,
                               int64_t page_block_size) {
  std::vector<double> cache(static_cast<size_t>(pages * page_block_size * row_size),
                            std::numeric_limits<double>::quiet_NaN());
  int64_t start = 0;
  for (size_t b = 0; b < s.kv_lengths.size(); ++b) {
    for (int64_t p = 0; p < s.kv_lengths[b]; ++p) {
      const int64_t page = table[b * static_cast<size_t>(columns) + static_cast<size_t>(p / page_block_size)];
      if (page < 0 || page >= pages) continue;
      std::copy(rows.begin() + (start + p) * row_size, rows.begin() + (start + p + 1) * row_size,
                cache.begin() + (page * page_block_size + p % page_block_size) * row_size);
    }
    start += s.kv_lengths[b];
  }
  return cache;
}

std::vector<uint8_t> MissingPositions(const NsaSelectedInferShape& s, const std::vector<int64_t>& table,
                                      int64_t columns, int64_t pages, int64_t page_block_size) {
  std::vector<uint8_t> missing;
  for (size_t b = 0; b < s.kv_lengths.size(); ++b) {
    for (int64_t p = 0; p < s.kv_lengths[b]; ++p) {
      const int64_t page = table[b * static_cast<size_t>(columns) + static_cast<size_t>(p / page_block_size)];
      missing.push_back(page < 0 || page >= pages ? 1 : 0);
    }
  }
  return missing;
}

std::vector<double> PadRows(const std::vector<double>& rows, int64_t row_size, const NsaSelectedInferShape& s,
                            int64_t s_len, double fill) {
  std::vector<double> padded(s.q_lengths.size() * static_cast<size_t>(s_len * row_size), fill);
  int64_t t = 0;
  for (size_t b = 0; b < s.q_lengths.size(); ++b) {
    for (int64_t i = 0; i < s.q_lengths[b]; ++i, ++t) {
      std::copy(rows.begin() + t * row_size, rows.begin() + (t + 1) * row_size,
                padded.begin() + (static_cast<int64_t>(b) * s_len + i) * row_size);
    }
  }
  return padded;
}

}  // namespace ref
