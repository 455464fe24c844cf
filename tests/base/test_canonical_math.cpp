// The arithmetic every kernel shares for the same bits on every SIMD target (pacl/canonical_math-inl.h), checked on
// each target this CPU runs: FusedMulAdd against the correctly rounded std::fma, bit for bit (so SSE4 and the scalar
// baseline, which have no FMA instruction, must not fall back to a multiply and an add); CanonicalDot against a
// scalar model of the canonical order written here; Exp against exp in double precision (at most 1 ulp, and
// exactly 0 / Inf / the subnormal result where the true value lies there); and all three bit-identical across
// targets.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/simd_targets.h"
#include "pacl/canonical_math.h"
#include "pacl/host_device.h"

namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// The distance from actual to the correctly rounded value of `exact`, in units of the float spacing at exact
// (2^-149 for subnormal results).
double UlpError(float actual, double exact) {
  if (std::isinf(exact) || std::isinf(actual)) return actual == static_cast<float>(exact) ? 0.0 : 1e9;
  int exponent = 0;
  std::frexp(exact, &exponent);  // exact = m * 2^exponent, m in [0.5, 1)
  const double spacing = std::ldexp(1.0, std::max(exponent - 24, -149));
  return std::fabs(static_cast<double>(actual) - exact) / spacing;
}

// Runs fn() on every target and expects the same bits from each.
template <class Fn>
void ExpectSameBitsOnEveryTarget(Fn&& fn) {
  std::vector<float> first;
  std::string first_target;
  simd_targets::ForEachTarget([&](const std::string& target) {
    const std::vector<float> result = fn();
    if (first_target.empty()) {
      first = result;
      first_target = target;
      return;
    }
    ASSERT_EQ(result.size(), first.size());
    int reported = 0;
    for (size_t i = 0; i < result.size() && reported < 5; ++i) {
      if (Bits(result[i]) != Bits(first[i]) && !(std::isnan(result[i]) && std::isnan(first[i]))) {
        ADD_FAILURE() << target << " gives " << result[i] << " at " << i << ", " << first_target << " gives "
                      << first[i];
        ++reported;
      }
    }
  });
}

// FusedMulAddRow on every target: the bits of std::fma at every element, and the same bits on every target.
void ExpectFusedMulAddIsStdFmaOnEveryTarget(const std::vector<float>& a, const std::vector<float>& b,
                                            const std::vector<float>& c) {
  const auto n = static_cast<int64_t>(a.size());
  ExpectSameBitsOnEveryTarget([&] {
    std::vector<float> out(n, std::nanf(""));
    pacl::canonical_testing::FusedMulAddRow(a.data(), b.data(), c.data(), out.data(), n);
    int reported = 0;
    for (int64_t i = 0; i < n && reported < 5; ++i) {
      const float expected = std::fma(a[i], b[i], c[i]);
      if (Bits(out[i]) != Bits(expected) && !(std::isnan(out[i]) && std::isnan(expected))) {
        ADD_FAILURE() << "fma(" << a[i] << ", " << b[i] << ", " << c[i] << ") = " << out[i] << ", expected "
                      << expected;
        ++reported;
      }
    }
    return out;
  });
}

TEST(CanonicalMath, FusedMulAddIsCorrectlyRoundedOnEveryTarget) {
  std::mt19937_64 rng(71);
  std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
  const int64_t n = 4099;  // whole vectors and a tail on every width
  std::vector<float> a(n), b(n), c(n);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = uniform(rng);
    b[i] = uniform(rng);
    // Half the cases cancel: c is minus the rounded product, so the result is the product's rounding error, which
    // an unfused multiply and add gives as exactly 0.
    c[i] = i % 2 == 0 ? -(a[i] * b[i]) : uniform(rng);
  }
  // Specials: overflow of the product (cancelled by c, or a result of +-Inf, or just below FLT_MAX's rounding
  // boundary), Inf, NaN, zeros of both signs, subnormals.
  const float max = std::numeric_limits<float>::max();
  const float inf = std::numeric_limits<float>::infinity();
  const float tiny = std::numeric_limits<float>::denorm_min();
  const float specials[][3] = {{max, 2.0f, -max},    {max, 2.0f, 0.0f},       {-3e38f, 3e38f, 1.0f},
                               {max, 1.0f, 1e31f},   {max, 1.0f, 2.1e31f},    {inf, 0.0f, 1.0f},
                               {-0.0f, 1.0f, -0.0f}, {tiny, 0.5f, tiny},      {1e-20f, 1e-20f, 0.0f},
                               {inf, 1.0f, -inf},    {3.0f, 5.0f, std::nanf("")}};
  for (size_t s = 0; s < sizeof specials / sizeof specials[0]; ++s) {
    a[s] = specials[s][0];
    b[s] = specials[s][1];
    c[s] = specials[s][2];
  }
  ExpectFusedMulAddIsStdFmaOnEveryTarget(a, b, c);
}

