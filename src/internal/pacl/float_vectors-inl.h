// Per-target (Highway) conversion of one vector between fp16/bf16 bits and fp32, shared by the row conversions of
// libnnopbase (src/base/convert-inl.h) and by kernels that convert while they compute; and VectorArray, the
// kernels' arrays of vectors that also compile for SVE. Include it after
// hwy/highway.h from a file compiled once per target through hwy/foreach_target.h.
//
// NOTE: how each conversion is done, and why.
// - fp16 -> fp32 is exact. On AVX2/AVX3 it is F16C's vcvtph2ps (Highway's PromoteTo). Elsewhere it is integer
//   arithmetic: normal numbers are rebiased ((h & 0x7FFF) << 13 plus 112 << 23), subnormals are converted as the
//   integer fraction times 2^-24 (exact in fp32), Inf/NaN get the all-ones exponent. Highway 1.0.3's emulated
//   PromoteTo is not used because it turns fp16 Inf/NaN into finite numbers.
// - fp32 -> fp16 rounds to nearest, ties to even. On AVX2/AVX3 it is F16C's vcvtps2ph with the rounding mode in
//   the instruction (RNE, whatever MXCSR says). Elsewhere: |x| >= 65520 (halfway past the largest fp16) gives Inf;
//   normal results rebias and round on the 13 dropped bits (add 0xFFF plus the lowest kept bit, then shift; a
//   carry into the exponent is the correct result); results below 2^-14 come from adding 0.5f, which rounds |x|
//   to a multiple of 2^-24 in the FPU (RNE under the default rounding mode), and reading the fraction bits.
//   Highway 1.0.3's emulated DemoteTo truncates, so it is not used.
// - bf16 <-> fp32: widening is a 16-bit shift (exact). Narrowing rounds to nearest even with integer arithmetic
//   (bits + 0x7FFF + lowest kept bit, then >> 16); Highway 1.0.3's DemoteTo to bf16 truncates, so it is not used.
//   On AVX-512 CPUs with AVX512_BF16 (Zen 4, Cooper Lake, Sapphire Rapids) a vector of 16 or 8 lanes takes
//   VCVTNEPS2BF16 instead, one instruction for the nine: it rounds the same way and quiets NaN the same way, but
//   reads subnormal inputs as zero, so a vector with a subnormal lane keeps the integer arithmetic (the same bits
//   either way). Highway 1.0.3 has no target with the instruction, so it is inline assembly, used where CPUID says
//   the CPU has it.
// - NaN stays NaN with its sign and top payload bits, and is made quiet, in every direction; every target gives
//   the same bits for every input (the tests compare all targets against each other).
// Once per translation unit (not per target).
#ifndef PACL_FLOAT_VECTORS_ONCE_H_
#define PACL_FLOAT_VECTORS_ONCE_H_
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
namespace pacl {
// Whether the CPU has AVX512_BF16 (CPUID leaf 7, subleaf 1, EAX bit 5).
inline bool DetectAvx512BFloat16() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (eax & (1u << 5)) != 0;
}
// Read once as the library loads, so that each converted vector tests a plain bool (a function-local static added
// a guard test per vector). Read before its initialisation (from another static initialiser) it is false: the
// integer rounding, with the same bits.
inline const bool kCpuHasAvx512BFloat16 = DetectAvx512BFloat16();
}  // namespace pacl
#endif
#endif  // PACL_FLOAT_VECTORS_ONCE_H_

#if defined(PACL_FLOAT_VECTORS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef PACL_FLOAT_VECTORS_INL_H_
#undef PACL_FLOAT_VECTORS_INL_H_
#else
#define PACL_FLOAT_VECTORS_INL_H_
#endif

#include <cstdint>

#include "hwy/highway.h"
#include "pacl/convert.h"

