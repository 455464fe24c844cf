// MultiScaleDeformableAttention's exact keys and corners: the per-element rules the CPU and CUDA kernels share (the host-device header msda_corners.h),
// checked against brute force and exact integer arithmetic, so a machine without a GPU tests what a GPU computes.
// (The operator tests check them again, through the CPU kernels, against the float64 references.) An internal
// test: it is compiled into base_tests, which sees the libraries' private headers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "msda/msda_corners.h"

namespace {

__extension__ typedef __int128 Wide;  // GCC and clang's 128-bit integer: exact for every int64 product and sum here

bool ExactKeyReference(int64_t start, int64_t y, int64_t width, int64_t x, int64_t keys, int64_t* key) {
  const Wide value = static_cast<Wide>(start) + static_cast<Wide>(y) * width + x;
  if (value < 0 || value >= keys) return false;
  *key = static_cast<int64_t>(value);
  return true;
}

TEST(SharedMath, MsdaExactKeyMatchesWideArithmetic) {
  std::mt19937_64 rng(11);
  const int64_t big = std::numeric_limits<int64_t>::max();
  const std::vector<int64_t> edges = {0, 1, 2, 3, 1000, int64_t{1} << 31, int64_t{1} << 32, int64_t{1} << 62,
                                      big - 1, big};
  std::vector<int64_t> starts = {0, 5, -1, -7, -(int64_t{1} << 40), std::numeric_limits<int64_t>::min(), big};
  for (int trial = 0; trial < 20000; ++trial) {
    const auto pick = [&](bool allow_negative) {
      int64_t v = rng() % 3 == 0 ? edges[rng() % edges.size()] : static_cast<int64_t>(rng() % 5000);
      if (allow_negative && rng() % 2 == 0) v = starts[rng() % starts.size()];
      return v;
    };
    const int64_t start = pick(true);
    const int64_t y = pick(false);
    const int64_t width = pick(false);
    const int64_t x = pick(false);
    const int64_t keys = pick(false);
    int64_t expected = -1;
    int64_t actual = -1;
    const bool expected_ok = ExactKeyReference(start, y, width, x, keys, &expected);
    ASSERT_EQ(pacl::msda::ExactKey(start, y, width, x, keys, &actual), expected_ok)
        << start << " + " << y << " * " << width << " + " << x << " in [0, " << keys << ")";
    if (expected_ok) {
      ASSERT_EQ(actual, expected);
    }
  }
}

TEST(SharedMath, MsdaCornersMatchBilinearInterpolation) {
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<float> location(-0.2f, 1.2f);
  const int64_t height = 7;
  const int64_t width = 5;
  const int64_t start = 3;
  const int64_t keys = start + height * width;
  int inside = 0;
  for (int trial = 0; trial < 5000; ++trial) {
    const float loc_x = location(rng);
    const float loc_y = location(rng);
    pacl::msda::PointCorners corners;
    const bool kept = pacl::msda::ComputeCorners(height, width, start, keys, loc_x, loc_y, &corners);
    const double x = std::fma(static_cast<double>(loc_x), width, -0.5);
    const double y = std::fma(static_cast<double>(loc_y), height, -0.5);
    const bool expected_kept = x > -1 && x < width && y > -1 && y < height;
    ASSERT_EQ(kept, expected_kept) << loc_x << ", " << loc_y;
    if (!kept) continue;
    ++inside;
    // Each valid corner's weight is the bilinear weight of its pixel; the weights of the valid corners add up to the
    // share of the sample inside the map.
    const double x0 = std::floor(x);
    const double y0 = std::floor(y);
    for (int k = 0; k < 4; ++k) {
      const int64_t cy = static_cast<int64_t>(y0) + k / 2;
      const int64_t cx = static_cast<int64_t>(x0) + k % 2;
      const bool valid = cy >= 0 && cy < height && cx >= 0 && cx < width;
      ASSERT_EQ(corners.key[k] >= 0, valid) << "corner " << k;
      if (!valid) {
        EXPECT_EQ(corners.weight[k], 0.0f);
        continue;
      }
      EXPECT_EQ(corners.key[k], start + cy * width + cx);
      const double wx = k % 2 == 1 ? x - x0 : 1 - (x - x0);
      const double wy = k / 2 == 1 ? y - y0 : 1 - (y - y0);
      EXPECT_NEAR(corners.weight[k], wx * wy, 1e-6);
      EXPECT_NEAR(corners.d_dx[k], (k % 2 == 1 ? 1 : -1) * wy, 1e-6);
      EXPECT_NEAR(corners.d_dy[k], (k / 2 == 1 ? 1 : -1) * wx, 1e-6);
    }
  }
  EXPECT_GT(inside, 1000);
  // NaN and infinite locations are dropped.
  pacl::msda::PointCorners corners;
  EXPECT_FALSE(pacl::msda::ComputeCorners(height, width, start, keys, NAN, 0.5f, &corners));
  EXPECT_FALSE(pacl::msda::ComputeCorners(height, width, start, keys, 0.5f, INFINITY, &corners));
  // A level whose map runs past the value tensor keeps only the corners inside it.
  ASSERT_TRUE(pacl::msda::ComputeCorners(height, width, start, start + 2 * width + 1, 0.3f, 0.3f, &corners));
  for (int k = 0; k < 4; ++k) EXPECT_LT(corners.key[k], start + 2 * width + 1);
}

// LevelFitsKeys against 128-bit arithmetic, and ComputeCorners' shortcut for such levels against its exact check:
// the same corners, bit for bit, for random and edge-case levels and locations.
TEST(SharedMath, MsdaLevelFitsKeysShortcutIsExact) {
  std::mt19937_64 rng(17);
  const int64_t big = std::numeric_limits<int64_t>::max();
  const std::vector<int64_t> edges = {0, 1, 2, 3, 64, int64_t{1} << 31, int64_t{1} << 32, big / 2, big - 1, big};
  std::uniform_real_distribution<float> location(-0.3f, 1.3f);
  int fitting = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const auto pick = [&]() {
      return rng() % 4 == 0 ? edges[rng() % edges.size()] : static_cast<int64_t>(rng() % 200);
    };
    const int64_t height = pick();
    const int64_t width = pick();
    const int64_t start = rng() % 8 == 0 ? -static_cast<int64_t>(rng() % 100) - 1 : pick();
    // Half the levels end at, just before or just after the last key (when that is an int64).
    const Wide end = static_cast<Wide>(start) + static_cast<Wide>(height) * width + static_cast<Wide>(rng() % 3) - 1;
    const int64_t keys = rng() % 2 == 0 || end < 0 || end > big ? pick() : static_cast<int64_t>(end);
    const bool expected = height > 0 && width > 0 && start >= 0 && start <= keys &&
                          static_cast<Wide>(height) * width <= static_cast<Wide>(keys) - start;
    ASSERT_EQ(pacl::msda::LevelFitsKeys(height, width, start, keys), expected)
        << height << " x " << width << " from " << start << " in " << keys << " keys";
    if (!expected) continue;
    ++fitting;
    for (int point = 0; point < 8; ++point) {
      const float loc_x = location(rng);
      const float loc_y = location(rng);
      pacl::msda::PointCorners exact;
      pacl::msda::PointCorners shortcut;
      const bool kept = pacl::msda::ComputeCorners(height, width, start, keys, loc_x, loc_y, &exact);
      ASSERT_EQ(pacl::msda::ComputeCorners(height, width, start, keys, loc_x, loc_y, &shortcut, true), kept);
      for (int k = 0; k < 4; ++k) {
        ASSERT_EQ(shortcut.key[k], exact.key[k]) << "corner " << k << " of (" << loc_x << ", " << loc_y << ")";
        ASSERT_EQ(shortcut.weight[k], exact.weight[k]);
        ASSERT_EQ(shortcut.d_dx[k], exact.d_dx[k]);
        ASSERT_EQ(shortcut.d_dy[k], exact.d_dy[k]);
      }
    }
  }
  EXPECT_GT(fitting, 2000);
}

}  // namespace
