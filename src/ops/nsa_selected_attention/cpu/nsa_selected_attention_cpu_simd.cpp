// The vector loops of the NsaSelectedAttention CPU kernels, once per SIMD target (Highway's foreach_target re-includes
// this file), with the functions that call the best target's (nsa_selected_attention_cpu_simd.h). The algorithm,
// layouts and sum orders are in the NOTE of nsa_selected_attention_cpu.cpp.
#include <cmath>
#include <cstdint>
#include <limits>

#include "nsa_selected_attention/cpu/nsa_selected_attention_cpu_simd.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nsa_selected_attention/cpu/nsa_selected_attention_cpu_simd.cpp"
// foreach_target.h must come first: it re-includes this file once per target.
// clang-format off
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "pacl/canonical_math-inl.h"
#include "pacl/float_vectors-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace pacl::nsa_selected_attention {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// At most 16 lanes: the canonical sum's partial sums are whole vectors of DF, and a row (a multiple of 16 long) is
// whole vectors of it.
using DF = pacl::HWY_NAMESPACE::DSum;
using DF1 = hn::CappedTag<float, 1>;
using pacl::HWY_NAMESPACE::CanonicalSum;
using pacl::HWY_NAMESPACE::Exp;
using pacl::HWY_NAMESPACE::FusedMulAdd;
using pacl::HWY_NAMESPACE::kSumLanes;
using pacl::HWY_NAMESPACE::kVectorRegisters;
using pacl::HWY_NAMESPACE::LoadRowLanes;
using pacl::HWY_NAMESPACE::VectorArray;

// ---------------------------------------------------------------------------------------------------------------
// Dot products.

// One dot product in the canonical order, through CanonicalSum (the scalar and scalable targets; the reference the
// tiles below reproduce bit for bit).
template <int kKind>
float CanonicalDot(const float* a, const void* b, int64_t dim) {
  return CanonicalSum(static_cast<size_t>(dim), [&](DF d, hn::Vec<DF> acc, size_t first, size_t /*count*/) {
    // dim is a multiple of 16, so every step has whole vectors (count == Lanes(d)).
    const auto i = static_cast<int64_t>(first);
    return FusedMulAdd(d, hn::LoadU(d, a + i), LoadRowLanes<kKind>(d, b, i), acc);
  });
}

#if HWY_TARGET != HWY_SCALAR && !HWY_HAVE_SCALABLE
// Vectors per dot product: the 16 partial sums of the canonical order.
constexpr int kPartialVectors = static_cast<int>(kSumLanes / hn::MaxLanes(DF()));
// Dot products a tile keeps in registers: half the registers hold partial sums.
constexpr int kTileDots = kVectorRegisters / 2 / kPartialVectors;
constexpr int kTileA = kTileDots >= 16 ? 4 : kTileDots >= 4 ? 2 : 1;
constexpr int kTileB = kTileDots >= 16 ? 4 : kTileDots >= 2 ? 2 : 1;

// kA x kB dot products (rows r0.. of a, c0.. of b), each b vector loaded (and widened) once for the kA rows of a
// and each a vector once for the kB rows of b. Partial sum p of a dot product accumulates the terms i = p mod 16 in
// ascending i from zero, and the partials are added by the canonical tree: CanonicalDot's bits.
template <int kKind, int kA, int kB>
HWY_INLINE void DotTile(const DotJob& job, int64_t r0, int64_t c0) {
  const DF d;
  constexpr int64_t kLanes = static_cast<int64_t>(hn::MaxLanes(DF()));
  VectorArray<DF, kA * kB * kPartialVectors> acc;
  #pragma GCC unroll 64
  for (int s = 0; s < kA * kB * kPartialVectors; ++s) acc.Set(d, s, hn::Zero(d));
  const float* a[kA];
  const void* b[kB];
  #pragma GCC unroll 8
  for (int r = 0; r < kA; ++r) a[r] = job.a + (r0 + r) * job.a_stride;
  #pragma GCC unroll 8
  for (int c = 0; c < kB; ++c) b[c] = job.b[c0 + c];
  for (int64_t i = 0; i < job.dim; i += static_cast<int64_t>(kSumLanes)) {
    #pragma GCC unroll 4
    for (int v = 0; v < kPartialVectors; ++v) {
      const int64_t x = i + v * kLanes;
      VectorArray<DF, kB> bv;
      #pragma GCC unroll 8
      for (int c = 0; c < kB; ++c) bv.Set(d, c, LoadRowLanes<kKind>(d, b[c], x));
      #pragma GCC unroll 8
      for (int r = 0; r < kA; ++r) {
        const auto av = hn::LoadU(d, a[r] + x);
        #pragma GCC unroll 8
        for (int c = 0; c < kB; ++c) {
          const int s = (r * kB + c) * kPartialVectors + v;
          acc.Set(d, s, FusedMulAdd(d, av, bv.Get(d, c), acc.Get(d, s)));
        }
      }
    }
  }
  #pragma GCC unroll 8
  for (int r = 0; r < kA; ++r) {
    #pragma GCC unroll 8
    for (int c = 0; c < kB; ++c) {
      // SumOfAccumulators reads the vectors that hold partials (1, 2 or 4 of them).
      const int s = (r * kB + c) * kPartialVectors;
      const int last = kPartialVectors - 1;
      const float sum = pacl::HWY_NAMESPACE::SumOfAccumulators(d, acc.Get(d, s), acc.Get(d, s + (last >= 1 ? 1 : 0)),
                                                              acc.Get(d, s + (last >= 2 ? 2 : 0)),
                                                              acc.Get(d, s + (last >= 3 ? 3 : 0)));
      job.out[(r0 + r) * job.out_stride + c0 + c] = sum * job.multiplier;
    }
  }
}

