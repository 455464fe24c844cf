// Test hooks for the per-target arithmetic of pacl/canonical_math-inl.h (the multiply-add, the canonical sum and
// the exponential the kernels share), compiled for every SIMD target in libnnopbase and dispatched like the
// kernels, so that tests can check each target's bits (pacl::convert_testing::SetSimdTargetsForTest picks one).
#ifndef PACL_CANONICAL_MATH_H_
#define PACL_CANONICAL_MATH_H_

#include <cstdint>

#include "pacl/export.h"

namespace pacl::canonical_testing {

// out[i] = e^x[i] (pacl's Exp), for i < n.
PACL_INTERNAL_API void ExpRow(const float* x, float* out, int64_t n);
// The same through ExpNormalRange (x[i] in [-86, 86] only).
PACL_INTERNAL_API void ExpNormalRangeRow(const float* x, float* out, int64_t n);
// out[i] = a[i] * b[i] + c[i] with one rounding (FusedMulAdd), for i < n.
PACL_INTERNAL_API void FusedMulAddRow(const float* a, const float* b, const float* c, float* out, int64_t n);
// sum over i < n of a[i] * b[i] (each a fused multiply-add into its partial sum), in the canonical order.
PACL_INTERNAL_API float CanonicalDot(const float* a, const float* b, int64_t n);
// sums[j] = the canonical dot of rows[j] and b (j < 4), through CanonicalSums4, or with whole_vectors through
// CanonicalSums4WholeVectors; false (sums untouched) when whole_vectors is asked for and n is not a multiple of the
// target's vector length.
PACL_INTERNAL_API bool CanonicalDots4(const float* const* rows, const float* b, int64_t n, bool whole_vectors,
                                      float* sums);

}  // namespace pacl::canonical_testing

#endif  // PACL_CANONICAL_MATH_H_
