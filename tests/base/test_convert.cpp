// pacl::LoadAsFloat / StoreFromFloat / SimdTargetName against the independent fp16/bf16 reference in
// tests/reference/float_formats.h, on EVERY Highway target compiled into libnnopbase that this CPU can run (the
// dispatch is restricted to one target at a time), so the SSE4 and baseline paths are tested on an AVX-512
// machine too. Checks: all 65536 fp16 and bf16 bit patterns (load, and load-store round trip), every halfway case
// between adjacent fp16/bf16 values and its neighbours, values near overflow, subnormals, signed zeros, Inf and
// NaN, two million random floats, lengths around the vector sizes with strides 1, 2, 3, -1 (and 0 for loads),
// guard elements around every destination, and bit-identical results across targets.
#include <gtest/gtest.h>

#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/simd_targets.h"
#include "hwy/targets.h"  // hwy::TargetName and the HWY_* target bits (header-only parts)
#include "pacl/convert.h"
#include "float_formats.h"

namespace {

// ---------------------------------------------------------------------------------------------------------------
// Targets.

using simd_targets::AvailableTargets;

// Calls fn() once per available target with dispatch restricted to it.
template <class Fn>
void ForEachTarget(Fn&& fn) {
  simd_targets::ForEachTarget([&](const std::string&) { fn(); });
}

TEST(ConvertTargetsTest, DispatchCoversTheTargetsOfThisCpu) {
  const std::vector<int64_t> targets = AvailableTargets();
  ASSERT_FALSE(targets.empty());
  std::string names;
  for (int64_t target : targets) names += std::string(names.empty() ? "" : ", ") + hwy::TargetName(target);
  std::printf("Highway targets compiled into libnnopbase and runnable here: %s; chosen: %s\n", names.c_str(),
              pacl::SimdTargetName());
  // Unrestricted dispatch picks the best one on x86. On Arm, Highway 1.0.3 picks the generic SVE2 (or SVE) code
  // where the CPU's vector length also allows the fixed-length SVE2_128 or SVE_256 code (observed under qemu with
  // 128- and 256-bit vectors): any of the available targets is right there (they give the same bits; ACLNN_SIMD_TARGET
  // chooses one).
#if HWY_ARCH_X86
  EXPECT_STREQ(pacl::SimdTargetName(), hwy::TargetName(targets.front()));
#else
  bool chosen_is_available = false;
  for (int64_t target : targets) {
    chosen_is_available = chosen_is_available || std::strcmp(hwy::TargetName(target), pacl::SimdTargetName()) == 0;
  }
  EXPECT_TRUE(chosen_is_available) << pacl::SimdTargetName();
#endif
#if defined(PACL_SIMD_TARGETS_NATIVE)
  // PACL_SIMD_TARGETS=NATIVE (CMakeLists.txt): the build machine's best target alone.
  EXPECT_EQ(targets.size(), 1u);
  EXPECT_EQ(targets.front(), HWY_STATIC_TARGET) << hwy::TargetName(targets.front());
  return;
#endif
  // The baseline every CPU of the architecture runs is always there: the portable scalar code on x86 (SSE2, below
  // Highway's SSE4), NEON on aarch64.
  EXPECT_EQ(targets.back(), HWY_STATIC_TARGET) << hwy::TargetName(targets.back());
#if HWY_ARCH_X86
  const int64_t mask = pacl::convert_testing::AvailableSimdTargetsForTest();
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl")) {
    EXPECT_TRUE((mask & HWY_AVX3) != 0) << "AVX-512 CPU but no AVX3 code";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2")) {
    EXPECT_TRUE((mask & HWY_AVX2) != 0) << "AVX2 CPU but no AVX2 code";
  }
  if (__builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("aes")) {
    EXPECT_TRUE((mask & HWY_SSE4) != 0) << "SSE4 CPU but no SSE4 code";
  }
#elif HWY_ARCH_ARM_A64
  // The kernel's hardware capabilities say what the CPU (or qemu's emulated one) has.
  const int64_t mask = pacl::convert_testing::AvailableSimdTargetsForTest();
  EXPECT_TRUE((mask & HWY_NEON) != 0) << "aarch64 CPU but no NEON code";
  if ((getauxval(AT_HWCAP) & HWCAP_SVE) != 0) {
    EXPECT_TRUE((mask & (HWY_SVE | HWY_SVE_256 | HWY_SVE2 | HWY_SVE2_128)) != 0) << "SVE CPU but no SVE code";
  }
  if ((getauxval(AT_HWCAP2) & HWCAP2_SVE2) != 0) {
    EXPECT_TRUE((mask & (HWY_SVE2 | HWY_SVE2_128)) != 0) << "SVE2 CPU but no SVE2 code";
  }
#endif
}