template <int kKind, int kA>
HWY_INLINE void DotRowsOfTile(const DotJob& job, int64_t r0) {
  int64_t c = 0;
  for (; c + kTileB <= job.b_count; c += kTileB) DotTile<kKind, kA, kTileB>(job, r0, c);
  for (; c < job.b_count; ++c) DotTile<kKind, kA, 1>(job, r0, c);
}

template <int kKind>
void DotT(const DotJob& job) {
  int64_t r = 0;
  for (; r + kTileA <= job.a_count; r += kTileA) DotRowsOfTile<kKind, kTileA>(job, r);
  for (; r < job.a_count; ++r) DotRowsOfTile<kKind, 1>(job, r);
}
#else
template <int kKind>
void DotT(const DotJob& job) {
  for (int64_t r = 0; r < job.a_count; ++r) {
    for (int64_t c = 0; c < job.b_count; ++c) {
      job.out[r * job.out_stride + c] = CanonicalDot<kKind>(job.a + r * job.a_stride, job.b[c], job.dim) *
                                        job.multiplier;
    }
  }
}
#endif

void Dot(const DotJob& job) {
  if (job.b_kind == kHalfRow) return DotT<kHalfRow>(job);
  if (job.b_kind == kBFloat16Row) return DotT<kBFloat16Row>(job);
  DotT<kFloatRow>(job);
}

// ---------------------------------------------------------------------------------------------------------------
// Weighted sums of rows: lanes are output elements, each one's chain of fused multiply-adds in term order.

constexpr int kAccumulateOutputs = 4;
constexpr int kAccumulateVectors = kVectorRegisters >= 32 ? 4 : 2;

template <int kKind, int kO, int kW>
HWY_INLINE void AccumulateTile(const AccumulateJob& job, int64_t o0, int64_t x0) {
  const DF d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  VectorArray<DF, kO * kW> acc;
  #pragma GCC unroll 16
  for (int o = 0; o < kO; ++o) {
    #pragma GCC unroll 16
    for (int v = 0; v < kW; ++v) acc.Set(d, o * kW + v, hn::LoadU(d, job.out + (o0 + o) * job.out_stride + x0 + v * lanes));
  }
  const float* weights = job.weights + o0 * job.weight_out_stride;
  for (int64_t i = 0; i < job.term_count; ++i) {
    const void* row = job.rows[i];
    VectorArray<DF, kW> x;
    #pragma GCC unroll 16
    for (int v = 0; v < kW; ++v) x.Set(d, v, LoadRowLanes<kKind>(d, row, x0 + v * lanes));
    const float* w = weights + i * job.weight_term_stride;
    #pragma GCC unroll 16
    for (int o = 0; o < kO; ++o) {
      const auto wo = hn::Set(d, w[o * job.weight_out_stride]);
      #pragma GCC unroll 16
      for (int v = 0; v < kW; ++v) acc.Set(d, o * kW + v, FusedMulAdd(d, wo, x.Get(d, v), acc.Get(d, o * kW + v)));
    }
  }
  #pragma GCC unroll 16
  for (int o = 0; o < kO; ++o) {
    #pragma GCC unroll 16
    for (int v = 0; v < kW; ++v) hn::StoreU(acc.Get(d, o * kW + v), d, job.out + (o0 + o) * job.out_stride + x0 + v * lanes);
  }
}

template <int kKind, int kO>
HWY_INLINE void AccumulateOutputs(const AccumulateJob& job, int64_t o0) {
  const auto lanes = static_cast<int64_t>(hn::Lanes(DF()));
  int64_t x = 0;
  for (; x + kAccumulateVectors * lanes <= job.dim; x += kAccumulateVectors * lanes) {
    AccumulateTile<kKind, kO, kAccumulateVectors>(job, o0, x);
  }
  for (; x < job.dim; x += lanes) AccumulateTile<kKind, kO, 1>(job, o0, x);
}

template <int kKind>
void AccumulateT(const AccumulateJob& job) {
  if (job.term_count == 0) return;
  int64_t o = 0;
  for (; o + kAccumulateOutputs <= job.out_count; o += kAccumulateOutputs) {
    AccumulateOutputs<kKind, kAccumulateOutputs>(job, o);
  }
  for (; o < job.out_count; ++o) AccumulateOutputs<kKind, 1>(job, o);
}

