// The vector loops of the channel-blocked fp32 path, compiled for every SIMD target and chosen at run time (see the
// NOTE in grid_sampler2d_cpu.cpp). Every multiply-add is fused and the 16 lanes of a block are added by the fixed
// tree of pacl/canonical_math-inl.h, so every target gives the same bits.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "grid_sampler2d/cpu/grid_sampler2d_paths.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "grid_sampler2d/cpu/grid_sampler2d_simd.cpp"
// foreach_target.h must come first: it re-includes this file once per target.
// clang-format off
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "pacl/canonical_math-inl.h"
// clang-format on
#include "hwy/cache_control.h"

// Per-target vector loops of the channel-blocked fp32 path (see the NOTE). A block holds kBlockLanes channels of
// one pixel in one aligned 64-byte line; a pixel's valid taps are the list [tap_begin[q], tap_begin[q + 1]) of
// element offsets into the blocked plane (multiples of kBlockLanes) with their weights. The 16 lanes are walked in
// whole vectors (1 on AVX-512, 2 on AVX2, 4 on SSE4).
HWY_BEFORE_NAMESPACE();
namespace pacl::grid_sampler2d {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// At most 16 lanes, so that a block's 16 lanes are whole vectors (and a block is one SumOf16Lanes group).
using DF = pacl::HWY_NAMESPACE::DSum;
using pacl::HWY_NAMESPACE::FusedMulAdd;
using pacl::HWY_NAMESPACE::SumOf16Lanes;
constexpr int64_t kLanesPerBlock = 16;  // == kBlockLanes below == kSumLanes
// How many pixels ahead BackwardBlock prefetches the tap lines.
constexpr int64_t kPrefetchPixels = 32;
// How many lines ahead LinesToRows prefetches.
constexpr int64_t kPrefetchLines = 64;

// values[q][lane] = sum over pixel q's taps (in order) of weight * plane[offset + lane].
void SampleBlock(const float* plane, const int64_t* offsets, const float* weights, const int32_t* tap_begin,
                 int64_t count, float* values) {
  const DF d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t q = 0; q < count; ++q) {
    const int32_t t0 = tap_begin[q];
    const int32_t t1 = tap_begin[q + 1];
    for (int64_t j = 0; j < kLanesPerBlock; j += lanes) {
      auto sum = hn::Zero(d);
      for (int32_t t = t0; t < t1; ++t) {
        sum = FusedMulAdd(d, hn::Set(d, weights[t]), hn::Load(d, plane + offsets[t] + j), sum);
      }
      hn::Store(sum, d, values + q * kLanesPerBlock + j);
    }
  }
}

// For the pixels of a tile, with grad[q][lane] the block's gradOutput:
// input_grad_plane[offset + lane] += weight * grad[q][lane] over the taps in order (when input_grad_plane != null);
// partial[2q] = sum over lanes of grad[q][lane] * (sum over taps of grad_x_weight * plane[offset + lane]),
// partial[2q + 1] likewise with grad_y_weight (when plane != null); the lanes are added by SumOf16Lanes, the same
// tree on every target.
void BackwardBlock(const float* plane, float* input_grad_plane, const int64_t* offsets, const float* weights,
                   const float* grad_x_weights, const float* grad_y_weights, const int32_t* tap_begin,
                   const float* grad, int64_t count, float* partial) {
  const DF d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t q = 0; q < count; ++q) {
    const int32_t t0 = tap_begin[q];
    const int32_t t1 = tap_begin[q + 1];
    // The lines of a later pixel's taps: a smooth grid walks the planes along slanted lines that the hardware
    // prefetchers do not follow, so without this most taps wait for L3 or memory.
    if (q + kPrefetchPixels < count) {
      for (int32_t t = tap_begin[q + kPrefetchPixels]; t < tap_begin[q + kPrefetchPixels + 1]; ++t) {
        if (input_grad_plane != nullptr) hwy::Prefetch(input_grad_plane + offsets[t]);
        if (plane != nullptr) hwy::Prefetch(plane + offsets[t]);
      }
    }
    HWY_ALIGN float dot_x[kLanesPerBlock];  // grad * (sum over taps of weight derivative * input), per lane
    HWY_ALIGN float dot_y[kLanesPerBlock];
    for (int64_t j = 0; j < kLanesPerBlock; j += lanes) {
      const auto g = hn::Load(d, grad + q * kLanesPerBlock + j);
      if (input_grad_plane != nullptr) {
        for (int32_t t = t0; t < t1; ++t) {
          float* line = input_grad_plane + offsets[t] + j;
          hn::Store(FusedMulAdd(d, hn::Set(d, weights[t]), g, hn::Load(d, line)), d, line);
        }
      }
      if (plane != nullptr) {
        auto sx = hn::Zero(d);
        auto sy = hn::Zero(d);
        for (int32_t t = t0; t < t1; ++t) {
          const auto v = hn::Load(d, plane + offsets[t] + j);
          sx = FusedMulAdd(d, hn::Set(d, grad_x_weights[t]), v, sx);
          sy = FusedMulAdd(d, hn::Set(d, grad_y_weights[t]), v, sy);
        }
        hn::Store(hn::Mul(sx, g), d, dot_x + j);
        hn::Store(hn::Mul(sy, g), d, dot_y + j);
      }
    }
    if (plane != nullptr) {
      partial[2 * q] = SumOf16Lanes(dot_x);
      partial[2 * q + 1] = SumOf16Lanes(dot_y);
    }
  }
}

