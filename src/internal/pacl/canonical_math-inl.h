// Per-target (Highway) arithmetic that gives the same bits on every SIMD target: the multiply-add, the sum of many
// terms and the exponential the kernels use. Include it after hwy/highway.h from a file compiled once per target
// through hwy/foreach_target.h.
//
// NOTE [One arithmetic on every target]
// A golden reference must be reproducible bit for bit on any machine, so a kernel's result may depend on the shape,
// never on the instruction set Highway picked (AVX-512, AVX2, SSE4, the scalar baseline; NEON/SVE on Arm). Three
// things differ between targets unless the code pins them down:
// - Fused or unfused multiply-adds. AVX2, AVX-512 and Arm have an FMA instruction (one rounding); SSE4 and the
//   portable baselines do not, and Highway's MulAdd is a multiply and an add there (two roundings). FusedMulAdd
//   below is always fused: the FMA instruction where the target has one, else float lanes are computed exactly in
//   double precision and rounded once (FusedMulAddViaDouble), other types by std::fma. Every other multiply and
//   add is unfused on every target: the libraries build with -ffp-contract=off, so the compiler never fuses on its
//   own.
// - The order of a sum over a row. A vector accumulator holds lane l of every Lanes(d)-th term, so its partial sums
//   depend on the vector width. CanonicalSum keeps kSumLanes = 16 partial sums whatever the width (term i goes to
//   partial i % 16, terms in ascending order; 1 vector of them on AVX-512, 2 on AVX2, 4 on SSE4/NEON, 16 scalars on
//   the scalar baseline) and adds the 16 partials by one fixed tree (SumOf16Lanes): pairs (l, l + 8), then
//   (l, l + 4), (l, l + 2), (l, l + 1). A target wider than 16 lanes uses 16 of them.
// - Library functions. Highway's Exp evaluates its polynomial with MulAdd (fused on some targets only); Exp below
//   uses FusedMulAdd and exact operations only.
// Everything else the kernels use is exact or correctly rounded on every target (IEEE add, sub, mul, div, sqrt,
// floor, conversions, min/max of non-NaN values), so these three rules give identical bits. NaN results are NaN on
// every target, but which NaN (its sign and payload) is not pinned down.
#if defined(PACL_CANONICAL_MATH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef PACL_CANONICAL_MATH_INL_H_
#undef PACL_CANONICAL_MATH_INL_H_
#else
#define PACL_CANONICAL_MATH_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hwy/highway.h"
#include "pacl/host_device.h"