// Where rounding the exact sum to double and then to float would go wrong (the product of two floats is exact in
// double, so an FMA emulated in double precision must round the sum to odd, not to nearest): products exactly halfway
// between two floats, with c a tiny amount either side of zero (or zero: then the tie goes to even), scaled by powers
// of two down to results in the subnormal range; and operands of unrelated magnitudes.
TEST(CanonicalMath, FusedMulAddRoundsHalfwayProductsAndWideExponentsOnEveryTarget) {
  std::mt19937_64 rng(72);
  std::uniform_int_distribution<int> odd_a(1 << 10, (1 << 11) - 1), odd_b(1 << 11, (1 << 12) - 1);
  std::uniform_int_distribution<int> tiny_exponent(-70, -26), scale(-150, 100), spread(-60, 10);
  std::uniform_real_distribution<float> mantissa(0.5f, 1.0f);
  const int64_t n = 4096;
  std::vector<float> a(n), b(n), c(n);
  for (int64_t i = 0; i < n; ++i) {
    if (i % 2 == 0) {
      // Odd (2j + 1) * (2k + 1) in (2^23, 2^25): where it is above 2^24, 25 significant bits, the last one set, so
      // exactly halfway between two floats.
      const int shift = scale(rng) / 2;
      a[i] = std::ldexp(static_cast<float>(2 * odd_a(rng) + 1), shift);
      b[i] = std::ldexp(static_cast<float>(2 * odd_b(rng) + 1), shift);
      const int side = static_cast<int>(i / 2 % 3) - 1;  // -1, 0, 1
      c[i] = static_cast<float>(side) * std::ldexp(1.0f, tiny_exponent(rng) + 2 * shift);
      if (i % 8 == 2) a[i] = -a[i];
    } else {
      const int e = scale(rng) / 2;
      a[i] = std::ldexp(mantissa(rng), e) * (i % 3 == 0 ? -1.0f : 1.0f);
      b[i] = std::ldexp(mantissa(rng), scale(rng) / 2);
      c[i] = std::ldexp(mantissa(rng), std::max(-149, std::ilogb(a[i]) + std::ilogb(b[i]) + spread(rng))) *
             (i % 5 == 0 ? -1.0f : 1.0f);
    }
  }
  ExpectFusedMulAddIsStdFmaOnEveryTarget(a, b, c);
}

// The canonical order, written independently: partial k takes the terms k, k + 16, ... (each a fused multiply-add),
// then pairs (l, l + 8), (l, l + 4), (l, l + 2), (l, l + 1).
float ModelDot(const float* a, const float* b, int64_t n) {
  float partial[16] = {};
  for (int64_t i = 0; i < n; ++i) partial[i % 16] = std::fma(a[i], b[i], partial[i % 16]);
  for (int width = 8; width >= 1; width /= 2) {
    for (int l = 0; l < width; ++l) partial[l] = partial[l] + partial[l + width];
  }
  return partial[0];
}

