// GridSampler2D's taps along one axis: the per-element rules the CPU and CUDA kernels share (the host-device header grid_sampler2d_taps_math.h),
// checked against brute force and exact integer arithmetic, so a machine without a GPU tests what a GPU computes.
// (The operator tests check them again, through the CPU kernels, against the float64 references.) An internal
// test: it is compiled into base_tests, which sees the libraries' private headers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "grid_sampler2d/grid_sampler2d_taps_math.h"

namespace {

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