HWY_BEFORE_NAMESPACE();
namespace pacl {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The number of partial sums of CanonicalSum, whatever the vector width.
inline constexpr size_t kSumLanes = 16;

// A float tag of at most kSumLanes lanes: the vectors CanonicalSum's partial sums live in.
using DSum = hn::CappedTag<float, kSumLanes>;

#if !HWY_NATIVE_FMA
// a * b + c for floats, rounded once as std::fma rounds it, on targets without an FMA instruction (std::fma lane by
// lane is a call per lane, and on a CPU without an FMA unit glibc's software routine: the SSE4 kernels took 7.5-24x
// as long with it, README "Supported platforms"). In double precision the product of two floats is exact (48
// significant bits); the sum is rounded to odd (TwoSum gives the error of the sum rounded to nearest exactly, which
// says where the exact value lies), and a double rounded to odd and then to float is the correctly rounded float,
// since 53 >= 24 + 2 bits (the odd bit stands for everything below). Neither step can overflow or lose a subnormal:
// double's range holds every product and sum of floats. Scalar twin of the vector FusedMulAddViaDouble below, for
// the scalar target (whose Highway DemoteTo clamps infinities).
inline float FusedMulAddViaDouble(float a, float b, float c) {
  const double product = static_cast<double>(a) * static_cast<double>(b);
  const double sum = product + static_cast<double>(c);
  const double c_part = sum - product;
  const double error = (product - (sum - c_part)) + (static_cast<double>(c) - c_part);
  int64_t bits;
  std::memcpy(&bits, &sum, sizeof bits);
  // Rounded to odd: truncated towards zero (one step down in magnitude where the error has the other sign), and the
  // last bit set, where inexact. error is NaN where sum is Inf or NaN (for float inputs), and then left alone.
  if (std::fabs(error) > 0.0) bits = (bits - (std::signbit(error) != std::signbit(sum) ? 1 : 0)) | 1;
  double odd;
  std::memcpy(&odd, &bits, sizeof odd);
  return static_cast<float>(odd);
}

// The same on at most two float lanes, in a vector of as many doubles.
template <class D>
HWY_INLINE hn::Vec<D> FusedMulAddViaDouble(D d, hn::Vec<D> a, hn::Vec<D> b, hn::Vec<D> c) {
  const hn::Rebind<double, D> dd;
  const hn::RebindToSigned<decltype(dd)> di;
  const auto product = hn::Mul(hn::PromoteTo(dd, a), hn::PromoteTo(dd, b));
  const auto addend = hn::PromoteTo(dd, c);
  const auto sum = hn::Add(product, addend);
  const auto c_part = hn::Sub(sum, product);
  const auto error = hn::Add(hn::Sub(product, hn::Sub(sum, c_part)), hn::Sub(addend, c_part));
  const auto bits = hn::BitCast(di, sum);
  // All ones where inexact (error is NaN where sum is Inf or NaN), and where the error has the other sign.
  const auto inexact = hn::BitCast(di, hn::VecFromMask(dd, hn::Gt(hn::Abs(error), hn::Zero(dd))));
  const auto opposite = hn::VecFromMask(di, hn::Lt(hn::Xor(hn::BitCast(di, error), bits), hn::Zero(di)));
  const auto odd = hn::Or(hn::Add(bits, hn::And(opposite, inexact)), hn::And(inexact, hn::Set(di, 1)));
  return hn::DemoteTo(d, hn::BitCast(dd, odd));
}
#endif  // !HWY_NATIVE_FMA

// a * b + c with one rounding, on every target.
template <class D>
HWY_INLINE hn::Vec<D> FusedMulAdd(D d, hn::Vec<D> a, hn::Vec<D> b, hn::Vec<D> c) {
#if HWY_NATIVE_FMA
  (void)d;
  return hn::MulAdd(a, b, c);
#else
  using T = hn::TFromD<D>;
#if HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128  // (Highway's scalar DemoteTo clamps infinities)
  if constexpr (std::is_same_v<T, float>) {
    // 128-bit vectors: two float lanes per vector of doubles.
    if constexpr (hn::MaxLanes(D()) <= 2) {
      return FusedMulAddViaDouble(d, a, b, c);
    } else {
      const hn::Half<D> dh;
      const auto upper = FusedMulAddViaDouble(dh, hn::UpperHalf(dh, a), hn::UpperHalf(dh, b), hn::UpperHalf(dh, c));
      return hn::Combine(d, upper,
                         FusedMulAddViaDouble(dh, hn::LowerHalf(dh, a), hn::LowerHalf(dh, b), hn::LowerHalf(dh, c)));
    }
  }
#endif
  HWY_ALIGN T la[hn::MaxLanes(D())];
  HWY_ALIGN T lb[hn::MaxLanes(D())];
  HWY_ALIGN T lc[hn::MaxLanes(D())];
  hn::Store(a, d, la);
  hn::Store(b, d, lb);
  hn::Store(c, d, lc);
  for (size_t i = 0; i < hn::Lanes(d); ++i) {
    if constexpr (std::is_same_v<T, float>) {
      la[i] = FusedMulAddViaDouble(la[i], lb[i], lc[i]);
    } else {
      la[i] = std::fma(la[i], lb[i], lc[i]);
    }
  }
  return hn::Load(d, la);
#endif
}

// The sum of partial[0..16) by the fixed tree: (l, l + 8), then (l, l + 4), (l, l + 2), (l, l + 1), the lower lane
// always the left operand.
HWY_INLINE float SumOf16Lanes(const float* partial) {
#if HWY_TARGET == HWY_SCALAR
  float level[8];
  for (int l = 0; l < 8; ++l) level[l] = partial[l] + partial[l + 8];
  for (int l = 0; l < 4; ++l) level[l] = level[l] + level[l + 4];
  for (int l = 0; l < 2; ++l) level[l] = level[l] + level[l + 2];
  return level[0] + level[1];
#else
  const hn::Full128<float> d4;
  const auto v0 = hn::LoadU(d4, partial);
  const auto v1 = hn::LoadU(d4, partial + 4);
  const auto v2 = hn::LoadU(d4, partial + 8);
  const auto v3 = hn::LoadU(d4, partial + 12);
  const auto s4 = hn::Add(hn::Add(v0, v2), hn::Add(v1, v3));  // lane l: (l, l + 8) then (l, l + 4)
  const auto s2 = hn::Add(s4, hn::Shuffle1032(s4));           // lane l < 2: (l, l + 2)
  const auto s1 = hn::Add(s2, hn::Shuffle2301(s2));           // lane 0: (0, 1)
  return hn::GetLane(s1);
#endif
}

#if HWY_TARGET != HWY_SCALAR
// SumOf16Lanes of the 16 partials held in registers as 16 / Lanes(d) vectors (acc0 lanes [0, L), acc1 [L, 2L), ...),
// by the same tree without a round trip through memory: on 16 lanes the halves of acc0, on 8 lanes acc0 + acc1,
// on 4 lanes (acc0 + acc2) and (acc1 + acc3), give level (l, l + 8); then halves again down to 128 bits.
template <class V>
HWY_INLINE float SumOf4LanesOf128(V s4) {  // lanes (l, l + 2), then (0, 1)
  const V s2 = hn::Add(s4, hn::Shuffle1032(s4));
  return hn::GetLane(hn::Add(s2, hn::Shuffle2301(s2)));
}

template <class V>
HWY_INLINE float SumOfAccumulators(DSum d, V acc0, V acc1, V acc2, V acc3) {
#if HWY_HAVE_SCALABLE
  // The lane count is known at run time only: through memory.
  const size_t lanes = hn::Lanes(d);
  HWY_ALIGN float partial[kSumLanes];
  hn::Store(acc0, d, partial);
  if (lanes <= 8) hn::Store(acc1, d, partial + lanes);
  if (lanes == 4) {
    hn::Store(acc2, d, partial + 2 * lanes);
    hn::Store(acc3, d, partial + 3 * lanes);
  }
  return SumOf16Lanes(partial);
#else
  (void)d;
  constexpr size_t kLanes = hn::MaxLanes(DSum());
  if constexpr (kLanes == 16) {
    const hn::Half<DSum> d8;
    const hn::Half<decltype(d8)> d4;
    const auto s8 = hn::Add(hn::LowerHalf(d8, acc0), hn::UpperHalf(d8, acc0));
    return SumOf4LanesOf128(hn::Add(hn::LowerHalf(d4, s8), hn::UpperHalf(d4, s8)));
  } else if constexpr (kLanes == 8) {
    const hn::Half<DSum> d4;
    const auto s8 = hn::Add(acc0, acc1);
    return SumOf4LanesOf128(hn::Add(hn::LowerHalf(d4, s8), hn::UpperHalf(d4, s8)));
  } else {
    return SumOf4LanesOf128(hn::Add(hn::Add(acc0, acc2), hn::Add(acc1, acc3)));
  }
#endif
}
#endif  // HWY_TARGET != HWY_SCALAR

#if HWY_TARGET != HWY_SCALAR && !HWY_HAVE_SCALABLE
// The rest of four canonical sums' trees once level (l, l + 8) is done: sum j's 8 level values are the lanes of an
// 8-lane vector (a8, b8, c8, e8) of tag D8. The four trees are transposed: the same additions, so the same bits,
// with the four sums sharing each shuffle and add (about half the operations of four reductions, and one dependency
// chain instead of four).
template <class D8, class V8>
HWY_INLINE void SumsOf4Level8(D8 d, V8 a8, V8 b8, V8 c8, V8 e8, float* sums) {
  const hn::Repartition<uint64_t, D8> d64;
  // Level (l, l + 4): lanes [0, 4) of sum 0 and [4, 8) of sum 1 in ab, likewise ce.
  const V8 ab = hn::Add(hn::ConcatLowerLower(d, b8, a8), hn::ConcatUpperUpper(d, b8, a8));
  const V8 ce = hn::Add(hn::ConcatLowerLower(d, e8, c8), hn::ConcatUpperUpper(d, e8, c8));
  // Level (l, l + 2): block 0 holds lanes (0, 1) of sums 0 and 2, block 1 those of sums 1 and 3.
  const V8 low_pairs = hn::BitCast(d, hn::InterleaveLower(d64, hn::BitCast(d64, ab), hn::BitCast(d64, ce)));
  const V8 high_pairs = hn::BitCast(d, hn::InterleaveUpper(d64, hn::BitCast(d64, ab), hn::BitCast(d64, ce)));
  const V8 pairs = hn::Add(low_pairs, high_pairs);
  // Level (l, l + 1): sums 0, 2 in lanes 0, 2; sums 1, 3 in lanes 4, 6.
  const V8 total = hn::Add(pairs, hn::Shuffle2301(pairs));
  HWY_ALIGN float lanes[8];
  hn::Store(total, d, lanes);
  sums[0] = lanes[0];
  sums[1] = lanes[4];
  sums[2] = lanes[2];
  sums[3] = lanes[6];
}

// Four SumOfAccumulators on an 8-lane target (sum j's partials in vectors xj0, xj1) in one transposed tree.
template <class V>
HWY_INLINE void SumsOf4Accumulators8(V a0, V a1, V b0, V b1, V c0, V c1, V e0, V e1, float* sums) {
  SumsOf4Level8(DSum(), hn::Add(a0, a1), hn::Add(b0, b1), hn::Add(c0, c1), hn::Add(e0, e1), sums);
}

// Four SumOfAccumulators on a 16-lane target (sum j's partials in one vector) in one transposed tree: level
// (l, l + 8) adds each vector's halves, then as on 8 lanes.
template <class V>
HWY_INLINE void SumsOf4Accumulators16(V a, V b, V c, V e, float* sums) {
  const hn::Half<DSum> d8;
  auto level8 = [&](V x) { return hn::Add(hn::LowerHalf(d8, x), hn::UpperHalf(d8, x)); };
  SumsOf4Level8(d8, level8(a), level8(b), level8(c), level8(e), sums);
}
#endif

// Sums n terms in the canonical order (see the NOTE): partial k accumulates the terms i = k, k + 16, k + 32, ... in
// ascending order, starting from +0, and the 16 partials are added by SumOf16Lanes.
// step(d, acc, first, count) returns acc with the terms first .. first + count - 1 accumulated into its lanes
// 0 .. count - 1 (how a term is accumulated - an add, a fused multiply-add - is the caller's), and lanes count and
// up unchanged; count is Lanes(d) except for the last, partial vector of the row. d is DSum (4, 8 or 16 lanes;
// 1 on the scalar baseline).
template <class Step>
HWY_INLINE float CanonicalSum(size_t n, Step&& step) {
  const DSum d;
#if HWY_TARGET == HWY_SCALAR
  float partial[kSumLanes] = {};
  for (size_t i = 0; i < n; ++i) {
    partial[i % kSumLanes] = hn::GetLane(step(d, hn::Set(d, partial[i % kSumLanes]), i, size_t{1}));
  }
  return SumOf16Lanes(partial);
#else
  const size_t lanes = hn::Lanes(d);  // 4, 8 or 16: lanes * vectors == kSumLanes
  const size_t vectors = kSumLanes / lanes;
  auto acc0 = hn::Zero(d);
  auto acc1 = hn::Zero(d);
  auto acc2 = hn::Zero(d);
  auto acc3 = hn::Zero(d);
  size_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes) {
    acc0 = step(d, acc0, i, lanes);
    if (vectors >= 2) acc1 = step(d, acc1, i + lanes, lanes);
    if (vectors == 4) {
      acc2 = step(d, acc2, i + 2 * lanes, lanes);
      acc3 = step(d, acc3, i + 3 * lanes, lanes);
    }
  }
  // The last, partial group of 16 terms: whole vectors, then one partial vector.
  size_t rest = n - i;
  auto tail_step = [&](hn::Vec<DSum> acc, size_t first) {
    const size_t count = rest < lanes ? rest : lanes;
    rest -= count;
    return count == 0 ? acc : step(d, acc, first, count);
  };
  acc0 = tail_step(acc0, i);
  if (vectors >= 2) acc1 = tail_step(acc1, i + lanes);
  if (vectors == 4) {
    acc2 = tail_step(acc2, i + 2 * lanes);
    acc3 = tail_step(acc3, i + 3 * lanes);
  }
  return SumOfAccumulators(d, acc0, acc1, acc2, acc3);
#endif
}