TEST(CanonicalMath, CanonicalDotFollowsTheCanonicalOrderOnEveryTarget) {
  std::mt19937_64 rng(72);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<int64_t> lengths;
  for (int64_t n = 0; n <= 70; ++n) lengths.push_back(n);
  for (int64_t n : {127, 128, 129, 1000, 4096, 4095}) lengths.push_back(n);
  std::vector<std::vector<float>> as, bs;
  for (int64_t n : lengths) {
    std::vector<float> a(n), b(n);
    for (int64_t i = 0; i < n; ++i) {
      a[i] = uniform(rng);
      b[i] = uniform(rng) * (i % 7 == 0 ? 1e4f : 1.0f);  // magnitudes that make the order matter
    }
    as.push_back(a);
    bs.push_back(b);
  }
  ExpectSameBitsOnEveryTarget([&] {
    std::vector<float> sums;
    for (size_t k = 0; k < lengths.size(); ++k) {
      const float sum = pacl::canonical_testing::CanonicalDot(as[k].data(), bs[k].data(), lengths[k]);
      EXPECT_EQ(Bits(sum), Bits(ModelDot(as[k].data(), bs[k].data(), lengths[k]))) << "n = " << lengths[k];
      sums.push_back(sum);
    }
    return sums;
  });
}

// Four dot products in one walk (CanonicalSums4, and CanonicalSums4WholeVectors where the length is a multiple of
// the target's vector length) give each sum the canonical order's bits.
TEST(CanonicalMath, FourDotsInOneWalkFollowTheCanonicalOrderOnEveryTarget) {
  std::mt19937_64 rng(73);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<int64_t> lengths;
  for (int64_t n = 0; n <= 70; ++n) lengths.push_back(n);
  for (int64_t n : {124, 127, 128, 136, 200, 256, 1000, 1028}) lengths.push_back(n);
  std::vector<std::vector<float>> rows_of(4 * lengths.size()), bs;
  for (size_t k = 0; k < lengths.size(); ++k) {
    std::vector<float> b(lengths[k]);
    for (int64_t i = 0; i < lengths[k]; ++i) b[i] = uniform(rng) * (i % 7 == 0 ? 1e4f : 1.0f);
    bs.push_back(b);
    for (int j = 0; j < 4; ++j) {
      for (int64_t i = 0; i < lengths[k]; ++i) rows_of[4 * k + j].push_back(uniform(rng));
    }
  }
  ExpectSameBitsOnEveryTarget([&] {
    std::vector<float> sums;
    int whole_vector_lengths = 0;
    for (size_t k = 0; k < lengths.size(); ++k) {
      const int64_t n = lengths[k];
      const float* rows[4] = {rows_of[4 * k].data(), rows_of[4 * k + 1].data(), rows_of[4 * k + 2].data(),
                              rows_of[4 * k + 3].data()};
      float four[4] = {NAN, NAN, NAN, NAN};
      EXPECT_TRUE(pacl::canonical_testing::CanonicalDots4(rows, bs[k].data(), n, false, four));
      float whole[4] = {NAN, NAN, NAN, NAN};
      const bool has_whole = pacl::canonical_testing::CanonicalDots4(rows, bs[k].data(), n, true, whole);
      whole_vector_lengths += has_whole ? 1 : 0;
      if (n % 16 == 0) {
        EXPECT_TRUE(has_whole) << "n = " << n;  // a multiple of every target's vector length
      }
      for (int j = 0; j < 4; ++j) {
        const uint32_t model = Bits(ModelDot(rows[j], bs[k].data(), n));
        EXPECT_EQ(Bits(four[j]), model) << "n = " << n << ", sum " << j;
        if (has_whole) {
          EXPECT_EQ(Bits(whole[j]), model) << "whole vectors, n = " << n << ", sum " << j;
        }
        sums.push_back(four[j]);
      }
    }
    EXPECT_GE(whole_vector_lengths, 6);
    return sums;
  });
}

