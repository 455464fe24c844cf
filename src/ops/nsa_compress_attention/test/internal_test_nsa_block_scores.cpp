// NsaCompressAttention's block score and selection order: the per-element code the CPU and CUDA kernels share (the
// host-device header nsa_block_scores.h), checked against a float64 evaluation of CANN's formula and an independent
// ordering, so a machine without a GPU tests what a GPU computes. An internal test: it is compiled into base_tests,
// which sees the libraries' private headers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "nsa_compress_attention/nsa_block_scores.h"

namespace {

using pacl::nsa_block_selection::BlockScore;
using pacl::nsa_block_selection::RanksBefore;

TEST(SharedMath, NsaBlockScoreMatchesTheFormulaInFloat64) {
  std::mt19937_64 rng(21);
  std::uniform_real_distribution<float> weight(0.0f, 1.0f);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t r = std::uniform_int_distribution<int64_t>(1, 4)(rng);
    const int64_t c = std::uniform_int_distribution<int64_t>(1, 8)(rng);
    const int64_t keys = std::uniform_int_distribution<int64_t>(0, 70)(rng);
    std::vector<float> w(static_cast<size_t>(keys));
    for (float& v : w) v = weight(rng);
    const int64_t blocks = (keys + r - 1) / r + 2;
    for (int64_t j = 0; j < blocks; ++j) {
      // CANN's P_slc[j] = sum_{m < r} sum_{n < c} w[r j - m - n], the terms outside [0, keys) being 0.
      double expected = 0.0;
      double magnitude = 0.0;
      for (int64_t m = 0; m < r; ++m) {
        for (int64_t n = 0; n < c; ++n) {
          const int64_t i = r * j - m - n;
          if (i < 0 || i >= keys) continue;
          expected += w[static_cast<size_t>(i)];
          magnitude += std::fabs(w[static_cast<size_t>(i)]);
        }
      }
      const float score = BlockScore(w.data(), keys, r, c, j);
      // A float sum of n terms errs by at most n u sum |w| (u = 2^-24).
      const double bound = static_cast<double>(r * c) * std::ldexp(1.0, -24) * magnitude;
      EXPECT_NEAR(score, expected, bound) << "r " << r << " c " << c << " j " << j;
    }
  }
}

TEST(SharedMath, NsaSelectionOrderIsNanFirstThenHigherThenLowerBlock) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  // Pairs listed best first: every earlier one ranks before every later one, and no pair before itself.
  const std::vector<std::pair<float, int64_t>> ordered = {{nan, 0},  {nan, 5},   {inf, 2},  {3.5f, 1}, {3.5f, 4},
                                                          {0.0f, 0}, {-1.0f, 3}, {-inf, 0}, {-inf, 7}};
  for (size_t a = 0; a < ordered.size(); ++a) {
    for (size_t b = 0; b < ordered.size(); ++b) {
      EXPECT_EQ(RanksBefore(ordered[a].first, ordered[a].second, ordered[b].first, ordered[b].second), a < b)
          << a << " vs " << b;
    }
  }
}

}  // namespace
