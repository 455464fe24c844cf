// Data type sizes/names and the fp16 <-> fp32 conversion, checked against the independent float64 encoder and
// decoder in tests/reference/float_formats.h: every half, the rounding boundaries of every half, and millions of
// random float bit patterns.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>

#include "acl/acl.h"
#include "pacl/dtype.h"
#include "float_formats.h"

namespace {

float FloatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

uint32_t BitsFromFloat(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

bool IsHalfNaN(uint16_t bits) { return (bits & 0x7C00u) == 0x7C00u && (bits & 0x03FFu) != 0; }

// Checks FloatToHalf(value) against the reference; returns false (after one failure report) on a mismatch.
bool ConvertsLikeReference(float value) {
  const uint16_t got = pacl::FloatToHalf(value);
  if (std::isnan(value)) {
    // NaN stays NaN, quiet, with its sign.
    const bool ok = IsHalfNaN(got) && (got & 0x0200u) != 0 && ((got >> 15) == (BitsFromFloat(value) >> 31));
    EXPECT_TRUE(ok) << "NaN bits 0x" << std::hex << BitsFromFloat(value) << " -> 0x" << got;
    return ok;
  }
  const uint16_t expected = ref::DoubleToHalfBits(static_cast<double>(value));
  if (got != expected) {
    ADD_FAILURE() << "FloatToHalf(" << value << " = bits 0x" << std::hex << BitsFromFloat(value) << ") = 0x" << got
                  << ", expected 0x" << expected;
    return false;
  }
  return true;
}

TEST(DataType, Sizes) {
  EXPECT_EQ(pacl::DataTypeSize(ACL_FLOAT), 4u);
  EXPECT_EQ(pacl::DataTypeSize(ACL_FLOAT16), 2u);
  EXPECT_EQ(pacl::DataTypeSize(ACL_BF16), 2u);
  EXPECT_EQ(pacl::DataTypeSize(ACL_INT8), 1u);
  EXPECT_EQ(pacl::DataTypeSize(ACL_UINT8), 1u);
  EXPECT_EQ(pacl::DataTypeSize(ACL_BOOL), 1u);
  EXPECT_EQ(pacl::DataTypeSize(ACL_INT16), 2u);
  EXPECT_EQ(pacl::DataTypeSize(ACL_UINT16), 2u);
  EXPECT_EQ(pacl::DataTypeSize(ACL_INT32), 4u);
  EXPECT_EQ(pacl::DataTypeSize(ACL_UINT32), 4u);
  EXPECT_EQ(pacl::DataTypeSize(ACL_INT64), 8u);
  EXPECT_EQ(pacl::DataTypeSize(ACL_UINT64), 8u);
  EXPECT_EQ(pacl::DataTypeSize(ACL_DOUBLE), 8u);
  EXPECT_EQ(pacl::DataTypeSize(ACL_COMPLEX64), 8u);
  EXPECT_EQ(pacl::DataTypeSize(ACL_COMPLEX128), 16u);
  EXPECT_EQ(pacl::DataTypeSize(ACL_STRING), 0u);
  EXPECT_EQ(pacl::DataTypeSize(ACL_DT_UNDEFINED), 0u);
  EXPECT_EQ(pacl::DataTypeSize(static_cast<aclDataType>(5)), 0u);  // a gap in the enum
  EXPECT_EQ(pacl::DataTypeSize(static_cast<aclDataType>(1000)), 0u);

  // The public function agrees for every value in a range around the enum.
  for (int value = -3; value < 40; ++value) {
    const auto dtype = static_cast<aclDataType>(value);
    EXPECT_EQ(aclDataTypeSize(dtype), pacl::DataTypeSize(dtype)) << value;
  }
  EXPECT_EQ(aclDataTypeSize(ACL_STRING), 0u);
  EXPECT_EQ(aclDataTypeSize(static_cast<aclDataType>(99)), 0u);
}

TEST(DataType, Names) {
  EXPECT_STREQ(pacl::DataTypeName(ACL_FLOAT), "FLOAT");
  EXPECT_STREQ(pacl::DataTypeName(ACL_FLOAT16), "FLOAT16");
  EXPECT_STREQ(pacl::DataTypeName(ACL_BF16), "BFLOAT16");
  EXPECT_STREQ(pacl::DataTypeName(ACL_DOUBLE), "DOUBLE");
  EXPECT_STREQ(pacl::DataTypeName(ACL_BOOL), "BOOL");
  EXPECT_STREQ(pacl::DataTypeName(ACL_INT64), "INT64");
  EXPECT_STREQ(pacl::DataTypeName(ACL_COMPLEX128), "COMPLEX128");
  EXPECT_STREQ(pacl::DataTypeName(static_cast<aclDataType>(99)), "UNKNOWN(99)");
  // Two unknown names can be used in one message.
  const std::string both = std::string(pacl::DataTypeName(static_cast<aclDataType>(5))) + " " +
                           pacl::DataTypeName(static_cast<aclDataType>(-7));
  EXPECT_EQ(both, "UNKNOWN(5) UNKNOWN(-7)");
}

TEST(HalfConversion, EveryHalfWidensExactly) {
  for (uint32_t h = 0; h <= 0xFFFFu; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const float got = pacl::HalfToFloat(bits);
    const double expected = ref::HalfBitsToDouble(bits);
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << h;
      continue;
    }
    ASSERT_EQ(static_cast<double>(got), expected) << std::hex << h;
    ASSERT_EQ(std::signbit(got), std::signbit(expected)) << std::hex << h;
    ASSERT_EQ(BitsFromFloat(aclFloat16ToFloat(bits)), BitsFromFloat(got)) << std::hex << h;
    // The element widening the kernels' scalar loops use gives the same bits, NaN payloads included.
    ASSERT_EQ(BitsFromFloat(pacl::ToFloat(pacl::Float16{bits})), BitsFromFloat(got)) << std::hex << h;
  }
}

TEST(HalfConversion, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h <= 0xFFFFu; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const uint16_t back = pacl::FloatToHalf(pacl::HalfToFloat(bits));
    if (IsHalfNaN(bits)) {
      ASSERT_TRUE(IsHalfNaN(back)) << std::hex << h;
      ASSERT_NE(back & 0x0200u, 0u) << "NaN must come back quiet: " << std::hex << h;
      ASSERT_EQ(back & 0x8000u, bits & 0x8000u) << std::hex << h;
    } else {
      ASSERT_EQ(back, bits) << std::hex << h;
    }
  }
}