// Whether CanonicalSums4 walks the terms once for all four sums (every target but the scalar baseline). On the
// scalar baseline it calls the step once per sum, with the other accumulators unused: a step with side effects (a
// store) may be given to it only where this is true.
HWY_INLINE bool CanonicalSums4InOneWalk() { return HWY_TARGET != HWY_SCALAR; }

#if HWY_TARGET != HWY_SCALAR
// The four sums of CanonicalSums4 from their partials (sum j's in the vectors xj0 .. xj3, as CanonicalSums4 fills
// them).
template <class V>
HWY_INLINE void SumsOf4Partials(V a0, V a1, V a2, V a3, V b0, V b1, V b2, V b3, V c0, V c1, V c2, V c3, V e0, V e1,
                                V e2, V e3, float* sums) {
#if !HWY_HAVE_SCALABLE
  if constexpr (hn::MaxLanes(DSum()) == 8) {
    SumsOf4Accumulators8(a0, a1, b0, b1, c0, c1, e0, e1, sums);
    return;
  } else if constexpr (hn::MaxLanes(DSum()) == 16) {
    SumsOf4Accumulators16(a0, b0, c0, e0, sums);
    return;
  }
#endif
  // (SumOfAccumulators reads the vectors that hold partials: acc0 on 16 lanes, acc0 and acc1 on 8.)
  const DSum d;
  sums[0] = SumOfAccumulators(d, a0, a1, a2, a3);
  sums[1] = SumOfAccumulators(d, b0, b1, b2, b3);
  sums[2] = SumOfAccumulators(d, c0, c1, c2, c3);
  sums[3] = SumOfAccumulators(d, e0, e1, e2, e3);
}
#endif

