/* portable-aclnn: op::fp16_t, the IEEE half-precision value type CANN's sample programs fill FLOAT16 host buffers
 * with (std::vector<op::fp16_t> data(n, 1.0)). Two bytes, the bits in `val`; converts from and to float and double
 * (rounding to nearest, ties to even; NaN stays NaN, overflow gives infinity) and does arithmetic through float.
 * Header-only; C sees only the bits (struct fp16_t { uint16_t val; }). */
#ifndef PORTABLE_ACLNN_ACLNN_OPDEV_FP16_T_H_
#define PORTABLE_ACLNN_ACLNN_OPDEV_FP16_T_H_

#ifdef __cplusplus

#include <cstdint>
#include <cstring>

namespace op {

struct fp16_t {
  uint16_t val = 0;

  fp16_t() = default;
  fp16_t(float f) : val(FromFloat(f)) {}  // NOLINT(google-explicit-constructor): samples write fp16_t x = 1.0
  fp16_t(double d) : val(FromFloat(static_cast<float>(d))) {}  // NOLINT(google-explicit-constructor)
  fp16_t(int i) : val(FromFloat(static_cast<float>(i))) {}     // NOLINT(google-explicit-constructor)

  operator float() const { return ToFloat(val); }  // NOLINT(google-explicit-constructor)
  float toFloat() const { return ToFloat(val); }

  fp16_t& operator+=(fp16_t other) { return *this = fp16_t(ToFloat(val) + ToFloat(other.val)); }
  fp16_t& operator-=(fp16_t other) { return *this = fp16_t(ToFloat(val) - ToFloat(other.val)); }
  fp16_t& operator*=(fp16_t other) { return *this = fp16_t(ToFloat(val) * ToFloat(other.val)); }
  fp16_t& operator/=(fp16_t other) { return *this = fp16_t(ToFloat(val) / ToFloat(other.val)); }

  // Round to nearest even from float's bits: the mantissa's 13 dropped bits decide.
  static uint16_t FromFloat(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
    const uint32_t magnitude = bits & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);  // NaN
    if (magnitude >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds past 65504: infinity
    if (magnitude < 0x38800000u) {  // below 2^-14: a subnormal half (or zero)
      if (magnitude < 0x33000000u) return sign;  // below half the smallest subnormal: zero
      const uint32_t mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
      const int shift = 126 - static_cast<int>(magnitude >> 23);  // 14 to 24
      const uint32_t half = mantissa >> shift;
      const uint32_t rest = mantissa & ((1u << shift) - 1u);
      const uint32_t halfway = 1u << (shift - 1);
      const uint32_t rounded = half + ((rest > halfway || (rest == halfway && (half & 1u))) ? 1u : 0u);
      return static_cast<uint16_t>(sign | rounded);
    }
    const uint32_t rebased = magnitude - 0x38000000u;  // exponent rebased from 127 to 15
    const uint32_t rest = rebased & 0x1FFFu;
    uint32_t half = rebased >> 13;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }

  static float ToFloat(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1Fu;
    uint32_t mantissa = h & 0x3FFu;
    uint32_t bits;
    if (exponent == 0x1Fu) {
      bits = sign | 0x7F800000u | (mantissa << 13);  // infinity or NaN
    } else if (exponent != 0) {
      bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      uint32_t e = 113;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --e;
      }
      bits = sign | (e << 23) | ((mantissa & 0x3FFu) << 13);
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
};

inline fp16_t operator+(fp16_t a, fp16_t b) { return a += b; }
inline fp16_t operator-(fp16_t a, fp16_t b) { return a -= b; }
inline fp16_t operator*(fp16_t a, fp16_t b) { return a *= b; }
inline fp16_t operator/(fp16_t a, fp16_t b) { return a /= b; }
inline fp16_t operator-(fp16_t a) { return fp16_t(-static_cast<float>(a)); }

}  // namespace op

#else /* C: the two bytes only; the conversions are C++'s. */

#include <stdint.h>

typedef struct fp16_t {
  uint16_t val;
} fp16_t;

#endif /* __cplusplus */

#endif /* PORTABLE_ACLNN_ACLNN_OPDEV_FP16_T_H_ */
