// The per-element rules that the CPU and CUDA kernels share (host-device headers under src/ops/): checked here
// against brute force and exact integer arithmetic, so a machine without a GPU tests what a GPU computes. (The
// operator tests check them again, through the CPU kernels, against the float64 references.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "grid_sampler2d/grid_sampler2d_taps_math.h"
#include "multi_scale_deformable_attention/msda_corners.h"
#include "nsa_compress/nsa_compress_blocks.h"

namespace {

// ---- NsaCompress: blocks covering a token, sequence lookup ----

TEST(SharedMath, NsaBlocksCoveringMatchBruteForce) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    const int64_t stride = std::uniform_int_distribution<int64_t>(1, 40)(rng);
    const int64_t block_size = stride * std::uniform_int_distribution<int64_t>(1, 5)(rng) +
                               std::uniform_int_distribution<int64_t>(0, stride - 1)(rng) * (trial % 2);
    const int64_t blocks = std::uniform_int_distribution<int64_t>(0, 12)(rng);
    const int64_t length = blocks > 0 ? (blocks - 1) * stride + block_size + (trial % 7) : (trial % 9);
    for (int64_t u = 0; u < length; ++u) {
      int64_t first = -1;
      int64_t count = 0;
      for (int64_t k = 0; k < blocks; ++k) {
        if (k * stride <= u && u < k * stride + block_size) {
          if (first < 0) first = k;
          ++count;
        }
      }
      const pacl::nsa_compress::CoveringBlocks covering =
          pacl::nsa_compress::BlocksCovering(u, block_size, stride, blocks);
      ASSERT_EQ(covering.count, count) << "u " << u << " block " << block_size << " stride " << stride;
      if (count > 0) {
        ASSERT_EQ(covering.first, first) << "u " << u;
      }
    }
  }
}

TEST(SharedMath, NsaSequenceLookupMatchesBruteForce) {
  // Lengths with empty sequences among them; blocks of 4 tokens, stride 2.
  const std::vector<int64_t> lengths = {0, 5, 0, 0, 9, 3, 1, 0, 12};
  std::vector<pacl::nsa_compress::Sequence> sequences;
  int64_t start = 0;
  int64_t first_block = 0;
  for (int64_t length : lengths) {
    const int64_t blocks = length >= 4 ? (length - 4) / 2 + 1 : 0;
    sequences.push_back({start, start + length, first_block, blocks});
    start += length;
    first_block += blocks;
  }
  const int64_t count = static_cast<int64_t>(sequences.size());
  for (int64_t t = 0; t < start + 2; ++t) {
    int64_t expected = count;
    for (int64_t q = 0; q < count; ++q) {
      if (sequences[q].start <= t && t < sequences[q].end) {
        expected = q;
        break;
      }
    }
    EXPECT_EQ(pacl::nsa_compress::SequenceOfToken(sequences.data(), count, t), expected) << "token " << t;
  }
  for (int64_t block = 0; block < first_block + 2; ++block) {
    int64_t expected = count;
    for (int64_t q = 0; q < count; ++q) {
      if (sequences[q].first_block <= block && block < sequences[q].first_block + sequences[q].blocks) {
        expected = q;
        break;
      }
    }
    EXPECT_EQ(pacl::nsa_compress::SequenceOfBlock(sequences.data(), count, block), expected) << "block " << block;
  }
}

// ---- Multi-scale deformable attention: exact keys and corners ----

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

// ---- Grid sampler: the taps along one axis ----

TEST(SharedMath, GridBilinearTapsInterpolateLinearly) {
  using pacl::grid_sampler2d::Padding;
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> coordinate(-1.3, 1.3);
  for (bool align_corners : {false, true}) {
    for (Padding padding : {Padding::kZeros, Padding::kBorder, Padding::kReflection}) {
      pacl::grid_sampler2d::SamplerModes modes;
      modes.padding = padding;
      modes.align_corners = align_corners;
      const int64_t size = 6;
      const pacl::grid_sampler2d::Axis<double> axis(size, modes);
      for (int trial = 0; trial < 2000; ++trial) {
        const double g = coordinate(rng);
        pacl::grid_sampler2d::AxisTaps<double, 2> taps;
        pacl::grid_sampler2d::ComputeTaps(axis, g, &taps);
        // Interpolating the identity row v[i] = i gives the padded source coordinate where both taps are valid.
        double src = align_corners ? (g + 1) * (size - 1) / 2 : (g + 1) * size / 2 - 0.5;
        if (padding == Padding::kBorder) src = std::min(std::max(src, 0.0), double(size - 1));
        if (padding == Padding::kReflection) {
          const double low = align_corners ? 0.0 : -0.5;
          const double span = align_corners ? size - 1 : size;
          double d = std::fabs(src - low);
          const double flips = std::floor(d / span);
          const double extra = d - flips * span;
          src = static_cast<int64_t>(flips) % 2 == 0 ? low + extra : low + span - extra;
          src = std::min(std::max(src, 0.0), double(size - 1));
        }
        double weights = 0.0;
        double value = 0.0;
        for (int k = 0; k < 2; ++k) {
          if (!taps.valid[k]) continue;
          ASSERT_GE(taps.index[k], 0);
          ASSERT_LT(taps.index[k], size);
          weights += taps.weight[k];
          value += taps.weight[k] * static_cast<double>(taps.index[k]);
        }
        if (taps.valid[0] && taps.valid[1]) {
          EXPECT_NEAR(weights, 1.0, 1e-12) << g;
          EXPECT_NEAR(value, src, 1e-9) << "g " << g << " padding " << static_cast<int>(padding);
        }
        if (padding != Padding::kZeros) {
          EXPECT_TRUE(taps.valid[0] || taps.valid[1]) << g;
        }
      }
    }
  }
}

}  // namespace