// Four canonical sums in one walk, for steps that share work between them (four dot products with one vector load
// it once): step(d, first, count, acc0, acc1, acc2, acc3) accumulates terms first .. first + count - 1 of sum j
// into lanes 0 .. count - 1 of accj (passed by reference), lanes count and up unchanged. sums[j] gets the same bits
// as CanonicalSum would give for sum j alone. Sum j's 16 partials are 16 / Lanes vectors (x0 lanes [0, L), x1
// [L, 2L), ...: 16 vectors in all on 4-lane targets, which NEON's 32 registers hold and SSE4's 16 do not); the
// scalar baseline runs the sums one at a time.
template <class Step>
HWY_INLINE void CanonicalSums4(size_t n, Step&& step, float* sums) {
  using V = hn::Vec<DSum>;
#if HWY_TARGET != HWY_SCALAR
  const DSum d;
  const size_t lanes = hn::Lanes(d);  // 4, 8 or 16
  V a0 = hn::Zero(d), b0 = hn::Zero(d), c0 = hn::Zero(d), e0 = hn::Zero(d);  // lanes [0, lanes) of the partials
  V a1 = hn::Zero(d), b1 = hn::Zero(d), c1 = hn::Zero(d), e1 = hn::Zero(d);  // [lanes, 2 lanes) when lanes <= 8
  V a2 = hn::Zero(d), b2 = hn::Zero(d), c2 = hn::Zero(d), e2 = hn::Zero(d);  // [8, 12) when lanes == 4
  V a3 = hn::Zero(d), b3 = hn::Zero(d), c3 = hn::Zero(d), e3 = hn::Zero(d);  // [12, 16) when lanes == 4
  size_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes) {
    step(d, i, lanes, a0, b0, c0, e0);
    if (lanes <= 8) step(d, i + lanes, lanes, a1, b1, c1, e1);
    if (lanes == 4) {
      step(d, i + 8, lanes, a2, b2, c2, e2);
      step(d, i + 12, lanes, a3, b3, c3, e3);
    }
  }
  // The last, partial group of 16 terms: whole vectors, then one partial vector.
  size_t rest = n - i;
  auto tail_step = [&](size_t first, V& a, V& b, V& c, V& e) {
    const size_t count = rest < lanes ? rest : lanes;
    rest -= count;
    if (count > 0) step(d, first, count, a, b, c, e);
  };
  tail_step(i, a0, b0, c0, e0);
  if (lanes <= 8) tail_step(i + lanes, a1, b1, c1, e1);
  if (lanes == 4) {
    tail_step(i + 8, a2, b2, c2, e2);
    tail_step(i + 12, a3, b3, c3, e3);
  }
  SumsOf4Partials(a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3, e0, e1, e2, e3, sums);
