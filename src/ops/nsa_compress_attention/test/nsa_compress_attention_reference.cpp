// Float64 reference of NsaCompressAttention: see nsa_compress_attention_reference.h.
#include "nsa_compress_attention/test/nsa_compress_attention_reference.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

namespace ref {

int64_t NsaCompressAttentionShape::SelectBlocks(int64_t b) const {
  const int64_t per_block = select_block_size / compress_stride;
  return (KvLength(b) + per_block - 1) / per_block;
}

int64_t NsaCompressAttentionShape::MaxQLength() const {
  int64_t longest = 0;
  for (int64_t b = 0; b < Batch(); ++b) longest = std::max(longest, q_ends[static_cast<size_t>(b)] - QStart(b));
  return longest;
}

int64_t NsaCompressAttentionShape::MaxKvLength() const {
  int64_t longest = 0;
  for (int64_t b = 0; b < Batch(); ++b) longest = std::max(longest, KvLength(b));
  return longest;
}

int64_t NsaCompressAttentionShape::MaxSelectBlocks() const {
  int64_t longest = 0;
  for (int64_t b = 0; b < Batch(); ++b) longest = std::max(longest, SelectBlocks(b));
  return longest;
}

std::vector<int64_t> NsaCompressAttentionShape::SelEnds() const {
  std::vector<int64_t> ends;
  int64_t end = 0;
  for (int64_t b = 0; b < Batch(); ++b) ends.push_back(end += SelectBlocks(b));
  return ends;
}

NsaCompressAttentionResult NsaCompressAttentionForward(const double* query, const double* key, const double* value,
                                                       const NsaCompressAttentionShape& s) {
  const int64_t t1 = s.QTokens(), n1 = s.q_heads, n2 = s.kv_heads, g = n1 / n2;
  const int64_t dqk = s.dim_qk, dv = s.dim_v;
  const int64_t max_k = s.MaxKvLength(), max_sel = s.MaxSelectBlocks();
  const int64_t r = s.select_block_size / s.compress_stride, c = s.compress_block_size / s.compress_stride;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  NsaCompressAttentionResult res;
  res.out.assign(static_cast<size_t>(t1 * n1 * dv), 0.0);
  res.max.assign(static_cast<size_t>(t1 * n1), -std::numeric_limits<double>::infinity());
  res.sum.assign(static_cast<size_t>(t1 * n1), 0.0);
  res.block_score.assign(static_cast<size_t>(t1 * n2 * max_sel), nan);
  res.candidate.assign(static_cast<size_t>(t1 * n2 * max_sel), 0);
  res.topk.assign(static_cast<size_t>(t1 * n2 * s.select_count), -1);
  std::vector<double> p(static_cast<size_t>(n1 * max_k));  // P of the current token, per head
  for (int64_t b = 0; b < s.Batch(); ++b) {
    const int64_t k_b = s.KvLength(b), ks = s.KvStart(b), sel_b = s.SelectBlocks(b);
    for (int64_t t = s.QStart(b); t < s.q_ends[static_cast<size_t>(b)]; ++t) {
      const int64_t u = t - s.QStart(b);
      auto visible = [&](int64_t i) { return s.atten_mask.empty() || s.atten_mask[static_cast<size_t>(u * max_k + i)] == 0; };
      std::fill(p.begin(), p.end(), 0.0);
      for (int64_t n = 0; n < n1; ++n) {
        const int64_t h = n / g;
        std::vector<double> score(static_cast<size_t>(k_b), 0.0);
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t i = 0; i < k_b; ++i) {
          if (!visible(i)) continue;
          double dot = 0.0;
          for (int64_t d = 0; d < dqk; ++d) dot += query[(t * n1 + n) * dqk + d] * key[((ks + i) * n2 + h) * dqk + d];
          score[static_cast<size_t>(i)] = s.scale * dot;
          m = std::max(m, score[static_cast<size_t>(i)]);
        }
        if (m == -std::numeric_limits<double>::infinity()) continue;  // no visible key
        double l = 0.0;
        for (int64_t i = 0; i < k_b; ++i) {
          if (visible(i)) l += std::exp(score[static_cast<size_t>(i)] - m);
        }
        res.max[static_cast<size_t>(t * n1 + n)] = m;
        res.sum[static_cast<size_t>(t * n1 + n)] = l;
        for (int64_t i = 0; i < k_b; ++i) {
          if (!visible(i)) continue;
          const double pi = std::exp(score[static_cast<size_t>(i)] - m) / l;
          p[static_cast<size_t>(n * max_k + i)] = pi;
          for (int64_t d = 0; d < dv; ++d) {
            res.out[static_cast<size_t>((t * n1 + n) * dv + d)] += pi * value[((ks + i) * n2 + h) * dv + d];
          }
        }
      }
      for (int64_t h = 0; h < n2; ++h) {
        const size_t row = static_cast<size_t>((t * n2 + h) * max_sel);
        for (int64_t j = 0; j < sel_b; ++j) {
          double total = 0.0;
          for (int64_t n = h * g; n < (h + 1) * g; ++n) {
            for (int64_t a = 0; a < r; ++a) {
              for (int64_t cc = 0; cc < c; ++cc) {
                const int64_t i = r * j - a - cc;
                if (i >= 0 && i < k_b) total += p[static_cast<size_t>(n * max_k + i)];
              }
            }
          }
          res.block_score[row + static_cast<size_t>(j)] = total;
          res.candidate[row + static_cast<size_t>(j)] =
              s.topk_mask.empty() || s.topk_mask[static_cast<size_t>(u * max_sel + j)] == 0;
        }
        std::vector<int64_t> order;
        for (int64_t j = 0; j < sel_b; ++j) {
          if (res.candidate[row + static_cast<size_t>(j)]) order.push_back(j);
        }
        std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
          return res.block_score[row + static_cast<size_t>(x)] > res.block_score[row + static_cast<size_t>(y)];
        });
        for (int64_t slot = 0; slot < s.select_count && slot < static_cast<int64_t>(order.size()); ++slot) {
          res.topk[static_cast<size_t>((t * n2 + h) * s.select_count + slot)] = order[static_cast<size_t>(slot)];
        }
      }
    }
  }
  return res;
}

