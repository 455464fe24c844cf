// Per-target (Highway) conversion of contiguous rows between fp16/bf16 bits and fp32. Included once per target
// through hwy/foreach_target.h by convert.cpp; needs only hwy/highway.h.
//
// NOTE: the conversions themselves, and why they are done as they are, are in pacl/float_vectors-inl.h.
// - Rows: whole vectors, then the remaining (fewer than one vector's) elements one lane at a time with the same
//   code on a 1-lane vector, so nothing is read or written past the row and the tail rounds like the body.
#if defined(PACL_BASE_CONVERT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef PACL_BASE_CONVERT_INL_H_
#undef PACL_BASE_CONVERT_INL_H_
#else
#define PACL_BASE_CONVERT_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "pacl/float_vectors-inl.h"

HWY_BEFORE_NAMESPACE();
namespace pacl {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The row loops: whole vectors, then the tail one lane at a time with the same conversion.
template <class DF>
HWY_INLINE void HalfRowToFloatPart(DF df, const uint16_t* HWY_RESTRICT src, float* HWY_RESTRICT dst, size_t n,
                                   size_t& i) {
  const hn::Rebind<uint16_t, DF> du16;
  const size_t lanes = hn::Lanes(df);
  for (; i + lanes <= n; i += lanes) hn::StoreU(HalfBitsToFloat(df, hn::LoadU(du16, src + i)), df, dst + i);
}

template <class DF>
HWY_INLINE void BFloat16RowToFloatPart(DF df, const uint16_t* HWY_RESTRICT src, float* HWY_RESTRICT dst, size_t n,
                                       size_t& i) {
  const hn::Rebind<uint16_t, DF> du16;
  const size_t lanes = hn::Lanes(df);
  for (; i + lanes <= n; i += lanes) hn::StoreU(BFloat16BitsToFloat(df, hn::LoadU(du16, src + i)), df, dst + i);
}

template <class DF>
HWY_INLINE void FloatRowToHalfPart(DF df, const float* HWY_RESTRICT src, uint16_t* HWY_RESTRICT dst, size_t n,
                                   size_t& i) {
  const hn::Rebind<uint16_t, DF> du16;
  const size_t lanes = hn::Lanes(df);
  for (; i + lanes <= n; i += lanes) hn::StoreU(FloatToHalfBits(df, hn::LoadU(df, src + i)), du16, dst + i);
}

template <class DF>
HWY_INLINE void FloatRowToBFloat16Part(DF df, const float* HWY_RESTRICT src, uint16_t* HWY_RESTRICT dst, size_t n,
                                       size_t& i) {
  const hn::Rebind<uint16_t, DF> du16;
  const size_t lanes = hn::Lanes(df);
  for (; i + lanes <= n; i += lanes) hn::StoreU(FloatToBFloat16Bits(df, hn::LoadU(df, src + i)), du16, dst + i);
}

// dst[i] = fp32 value of fp16 bits src[i], i in [0, n).
HWY_MAYBE_UNUSED HWY_NOINLINE void HalfRowToFloat(const uint16_t* HWY_RESTRICT src, float* HWY_RESTRICT dst, size_t n) {
  size_t i = 0;
  HalfRowToFloatPart(hn::ScalableTag<float>(), src, dst, n, i);
  HalfRowToFloatPart(hn::CappedTag<float, 1>(), src, dst, n, i);
}

// dst[i] = fp32 value of bf16 bits src[i], i in [0, n).
HWY_MAYBE_UNUSED HWY_NOINLINE void BFloat16RowToFloat(const uint16_t* HWY_RESTRICT src, float* HWY_RESTRICT dst,
                                                      size_t n) {
  size_t i = 0;
  BFloat16RowToFloatPart(hn::ScalableTag<float>(), src, dst, n, i);
  BFloat16RowToFloatPart(hn::CappedTag<float, 1>(), src, dst, n, i);
}

// dst[i] = fp16 bits of src[i] rounded to nearest even, i in [0, n).
HWY_MAYBE_UNUSED HWY_NOINLINE void FloatRowToHalf(const float* HWY_RESTRICT src, uint16_t* HWY_RESTRICT dst, size_t n) {
  size_t i = 0;
  FloatRowToHalfPart(hn::ScalableTag<float>(), src, dst, n, i);
  FloatRowToHalfPart(hn::CappedTag<float, 1>(), src, dst, n, i);
}

// dst[i] = bf16 bits of src[i] rounded to nearest even, i in [0, n).
HWY_MAYBE_UNUSED HWY_NOINLINE void FloatRowToBFloat16(const float* HWY_RESTRICT src, uint16_t* HWY_RESTRICT dst,
                                                      size_t n) {
  size_t i = 0;
  FloatRowToBFloat16Part(hn::ScalableTag<float>(), src, dst, n, i);
  FloatRowToBFloat16Part(hn::CappedTag<float, 1>(), src, dst, n, i);
}

// The target this copy of the code was compiled for (HWY_* bit), to report what dynamic dispatch chose.
HWY_MAYBE_UNUSED HWY_NOINLINE int64_t CompiledTarget() { return HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace pacl
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