TEST(CanonicalMath, ExpIsWithinOneUlpAndTheSameOnEveryTarget) {
  std::vector<float> x;
  // Every 1552nd float bit pattern of [-110, 95] (1.4 million inputs: all exponents, dense near 0) ...
  for (uint32_t bits = 0; bits < 0x80000000u; bits += 97 * 16) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    if (f <= 95.0f) x.push_back(f);
    if (f <= 110.0f) x.push_back(-f);
  }
  // ... the edges of each range and the special values.
  const float inf = std::numeric_limits<float>::infinity();
  for (float edge : {-104.0f, -103.97f, -103.28f, -87.3365f, -87.34f, -86.6f, 0.0f, -0.0f, 88.3f, 88.72f, 88.7228f,
                     88.73f, 89.0f, 89.5f, -inf, inf, 1e-8f, -1e-8f, 0.34657f, -0.34657f}) {
    x.push_back(edge);
    x.push_back(std::nextafter(edge, inf));
    x.push_back(std::nextafter(edge, -inf));
  }
  ExpectSameBitsOnEveryTarget([&] {
    std::vector<float> out(x.size(), std::nanf(""));
    pacl::canonical_testing::ExpRow(x.data(), out.data(), static_cast<int64_t>(x.size()));
    double worst = 0.0;
    float worst_x = 0.0f;
    for (size_t i = 0; i < x.size(); ++i) {
      const double exact = std::exp(static_cast<double>(x[i]));
      const double error = UlpError(out[i], exact);
      if (error > worst) {
        worst = error;
        worst_x = x[i];
      }
    }
    EXPECT_LE(worst, 1.0) << "worst at x = " << worst_x;
    std::printf("Exp: %zu inputs, worst error %.3f ulp (x = %.9g)\n", x.size(), worst, worst_x);
    return out;
  });
}

// ExpNormalRange, Exp without its range checks, gives Exp's bits on [-86, 86] (its documented range), on every
// target: the softmax relies on it to take either for a vector.
TEST(CanonicalMath, ExpNormalRangeGivesExpsBitsInItsRange) {
  std::vector<float> x;
  for (uint32_t bits = 0; bits < 0x80000000u; bits += 97 * 16 + 3) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    if (f > pacl::hd::kExpNormalAbove) break;
    x.push_back(f);
    x.push_back(-f);
  }
  for (float edge : {pacl::hd::kExpNormalBelow, pacl::hd::kExpNormalAbove, -0.34657f, 0.34657f, 1e-8f, -1e-8f}) {
    x.push_back(edge);
    x.push_back(std::nextafter(edge, 0.0f));
  }
  ExpectSameBitsOnEveryTarget([&] {
    std::vector<float> reference(x.size(), std::nanf(""));
    std::vector<float> out(x.size(), std::nanf(""));
    pacl::canonical_testing::ExpRow(x.data(), reference.data(), static_cast<int64_t>(x.size()));
    pacl::canonical_testing::ExpNormalRangeRow(x.data(), out.data(), static_cast<int64_t>(x.size()));
    size_t differing = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      if (pacl::hd::FloatBits(out[i]) != pacl::hd::FloatBits(reference[i]) && ++differing <= 5) {
        ADD_FAILURE() << "x = " << x[i] << ": ExpNormalRange " << out[i] << ", Exp " << reference[i];
      }
    }
    EXPECT_EQ(differing, 0u) << "of " << x.size();
    return out;
  });
}

// The scalar twin that the CUDA softmax uses (pacl/host_device.h) gives the vector Exp's bits for every input.
TEST(CanonicalMath, ScalarExpTwinMatchesTheVectorExpBitForBit) {
  std::vector<float> x;
  for (uint32_t bits = 0; bits < 0x80000000u; bits += 97 * 16 + 1) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    x.push_back(f);
    x.push_back(-f);
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float edge : {-104.0f, -103.97f, -87.3365f, -86.6f, 0.0f, 88.7228f, 89.0f, -inf, inf}) {
    x.push_back(edge);
    x.push_back(std::nextafter(edge, inf));
    x.push_back(std::nextafter(edge, -inf));
  }
  std::vector<float> vector_exp(x.size());
  pacl::canonical_testing::ExpRow(x.data(), vector_exp.data(), static_cast<int64_t>(x.size()));
  size_t differing = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) continue;
    const float twin = pacl::hd::CanonicalExp(x[i]);
    if (pacl::hd::FloatBits(twin) != pacl::hd::FloatBits(vector_exp[i]) && ++differing <= 5) {
      ADD_FAILURE() << "x = " << x[i] << ": twin " << twin << ", vector " << vector_exp[i];
    }
  }
  EXPECT_EQ(differing, 0u) << "of " << x.size();
  EXPECT_TRUE(std::isnan(pacl::hd::CanonicalExp(std::nanf(""))));
}

}  // namespace
