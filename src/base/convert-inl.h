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
#include <cstring>

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

// Streamed (non-temporal) rows: plain stores up to the first element at a vector boundary of dst, then whole
// vectors with non-temporal stores, then the tail one lane at a time. Only where a vector of the stored type is at
// least 16 bytes: Highway 1.0.3 streams an 8-byte vector with an instruction that writes 16 bytes and needs 16-byte
// alignment. The values are the plain rows' (same conversion), only the kind of store differs.
template <class T>
HWY_INLINE size_t FirstAlignedElement(const T* dst, size_t vector_bytes, size_t n) {
  size_t i = 0;
  while (i < n && reinterpret_cast<uintptr_t>(dst + i) % vector_bytes != 0) ++i;
  return i;
}

template <class DF, class Convert>
HWY_INLINE void StreamNarrowedRow(DF df, const float* HWY_RESTRICT src, uint16_t* HWY_RESTRICT dst, size_t n,
                                  Convert convert) {
  const hn::Rebind<uint16_t, DF> du16;
  const hn::CappedTag<float, 1> d1;
  const hn::Rebind<uint16_t, decltype(d1)> d1u16;
  const size_t lanes = hn::Lanes(df);
  size_t i = 0;
  if (hn::MaxLanes(du16) * sizeof(uint16_t) >= 16) {
    const size_t head = FirstAlignedElement(dst, lanes * sizeof(uint16_t), n);
    for (; i < head; ++i) hn::StoreU(convert(d1, hn::LoadU(d1, src + i)), d1u16, dst + i);
    for (; i + lanes <= n; i += lanes) hn::Stream(convert(df, hn::LoadU(df, src + i)), du16, dst + i);
  }
  for (; i < n; ++i) hn::StoreU(convert(d1, hn::LoadU(d1, src + i)), d1u16, dst + i);
}

// dst[i] = fp16 bits of src[i] rounded to nearest even, i in [0, n), with non-temporal stores where aligned.
HWY_MAYBE_UNUSED HWY_NOINLINE void FloatRowToHalfStreamed(const float* HWY_RESTRICT src, uint16_t* HWY_RESTRICT dst,
                                                          size_t n) {
  StreamNarrowedRow(hn::ScalableTag<float>(), src, dst, n, [](auto d, auto v) { return FloatToHalfBits(d, v); });
}

// dst[i] = bf16 bits of src[i] rounded to nearest even, i in [0, n), with non-temporal stores where aligned.
HWY_MAYBE_UNUSED HWY_NOINLINE void FloatRowToBFloat16Streamed(const float* HWY_RESTRICT src,
                                                              uint16_t* HWY_RESTRICT dst, size_t n) {
  StreamNarrowedRow(hn::ScalableTag<float>(), src, dst, n, [](auto d, auto v) { return FloatToBFloat16Bits(d, v); });
}

// dst[i] = src[i], i in [0, n), with non-temporal stores where aligned.
HWY_MAYBE_UNUSED HWY_NOINLINE void FloatRowStreamed(const float* HWY_RESTRICT src, float* HWY_RESTRICT dst, size_t n) {
  const hn::ScalableTag<float> df;
  const size_t lanes = hn::Lanes(df);
  size_t i = 0;
  if (hn::MaxLanes(df) * sizeof(float) >= 16) {
    const size_t head = FirstAlignedElement(dst, lanes * sizeof(float), n);
    std::memcpy(dst, src, head * sizeof(float));
    for (i = head; i + lanes <= n; i += lanes) hn::Stream(hn::LoadU(df, src + i), df, dst + i);
  }
  std::memcpy(dst + i, src + i, (n - i) * sizeof(float));
}

// The target this copy of the code was compiled for (HWY_* bit), to report what dynamic dispatch chose.
HWY_MAYBE_UNUSED HWY_NOINLINE int64_t CompiledTarget() { return HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace pacl
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