// The midpoint between every pair of neighbouring halves (exact in fp32) and the floats either side of it: the
// ties must go to the even half, the neighbours to the nearer one. Includes 65520 (the overflow threshold) and the
// subnormal/normal boundary.
TEST(HalfConversion, HalfwayCasesRoundToNearestEven) {
  for (uint32_t h = 0; h < 0x7C00u; ++h) {
    const double low = ref::HalfBitsToDouble(static_cast<uint16_t>(h));
    const double high = h + 1 == 0x7C00u ? 65536.0 : ref::HalfBitsToDouble(static_cast<uint16_t>(h + 1));
    const float midpoint = static_cast<float>((low + high) / 2);
    ASSERT_EQ(static_cast<double>(midpoint), (low + high) / 2) << "midpoint not exact in fp32";
    const float candidates[] = {midpoint, std::nextafter(midpoint, 0.0f), std::nextafter(midpoint, 1e30f)};
    for (float value : candidates) {
      if (!ConvertsLikeReference(value)) return;
      if (!ConvertsLikeReference(-value)) return;
    }
  }
}

TEST(HalfConversion, SpecialValues) {
  EXPECT_EQ(pacl::FloatToHalf(0.0f), 0x0000u);
  EXPECT_EQ(pacl::FloatToHalf(-0.0f), 0x8000u);
  EXPECT_EQ(pacl::FloatToHalf(1.0f), 0x3C00u);
  EXPECT_EQ(pacl::FloatToHalf(-2.0f), 0xC000u);
  EXPECT_EQ(pacl::FloatToHalf(65504.0f), 0x7BFFu);
  EXPECT_EQ(pacl::FloatToHalf(65519.99f), 0x7BFFu);
  EXPECT_EQ(pacl::FloatToHalf(65520.0f), 0x7C00u);  // the tie goes to the even value, which is Inf
  EXPECT_EQ(pacl::FloatToHalf(1e10f), 0x7C00u);
  EXPECT_EQ(pacl::FloatToHalf(-1e10f), 0xFC00u);
  EXPECT_EQ(pacl::FloatToHalf(INFINITY), 0x7C00u);
  EXPECT_EQ(pacl::FloatToHalf(-INFINITY), 0xFC00u);
  EXPECT_EQ(pacl::FloatToHalf(std::ldexp(1.0f, -24)), 0x0001u);   // smallest subnormal
  EXPECT_EQ(pacl::FloatToHalf(std::ldexp(1.0f, -25)), 0x0000u);   // half of it: tie to even (zero)
  EXPECT_EQ(pacl::FloatToHalf(std::ldexp(1.5f, -25)), 0x0001u);   // above the tie
  EXPECT_EQ(pacl::FloatToHalf(std::ldexp(3.0f, -25)), 0x0002u);   // 1.5 ulp: tie to even (2)
  EXPECT_EQ(pacl::FloatToHalf(std::ldexp(1.0f, -14)), 0x0400u);   // smallest normal
  EXPECT_EQ(pacl::FloatToHalf(std::ldexp(1023.5f, -24)), 0x0400u);  // rounds up out of the subnormals
  EXPECT_EQ(pacl::FloatToHalf(1e-30f), 0x0000u);
  EXPECT_EQ(pacl::FloatToHalf(-1e-30f), 0x8000u);
  EXPECT_EQ(pacl::FloatToHalf(FloatFromBits(0x00000001u)), 0x0000u);  // fp32 subnormals vanish

  const uint16_t quiet = pacl::FloatToHalf(NAN);
  EXPECT_TRUE(IsHalfNaN(quiet));
  // A signalling fp32 NaN whose payload lives only in the low bits must not become Inf.
  const uint16_t from_signalling = pacl::FloatToHalf(FloatFromBits(0x7F800001u));
  EXPECT_TRUE(IsHalfNaN(from_signalling));
  EXPECT_NE(from_signalling & 0x0200u, 0u);
  const uint16_t negative_nan = pacl::FloatToHalf(FloatFromBits(0xFFC00000u));
  EXPECT_TRUE(IsHalfNaN(negative_nan));
  EXPECT_EQ(negative_nan & 0x8000u, 0x8000u);

  EXPECT_EQ(aclFloatToFloat16(1.0f), 0x3C00u);
  EXPECT_EQ(aclFloat16ToFloat(0x3C00u), 1.0f);
  EXPECT_EQ(aclFloat16ToFloat(0x0001u), std::ldexp(1.0f, -24));
}