// ---------------------------------------------------------------------------------------------------------------
// Formats and the reference.

enum class Format { kFloat, kHalf, kBFloat16 };
const Format kAllFormats[] = {Format::kFloat, Format::kHalf, Format::kBFloat16};

aclDataType DataType(Format f) {
  switch (f) {
    case Format::kHalf:
      return ACL_FLOAT16;
    case Format::kBFloat16:
      return ACL_BF16;
    default:
      return ACL_FLOAT;
  }
}

const char* Name(Format f) {
  switch (f) {
    case Format::kHalf:
      return "fp16";
    case Format::kBFloat16:
      return "bf16";
    default:
      return "fp32";
  }
}

uint32_t FloatBits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

float BitsFloat(uint32_t bits) {
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// The value that the storage bits stand for.
double Decode(Format f, uint32_t bits) {
  switch (f) {
    case Format::kHalf:
      return ref::HalfBitsToDouble(static_cast<uint16_t>(bits));
    case Format::kBFloat16:
      return ref::BFloat16BitsToDouble(static_cast<uint16_t>(bits));
    default:
      return static_cast<double>(BitsFloat(bits));
  }
}

// The storage bits of x rounded to format f (canonical NaN for NaN).
uint32_t Encode(Format f, float x) {
  switch (f) {
    case Format::kHalf:
      return ref::DoubleToHalfBits(static_cast<double>(x));
    case Format::kBFloat16:
      return ref::DoubleToBFloat16Bits(static_cast<double>(x));
    default:
      return FloatBits(x);
  }
}

bool IsNanBits(Format f, uint32_t bits) {
  switch (f) {
    case Format::kHalf:
      return (bits & 0x7FFFu) > 0x7C00u;
    case Format::kBFloat16:
      return (bits & 0x7FFFu) > 0x7F80u;
    default:
      return (bits & 0x7FFFFFFFu) > 0x7F800000u;
  }
}

bool IsQuietNanBits(Format f, uint32_t bits) {
  switch (f) {
    case Format::kHalf:
      return IsNanBits(f, bits) && (bits & 0x0200u) != 0;
    case Format::kBFloat16:
      return IsNanBits(f, bits) && (bits & 0x0040u) != 0;
    default:
      return IsNanBits(f, bits) && (bits & 0x00400000u) != 0;
  }
}

uint32_t SignBit(Format f) { return f == Format::kFloat ? 0x80000000u : 0x8000u; }

// Collects mismatches; reports the count and the first few.
class Mismatches {
 public:
  void Add(const std::string& what) {
    if (count_ < 8) first_ += "  " + what + "\n";
    ++count_;
  }
  int64_t count() const { return count_; }
  std::string Report() const { return std::to_string(count_) + " mismatches, first:\n" + first_; }

 private:
  int64_t count_ = 0;
  std::string first_;
};

std::string Hex(uint32_t bits) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", bits);
  return text;
}

// A loaded value must equal the reference value exactly (same sign for zeros); NaN must stay NaN with its sign.
void CheckLoaded(Format f, uint32_t source_bits, float got, Mismatches* mismatches) {
  const double want = Decode(f, source_bits);
  const bool ok = std::isnan(want) ? std::isnan(got) && std::signbit(got) == std::signbit(want)
                                   : static_cast<double>(got) == want && std::signbit(got) == std::signbit(want);
  if (!ok) {
    mismatches->Add(std::string(Name(f)) + " bits " + Hex(source_bits) + ": got " + Hex(FloatBits(got)));
  }
}