HWY_BEFORE_NAMESPACE();
namespace pacl {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Vector registers of the target, for kernels that size how many vectors of sums they keep in registers: 32 on
// AVX-512 (and non-x86), 16 on the narrower x86 targets.
#if HWY_ARCH_X86 && HWY_TARGET > HWY_AVX3
inline constexpr int kVectorRegisters = 16;
#else
inline constexpr int kVectorRegisters = 32;
#endif

// kCount vectors of tag D, indexed by number: the sums a kernel keeps in registers across a loop. Highway's SVE
// vectors are sizeless types, which cannot be array elements or class members, so on scalable targets their lanes
// live in an aligned buffer (loaded and stored around each use); elsewhere this is an array of vectors, which the
// compiler keeps in registers once the loops over the index are unrolled (the same code as a plain array). GCC does
// not always unroll them by itself (a loop holding a `continue` stayed rolled in NsaCompress's block sums, and the
// whole array went to the stack): check the disassembly of a hot loop, and add `#pragma GCC unroll` where needed.
template <class D, int kCount>
class VectorArray {
 public:
  // Written out, so that it is compiled for the target: an implicit constructor is not, and cannot inline the
  // vectors' constructors on Arm.
  HWY_INLINE VectorArray() {}
  HWY_INLINE hn::Vec<D> Get(D d, int i) const {
#if HWY_HAVE_SCALABLE
    return hn::Load(d, lanes_ + static_cast<size_t>(i) * hn::MaxLanes(d));
#else
    (void)d;
    return vectors_[i];
#endif
  }
  HWY_INLINE void Set(D d, int i, hn::Vec<D> v) {
#if HWY_HAVE_SCALABLE
    hn::Store(v, d, lanes_ + static_cast<size_t>(i) * hn::MaxLanes(d));
#else
    (void)d;
    vectors_[i] = v;
#endif
  }