void Accumulate(const AccumulateJob& job) {
  if (job.row_kind == kHalfRow) return AccumulateT<kHalfRow>(job);
  if (job.row_kind == kBFloat16Row) return AccumulateT<kBFloat16Row>(job);
  AccumulateT<kFloatRow>(job);
}

// ---------------------------------------------------------------------------------------------------------------
// Softmax rows.

// e^x, NaN where x is NaN (Exp's result for NaN is unspecified).
template <class D>
HWY_INLINE hn::Vec<D> ExpOrNaN(D d, hn::Vec<D> x) {
  return hn::IfThenElse(hn::Eq(x, x), Exp(d, x), x);
}

RowStatistics SoftmaxRow(float* scores, int64_t n) {
  const DF d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  constexpr float kInf = std::numeric_limits<float>::infinity();
  // The maximum (exact in any order) and whether any score is NaN.
  auto max = hn::Set(d, -kInf);
  auto nan = hn::Zero(d);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto s = hn::LoadU(d, scores + i);
    max = hn::Max(max, hn::IfThenElse(hn::Eq(s, s), s, max));
    nan = hn::Or(nan, hn::VecFromMask(d, hn::Ne(s, s)));
  }
  float row_max = hn::GetLane(hn::MaxOfLanes(d, max));
  bool any_nan = !hn::AllTrue(d, hn::Eq(nan, hn::Zero(d)));
  for (; i < n; ++i) {
    if (std::isnan(scores[i])) any_nan = true;
    if (scores[i] > row_max) row_max = scores[i];
  }
  if (any_nan) return {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::quiet_NaN()};
  if (row_max == -kInf) return {-kInf, 0.0f};
  if (row_max == kInf) return {kInf, std::numeric_limits<float>::quiet_NaN()};
  // e = exp(score - max), in place.
  const auto m = hn::Set(d, row_max);
  for (i = 0; i + lanes <= n; i += lanes) {
    hn::StoreU(Exp(d, hn::Sub(hn::LoadU(d, scores + i), m)), d, scores + i);
  }
  const DF1 d1;
  for (; i < n; ++i) {
    hn::StoreU(Exp(d1, hn::Sub(hn::LoadU(d1, scores + i), hn::Set(d1, row_max))), d1, scores + i);
  }
  // The canonical sum of the e (every term >= +0, so the masked-off lanes' +0 leave the partial sums unchanged).
  const float sum = CanonicalSum(static_cast<size_t>(n), [&](DF dd, hn::Vec<DF> acc, size_t first, size_t count) {
    if (count == hn::Lanes(dd)) return hn::Add(acc, hn::LoadU(dd, scores + first));
    HWY_ALIGN float lane_values[kSumLanes] = {};
    for (size_t k = 0; k < count; ++k) lane_values[k] = scores[first + k];
    return hn::Add(acc, hn::LoadU(dd, lane_values));
  });
  return {row_max, sum};
}

void GradRow(const float* scores, const float* dp, int64_t n, float max, float sum, float delta, float* p,
             float* ds) {
  const DF d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  if (max == -std::numeric_limits<float>::infinity()) {
    // The forward found no key carrying weight (every score -inf): nothing flows back.
    for (; i < n; ++i) p[i] = ds[i] = 0.0f;
    return;
  }
  for (; i + lanes <= n; i += lanes) {
    const auto pv = hn::Div(ExpOrNaN(d, hn::Sub(hn::LoadU(d, scores + i), hn::Set(d, max))), hn::Set(d, sum));
    hn::StoreU(pv, d, p + i);
    hn::StoreU(hn::Mul(pv, hn::Sub(hn::LoadU(d, dp + i), hn::Set(d, delta))), d, ds + i);
  }
  const DF1 d1;
  for (; i < n; ++i) {
    const auto pv = hn::Div(ExpOrNaN(d1, hn::Sub(hn::LoadU(d1, scores + i), hn::Set(d1, max))), hn::Set(d1, sum));
    hn::StoreU(pv, d1, p + i);
    hn::StoreU(hn::Mul(pv, hn::Sub(hn::LoadU(d1, dp + i), hn::Set(d1, delta))), d1, ds + i);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace pacl::nsa_selected_attention
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pacl::nsa_selected_attention {

HWY_EXPORT(Dot);
HWY_EXPORT(Accumulate);
HWY_EXPORT(SoftmaxRow);
HWY_EXPORT(GradRow);

namespace simd {

void Dot(const DotJob& job) { HWY_DYNAMIC_DISPATCH(Dot)(job); }
void Accumulate(const AccumulateJob& job) { HWY_DYNAMIC_DISPATCH(Accumulate)(job); }
RowStatistics SoftmaxRow(float* scores, int64_t n) { return HWY_DYNAMIC_DISPATCH(SoftmaxRow)(scores, n); }
void GradRow(const float* scores, const float* dp, int64_t n, float max, float sum, float delta, float* p,
             float* ds) {
  HWY_DYNAMIC_DISPATCH(GradRow)(scores, dp, n, max, sum, delta, p, ds);
}

}  // namespace simd
}  // namespace pacl::nsa_selected_attention
#endif  // HWY_ONCE