// A stored value must equal the reference rounding exactly; NaN must become a quiet NaN of the same sign.
void CheckStored(Format f, float input, uint32_t got, Mismatches* mismatches) {
  bool ok;
  if (std::isnan(input)) {
    ok = f == Format::kFloat ? got == FloatBits(input)
                             : IsQuietNanBits(f, got) && ((got & SignBit(f)) != 0) == std::signbit(input);
  } else {
    ok = got == Encode(f, input);
  }
  if (!ok) {
    mismatches->Add(std::string(Name(f)) + " from " + Hex(FloatBits(input)) + ": got " + Hex(got) + ", want " +
                    Hex(Encode(f, input)));
  }
}

// Inputs for the narrowing tests.
std::vector<float> SpecialFloats() {
  std::vector<float> values;
  const uint32_t bit_patterns[] = {
      0x00000000u, 0x00000001u, 0x007FFFFFu, 0x00800000u, 0x3F800000u,  // 0, float subnormals, FLT_MIN, 1
      0x7F7FFFFFu, 0x7F800000u, 0x7F800001u, 0x7FA00000u, 0x7FC00000u,  // FLT_MAX, Inf, signalling/quiet NaN
      0x7FC12345u, 0x7FFFFFFFu, 0x7F7F8000u, 0x7F7F7FFFu, 0x7F7F8001u,  // NaN payloads; bf16 overflow tie
      0x7F7EFFFFu, 0x7F7E8000u, 0x00008000u, 0x00018000u, 0x00007FFFu,  // bf16 ties among float subnormals
      0x33000000u, 0x33000001u, 0x32FFFFFFu, 0x33800000u, 0x33C00000u,  // 2^-25 (fp16 0/min-subnormal tie)...
      0x387FC000u, 0x387FE000u, 0x387FF000u, 0x38800000u, 0x38801000u,  // around fp16 2^-14
      0x477FE000u, 0x477FEFFFu, 0x477FF000u, 0x477FF001u, 0x47800000u,  // around fp16 max (65504, 65520)
      0x477FF800u, 0x47000000u, 0x46FFF000u, 0x3C010000u, 0x3C00F000u,
  };
  for (uint32_t bits : bit_patterns) {
    values.push_back(BitsFloat(bits));
    values.push_back(BitsFloat(bits | 0x80000000u));
  }
  const float decimals[] = {65504.0f, 65519.0f, 65519.996f, 65520.0f,    65536.0f, 1e5f,  1e-8f,  6e-8f,
                            5.96e-8f, 3e-8f,    0.1f,       1.0f / 3.0f, 2.5f,     1e38f, 3.0e38f};
  for (float v : decimals) {
    values.push_back(v);
    values.push_back(-v);
  }
  return values;
}

// Every midpoint between adjacent finite values of f (positive and negative), and the floats just either side.
std::vector<float> HalfwayFloats(Format f) {
  const ref::FloatFormat format = f == Format::kHalf ? ref::kHalf : ref::kBFloat16;
  const uint16_t largest_finite = f == Format::kHalf ? 0x7BFF : 0x7F7F;
  std::vector<float> values;
  for (uint32_t code = 0; code <= largest_finite; ++code) {
    const double low = Decode(f, code);
    const double high = code == largest_finite ? std::ldexp(1.0, format.max_exponent + 1) : Decode(f, code + 1);
    const double middle = (low + high) / 2;
    const float m = static_cast<float>(middle);
    if (static_cast<double>(m) != middle) continue;  // never: the formats have far fewer bits than fp32
    for (float v : {m, std::nextafter(m, std::numeric_limits<float>::infinity()), std::nextafter(m, 0.0f)}) {
      values.push_back(v);
      values.push_back(-v);
    }
  }
  return values;
}

// Random floats: half uniform over all bit patterns (every exponent, NaNs included), half with exponents in
// [2^-30, 2^20] where fp16 subnormals, normals and overflow live.
std::vector<float> RandomFloats(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint32_t> any_bits;
  std::uniform_int_distribution<uint32_t> exponent(127 - 30, 127 + 20);
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) {
    uint32_t bits = any_bits(rng);
    if (i % 2 == 1) bits = (bits & 0x807FFFFFu) | (exponent(rng) << 23);
    values[i] = BitsFloat(bits);
  }
  return values;
}