#else
  for (int j = 0; j < 4; ++j) {
    sums[j] = CanonicalSum(n, [&](DSum dj, V acc, size_t first, size_t count) {
      V unused0 = hn::Zero(dj), unused1 = hn::Zero(dj), unused2 = hn::Zero(dj);
      if (j == 0) step(dj, first, count, acc, unused0, unused1, unused2);
      if (j == 1) step(dj, first, count, unused0, acc, unused1, unused2);
      if (j == 2) step(dj, first, count, unused0, unused1, acc, unused2);
      if (j == 3) step(dj, first, count, unused0, unused1, unused2, acc);
      return acc;
    });
  }
#endif
}

// CanonicalSums4 for n a multiple of Lanes(DSum()) (the caller checks): the same bits, with the step given whole
// vectors only, step(d, first, acc0, acc1, acc2, acc3). Without CanonicalSums4's partial tail, GCC keeps the step's
// captures and the partials in registers; with it, it kept them in memory and stored them again for every call
// (about 12 vector stores per call in the MSDA backward, whose Zen 4 core stores one 256-bit half per cycle).
template <class Step>
HWY_INLINE void CanonicalSums4WholeVectors(size_t n, Step&& step, float* sums) {
  using V = hn::Vec<DSum>;
#if HWY_TARGET == HWY_SCALAR
  auto one_lane_step = [&](DSum d, size_t first, size_t /*count: 1*/, V& a, V& b, V& c, V& e) {
    step(d, first, a, b, c, e);
  };
  CanonicalSums4(n, one_lane_step, sums);
#else
  const DSum d;
  const size_t lanes = hn::Lanes(d);  // 4, 8 or 16
  V a0 = hn::Zero(d), b0 = hn::Zero(d), c0 = hn::Zero(d), e0 = hn::Zero(d);
  V a1 = hn::Zero(d), b1 = hn::Zero(d), c1 = hn::Zero(d), e1 = hn::Zero(d);
  V a2 = hn::Zero(d), b2 = hn::Zero(d), c2 = hn::Zero(d), e2 = hn::Zero(d);
  V a3 = hn::Zero(d), b3 = hn::Zero(d), c3 = hn::Zero(d), e3 = hn::Zero(d);
  size_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes) {
    step(d, i, a0, b0, c0, e0);
    if (lanes <= 8) step(d, i + lanes, a1, b1, c1, e1);
    if (lanes == 4) {
      step(d, i + 8, a2, b2, c2, e2);
      step(d, i + 12, a3, b3, c3, e3);
    }
  }
  // The rest, whole vectors (as CanonicalSums4's tail places them).
  if (i < n) step(d, i, a0, b0, c0, e0);
  if (lanes <= 8 && i + lanes < n) step(d, i + lanes, a1, b1, c1, e1);
  if (lanes == 4 && i + 8 < n) step(d, i + 8, a2, b2, c2, e2);
  SumsOf4Partials(a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3, e0, e1, e2, e3, sums);