// dst[i * dst_stride + j] = src[j * src_stride + i] for i, j < 4 (one 4 x 4 block of a transpose). 128-bit vectors
// exist on every SIMD target and need no lane crossing; HWY_SCALAR moves the 16 values one by one.
void Transpose4x4(const float* src, int64_t src_stride, float* dst, int64_t dst_stride) {
#if HWY_TARGET == HWY_SCALAR
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 4; ++j) dst[i * dst_stride + j] = src[j * src_stride + i];
  }
#else
  const hn::Full128<float> d4;
  const auto r0 = hn::LoadU(d4, src);
  const auto r1 = hn::LoadU(d4, src + src_stride);
  const auto r2 = hn::LoadU(d4, src + 2 * src_stride);
  const auto r3 = hn::LoadU(d4, src + 3 * src_stride);
  const auto r01_low = hn::InterleaveLower(d4, r0, r1);   // r0[0] r1[0] r0[1] r1[1]
  const auto r23_low = hn::InterleaveLower(d4, r2, r3);   // r2[0] r3[0] r2[1] r3[1]
  const auto r01_high = hn::InterleaveUpper(d4, r0, r1);  // r0[2] r1[2] r0[3] r1[3]
  const auto r23_high = hn::InterleaveUpper(d4, r2, r3);  // r2[2] r3[2] r2[3] r3[3]
  hn::StoreU(hn::ConcatLowerLower(d4, r23_low, r01_low), d4, dst);
  hn::StoreU(hn::ConcatUpperUpper(d4, r23_low, r01_low), d4, dst + dst_stride);
  hn::StoreU(hn::ConcatLowerLower(d4, r23_high, r01_high), d4, dst + 2 * dst_stride);
  hn::StoreU(hn::ConcatUpperUpper(d4, r23_high, r01_high), d4, dst + 3 * dst_stride);
#endif
}

// Channel rows -> blocked lines: lines[q][lane] = rows[lane * row_stride + q] for q < count, all 16 lanes (the
// caller zero-fills rows of missing channels). In 4 x 4 blocks, the pixels past the last multiple of 4 one by one.
void RowsToLines(const float* rows, int64_t row_stride, int64_t count, float* lines) {
  const int64_t whole = count / 4 * 4;
  for (int64_t lane = 0; lane < kLanesPerBlock; lane += 4) {
    for (int64_t q = 0; q < whole; q += 4) {
      Transpose4x4(rows + lane * row_stride + q, row_stride, lines + q * kLanesPerBlock + lane, kLanesPerBlock);
    }
  }
  for (int64_t q = whole; q < count; ++q) {
    for (int64_t lane = 0; lane < kLanesPerBlock; ++lane) {
      lines[q * kLanesPerBlock + lane] = rows[lane * row_stride + q];
    }
  }
}

// Blocked lines -> channel rows, the inverse of RowsToLines: rows[lane * row_stride + q] = lines[q][lane] for
// q < count, all 16 lanes. Lines [0, readable) exist (readable >= count): the ones past count may be prefetched.
void LinesToRows(const float* lines, int64_t count, int64_t readable, float* rows, int64_t row_stride) {
  const int64_t whole = count / 4 * 4;
  for (int64_t q = 0; q < whole; q += 4) {
    // Lines read in plane order from L3 or memory: the hardware prefetchers measured do not keep up.
    for (int64_t k = q + kPrefetchLines; k < std::min(q + kPrefetchLines + 4, readable); ++k) {
      hwy::Prefetch(lines + k * kLanesPerBlock);
    }
    for (int64_t lane = 0; lane < kLanesPerBlock; lane += 4) {
      Transpose4x4(lines + q * kLanesPerBlock + lane, kLanesPerBlock, rows + lane * row_stride + q, row_stride);
    }
  }
  for (int64_t q = whole; q < count; ++q) {
    for (int64_t lane = 0; lane < kLanesPerBlock; ++lane) {
      rows[lane * row_stride + q] = lines[q * kLanesPerBlock + lane];
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace pacl::grid_sampler2d
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pacl::grid_sampler2d {

HWY_EXPORT(SampleBlock);
HWY_EXPORT(BackwardBlock);
HWY_EXPORT(RowsToLines);
HWY_EXPORT(LinesToRows);

namespace simd {

void SampleBlock(const float* plane, const int64_t* offsets, const float* weights, const int32_t* tap_begin,
                 int64_t count, float* values) {
  HWY_DYNAMIC_DISPATCH(SampleBlock)(plane, offsets, weights, tap_begin, count, values);
}

void BackwardBlock(const float* plane, float* input_grad_plane, const int64_t* offsets, const float* weights,
                   const float* grad_x_weights, const float* grad_y_weights, const int32_t* tap_begin,
                   const float* grad, int64_t count, float* partial) {
  HWY_DYNAMIC_DISPATCH(BackwardBlock)
  (plane, input_grad_plane, offsets, weights, grad_x_weights, grad_y_weights, tap_begin, grad, count, partial);
}

void RowsToLines(const float* rows, int64_t row_stride, int64_t count, float* lines) {
  HWY_DYNAMIC_DISPATCH(RowsToLines)(rows, row_stride, count, lines);
}

void LinesToRows(const float* lines, int64_t count, int64_t readable, float* rows, int64_t row_stride) {
  HWY_DYNAMIC_DISPATCH(LinesToRows)(lines, count, readable, rows, row_stride);
}


}  // namespace simd

}  // namespace pacl::grid_sampler2d
#endif  // HWY_ONCE