// StoreFromFloat of a contiguous row with guard elements either side; returns the stored bits.
template <class Storage>
std::vector<uint32_t> StoreRow(Format f, const std::vector<float>& input, Mismatches* guard_damage) {
  constexpr size_t kGuard = 19;
  const Storage sentinel = static_cast<Storage>(0xA5A5A5A5u);
  std::vector<Storage> buffer(input.size() + 2 * kGuard, sentinel);
  pacl::StoreFromFloat(input.data(), DataType(f), buffer.data() + kGuard, 1, static_cast<int64_t>(input.size()));
  for (size_t g = 0; g < kGuard; ++g) {
    if (buffer[g] != sentinel || buffer[buffer.size() - 1 - g] != sentinel) guard_damage->Add("guard overwritten");
  }
  return std::vector<uint32_t>(buffer.begin() + kGuard, buffer.end() - kGuard);
}

std::vector<uint32_t> StoreRowAnyFormat(Format f, const std::vector<float>& input, Mismatches* guard_damage) {
  return f == Format::kFloat ? StoreRow<uint32_t>(f, input, guard_damage) : StoreRow<uint16_t>(f, input, guard_damage);
}

// Stores `input` as f on every target, checks each element against the reference and that all targets agree.
void CheckStoreOnEveryTarget(Format f, const std::vector<float>& input) {
  SCOPED_TRACE(Name(f));
  std::vector<uint32_t> expected(input.size());
  for (size_t i = 0; i < input.size(); ++i) expected[i] = Encode(f, input[i]);
  std::vector<uint32_t> first_target_result;
  ForEachTarget([&] {
    Mismatches mismatches;
    const std::vector<uint32_t> got = StoreRowAnyFormat(f, input, &mismatches);
    for (size_t i = 0; i < input.size(); ++i) {
      if (std::isnan(input[i]) || got[i] != expected[i]) CheckStored(f, input[i], got[i], &mismatches);
    }
    EXPECT_EQ(mismatches.count(), 0) << mismatches.Report();
    if (first_target_result.empty()) {
      first_target_result = got;
    } else {
      EXPECT_TRUE(got == first_target_result) << "targets disagree";
    }
  });
}

// ---------------------------------------------------------------------------------------------------------------
// LoadAsFloat.

void CheckLoadAllBitPatterns(Format f) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<uint32_t> first_target_result;
  ForEachTarget([&] {
    constexpr size_t kGuard = 17;
    const uint32_t sentinel = 0x7FA5A5A5u;
    std::vector<float> out(all.size() + 2 * kGuard, BitsFloat(sentinel));
    pacl::LoadAsFloat(DataType(f), all.data(), 1, out.data() + kGuard, static_cast<int64_t>(all.size()));
    Mismatches mismatches;
    std::vector<uint32_t> bits(all.size());
    for (size_t i = 0; i < all.size(); ++i) {
      CheckLoaded(f, all[i], out[kGuard + i], &mismatches);
      bits[i] = FloatBits(out[kGuard + i]);
    }
    for (size_t g = 0; g < kGuard; ++g) {
      if (FloatBits(out[g]) != sentinel || FloatBits(out[out.size() - 1 - g]) != sentinel) {
        mismatches.Add("guard overwritten");
      }
    }
    EXPECT_EQ(mismatches.count(), 0) << mismatches.Report();
    if (first_target_result.empty()) {
      first_target_result = bits;
    } else {
      EXPECT_TRUE(bits == first_target_result) << "targets disagree";
    }
  });
}

TEST(LoadAsFloatTest, AllHalfBitPatterns) { CheckLoadAllBitPatterns(Format::kHalf); }
TEST(LoadAsFloatTest, AllBFloat16BitPatterns) { CheckLoadAllBitPatterns(Format::kBFloat16); }

const int64_t kLengths[] = {0, 1, 7, 8, 15, 16, 17, 63, 64, 65, 1000, 4099};

