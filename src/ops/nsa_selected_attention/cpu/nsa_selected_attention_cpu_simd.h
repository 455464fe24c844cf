// The vector loops of the NsaSelectedAttention CPU kernels (nsa_selected_attention_cpu.cpp), compiled for every SIMD
// target in nsa_selected_attention_cpu_simd.cpp and called for the best one the CPU runs (Highway's dynamic
// dispatch). Every result is the same bits on every target (the NOTE in nsa_selected_attention_cpu.cpp).
#ifndef PACL_OPS_NSA_SELECTED_ATTENTION_CPU_NSA_SELECTED_ATTENTION_CPU_SIMD_H_
#define PACL_OPS_NSA_SELECTED_ATTENTION_CPU_NSA_SELECTED_ATTENTION_CPU_SIMD_H_

#include <cstdint>

#include "pacl/convert.h"

namespace pacl::nsa_selected_attention {

// Rows' dims (D) are multiples of this (128 or 192 by phase 1's rules): the canonical sum's 16 partial sums, and
// every vector width up to 16 lanes, divide a row exactly.
inline constexpr int64_t kDimMultiple = 16;

// out[r * out_stride + c] = multiplier * (a_r . b_c) for r < a_count, c < b_count: each dot product in the
// canonical order of pacl/canonical_math-inl.h (16 partial sums of fused multiply-adds, a fixed tree), then one
// multiplication.
struct DotJob {
  const float* a = nullptr;  // a_count fp32 rows, row r at a + r * a_stride
  int64_t a_stride = 0;
  int64_t a_count = 0;
  const void* const* b = nullptr;  // b_count rows of b_kind
  int b_kind = kFloatRow;
  int64_t b_count = 0;
  int64_t dim = 0;  // a multiple of kDimMultiple
  float multiplier = 1.0f;
  float* out = nullptr;
  int64_t out_stride = 0;
};

// out[o * out_stride + x] += sum over i < term_count, ascending, of
// weights[o * weight_out_stride + i * weight_term_stride] * rows[i][x], for o < out_count and x < dim: a fused
// multiply-add per term and element, each element's chain in term order (the same bits on every vector width).
struct AccumulateJob {
  float* out = nullptr;
  int64_t out_stride = 0;
  int64_t out_count = 0;
  const float* weights = nullptr;
  int64_t weight_out_stride = 0;
  int64_t weight_term_stride = 0;
  const void* const* rows = nullptr;  // term_count rows of row_kind
  int row_kind = kFloatRow;
  int64_t term_count = 0;
  int64_t dim = 0;  // a multiple of kDimMultiple
};

// The softmax statistics of one row of n scores (n >= 1): max (NaN when any score is NaN), and, when max is finite,
// the scores replaced by e = exp(score - max) and sum = their canonical sum; when max is not finite, the scores are
// left alone and sum is 0 (max -inf: every score -inf) or NaN (max NaN or +inf).
struct RowStatistics {
  float max = 0.0f;
  float sum = 0.0f;
};

namespace simd {
void Dot(const DotJob& job);
void Accumulate(const AccumulateJob& job);
RowStatistics SoftmaxRow(float* scores, int64_t n);
// The backward's probabilities and score gradients of one row: p[i] = exp(scores[i] - max) / sum (NaN where the
// difference is NaN) and ds[i] = p[i] * (dp[i] - delta), i < n; all 0 when max is -inf (the forward's row without
// weight).
void GradRow(const float* scores, const float* dp, int64_t n, float max, float sum, float delta, float* p, float* ds);
}  // namespace simd

}  // namespace pacl::nsa_selected_attention

#endif  // PACL_OPS_NSA_SELECTED_ATTENTION_CPU_NSA_SELECTED_ATTENTION_CPU_SIMD_H_
