// op::fp16_t (include/aclnn/opdev/fp16_t.h, the value type CANN's sample programs fill FLOAT16 buffers with)
// against the independent fp16 reference of tests/support/float_formats.h: every one of the 65536 bit patterns
// widened to float, every halfway case between adjacent fp16 values and its neighbours, and random floats of every
// magnitude (subnormal, normal, overflowing) rounded to fp16; NaN stays NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "aclnn/opdev/fp16_t.h"
#include "float_formats.h"

namespace {

float FloatOfBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

void ExpectRoundsLikeTheReference(float f) {
  const op::fp16_t h(f);
  const uint16_t expected = ref::DoubleToHalfBits(static_cast<double>(f));
  if (std::isnan(f)) {
    EXPECT_TRUE(std::isnan(static_cast<float>(h))) << "NaN became 0x" << std::hex << h.val;
    return;
  }
  EXPECT_EQ(h.val, expected) << "float " << f << " (bits 0x" << std::hex << [&] {
    uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return b;
  }() << ")";
}

TEST(Fp16T, EveryBitPatternWidensExactly) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    op::fp16_t h;
    h.val = static_cast<uint16_t>(bits);
    const double expected = ref::HalfBitsToDouble(static_cast<uint16_t>(bits));
    const float actual = static_cast<float>(h);
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(actual)) << bits;
    } else {
      ASSERT_EQ(static_cast<double>(actual), expected) << "bits " << bits;
      // And back: every value survives the round trip (signed zeros, subnormals, infinities included).
      ASSERT_EQ(op::fp16_t(actual).val, bits);
    }
  }
}

TEST(Fp16T, HalfwayCasesRoundToEven) {
  for (uint32_t bits = 0; bits < 0x7C00; ++bits) {
    op::fp16_t lo, hi;
    lo.val = static_cast<uint16_t>(bits);
    hi.val = static_cast<uint16_t>(bits + 1);
    const float middle = static_cast<float>((static_cast<double>(static_cast<float>(lo)) +
                                             static_cast<double>(static_cast<float>(hi))) / 2.0);
    ExpectRoundsLikeTheReference(middle);
    ExpectRoundsLikeTheReference(std::nextafter(middle, 0.0f));
    ExpectRoundsLikeTheReference(std::nextafter(middle, 1e30f));
    ExpectRoundsLikeTheReference(-middle);
  }
}

TEST(Fp16T, RandomFloatsOfEveryMagnitude) {
  std::mt19937_64 rng(2026);
  for (int i = 0; i < 1000000; ++i) {
    // Exponents around fp16's range: 2^-30 to 2^20, and any bits.
    const uint32_t exponent = 97 + static_cast<uint32_t>(rng() % 51);
    const uint32_t bits = (static_cast<uint32_t>(rng() & 1u) << 31) | (exponent << 23) |
                          static_cast<uint32_t>(rng() & 0x7FFFFFu);
    ExpectRoundsLikeTheReference(FloatOfBits(bits));
  }
  for (uint32_t bits : {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7F800001u, 0x00000001u, 0x477FEFFFu, 0x477FF000u}) {
    ExpectRoundsLikeTheReference(FloatOfBits(bits));
  }
}

TEST(Fp16T, ConstructsFromTheSamplesLiteralsAndComputes) {
  const std::vector<op::fp16_t> data(3, 1.0);
  EXPECT_EQ(sizeof(op::fp16_t), 2u);
  EXPECT_EQ(data[1].val, 0x3C00);
  EXPECT_EQ(static_cast<float>(data[0] + op::fp16_t(0.5f)), 1.5f);
  EXPECT_EQ(static_cast<float>(op::fp16_t(3) * op::fp16_t(-2.0)), -6.0f);
  EXPECT_EQ(static_cast<float>(-op::fp16_t(0.25)), -0.25f);
}

}  // namespace