#endif
}

// Exp's argument reduction and polynomial: x = n ln2 + r; returns p = e^r and sets n_int = n. x must lie in
// [-104, 89] (n in [-150, 128]).
template <class D>
HWY_INLINE hn::Vec<D> ExpReduced(D d, hn::Vec<D> x, hn::Vec<hn::RebindToSigned<D>>& n_int) {
  const hn::RebindToSigned<D> di;
  const auto shifter = hn::Set(d, 12582912.0f);  // 1.5 * 2^23
  const auto shifted = FusedMulAdd(d, x, hn::Set(d, 1.44269504088896341f), shifter);
  const auto n = hn::Sub(shifted, shifter);  // round(x / ln2), an integer in [-150, 128]
  n_int = hn::Sub(hn::BitCast(di, shifted), hn::BitCast(di, shifter));
  auto r = FusedMulAdd(d, n, hn::Set(d, -0.693145751953125f), x);   // ln2, high part: 16 significant bits
  r = FusedMulAdd(d, n, hn::Set(d, -1.428606765330187045e-06f), r);  // ln2 - high part
  // 1 + r + r^2 q, q = c2 + c3 r + r^2 (c4 + c5 r + r^2 (c6 + c7 r)), c_k = 1 / k!
  const auto r2 = hn::Mul(r, r);
  const auto q67 = FusedMulAdd(d, r, hn::Set(d, 1.0f / 5040.0f), hn::Set(d, 1.0f / 720.0f));
  const auto q45 = FusedMulAdd(d, r, hn::Set(d, 1.0f / 120.0f), hn::Set(d, 1.0f / 24.0f));
  const auto q23 = FusedMulAdd(d, r, hn::Set(d, 1.0f / 6.0f), hn::Set(d, 0.5f));
  auto q = FusedMulAdd(d, r2, q67, q45);
  q = FusedMulAdd(d, r2, q, q23);
  // 1 + (r + r^2 q): rounding 1 + r on its own first would cost up to 0.5 ulp more.
  return hn::Add(FusedMulAdd(d, r2, q, r), hn::Set(d, 1.0f));  // in [0.70, 1.42]
}