SelectionCheck CheckSelection(const NsaCompressAttentionShape& s, const NsaCompressAttentionResult& expected,
                              const std::vector<double>& score_bound, const std::vector<double>& topk) {
  const int64_t n2 = s.kv_heads, count = s.select_count, max_sel = s.MaxSelectBlocks();
  SelectionCheck check;
  for (int64_t b = 0; b < s.Batch(); ++b) {
    for (int64_t t = s.QStart(b); t < s.q_ends[static_cast<size_t>(b)]; ++t) {
      for (int64_t h = 0; h < n2; ++h) {
        const size_t row = static_cast<size_t>((t * n2 + h) * max_sel);
        std::vector<double> best;  // the candidates' scores, best first
        double largest_bound = 0.0;
        for (int64_t j = 0; j < s.SelectBlocks(b); ++j) {
          if (!expected.candidate[row + static_cast<size_t>(j)]) continue;
          best.push_back(expected.block_score[row + static_cast<size_t>(j)]);
          largest_bound = std::max(largest_bound, score_bound[row + static_cast<size_t>(j)]);
        }
        std::sort(best.begin(), best.end(), std::greater<double>());
        std::vector<int64_t> seen;
        for (int64_t slot = 0; slot < count; ++slot) {
          const double actual = topk[static_cast<size_t>((t * n2 + h) * count + slot)];
          const auto block = static_cast<int64_t>(actual);
          std::string problem;
          if (slot >= static_cast<int64_t>(best.size())) {
            if (actual != -1.0) problem = "expected -1 (fewer candidates than slots)";
          } else if (actual != static_cast<double>(block) || block < 0 || block >= s.SelectBlocks(b) ||
                     !expected.candidate[row + static_cast<size_t>(block)]) {
            problem = "not a candidate block";
          } else if (std::find(seen.begin(), seen.end(), block) != seen.end()) {
            problem = "repeated";
          } else {
            const size_t j = row + static_cast<size_t>(block);
            const double gap = std::fabs(expected.block_score[j] - best[static_cast<size_t>(slot)]);
            check.max_gap = std::max(check.max_gap, gap);
            if (gap > score_bound[j] + largest_bound) {
              problem = "score " + std::to_string(expected.block_score[j]) + ", but the slot's best is " +
                        std::to_string(best[static_cast<size_t>(slot)]);
            }
            seen.push_back(block);
          }
          if (problem.empty()) continue;
          if (check.problems++ < 10) {
            check.messages.push_back("topkIndices[" + std::to_string(t) + ", " + std::to_string(h) + ", " +
                                     std::to_string(slot) + "] = " + std::to_string(actual) + ": " + problem);
          }
        }
      }
    }
  }
  return check;
}

}  // namespace ref
