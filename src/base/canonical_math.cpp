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

bool CanonicalDots4(const float* const* rows, const float* b, int64_t n, bool whole_vectors, float* sums) {
  using V = hn::Vec<DSum>;
  const size_t length = static_cast<size_t>(n);
  if (whole_vectors) {
    if (length % hn::Lanes(DSum()) != 0) return false;
    pacl::HWY_NAMESPACE::CanonicalSums4WholeVectors(
        length,
        [&](DSum d, size_t first, V& acc0, V& acc1, V& acc2, V& acc3) {
          const V bv = hn::LoadU(d, b + first);
          acc0 = pacl::HWY_NAMESPACE::FusedMulAdd(d, hn::LoadU(d, rows[0] + first), bv, acc0);
          acc1 = pacl::HWY_NAMESPACE::FusedMulAdd(d, hn::LoadU(d, rows[1] + first), bv, acc1);
          acc2 = pacl::HWY_NAMESPACE::FusedMulAdd(d, hn::LoadU(d, rows[2] + first), bv, acc2);
          acc3 = pacl::HWY_NAMESPACE::FusedMulAdd(d, hn::LoadU(d, rows[3] + first), bv, acc3);
        },
        sums);
    return true;
  }
  pacl::HWY_NAMESPACE::CanonicalSums4(
      length,
      [&](DSum d, size_t first, size_t count, V& acc0, V& acc1, V& acc2, V& acc3) {
        // Lanes count and up of the operands are zero, so those of the sums stay unchanged.
        HWY_ALIGN float lanes[5][hn::MaxLanes(DSum())] = {};
        std::memcpy(lanes[4], b + first, count * sizeof(float));
        for (int j = 0; j < 4; ++j) std::memcpy(lanes[j], rows[j] + first, count * sizeof(float));
        const V bv = hn::Load(d, lanes[4]);
        acc0 = pacl::HWY_NAMESPACE::FusedMulAdd(d, hn::Load(d, lanes[0]), bv, acc0);
        acc1 = pacl::HWY_NAMESPACE::FusedMulAdd(d, hn::Load(d, lanes[1]), bv, acc1);
        acc2 = pacl::HWY_NAMESPACE::FusedMulAdd(d, hn::Load(d, lanes[2]), bv, acc2);
        acc3 = pacl::HWY_NAMESPACE::FusedMulAdd(d, hn::Load(d, lanes[3]), bv, acc3);
      },
      sums);
  return true;
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
HWY_EXPORT(CanonicalDots4);

void ExpRow(const float* x, float* out, int64_t n) { HWY_DYNAMIC_DISPATCH(ExpRow)(x, out, n); }

void ExpNormalRangeRow(const float* x, float* out, int64_t n) { HWY_DYNAMIC_DISPATCH(ExpNormalRangeRow)(x, out, n); }

void FusedMulAddRow(const float* a, const float* b, const float* c, float* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(FusedMulAddRow)(a, b, c, out, n);
}

float CanonicalDot(const float* a, const float* b, int64_t n) { return HWY_DYNAMIC_DISPATCH(CanonicalDot)(a, b, n); }

bool CanonicalDots4(const float* const* rows, const float* b, int64_t n, bool whole_vectors, float* sums) {
  return HWY_DYNAMIC_DISPATCH(CanonicalDots4)(rows, b, n, whole_vectors, sums);
}

}  // namespace pacl::canonical_testing
#endif  // HWY_ONCE
