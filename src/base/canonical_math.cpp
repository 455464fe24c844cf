// The arithmetic of pacl/canonical_math-inl.h compiled for every SIMD target, for the tests (pacl/canonical_math.h).
#include "pacl/canonical_math.h"

#include <cstddef>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "canonical_math.cpp"
// foreach_target.h must come first: it re-includes this file once per target.
// clang-format off
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "pacl/canonical_math-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace pacl::canonical_testing {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using pacl::HWY_NAMESPACE::DSum;

// The whole vectors of n elements, then the rest through a zero-padded stack vector: calls fn(d, in..., out) with
// pointers to Lanes(d) elements of each row.
template <class Fn>
void ForEachVector(int64_t n, const float* const* rows, int count, float* out, Fn&& fn) {
  const DSum d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  const float* at[3] = {};
  for (; i + lanes <= n; i += lanes) {
    for (int r = 0; r < count; ++r) at[r] = rows[r] + i;
    fn(d, at, out + i);
  }
  if (i == n) return;
  HWY_ALIGN float padded[3][hn::MaxLanes(DSum())] = {};
  HWY_ALIGN float result[hn::MaxLanes(DSum())];
  for (int r = 0; r < count; ++r) {
    std::memcpy(padded[r], rows[r] + i, static_cast<size_t>(n - i) * sizeof(float));
    at[r] = padded[r];
  }
  fn(d, at, result);
  std::memcpy(out + i, result, static_cast<size_t>(n - i) * sizeof(float));
}

void ExpRow(const float* x, float* out, int64_t n) {
  const float* rows[1] = {x};
  ForEachVector(n, rows, 1, out, [](DSum d, const float* const* in, float* o) {
    hn::StoreU(pacl::HWY_NAMESPACE::Exp(d, hn::LoadU(d, in[0])), d, o);
  });
}

void ExpNormalRangeRow(const float* x, float* out, int64_t n) {
  const float* rows[1] = {x};
  ForEachVector(n, rows, 1, out, [](DSum d, const float* const* in, float* o) {
    hn::StoreU(pacl::HWY_NAMESPACE::ExpNormalRange(d, hn::LoadU(d, in[0])), d, o);
  });
}

void FusedMulAddRow(const float* a, const float* b, const float* c, float* out, int64_t n) {
  const float* rows[3] = {a, b, c};
  ForEachVector(n, rows, 3, out, [](DSum d, const float* const* in, float* o) {
    hn::StoreU(pacl::HWY_NAMESPACE::FusedMulAdd(d, hn::LoadU(d, in[0]), hn::LoadU(d, in[1]), hn::LoadU(d, in[2])), d,
               o);
  });
}

float CanonicalDot(const float* a, const float* b, int64_t n) {
  return pacl::HWY_NAMESPACE::CanonicalSum(static_cast<size_t>(n), [&](DSum d, hn::Vec<DSum> acc, size_t first,
                                                                       size_t count) {
    HWY_ALIGN float a_lanes[hn::MaxLanes(DSum())] = {};
    HWY_ALIGN float b_lanes[hn::MaxLanes(DSum())] = {};
    std::memcpy(a_lanes, a + first, count * sizeof(float));
    std::memcpy(b_lanes, b + first, count * sizeof(float));
    return pacl::HWY_NAMESPACE::FusedMulAdd(d, hn::Load(d, a_lanes), hn::Load(d, b_lanes), acc);
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace pacl::canonical_testing
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pacl::canonical_testing {

HWY_EXPORT(ExpRow);
HWY_EXPORT(ExpNormalRangeRow);
HWY_EXPORT(FusedMulAddRow);
HWY_EXPORT(CanonicalDot);

void ExpRow(const float* x, float* out, int64_t n) { HWY_DYNAMIC_DISPATCH(ExpRow)(x, out, n); }

void ExpNormalRangeRow(const float* x, float* out, int64_t n) { HWY_DYNAMIC_DISPATCH(ExpNormalRangeRow)(x, out, n); }

void FusedMulAddRow(const float* a, const float* b, const float* c, float* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(FusedMulAddRow)(a, b, c, out, n);
}

float CanonicalDot(const float* a, const float* b, int64_t n) { return HWY_DYNAMIC_DISPATCH(CanonicalDot)(a, b, n); }

}  // namespace pacl::canonical_testing
#endif  // HWY_ONCE