 private:
#if HWY_HAVE_SCALABLE
  HWY_ALIGN hn::TFromD<D> lanes_[kCount * hn::MaxLanes(D())];
#else
  hn::Vec<D> vectors_[kCount];
#endif
};

// x86 targets with F16C, whose fp16 conversions round to nearest even and handle Inf/NaN.
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
#define PACL_CONVERT_HAVE_F16C 1
#else
#define PACL_CONVERT_HAVE_F16C 0
#endif

// fp16 bits (one per lane, in 16-bit lanes) -> fp32, for float tag df.
template <class DF>
HWY_INLINE hn::Vec<DF> HalfBitsToFloat(DF df, hn::Vec<hn::Rebind<uint16_t, DF>> half_bits) {
#if PACL_CONVERT_HAVE_F16C
  return hn::PromoteTo(df, hn::BitCast(hn::Rebind<hwy::float16_t, DF>(), half_bits));
#else
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto bits = hn::PromoteTo(du, half_bits);
  const auto sign = hn::ShiftLeft<16>(hn::And(bits, hn::Set(du, 0x8000u)));
  const auto magnitude = hn::And(bits, hn::Set(du, 0x7FFFu));
  const auto signed_magnitude = hn::BitCast(di, magnitude);  // in [0, 0x7FFF]: signed compares are exact
  const auto shifted = hn::ShiftLeft<13>(magnitude);
  const auto normal = hn::Add(shifted, hn::Set(du, 0x38000000u));  // exponent bias 15 -> 127
  const auto inf_or_nan = hn::Or(shifted, hn::Set(du, 0x7F800000u));
  const auto quiet_nan = hn::Or(inf_or_nan, hn::Set(du, 0x00400000u));
  const auto subnormal = hn::BitCast(du, hn::Mul(hn::ConvertTo(df, signed_magnitude), hn::Set(df, 0x1p-24f)));
  const auto is_subnormal = hn::Lt(signed_magnitude, hn::Set(di, 0x0400));
  const auto is_inf_or_nan = hn::Gt(signed_magnitude, hn::Set(di, 0x7BFF));  // (1.0.3 has no integer >=)
  const auto is_nan = hn::Gt(signed_magnitude, hn::Set(di, 0x7C00));
  auto result = hn::IfThenElse(hn::RebindMask(du, is_subnormal), subnormal, normal);
  result = hn::IfThenElse(hn::RebindMask(du, is_inf_or_nan), inf_or_nan, result);
  result = hn::IfThenElse(hn::RebindMask(du, is_nan), quiet_nan, result);
  return hn::BitCast(df, hn::Or(result, sign));
#endif
}

// fp32 -> fp16 bits, round to nearest even.
template <class DF>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, DF>> FloatToHalfBits(DF df, hn::Vec<DF> value) {
  const hn::Rebind<uint16_t, DF> du16;
#if PACL_CONVERT_HAVE_F16C
  (void)df;
  return hn::BitCast(du16, hn::DemoteTo(hn::Rebind<hwy::float16_t, DF>(), value));
#else
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto bits = hn::BitCast(du, value);
  const auto sign = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 0x8000u));
  const auto magnitude = hn::And(bits, hn::Set(du, 0x7FFFFFFFu));
  const auto signed_magnitude = hn::BitCast(di, magnitude);  // in [0, 2^31): signed compares are exact
  // Normal results: rebias 127 -> 15, then round on the 13 dropped bits.
  const auto lowest_kept_bit = hn::And(hn::ShiftRight<13>(magnitude), hn::Set(du, 1u));
  const auto normal = hn::ShiftRight<13>(
      hn::Add(hn::Sub(magnitude, hn::Set(du, 0x38000000u)), hn::Add(hn::Set(du, 0x0FFFu), lowest_kept_bit)));
  // Subnormal results: 0.5f has ulp 2^-24, the fp16 subnormal spacing, so the FPU's addition does the rounding.
  const auto magic = hn::Set(df, 0.5f);
  const auto subnormal = hn::Sub(hn::BitCast(du, hn::Add(hn::BitCast(df, magnitude), magic)), hn::BitCast(du, magic));
  const auto quiet_nan = hn::Or(hn::Set(du, 0x7E00u), hn::And(hn::ShiftRight<13>(magnitude), hn::Set(du, 0x03FFu)));
  const auto is_subnormal = hn::Lt(signed_magnitude, hn::Set(di, 0x38800000));  // below 2^-14
  const auto overflows = hn::Gt(signed_magnitude, hn::Set(di, 0x477FEFFF));     // 65520 and up, Inf
  const auto is_nan = hn::Gt(signed_magnitude, hn::Set(di, 0x7F800000));
  auto result = hn::IfThenElse(hn::RebindMask(du, is_subnormal), subnormal, normal);
  result = hn::IfThenElse(hn::RebindMask(du, overflows), hn::Set(du, 0x7C00u), result);
  result = hn::IfThenElse(hn::RebindMask(du, is_nan), quiet_nan, result);
  // Every lane now holds a value in [0, 0xFFFF], so the saturating narrowing is exact.
  return hn::DemoteTo(du16, hn::BitCast(di, hn::Or(result, sign)));
#endif
}

// bf16 bits -> fp32 (exact).
template <class DF>
HWY_INLINE hn::Vec<DF> BFloat16BitsToFloat(DF df, hn::Vec<hn::Rebind<uint16_t, DF>> bf16_bits) {
  const hn::RebindToUnsigned<DF> du;
  return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, bf16_bits)));
}

// Lanes [i, i + Lanes(d)) of a row stored as kKind (a pacl::RowKind), widened to fp32 exactly.
template <int kKind, class DF>
HWY_INLINE hn::Vec<DF> LoadRowLanes(DF df, const void* row, int64_t i) {
  if constexpr (kKind == kFloatRow) {
    return hn::LoadU(df, static_cast<const float*>(row) + i);
  } else {
    const auto bits = hn::LoadU(hn::Rebind<uint16_t, DF>(), static_cast<const uint16_t*>(row) + i);
    if constexpr (kKind == kHalfRow) return HalfBitsToFloat(df, bits);
    return BFloat16BitsToFloat(df, bits);
  }
}