// p * 2^n for n in [-125, 127]: an exact integer add to p's exponent field.
template <class D>
HWY_INLINE hn::Vec<D> ScaleByPowerOfTwo(D d, hn::Vec<D> p, hn::Vec<hn::RebindToSigned<D>> n_int) {
  const hn::RebindToSigned<D> di;
  return hn::BitCast(d, hn::Add(hn::BitCast(di, p), hn::ShiftLeft<23>(n_int)));
}

// e^x with at most about 1 ulp of error, the same bits on every target. Inputs below -104 give +0 (e^-104 is below
// half the smallest subnormal), inputs above 89 give +Inf; results in the subnormal range are rounded once. The
// result for a NaN input is unspecified (callers that can see NaN handle it themselves).
// Method: x = n ln2 + r with n = round(x / ln2) (a fused multiply-add with the 1.5 * 2^23 shifter: its one rounding
// is to an integer, nearest even) and |r| <= ln2 / 2 (Cody-Waite: ln2 split in two so that n * ln2_high is exact);
// e^r = p by its Taylor polynomial of degree 7 (truncation error below 1e-8 relative), in pairs of terms (four fused
// multiply-adds deep instead of Horner's eight, and seven multiply-class operations: the forward softmax is bound by
// these); then p * 2^n. For a normal result (n in [-125, 127]) that is an exact integer add to p's exponent field.
// Only vectors with a lane outside that range (x in about [-104, -86.6] or above 88) take the two-step scaling
// p * 2^(n - n/2) * 2^(n/2), whose multiplication rounds into the subnormal range: x86 CPUs take a slow microcode
// path for subnormal results, so the far more common lanes below -104 (masked logits, -inf padding) are set to 0
// instead of being computed.
template <class D>
HWY_INLINE hn::Vec<D> Exp(D d, hn::Vec<D> x) {
  const hn::RebindToSigned<D> di;
  const auto zero_lanes = hn::Lt(x, hn::Set(d, hd::kExpZeroBelow));
  x = hn::Min(hn::Max(x, hn::Set(d, hd::kExpZeroBelow)), hn::Set(d, 89.0f));
  hn::Vec<decltype(di)> n_int;
  const auto p = ExpReduced(d, x, n_int);
  const auto beyond_normal = hn::Or(hn::Lt(n_int, hn::Set(di, -125)), hn::Gt(n_int, hn::Set(di, 127)));
  const auto two_steps = hn::AndNot(hn::RebindMask(di, zero_lanes), beyond_normal);
  hn::Vec<D> result;
  if (HWY_LIKELY(hn::AllFalse(di, two_steps))) {
    // n clamped only for the lanes set to 0 below.
    result = ScaleByPowerOfTwo(d, p, hn::Max(n_int, hn::Set(di, -125)));
  } else {
    // p * 2^(n - n/2) exactly (normal), then * 2^(n/2), n/2 and n - n/2 in [-75, 64]: one rounding.
    const auto half_n = hn::ShiftRight<1>(n_int);
    const auto rest_n = hn::Sub(n_int, half_n);
    const auto p_scaled = ScaleByPowerOfTwo(d, p, rest_n);
    result = hn::Mul(p_scaled, hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(half_n, hn::Set(di, 127)))));
  }
  return hn::IfThenZeroElse(zero_lanes, result);
}

// Exp for x in [hd::kExpNormalBelow, hd::kExpNormalAbove] only, where no lane is clamped, set to 0 or scaled in two
// steps: the same operations on such lanes, so the same bits, without the range checks (a third of Exp's cost). The
// softmax's row loop takes it for vectors whose lanes all lie in the range.
template <class D>
HWY_INLINE hn::Vec<D> ExpNormalRange(D d, hn::Vec<D> x) {
  hn::Vec<hn::RebindToSigned<D>> n_int;
  const auto p = ExpReduced(d, x, n_int);
  return ScaleByPowerOfTwo(d, p, n_int);
}

}  // namespace HWY_NAMESPACE
}  // namespace pacl
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