// Source rows of exactly the span the stride needs (so ASan sees any overread), random bits.
TEST(LoadAsFloatTest, StridesAndLengths) {
  std::mt19937 rng(7);
  ForEachTarget([&] {
    for (Format f : kAllFormats) {
      for (int64_t stride : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{-1}, int64_t{0}}) {
        for (int64_t n : kLengths) {
          SCOPED_TRACE(std::string(Name(f)) + " stride " + std::to_string(stride) + " n " + std::to_string(n));
          const int64_t magnitude = stride < 0 ? -stride : stride;
          const size_t span = n == 0 ? 0 : static_cast<size_t>((n - 1) * magnitude + 1);
          std::vector<uint32_t> source_bits(span);
          for (uint32_t& b : source_bits) b = f == Format::kFloat ? rng() : rng() & 0xFFFFu;
          std::vector<float> source32;
          std::vector<uint16_t> source16;
          const size_t first = stride < 0 && span > 0 ? span - 1 : 0;  // element 0 of the row
          const void* base = nullptr;
          if (f == Format::kFloat) {
            for (uint32_t b : source_bits) source32.push_back(BitsFloat(b));
            if (n > 0) base = source32.data() + first;
          } else {
            for (uint32_t b : source_bits) source16.push_back(static_cast<uint16_t>(b));
            if (n > 0) base = source16.data() + first;
          }
          constexpr size_t kGuard = 5;
          const uint32_t sentinel = 0x7FA5A5A5u;
          std::vector<float> out(static_cast<size_t>(n) + 2 * kGuard, BitsFloat(sentinel));
          pacl::LoadAsFloat(DataType(f), base, stride, out.data() + kGuard, n);
          Mismatches mismatches;
          for (int64_t i = 0; i < n; ++i) {
            const uint32_t bits = source_bits[static_cast<size_t>(static_cast<int64_t>(first) + i * stride)];
            const float got = out[kGuard + static_cast<size_t>(i)];
            if (f == Format::kFloat) {
              if (FloatBits(got) != bits) mismatches.Add("fp32 " + Hex(bits) + " became " + Hex(FloatBits(got)));
            } else {
              CheckLoaded(f, bits, got, &mismatches);
            }
          }
          for (size_t g = 0; g < kGuard; ++g) {
            if (FloatBits(out[g]) != sentinel || FloatBits(out[out.size() - 1 - g]) != sentinel) {
              mismatches.Add("guard overwritten");
            }
          }
          ASSERT_EQ(mismatches.count(), 0) << mismatches.Report();
        }
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------------------------
// StoreFromFloat.

TEST(StoreFromFloatTest, SpecialValues) {
  const std::vector<float> values = SpecialFloats();
  for (Format f : kAllFormats) CheckStoreOnEveryTarget(f, values);
}

TEST(StoreFromFloatTest, EveryHalfwayCaseOfHalf) {
  CheckStoreOnEveryTarget(Format::kHalf, HalfwayFloats(Format::kHalf));
}

TEST(StoreFromFloatTest, EveryHalfwayCaseOfBFloat16) {
  CheckStoreOnEveryTarget(Format::kBFloat16, HalfwayFloats(Format::kBFloat16));
}

TEST(StoreFromFloatTest, TwoMillionRandomFloats) {
  const std::vector<float> values = RandomFloats(size_t{1} << 21, 20240611);
  CheckStoreOnEveryTarget(Format::kHalf, values);
  CheckStoreOnEveryTarget(Format::kBFloat16, values);
}

// Every bf16 rounding neighbourhood: each of the 65536 upper halves of a float with low halves 0x0000, 0x0001,
// 0x7FFF, 0x8000 (the tie), 0x8001, 0xFFFF and random ones. The upper halves are spread (an odd multiplier) so
// that about one vector of 16 lanes in 16 mixes a float subnormal with normal, Inf or NaN lanes: on AVX-512 CPUs
// with AVX512_BF16 such vectors keep the integer rounding while the others take VCVTNEPS2BF16, which reads
// subnormals as zero (pacl/float_vectors-inl.h).
TEST(StoreFromFloatTest, EveryBFloat16NeighbourhoodInMixedVectors) {
  std::mt19937 rng(7);
  std::vector<uint32_t> low_halves = {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu};
  while (low_halves.size() < 24) low_halves.push_back(rng() & 0xFFFFu);
  std::vector<float> values;
  values.reserve(65536 * low_halves.size());
  for (uint32_t low : low_halves) {
    for (uint32_t i = 0; i < 65536; ++i) values.push_back(BitsFloat((((i * 40503u) & 0xFFFFu) << 16) | low));
  }
  CheckStoreOnEveryTarget(Format::kBFloat16, values);
}

// Strided destinations: every element lands at its place, the gaps between them and the guards stay untouched.
template <class Storage>
void CheckStridedStore(Format f, int64_t stride, int64_t n, const std::vector<float>& input) {
  constexpr size_t kGuard = 7;
  const Storage sentinel = static_cast<Storage>(0xA5A5A5A5u);
  const int64_t magnitude = stride < 0 ? -stride : stride;
  const size_t span = n == 0 ? 0 : static_cast<size_t>((n - 1) * magnitude + 1);
  std::vector<Storage> buffer(span + 2 * kGuard, sentinel);
  const size_t first = kGuard + (stride < 0 && span > 0 ? span - 1 : 0);  // element 0 of the row
  pacl::StoreFromFloat(input.data(), DataType(f), buffer.data() + first, stride, n);
  std::vector<bool> written(buffer.size(), false);
  Mismatches mismatches;
  for (int64_t i = 0; i < n; ++i) {
    const size_t at = static_cast<size_t>(static_cast<int64_t>(first) + i * stride);
    written[at] = true;
    const uint32_t got = buffer[at];
    if (std::isnan(input[static_cast<size_t>(i)]) || got != Encode(f, input[static_cast<size_t>(i)])) {
      CheckStored(f, input[static_cast<size_t>(i)], got, &mismatches);
    }
  }
  for (size_t at = 0; at < buffer.size(); ++at) {
    if (!written[at] && buffer[at] != sentinel) mismatches.Add("untouched element " + std::to_string(at) + " changed");
  }
  ASSERT_EQ(mismatches.count(), 0) << mismatches.Report();
}

TEST(StoreFromFloatTest, StridesAndLengthsWithGuards) {
  std::vector<float> input = RandomFloats(4099, 99);
  const std::vector<float> special = SpecialFloats();
  std::copy(special.begin(), special.end(), input.begin() + 3);
  ForEachTarget([&] {
    for (Format f : kAllFormats) {
      for (int64_t stride : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{-1}}) {
        for (int64_t n : kLengths) {
          SCOPED_TRACE(std::string(Name(f)) + " stride " + std::to_string(stride) + " n " + std::to_string(n));
          // An input row of exactly n elements (ASan sees any overread).
          const std::vector<float> row(input.begin(), input.begin() + n);
          if (f == Format::kFloat) {
            CheckStridedStore<uint32_t>(f, stride, n, row);
          } else {
            CheckStridedStore<uint16_t>(f, stride, n, row);
          }
        }
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------------------------
// StreamFromFloat: the values StoreFromFloat gives, at every alignment of the destination (the head before the first
// vector boundary, the streamed vectors and the tail), nothing written outside the row.

template <class Storage>
void CheckStreamedRow(Format f, size_t misalignment, const std::vector<float>& input) {
  constexpr size_t kGuard = 40;  // elements; the row starts at kGuard + misalignment of a 64-byte-aligned buffer
  const Storage sentinel = static_cast<Storage>(0xA5A5A5A5u);
  std::vector<Storage> storage(input.size() + 2 * kGuard + 64 / sizeof(Storage), sentinel);
  Storage* aligned = storage.data();
  while (reinterpret_cast<uintptr_t>(aligned) % 64 != 0) ++aligned;
  const size_t first = static_cast<size_t>(aligned - storage.data()) + kGuard + misalignment;
  pacl::StreamFromFloat(input.data(), DataType(f), storage.data() + first, static_cast<int64_t>(input.size()));
  pacl::FinishStreamedStores();
  Mismatches mismatches;
  for (size_t i = 0; i < input.size(); ++i) {
    const uint32_t got = storage[first + i];
    if (std::isnan(input[i]) || got != Encode(f, input[i])) CheckStored(f, input[i], got, &mismatches);
  }
  for (size_t at = 0; at < storage.size(); ++at) {
    if ((at < first || at >= first + input.size()) && storage[at] != sentinel) {
      mismatches.Add("element " + std::to_string(at) + " outside the row changed");
    }
  }
  ASSERT_EQ(mismatches.count(), 0) << mismatches.Report();
}

TEST(StreamFromFloatTest, EveryAlignmentAndLengthOnEveryTarget) {
  std::vector<float> input = RandomFloats(4099, 123);
  const std::vector<float> special = SpecialFloats();
  std::copy(special.begin(), special.end(), input.begin() + 5);
  ForEachTarget([&] {
    for (Format f : kAllFormats) {
      for (size_t misalignment = 0; misalignment < 33; ++misalignment) {
        for (int64_t n : kLengths) {
          SCOPED_TRACE(std::string(Name(f)) + " misalignment " + std::to_string(misalignment) + " n " +
                       std::to_string(n));
          const std::vector<float> row(input.begin(), input.begin() + n);  // exactly n (ASan sees any overread)
          if (f == Format::kFloat) {
            CheckStreamedRow<uint32_t>(f, misalignment, row);
          } else {
            CheckStreamedRow<uint16_t>(f, misalignment, row);
          }
        }
      }
    }
  });
}

// fp16/bf16 -> fp32 -> fp16/bf16 gives back every non-NaN bit pattern; NaN comes back as a quiet NaN.
TEST(ConvertRoundTripTest, AllHalfAndBFloat16BitPatterns) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  ForEachTarget([&] {
    for (Format f : {Format::kHalf, Format::kBFloat16}) {
      std::vector<float> widened(all.size(), std::numeric_limits<float>::quiet_NaN());
      std::vector<uint16_t> back(all.size(), 0xA5A5);
      pacl::LoadAsFloat(DataType(f), all.data(), 1, widened.data(), static_cast<int64_t>(all.size()));
      pacl::StoreFromFloat(widened.data(), DataType(f), back.data(), 1, static_cast<int64_t>(all.size()));
      Mismatches mismatches;
      for (size_t i = 0; i < all.size(); ++i) {
        const bool ok = IsNanBits(f, all[i]) ? IsQuietNanBits(f, back[i]) && (back[i] & 0x8000u) == (all[i] & 0x8000u)
                                             : back[i] == all[i];
        if (!ok) mismatches.Add(std::string(Name(f)) + " " + Hex(all[i]) + " came back as " + Hex(back[i]));
      }
      EXPECT_EQ(mismatches.count(), 0) << mismatches.Report();
    }
  });
}

TEST(ConvertTest, NonPositiveCountsTouchNothing) {
  std::vector<uint16_t> storage(4, 0xA5A5);
  std::vector<float> floats(4, 1.5f);
  for (int64_t n : {int64_t{0}, int64_t{-3}}) {
    for (Format f : kAllFormats) {
      pacl::LoadAsFloat(DataType(f), storage.data(), 1, floats.data(), n);
      pacl::StoreFromFloat(floats.data(), DataType(f), storage.data(), 1, n);
      pacl::StreamFromFloat(floats.data(), DataType(f), storage.data(), n);
    }
  }
  EXPECT_EQ(storage, std::vector<uint16_t>(4, 0xA5A5));
  EXPECT_EQ(floats, std::vector<float>(4, 1.5f));
}

TEST(ConvertTest, UnsupportedTypeLoadsNanAndStoresNothing) {
  std::vector<int32_t> ints(8, 7);
  std::vector<float> floats(8, 2.0f);
  pacl::LoadAsFloat(ACL_INT32, ints.data(), 1, floats.data(), 8);
  for (float v : floats) EXPECT_TRUE(std::isnan(v));
  pacl::StoreFromFloat(floats.data(), ACL_INT32, ints.data(), 1, 8);
  pacl::StreamFromFloat(floats.data(), ACL_INT32, ints.data(), 8);
  EXPECT_EQ(ints, std::vector<int32_t>(8, 7));
}

}  // namespace

namespace {

// ACLNN_SIMD_TARGET pins dispatch while the library loads; ctest runs this test with each value (tests/CMakeLists).
TEST(SimdTargetPin, ChosenTargetFollowsTheEnvironment) {
  const char* wanted = std::getenv("ACLNN_SIMD_TARGET");
  if (wanted == nullptr) GTEST_SKIP() << "ACLNN_SIMD_TARGET is not set";
  // The targets this CPU can run (all of them when the pin was ignored, only the pinned one otherwise).
  bool can_run = false;
  for (int64_t rest = pacl::convert_testing::AvailableSimdTargetsForTest(); rest != 0; rest &= rest - 1) {
    can_run = can_run || std::strcmp(hwy::TargetName(rest & -rest), wanted) == 0;
  }
  if (!can_run) GTEST_SKIP() << "this CPU cannot run " << wanted;
  EXPECT_STREQ(pacl::SimdTargetName(), wanted);
}

}  // namespace
