// Test-side fp16/bf16 encode/decode, written independently of src/ (plain double arithmetic, no bit tricks on
// floats): the yardstick for the library's conversions and the rounding step of every fp16/bf16 reference.
#ifndef PACL_TESTS_REFERENCE_FLOAT_FORMATS_H_
#define PACL_TESTS_REFERENCE_FLOAT_FORMATS_H_

#include <cmath>
#include <cstdint>
#include <limits>

namespace ref {

// IEEE binary16 (1, 5, 10) and bfloat16 (1, 8, 7), described by their parameters.
struct FloatFormat {
  int mantissa_bits;  // explicit fraction bits
  int min_exponent;   // exponent of the smallest normal number
  int max_exponent;   // exponent of the largest finite number
};
inline constexpr FloatFormat kHalf{10, -14, 15};
inline constexpr FloatFormat kBFloat16{7, -126, 127};

// 2^e for the exponents these formats use (|e| <= 160), from a table the compiler fills by doubling and halving
// (exact): the conversions below run for every element a test writes or rounds, where a libm call per element
// dominated.
inline constexpr int kPow2Range = 160;
struct Pow2Table {
  double values[2 * kPow2Range + 1] = {};
  constexpr Pow2Table() {
    values[kPow2Range] = 1.0;
    for (int i = 1; i <= kPow2Range; ++i) {
      values[kPow2Range + i] = values[kPow2Range + i - 1] * 2.0;
      values[kPow2Range - i] = values[kPow2Range - i + 1] * 0.5;
    }
  }
};
inline constexpr Pow2Table kPow2Table{};

inline double Pow2(int e) {
  return e >= -kPow2Range && e <= kPow2Range ? kPow2Table.values[e + kPow2Range] : std::ldexp(1.0, e);
}

inline double DecodeBits(uint16_t bits, FloatFormat f) {
  const int exponent_bits = 15 - f.mantissa_bits;
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const bool negative = (bits >> 15) != 0;
  const int exponent_field = (bits >> f.mantissa_bits) & ((1 << exponent_bits) - 1);
  const int fraction = bits & ((1 << f.mantissa_bits) - 1);
  double magnitude;
  if (exponent_field == (1 << exponent_bits) - 1) {
    magnitude = fraction ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (exponent_field == 0) {
    magnitude = static_cast<double>(fraction) * Pow2(f.min_exponent - f.mantissa_bits);
  } else {
    magnitude = (1.0 + static_cast<double>(fraction) * Pow2(-f.mantissa_bits)) * Pow2(exponent_field - bias);
  }
  return negative ? -magnitude : magnitude;
}

// The e with 2^e <= magnitude < 2^(e+1), for a finite magnitude > 0 (exact: frexp only reads the exponent).
inline int FloorLog2(double magnitude) {
  int exponent = 0;
  std::frexp(magnitude, &exponent);  // magnitude = m * 2^exponent, m in [0.5, 1)
  return exponent - 1;
}

// The representable value nearest to v (ties to the even significand), +-Inf past the overflow threshold.
inline double RoundToFormat(double v, FloatFormat f) {
  if (std::isnan(v) || std::isinf(v) || v == 0.0) return v;
  const double magnitude = std::fabs(v);
  int exponent = FloorLog2(magnitude);
  if (exponent < f.min_exponent) exponent = f.min_exponent;
  const double quantum = Pow2(exponent - f.mantissa_bits);
  // Exact: dividing by a power of two; and below 2^(mantissa_bits + 1), so an integer count of quanta fits int64_t.
  const double steps = magnitude / quantum;
  int64_t whole_steps = static_cast<int64_t>(steps);  // the floor: steps > 0
  const double remainder = steps - static_cast<double>(whole_steps);
  if (remainder > 0.5 || (remainder == 0.5 && whole_steps % 2 != 0)) whole_steps += 1;
  double result = static_cast<double>(whole_steps) * quantum;
  const double max_finite = (2.0 - Pow2(-f.mantissa_bits)) * Pow2(f.max_exponent);
  if (result > max_finite) result = std::numeric_limits<double>::infinity();
  return v < 0 ? -result : result;
}

// Bits of RoundToFormat(v, f); NaN encodes as the canonical quiet NaN.
inline uint16_t EncodeBits(double v, FloatFormat f) {
  const int exponent_bits = 15 - f.mantissa_bits;
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const uint16_t all_ones_exponent = static_cast<uint16_t>(((1 << exponent_bits) - 1) << f.mantissa_bits);
  if (std::isnan(v)) return static_cast<uint16_t>(all_ones_exponent | (1 << (f.mantissa_bits - 1)));
  const double r = RoundToFormat(v, f);
  const uint16_t sign = std::signbit(r) ? 0x8000 : 0;
  const double magnitude = std::fabs(r);
  if (std::isinf(magnitude)) return static_cast<uint16_t>(sign | all_ones_exponent);
  if (magnitude < Pow2(f.min_exponent)) {  // zero or subnormal
    const double fraction = magnitude / Pow2(f.min_exponent - f.mantissa_bits);
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(fraction));
  }
  const int exponent = FloorLog2(magnitude);
  const double fraction = (magnitude / Pow2(exponent) - 1.0) * Pow2(f.mantissa_bits);
  return static_cast<uint16_t>(sign | ((exponent + bias) << f.mantissa_bits) | static_cast<uint16_t>(fraction));
}

inline double HalfBitsToDouble(uint16_t bits) { return DecodeBits(bits, kHalf); }
inline double BFloat16BitsToDouble(uint16_t bits) { return DecodeBits(bits, kBFloat16); }
inline uint16_t DoubleToHalfBits(double v) { return EncodeBits(v, kHalf); }
inline uint16_t DoubleToBFloat16Bits(double v) { return EncodeBits(v, kBFloat16); }

// One unit in the last place of format f at the magnitude of v (the spacing of representable values there).
inline double UlpOf(double v, FloatFormat f) {
  const double magnitude = std::fabs(v);
  int exponent = magnitude > 0 && std::isfinite(magnitude) ? FloorLog2(magnitude) : f.min_exponent;
  if (exponent < f.min_exponent) exponent = f.min_exponent;
  return Pow2(exponent - f.mantissa_bits);
}

}  // namespace ref

#endif  // PACL_TESTS_REFERENCE_FLOAT_FORMATS_H_