// Uniformly random bit patterns (mostly far outside the half range: overflow, underflow, NaN) plus random floats
// with exponents in and around the half range, where the rounding happens.
TEST(HalfConversion, RandomFloatsMatchReference) {
  std::mt19937_64 rng(20240611);
  constexpr int kUniform = 1 << 21;
  constexpr int kInRange = 1 << 22;
  for (int i = 0; i < kUniform; ++i) {
    const auto bits = static_cast<uint32_t>(rng());
    if (!ConvertsLikeReference(FloatFromBits(bits))) return;
  }
  std::uniform_int_distribution<uint32_t> exponent(98, 144);  // 2^-29 .. 2^17
  for (int i = 0; i < kInRange; ++i) {
    const auto random = rng();
    const uint32_t bits = (static_cast<uint32_t>(random >> 63) << 31) | (exponent(rng) << 23) |
                          static_cast<uint32_t>(random & 0x7FFFFFu);
    const float value = FloatFromBits(bits);
    if (!ConvertsLikeReference(value)) return;
    if ((i & 63) == 0 && aclFloatToFloat16(value) != pacl::FloatToHalf(value)) {
      ADD_FAILURE() << "aclFloatToFloat16 differs from pacl::FloatToHalf at bits 0x" << std::hex << bits;
      return;
    }
  }
}

}  // namespace