// The bf16 bits of fp32 bits rounded to nearest even, in 32-bit lanes: high half of bits + 0x7FFF + its lowest bit
// (wraps only for NaN).
template <class VU>
HWY_INLINE VU RoundedBFloat16Bits(VU bits) {
  const hn::DFromV<VU> du;
  const auto rounding = hn::Add(hn::Set(du, 0x7FFFu), hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u)));
  return hn::ShiftRight<16>(hn::Add(bits, rounding));
}

#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL) && (defined(__GNUC__) || defined(__clang__))
#define PACL_CONVERT_HAVE_BF16_INSTRUCTION 1
// VCVTNEPS2BF16 of a vector without subnormal lanes (fpclass 0x20), into *bits; false, and *bits untouched,
// where the CPU lacks the instruction or a lane is subnormal.
HWY_INLINE bool InstructionBFloat16Bits(__m512 value, __m256i* bits) {
  if (!kCpuHasAvx512BFloat16 || _mm512_fpclass_ps_mask(value, 0x20) != 0) return false;
  asm("vcvtneps2bf16 %1, %0" : "=v"(*bits) : "v"(value));
  return true;
}
HWY_INLINE bool InstructionBFloat16Bits(__m256 value, __m128i* bits) {
  if (!kCpuHasAvx512BFloat16 || _mm256_fpclass_ps_mask(value, 0x20) != 0) return false;
  asm("vcvtneps2bf16 %1, %0" : "=v"(*bits) : "v"(value));
  return true;
}
template <class Raw, class BitsRaw>
HWY_INLINE bool InstructionBFloat16Bits(Raw, BitsRaw*) {
  return false;  // vectors of 4 lanes or fewer
}
#else
#define PACL_CONVERT_HAVE_BF16_INSTRUCTION 0
#endif

// fp32 -> bf16 bits, round to nearest even; NaN made quiet.
template <class DF>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, DF>> FloatToBFloat16Bits(DF df, hn::Vec<DF> value) {
  const hn::Rebind<uint16_t, DF> du16;
#if PACL_CONVERT_HAVE_BF16_INSTRUCTION
  hn::Vec<hn::Rebind<uint16_t, DF>> converted;
  if (InstructionBFloat16Bits(value.raw, &converted.raw)) return converted;
#endif
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto bits = hn::BitCast(du, value);
  const auto quiet_nan = hn::Or(hn::ShiftRight<16>(bits), hn::Set(du, 0x0040u));
  const auto is_nan = hn::Gt(hn::BitCast(di, hn::And(bits, hn::Set(du, 0x7FFFFFFFu))), hn::Set(di, 0x7F800000));
  const auto result = hn::IfThenElse(hn::RebindMask(du, is_nan), quiet_nan, RoundedBFloat16Bits(bits));
  (void)df;
  return hn::DemoteTo(du16, hn::BitCast(di, result));  // lanes are in [0, 0xFFFF]: exact
}

// fp32 -> bf16 bits for values that are not NaN: FloatToBFloat16Bits's bits there, with about half its operations
// (a NaN lane gives an unspecified value).
template <class DF>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, DF>> NonNaNFloatToBFloat16Bits(DF df, hn::Vec<DF> value) {
#if PACL_CONVERT_HAVE_BF16_INSTRUCTION
  hn::Vec<hn::Rebind<uint16_t, DF>> converted;
  if (InstructionBFloat16Bits(value.raw, &converted.raw)) return converted;
#endif
  const hn::RebindToUnsigned<DF> du;
  const auto rounded = RoundedBFloat16Bits(hn::BitCast(du, value));
  (void)df;
  return hn::DemoteTo(hn::Rebind<uint16_t, DF>(), hn::BitCast(hn::RebindToSigned<DF>(), rounded));
}

#undef PACL_CONVERT_HAVE_F16C
#undef PACL_CONVERT_HAVE_BF16_INSTRUCTION

}  // namespace HWY_NAMESPACE
}  // namespace pacl
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
