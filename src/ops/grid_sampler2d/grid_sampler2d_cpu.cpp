// NOTE [Grid sampler 2-D on the CPU]
//
// Problem (PyTorch's grid_sampler_2d). input (N, C, Hin, Win), grid (N, Hout, Wout, 2) holding (x, y) in [-1, 1],
// out / gradOutput (N, C, Hout, Wout). Output pixel (n, h, w) samples every channel of image n at the same place,
// so everything about a sample except the channel's values - which input elements it reads (the taps), their
// weights and the weights' derivatives - is computed once per output pixel and reused for all C channels.
//
// Taps. Each axis is handled on its own (the padding of x depends on x only): the grid coordinate is unnormalized
// (align_corners ? (c + 1) * (size - 1) / 2 : (c + 1) * size / 2 - 0.5) and gives K taps along the axis (K = 1
// nearest, 2 bilinear, 4 bicubic), each an index in [0, size) with a weight and the weight's derivative with
// respect to the grid coordinate. Bilinear and nearest pad the coordinate first (border: clip to [0, size-1];
// reflection: reflect over [0, size-1] or [-0.5, size-0.5], then clip), with PyTorch's gradient multipliers (0
// where clipped, a sign flip per reflection); bicubic pads each of its 4 integer tap indices instead (clip,
// reflect) and, as in PyTorch, its gradient carries only the unnormalization factor. Zeros padding marks a tap
// outside [0, size) invalid: it is neither read nor written (so a NaN or Inf elsewhere cannot leak into the
// result). A pixel's K*K taps are the products of its x and y taps: element offset y*strideH + x*strideW,
// weight wx*wy, d/dgx = wx'*wy, d/dgy = wx*wy'.
// Safety: no float is converted to an integer before it is known to lie in a small range: zeros/nearest check
// [-1, size) in floating point first (NaN fails), border clips in floating point, reflection reduces with an exact
// fmod, bicubic reduces (reflection) or clamps its floor to [-4, size+2] before converting. NaN coordinates, and
// +-Inf under zeros or reflection, make the sample contribute nothing (out 0, no gradient); +-Inf under border
// clips to the edge like any far-away coordinate. Index arithmetic is int64.
//
// Two paths share the taps. FLOAT, FLOAT16 and BFLOAT16 compute in fp32 on the channel-blocked path; DOUBLE keeps
// the plane path (scalar, below), which nobody needs fast.
//
// Channel-blocked fp32 path. In NCHW the C values a tap needs lie in C different cache lines, and a tile of output
// pixels re-reads scattered input lines once per channel. So the input is first copied into the workspace in the
// blocked layout [N][ceil(C/16)][Hin][Win][16] fp32 (16 channels of one pixel = one aligned 64-byte line; the
// channels past C are 0): one tap of one block is one vector load (1 AVX-512 vector, 2 AVX2, 4 SSE4). The copy
// reads each channel row once into a small buffer (pacl::LoadAsFloat: any dtype, any strides) and turns 16 such
// rows into lines (RowsToLines: 4 x 4 transposes of 128-bit vectors, which every SIMD target has). (Gathering
// straight from the 16 rows of the tensor was slower: rows one plane apart alias in L1 when the plane size is a
// multiple of 4 KiB, and vector gathers cost more than the transpose on the CPUs measured.)
// Work goes in tiles of kBlockTilePixels (256) consecutive output pixels of one image. A tile's taps are listed
// once, pixel-major, only the valid ones, in tap order (element offset into a blocked plane, weight, and for
// gridGrad the weight's x/y derivatives); an invalid tap is never read or written, so NaN/Inf elsewhere cannot leak.
// Forward: pacl::ParallelFor over (n, tile). Per channel block: out line of pixel q = sum over its taps of weight *
// input line (SampleBlock, taps in order, starting from 0), into a [pixel][16] buffer that LinesToRow turns back
// into channel rows of out (written straight into a unit-stride FLOAT out, else via pacl::StoreFromFloat).
// Backward: inputGrad is a scatter. The work items are (n, channel block); each owns the blocked fp32 inputGrad
// plane of its block in the workspace. A ParallelFor task takes consecutive blocks of one image (several when
// there are at least 2 tasks per thread, so that they share the tap lists; which items a task takes changes no
// result). It zeros its planes, copies its blocks of the input (gridGrad only), then walks all tiles of image n in
// order: lists the tile's taps once, and per block turns the block's 16 gradOutput rows into lines and per pixel
// (BackwardBlock) adds weight * gradOutput line to each tap's line (a vector read-modify-write of one line per
// tap: lanes are channels, so no conflicts and no races), and for gridGrad accumulates gradOutput * (sum over taps
// of dweight * input line) across the lanes, reduced to one x and one y sum per pixel: the block's partial,
// written to the workspace ([block][n][pixel][x, y]). BackwardBlock prefetches the tap lines kPrefetchPixels
// pixels ahead: a smooth (warp) grid walks the planes along slanted lines that the hardware prefetchers do not
// follow, and without it the read-modify-writes wait for L3 or memory. At the end the task converts its planes to
// inputGrad's dtype and strides (LinesToRows, prefetching; then non-temporal stores for a large unit-stride FLOAT
// inputGrad, memcpy for a small one, else StoreFromFloat): fp16/bf16 are rounded once. A last ParallelFor over
// (n, tile) adds the blocks' partials in ascending block order and writes gridGrad (0 for nearest or C == 0).
// Every sum runs in an order fixed by the shape (taps in order, pixels ascending, a block's 16 lanes added by the
// fixed tree of pacl/canonical_math-inl.h, blocks ascending), never by the thread count, the grouping of blocks
// into tasks or the schedule, and every multiply-add is fused on every target (pacl::FusedMulAdd; the tap weights
// are computed once, in code compiled for the baseline): results are bit-identical run to run, for any number of
// threads and on every SIMD target. Cost, measured on AVX2 against per-target lane reductions: 0.93-1.07x, within
// the noise (docs/ops/grid_sampler2d.md).
// Workspace (fp32 path, sized in phase 1, overflow-safe): blocked input (forward; backward with gridGrad), blocked
// inputGrad (backward with inputGrad), partials (backward with gridGrad): 2 * N * ceil(C/16) * 16 * Hin * Win * 4
// bytes at most, plus ceil(C/16) * N * Hout * Wout * 8.
//
// Plane path (DOUBLE). Tiles of kTilePixels (2048; bicubic 512) consecutive output pixels of one image; a tile's
// taps go into [tap][pixel] arrays (one per thread on the heap); the channel loop runs outside, the pixel loop
// inside, so each channel plane is touched by the whole tile while it is hot. Forward: ParallelFor over (n, tile).
// Backward: tasks (n, block of channels_per_block channels, a block size fixed by the shape alone in phase 1)
// accumulate straight into inputGrad through its own strides (phase 1 checked its elements are distinct), pixels
// ascending, taps in order, and write per-block gridGrad sums ([block][n][pixel][x, y]) that a second ParallelFor
// adds in ascending block order (a single block writes gridGrad directly). Also bit-identical for any thread count,
// and on every SIMD target (it is scalar code compiled once; the build never fuses multiplies and adds).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include <type_traits>

#include "grid_sampler2d/grid_sampler2d_params.h"
#include "pacl/convert.h"
#include "pacl/dtype.h"
#include "pacl/parallel.h"
#include "pacl/workspace_plan.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "grid_sampler2d/grid_sampler2d_cpu.cpp"
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

// dst[i] = src[i] for i < count with non-temporal stores where dst is vector-aligned: inputGrad is written once and
// not read again here, so its lines need not be fetched first. The caller runs hwy::FlushStream afterwards.
void StreamRow(const float* src, int64_t count, float* dst) {
  const DF d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const uintptr_t vector_bytes = static_cast<uintptr_t>(lanes) * sizeof(float);
  int64_t i = 0;
  for (; i < count && reinterpret_cast<uintptr_t>(dst + i) % vector_bytes != 0; ++i) dst[i] = src[i];
  for (; i + lanes <= count; i += lanes) hn::Stream(hn::LoadU(d, src + i), d, dst + i);
  for (; i < count; ++i) dst[i] = src[i];
}

// Blocked lines -> one channel row: row[q] = lines[q][lane] for q < count.
void LinesToRow(const float* lines, int64_t lane, int64_t count, float* row) {
  for (int64_t q = 0; q < count; ++q) row[q] = lines[q * kLanesPerBlock + lane];
}

}  // namespace HWY_NAMESPACE
}  // namespace pacl::grid_sampler2d
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pacl::grid_sampler2d {

HWY_EXPORT(SampleBlock);
HWY_EXPORT(BackwardBlock);
HWY_EXPORT(RowsToLines);
HWY_EXPORT(LinesToRow);
HWY_EXPORT(LinesToRows);
HWY_EXPORT(StreamRow);

namespace {

// Output pixels per tile. Large enough that, for a scattered (random) grid, one visit of a channel plane touches
// most of its cache lines several times (the plane then stays in L2 for the visit instead of every tap missing),
// small enough that the tile's tap arrays stay in L2 (see the NOTE).
constexpr int64_t kTilePixels = 2048;
// Bicubic has 16 taps per pixel: a smaller tile keeps its arrays about the same size.
constexpr int64_t kBicubicTilePixels = 512;
// Plane path: tiles are padded to a multiple of this many pixels.
constexpr int64_t kPixelPadding = 16;
// Channels per block of the blocked fp32 path: 16 fp32 = one 64-byte cache line (see the NOTE).
constexpr int64_t kBlockLanes = kFloatChannelsPerBlock;
// PyTorch's bicubic convolution constant.
constexpr double kCubicA = -0.75;

// ---- Rows of the caller's tensors, in the compute type ----

char* ElementAt(const SamplerOperand& operand, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  const int64_t element = operand.desc.offset + i0 * operand.strides[0] + i1 * operand.strides[1] +
                          i2 * operand.strides[2] + i3 * operand.strides[3];
  return static_cast<char*>(operand.desc.data) + element * static_cast<int64_t>(DataTypeSize(operand.desc.dtype));
}

// dst[i] = src[i * stride] converted to T, for a row of the tensor's own dtype.
void LoadRow(aclDataType /*dtype: DOUBLE*/, const char* src, int64_t stride, double* dst, int64_t n) {
  const double* values = reinterpret_cast<const double*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = values[i * stride];
}
void StoreRow(const double* src, aclDataType /*dtype: DOUBLE*/, char* dst, int64_t stride, int64_t n) {
  double* values = reinterpret_cast<double*>(dst);
  for (int64_t i = 0; i < n; ++i) values[i * stride] = src[i];
}

// Calls fn(h, w, tile_index, count) for the row segments of the output pixels [begin, end) of one image (pixel
// p is (p / width, p % width)).
template <class Fn>
void ForEachRowSegment(int64_t begin, int64_t end, int64_t width, Fn&& fn) {
  int64_t p = begin;
  while (p < end) {
    const int64_t h = p / width;
    const int64_t w = p - h * width;
    const int64_t count = std::min(end - p, width - w);
    fn(h, w, p - begin, count);
    p += count;
  }
}

// ---- Source coordinates and taps along one axis ----

template <class T>
struct Axis {
  int64_t size = 1;
  T size_value = 1;
  T scale = 1;  // d(unnormalized coordinate) / d(grid coordinate)
  bool align_corners = false;
  Padding padding = Padding::kZeros;
  // Reflection bounds: [min, min + span].
  T reflect_min = 0;
  T reflect_span = 0;

  Axis(int64_t axis_size, const SamplerModes& modes)
      : size(axis_size),
        size_value(static_cast<T>(axis_size)),
        scale(modes.align_corners ? static_cast<T>(axis_size - 1) / 2 : static_cast<T>(axis_size) / 2),
        align_corners(modes.align_corners),
        padding(modes.padding),
        reflect_min(modes.align_corners ? T(0) : T(-0.5)),
        reflect_span(modes.align_corners ? static_cast<T>(axis_size - 1) : static_cast<T>(axis_size)) {}

  T Unnormalize(T coord) const {
    return align_corners ? (coord + 1) * scale : (coord + 1) * scale - T(0.5);
  }

  // Clip to [0, size - 1]; the gradient is 0 on and beyond the borders (PyTorch's rule).
  T Clip(T src, T* grad) const {
    if (src <= 0) {
      *grad = 0;
      return 0;
    }
    const T high = size_value - 1;
    if (src >= high) {
      *grad = 0;
      return high;
    }
    return src;
  }

  // Reflect a finite coordinate into [min, min + span]; multiplies *grad by the sign of the reflection.
  T Reflect(T src, T* grad) const {
    if (reflect_span == 0) {
      *grad = 0;
      return 0;
    }
    T distance = src - reflect_min;
    T sign = 1;
    if (distance < 0) {
      sign = -1;
      distance = -distance;
    }
    const T period = 2 * reflect_span;
    const T extra = std::fmod(distance, period);  // exact
    if (extra < reflect_span) {
      *grad *= sign;
      return extra + reflect_min;
    }
    *grad *= -sign;
    return period - extra + reflect_min;
  }

  // The padded source coordinate of bilinear and nearest and its derivative with respect to the grid
  // coordinate. False when the sample contributes nothing along this axis (NaN; +-Inf under reflection).
  HWY_INLINE bool PaddedSource(T coord, T* src_out, T* grad_out) const {
    T src = Unnormalize(coord);
    T grad = scale;
    switch (padding) {
      case Padding::kBorder:
        if (std::isnan(src)) return false;
        src = Clip(src, &grad);
        break;
      case Padding::kReflection:
        if (!std::isfinite(src)) return false;
        src = Reflect(src, &grad);
        src = Clip(src, &grad);
        break;
      default:
        break;
    }
    *src_out = src;
    *grad_out = grad;
    return true;
  }

  // The tap index of bicubic's integer tap position t under border or reflection padding (always in range).
  int64_t PadIndex(int64_t t) const {
    if (padding == Padding::kBorder) return std::min(std::max(t, int64_t{0}), size - 1);
    // Reflection of an integer position: periodic with period 2(size-1) (align) or 2 size (not align).
    if (align_corners) {
      if (size == 1) return 0;
      const int64_t period = 2 * (size - 1);
      const int64_t m = ((t % period) + period) % period;
      return m <= size - 1 ? m : period - m;
    }
    const int64_t period = 2 * size;
    const int64_t m = ((t % period) + period) % period;
    return m < size ? m : period - 1 - m;
  }
};

// K taps along one axis: index in [0, size), weight, d weight / d grid coordinate. A tap that is not valid
// (outside the input under zeros padding, or the whole sample dropped) has index 0 and is never read or written.
template <class T, int K>
struct AxisTaps {
  bool valid[K] = {};
  int64_t index[K] = {};
  T weight[K] = {};
  T dweight[K] = {};
};

template <class T>
void ComputeTaps(const Axis<T>& axis, T coord, AxisTaps<T, 1>* taps) {  // nearest
  T src, grad;
  if (!axis.PaddedSource(coord, &src, &grad)) return;
  const T rounded = std::nearbyint(src);  // half to even under the default rounding mode, as PyTorch
  if (!(rounded > -1 && rounded < axis.size_value)) return;
  const int64_t i = static_cast<int64_t>(rounded);
  if (i < 0 || i >= axis.size) return;
  taps->valid[0] = true;
  taps->index[0] = i;
  taps->weight[0] = 1;
}

// Inlined (as PaddedSource): it runs twice for every output pixel of every tile.
template <class T>
HWY_INLINE void ComputeTaps(const Axis<T>& axis, T coord, AxisTaps<T, 2>* taps) {  // bilinear
  T src, grad;
  if (!axis.PaddedSource(coord, &src, &grad)) return;
  // src == -1 still has a tap (index 0, weight 0) whose derivative counts, as in PyTorch.
  if (!(src >= -1 && src < axis.size_value)) return;
  const T low = std::floor(src);
  const T frac = src - low;
  const int64_t i0 = static_cast<int64_t>(low);
  if (i0 >= 0 && i0 < axis.size) {
    taps->valid[0] = true;
    taps->index[0] = i0;
    taps->weight[0] = 1 - frac;
    taps->dweight[0] = -grad;
  }
  if (i0 + 1 >= 0 && i0 + 1 < axis.size) {
    taps->valid[1] = true;
    taps->index[1] = i0 + 1;
    taps->weight[1] = frac;
    taps->dweight[1] = grad;
  }
}

template <class T>
T CubicNear(T x) {  // |x| <= 1
  const T a = static_cast<T>(kCubicA);
  return ((a + 2) * x - (a + 3)) * x * x + 1;
}
template <class T>
T CubicFar(T x) {  // 1 < |x| < 2
  const T a = static_cast<T>(kCubicA);
  return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}
template <class T>
T CubicNearSlope(T x) {
  const T a = static_cast<T>(kCubicA);
  return (3 * (a + 2) * x - 2 * (a + 3)) * x;
}
template <class T>
T CubicFarSlope(T x) {
  const T a = static_cast<T>(kCubicA);
  return (3 * a * x - 10 * a) * x + 8 * a;
}

template <class T>
void ComputeTaps(const Axis<T>& axis, T coord, AxisTaps<T, 4>* taps) {  // bicubic
  const T src = axis.Unnormalize(coord);
  if (!std::isfinite(src)) return;
  T low = std::floor(src);
  const T frac = src - low;
  if (axis.padding == Padding::kReflection) {
    // Reflection is periodic in the integer tap position: reduce exactly, keeping the fraction.
    const T period = axis.align_corners ? 2 * (axis.size_value - 1) : 2 * axis.size_value;
    if (period > 0) {
      low = std::fmod(low, period);
      if (low < 0) low += period;
    } else {
      low = 0;
    }
  } else {
    // Beyond this range every tap is outside the input (zeros) or clips to the same edge (border): clamping in
    // floating point changes nothing and makes the conversion safe.
    low = std::min(std::max(low, T(-4)), axis.size_value + 2);
  }
  const int64_t i0 = static_cast<int64_t>(low);
  const T weights[4] = {CubicFar(frac + 1), CubicNear(frac), CubicNear(1 - frac), CubicFar(2 - frac)};
  const T slopes[4] = {CubicFarSlope(frac + 1), CubicNearSlope(frac), -CubicNearSlope(1 - frac),
                       -CubicFarSlope(2 - frac)};
  for (int k = 0; k < 4; ++k) {
    int64_t t = i0 - 1 + k;
    if (axis.padding == Padding::kZeros) {
      if (t < 0 || t >= axis.size) continue;
    } else {
      t = axis.PadIndex(t);
    }
    taps->valid[k] = true;
    taps->index[k] = t;
    taps->weight[k] = weights[k];
    taps->dweight[k] = slopes[k] * axis.scale;
  }
}

// ---- Tile plans ----

template <int K>
constexpr int64_t TilePixels() {
  return K == 4 ? kBicubicTilePixels : kTilePixels;
}

// The K*K taps of each pixel of a tile, [tap][pixel]. A few hundred KiB: one per thread, on the heap (PlanFor).
// Offset: the element offset type (int64_t; the plane path serves DOUBLE only).
template <class T, int K, class Offset>
struct TilePlan {
  static constexpr int kTaps = K * K;
  static constexpr int64_t kPixels = TilePixels<K>();
  int64_t count = 0;
  int64_t padded = 0;                    // count rounded up to kPixelPadding
  uint8_t valid[kTaps][kPixels];         // invalid taps contribute nothing, whatever the values involved
  Offset input_offset[kTaps][kPixels];   // element offsets in an input plane
  int64_t acc_offset[kTaps][kPixels];    // element offsets in an inputGrad accumulator plane (backward)
  T weight[kTaps][kPixels];
  T grad_x_weight[kTaps][kPixels];  // backward with gridGrad
  T grad_y_weight[kTaps][kPixels];
};

// This thread's tile plan (allocated on first use, kept for the thread's life: no allocation per tile or call).
template <class T, int K, class Offset>
TilePlan<T, K, Offset>& PlanFor() {
  thread_local std::unique_ptr<TilePlan<T, K, Offset>> plan;
  if (!plan) plan.reset(new TilePlan<T, K, Offset>);
  return *plan;
}

// Strides (elements) of a channel plane: (H, W).
struct PlaneStrides {
  int64_t h = 0;
  int64_t w = 0;
};

// Reads grid[n, pixels [begin, end)] and fills the plan. Flags choose which arrays are needed.
template <class T, int K, class Offset>
void PlanTile(const SamplerShape& shape, const SamplerModes& modes, const SamplerOperand& grid, int64_t n,
              int64_t begin, int64_t end, bool want_input_offsets, PlaneStrides input_strides, bool want_acc_offsets,
              PlaneStrides acc_strides, bool want_grad_weights, TilePlan<T, K, Offset>* plan) {
  constexpr int kTaps = K * K;
  const int64_t count = end - begin;
  const int64_t padded = (count + kPixelPadding - 1) / kPixelPadding * kPixelPadding;
  plan->count = count;
  plan->padded = padded;
  T xs[TilePlan<T, K, Offset>::kPixels];
  T ys[TilePlan<T, K, Offset>::kPixels];
  const aclDataType dtype = grid.desc.dtype;
  ForEachRowSegment(begin, end, shape.out_width, [&](int64_t h, int64_t w, int64_t at, int64_t length) {
    LoadRow(dtype, ElementAt(grid, n, h, w, 0), grid.strides[2], xs + at, length);
    LoadRow(dtype, ElementAt(grid, n, h, w, 1), grid.strides[2], ys + at, length);
  });
  const Axis<T> x_axis(shape.in_width, modes);
  const Axis<T> y_axis(shape.in_height, modes);
  for (int64_t p = 0; p < count; ++p) {
    AxisTaps<T, K> tx, ty;
    ComputeTaps(x_axis, xs[p], &tx);
    ComputeTaps(y_axis, ys[p], &ty);
    for (int j = 0; j < K; ++j) {
      for (int i = 0; i < K; ++i) {
        const int k = j * K + i;
        plan->valid[k][p] = tx.valid[i] && ty.valid[j];
        if (want_input_offsets) {
          plan->input_offset[k][p] =
              static_cast<Offset>(ty.index[j] * input_strides.h + tx.index[i] * input_strides.w);
        }
        if (want_acc_offsets) plan->acc_offset[k][p] = ty.index[j] * acc_strides.h + tx.index[i] * acc_strides.w;
        plan->weight[k][p] = tx.weight[i] * ty.weight[j];
        if (want_grad_weights) {
          plan->grad_x_weight[k][p] = tx.dweight[i] * ty.weight[j];
          plan->grad_y_weight[k][p] = tx.weight[i] * ty.dweight[j];
        }
      }
    }
  }
  for (int k = 0; k < kTaps; ++k) {
    for (int64_t p = count; p < padded; ++p) {
      plan->valid[k][p] = 0;
      plan->input_offset[k][p] = 0;
      plan->acc_offset[k][p] = 0;
      plan->weight[k][p] = 0;
      plan->grad_x_weight[k][p] = 0;
      plan->grad_y_weight[k][p] = 0;
    }
  }
}

// The input as the kernels gather it: the caller's FLOAT/DOUBLE tensor, or the fp32 workspace copy.
template <class T>
struct InputView {
  const T* base = nullptr;
  int64_t strides[4] = {};
  const T* Plane(int64_t n, int64_t c) const { return base + n * strides[0] + c * strides[1]; }
  PlaneStrides Plane() const { return {strides[2], strides[3]}; }
};

// The inputGrad accumulators: the caller's FLOAT/DOUBLE tensor, or fp32 workspace planes.
template <class T>
struct AccView {
  T* base = nullptr;
  int64_t strides[4] = {};
  T* Plane(int64_t n, int64_t c) const { return base + n * strides[0] + c * strides[1]; }
  PlaneStrides Plane() const { return {strides[2], strides[3]}; }
};

template <class T>
T* WorkspaceArray(void* workspace, int64_t offset) {
  // The plan's offsets are relative to the workspace rounded up to 64 bytes (phase 1 asked for 64 bytes more).
  return reinterpret_cast<T*>(AlignedWorkspace(workspace) + offset);
}

void ContiguousStrides(const SamplerShape& s, int64_t* strides) {
  strides[3] = 1;
  strides[2] = s.in_width;
  strides[1] = s.in_height * s.in_width;
  strides[0] = s.channels * s.in_height * s.in_width;
}

// Converts an fp16/bf16 input into the fp32 workspace copy (contiguous), one (n, c) plane per chunk.
void CopyInputAsFloat(const SamplerShape& s, const SamplerOperand& input, float* copy) {
  const int64_t plane = s.in_height * s.in_width;
  ParallelFor(s.batch * s.channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t nc = begin; nc < end; ++nc) {
      const int64_t n = nc / s.channels;
      const int64_t c = nc - n * s.channels;
      for (int64_t h = 0; h < s.in_height; ++h) {
        LoadAsFloat(input.desc.dtype, ElementAt(input, n, c, h, 0), input.strides[3],
                    copy + nc * plane + h * s.in_width, s.in_width);
      }
    }
  });
}

template <class T>
InputView<T> MakeInputView(const SamplerShape& s, const SamplerOperand& input, void* workspace,
                           int64_t copy_offset) {
  InputView<T> view;
  if (copy_offset >= 0) {
    float* copy = WorkspaceArray<float>(workspace, copy_offset);
    CopyInputAsFloat(s, input, copy);
    view.base = reinterpret_cast<const T*>(copy);  // T is float whenever there is a copy
    ContiguousStrides(s, view.strides);
  } else {
    view.base = reinterpret_cast<const T*>(static_cast<const char*>(input.desc.data)) + input.desc.offset;
    for (int d = 0; d < 4; ++d) view.strides[d] = input.strides[d];
  }
  return view;
}

// ---- Forward ----

template <class T, int K, class Offset>
void ScalarGatherWeighted(const TilePlan<T, K, Offset>& plan, const T* plane, T* values) {
  constexpr int kTaps = K * K;
  for (int64_t q = 0; q < plan.count; ++q) {
    T sum = 0;
    for (int k = 0; k < kTaps; ++k) {
      const T v = plan.valid[k][q] ? plane[plan.input_offset[k][q]] : T(0);
      sum += plan.weight[k][q] * v;
    }
    values[q] = sum;
  }
}

template <class T, int K, class Offset>
void ForwardTile(const ForwardParams& p, const InputView<T>& input, int64_t n, int64_t begin, int64_t end) {
  using Plan = TilePlan<T, K, Offset>;
  Plan& plan = PlanFor<T, K, Offset>();
  PlanTile(p.shape, p.modes, p.grid, n, begin, end, true, input.Plane(), false, PlaneStrides{}, false, &plan);
  T values[Plan::kPixels];
  for (int64_t c = 0; c < p.shape.channels; ++c) {
    const T* plane = input.Plane(n, c);
    ScalarGatherWeighted(plan, plane, values);
    ForEachRowSegment(begin, end, p.shape.out_width, [&](int64_t h, int64_t w, int64_t at, int64_t length) {
      StoreRow(values + at, p.out.desc.dtype, ElementAt(p.out, n, c, h, w), p.out.strides[3], length);
    });
  }
}

template <class T, int K, class Offset>
void RunForwardTiles(const ForwardParams& p, const InputView<T>& input) {
  const SamplerShape& s = p.shape;
  const int64_t pixels = s.out_height * s.out_width;
  constexpr int64_t kTile = TilePixels<K>();
  const int64_t tiles = (pixels + kTile - 1) / kTile;
  ParallelFor(s.batch * tiles, 1, [&](int64_t task_begin, int64_t task_end) {
    for (int64_t task = task_begin; task < task_end; ++task) {
      const int64_t n = task / tiles;
      const int64_t begin = (task - n * tiles) * kTile;
      ForwardTile<T, K, Offset>(p, input, n, begin, std::min(begin + kTile, pixels));
    }
  });
}

template <class T, int K>
void RunForward(const ForwardParams& p, void* workspace) {
  const InputView<T> input = MakeInputView<T>(p.shape, p.input, workspace, p.workspace.input_copy);
  RunForwardTiles<T, K, int64_t>(p, input);
}

// ---- Backward ----

template <class T>
struct BackwardContext {
  InputView<T> input;      // valid when gridGrad is computed (and not nearest)
  AccView<T> acc;          // valid when inputGrad is computed
  bool acc_in_workspace = false;
  T* grid_partials = nullptr;  // [block][n][pixel][2] when there are several blocks
  int64_t blocks = 0;
};

// Zeros the accumulator planes of channels [c0, c1) of image n.
template <class T>
void ZeroAccumulators(const SamplerShape& s, const AccView<T>& acc, int64_t n, int64_t c0, int64_t c1) {
  for (int64_t c = c0; c < c1; ++c) {
    T* plane = acc.Plane(n, c);
    if (acc.strides[3] == 1 && acc.strides[2] == s.in_width) {
      std::memset(static_cast<void*>(plane), 0, static_cast<size_t>(s.in_height * s.in_width) * sizeof(T));
      continue;
    }
    for (int64_t h = 0; h < s.in_height; ++h) {
      for (int64_t w = 0; w < s.in_width; ++w) plane[h * acc.strides[2] + w * acc.strides[3]] = 0;
    }
  }
}

// inputGrad += weight * gradOutput over the taps of one channel of a tile (pixels ascending, taps in order).
template <class T, int K, class Offset>
void ScatterChannel(const TilePlan<T, K, Offset>& plan, const T* grad, T* acc_plane) {
  constexpr int kTaps = K * K;
  for (int64_t q = 0; q < plan.count; ++q) {
    const T g = grad[q];
    for (int k = 0; k < kTaps; ++k) {
      if (plan.valid[k][q]) acc_plane[plan.acc_offset[k][q]] += plan.weight[k][q] * g;
    }
  }
}

// gx/gy += gradOutput * the derivative of the sample, for one channel of a tile.
template <class T, int K, class Offset>
void ScalarGatherGridGrad(const TilePlan<T, K, Offset>& plan, const T* grad, const T* input_plane, T* gx, T* gy) {
  constexpr int kTaps = K * K;
  for (int64_t q = 0; q < plan.count; ++q) {
    T sx = 0, sy = 0;
    for (int k = 0; k < kTaps; ++k) {
      const T v = plan.valid[k][q] ? input_plane[plan.input_offset[k][q]] : T(0);
      sx += plan.grad_x_weight[k][q] * v;
      sy += plan.grad_y_weight[k][q] * v;
    }
    gx[q] += sx * grad[q];
    gy[q] += sy * grad[q];
  }
}

// Writes gridGrad[n, pixels [begin, begin + count)] from x and y partial sums.
template <class T>
void StoreGridGrad(const BackwardParams& p, int64_t n, int64_t begin, int64_t end, const T* gx, const T* gy) {
  ForEachRowSegment(begin, end, p.shape.out_width, [&](int64_t h, int64_t w, int64_t at, int64_t length) {
    StoreRow(gx + at, p.grid_grad.desc.dtype, ElementAt(p.grid_grad, n, h, w, 0), p.grid_grad.strides[2], length);
    StoreRow(gy + at, p.grid_grad.desc.dtype, ElementAt(p.grid_grad, n, h, w, 1), p.grid_grad.strides[2], length);
  });
}

// Task (n, channel block): see the NOTE.
template <class T, int K, class Offset, bool kScatter, bool kGather>
void BackwardTask(const BackwardParams& p, const BackwardContext<T>& ctx, int64_t n, int64_t block) {
  using Plan = TilePlan<T, K, Offset>;
  const SamplerShape& s = p.shape;
  const int64_t c0 = block * p.channels_per_block;
  const int64_t c1 = std::min(s.channels, c0 + p.channels_per_block);
  if (kScatter) ZeroAccumulators(s, ctx.acc, n, c0, c1);

  const int64_t pixels = s.out_height * s.out_width;
  constexpr int64_t kTile = Plan::kPixels;
  Plan& plan = PlanFor<T, K, Offset>();
  T grad[kTile];
  T gx[kTile];
  T gy[kTile];
  for (int64_t begin = 0; begin < pixels; begin += kTile) {
    const int64_t end = std::min(begin + kTile, pixels);
    const int64_t count = end - begin;
    PlanTile(s, p.modes, p.grid, n, begin, end, kGather, ctx.input.Plane(), kScatter, ctx.acc.Plane(), kGather,
             &plan);
    const int64_t padded = plan.padded;
    std::fill(grad + count, grad + padded, T(0));
    if (kGather) {
      std::fill(gx, gx + padded, T(0));
      std::fill(gy, gy + padded, T(0));
    }
    for (int64_t c = c0; c < c1; ++c) {
      ForEachRowSegment(begin, end, s.out_width, [&](int64_t h, int64_t w, int64_t at, int64_t length) {
        LoadRow(p.grad_output.desc.dtype, ElementAt(p.grad_output, n, c, h, w), p.grad_output.strides[3],
                grad + at, length);
      });
      if (kScatter) ScatterChannel(plan, grad, ctx.acc.Plane(n, c));
      if (kGather) {
        const T* input_plane = ctx.input.Plane(n, c);
        ScalarGatherGridGrad(plan, grad, input_plane, gx, gy);
      }
    }
    if (kGather) {
      if (ctx.blocks == 1) {
        StoreGridGrad(p, n, begin, end, gx, gy);
      } else {
        T* partial = ctx.grid_partials + ((block * s.batch + n) * pixels + begin) * 2;
        for (int64_t q = 0; q < count; ++q) {
          partial[2 * q] = gx[q];
          partial[2 * q + 1] = gy[q];
        }
      }
    }
  }

  if (kScatter && ctx.acc_in_workspace) {
    // fp16/bf16 inputGrad: round the fp32 sums once.
    for (int64_t c = c0; c < c1; ++c) {
      const T* plane = ctx.acc.Plane(n, c);
      for (int64_t h = 0; h < s.in_height; ++h) {
        StoreRow(plane + h * s.in_width, p.input_grad.desc.dtype, ElementAt(p.input_grad, n, c, h, 0),
                 p.input_grad.strides[3], s.in_width);
      }
    }
  }
}

// gridGrad = the sum of the blocks' partial sums in ascending block order (0 when there is nothing to sum: nearest,
// or C == 0), over (n, tile) chunks.
template <class T>
void FinishGridGrad(const BackwardParams& p, const BackwardContext<T>& ctx, bool zeros) {
  const SamplerShape& s = p.shape;
  const int64_t pixels = s.out_height * s.out_width;
  const int64_t tiles = (pixels + kTilePixels - 1) / kTilePixels;
  ParallelFor(s.batch * tiles, 1, [&](int64_t task_begin, int64_t task_end) {
    T gx[kTilePixels];
    T gy[kTilePixels];
    for (int64_t task = task_begin; task < task_end; ++task) {
      const int64_t n = task / tiles;
      const int64_t begin = (task - n * tiles) * kTilePixels;
      const int64_t end = std::min(begin + kTilePixels, pixels);
      const int64_t count = end - begin;
      std::fill(gx, gx + count, T(0));
      std::fill(gy, gy + count, T(0));
      if (!zeros) {
        for (int64_t block = 0; block < ctx.blocks; ++block) {
          const T* partial = ctx.grid_partials + ((block * s.batch + n) * pixels + begin) * 2;
          for (int64_t q = 0; q < count; ++q) {
            gx[q] += partial[2 * q];
            gy[q] += partial[2 * q + 1];
          }
        }
      }
      StoreGridGrad(p, n, begin, end, gx, gy);
    }
  });
}

template <class T, int K, class Offset, bool kScatter, bool kGather>
void RunBackwardTasks(const BackwardParams& p, const BackwardContext<T>& ctx) {
  const int64_t tasks = p.shape.batch * ctx.blocks;
  ParallelFor(tasks, 1, [&](int64_t task_begin, int64_t task_end) {
    for (int64_t task = task_begin; task < task_end; ++task) {
      const int64_t n = task / ctx.blocks;
      BackwardTask<T, K, Offset, kScatter, kGather>(p, ctx, n, task - n * ctx.blocks);
    }
  });
}

template <class T, int K, class Offset>
void RunBackwardWithOffsets(const BackwardParams& p, const BackwardContext<T>& ctx, bool scatter, bool gather) {
  if (scatter && gather) {
    RunBackwardTasks<T, K, Offset, true, true>(p, ctx);
  } else if (scatter) {
    RunBackwardTasks<T, K, Offset, true, false>(p, ctx);
  } else if (gather) {
    RunBackwardTasks<T, K, Offset, false, true>(p, ctx);
  }
}

template <class T, int K>
void RunBackward(const BackwardParams& p, void* workspace) {
  const SamplerShape& s = p.shape;
  const bool nearest = p.modes.interpolation == Interpolation::kNearest;
  const int64_t pixels = s.out_height * s.out_width;
  BackwardContext<T> ctx;
  ctx.blocks = s.channels > 0 ? (s.channels + p.channels_per_block - 1) / p.channels_per_block : 0;
  // Gathering the input is needed for gridGrad only, and nearest's gridGrad is 0.
  const bool gather = p.want_grid_grad && !nearest && pixels > 0 && ctx.blocks > 0;
  const bool scatter = p.want_input_grad;
  if (gather) ctx.input = MakeInputView<T>(s, p.input, workspace, p.workspace.input_copy);
  if (scatter) {
    if (p.workspace.input_grad_acc >= 0) {
      ctx.acc.base = reinterpret_cast<T*>(WorkspaceArray<float>(workspace, p.workspace.input_grad_acc));
      ContiguousStrides(s, ctx.acc.strides);
      ctx.acc_in_workspace = true;
    } else {
      ctx.acc.base = reinterpret_cast<T*>(static_cast<char*>(p.input_grad.desc.data)) + p.input_grad.desc.offset;
      for (int d = 0; d < 4; ++d) ctx.acc.strides[d] = p.input_grad.strides[d];
    }
  }
  if (gather && ctx.blocks > 1) ctx.grid_partials = WorkspaceArray<T>(workspace, p.workspace.grid_partials);

  RunBackwardWithOffsets<T, K, int64_t>(p, ctx, scatter, gather);
  if (p.want_grid_grad && pixels > 0 && (!gather || ctx.blocks > 1)) FinishGridGrad(p, ctx, !gather);
}

// ---- Channel-blocked fp32 path (FLOAT, FLOAT16, BFLOAT16): see the NOTE ----

// Output pixels per tile of the blocked path: the tile's tap list and its [pixel][lane] buffers stay in L1/L2.
constexpr int64_t kBlockTilePixels = 256;

int64_t ChannelBlocks(const SamplerShape& s) { return (s.channels + kBlockLanes - 1) / kBlockLanes; }

// The backward writes a unit-stride FLOAT inputGrad of at least this many bytes with non-temporal stores.
constexpr int64_t kStreamMinBytes = int64_t{8} << 20;

// Elements of one blocked plane [Hin][Win][kBlockLanes].
int64_t BlockedPlaneElements(const SamplerShape& s) { return s.in_height * s.in_width * kBlockLanes; }

// The valid taps of a tile's pixels, pixel-major: pixel q owns [tap_begin[q], tap_begin[q + 1]), in tap order.
// offset is an element offset into a blocked plane. One per thread on the heap (BlockTapsFor).
struct BlockTaps {
  static constexpr int64_t kMaxTaps = kBlockTilePixels * 16;  // bicubic: 4 x 4 taps per pixel at most
  int64_t count = 0;
  int32_t tap_begin[kBlockTilePixels + 1];
  int64_t offset[kMaxTaps];
  float weight[kMaxTaps];
  float grad_x_weight[kMaxTaps];
  float grad_y_weight[kMaxTaps];
  float xs[kBlockTilePixels];
  float ys[kBlockTilePixels];
  alignas(64) float lanes[kBlockTilePixels * kBlockLanes];  // [pixel][lane]: gradOutput or out of one block
  float row[kBlockTilePixels];
  float rows[kBlockLanes * kBlockTilePixels];  // [lane][pixel]: channel rows before RowsToLines
};

BlockTaps& BlockTapsFor() {
  thread_local std::unique_ptr<BlockTaps> taps;
  if (!taps) taps.reset(new BlockTaps);
  return *taps;
}

// Reads grid[n, pixels [begin, end)] and lists the taps of each pixel (the same per-axis taps as the plane path).
template <int K>
void ListBlockTaps(const SamplerShape& shape, const SamplerModes& modes, const SamplerOperand& grid, int64_t n,
                   int64_t begin, int64_t end, bool want_grad_weights, BlockTaps* taps) {
  const int64_t count = end - begin;
  taps->count = count;
  ForEachRowSegment(begin, end, shape.out_width, [&](int64_t h, int64_t w, int64_t at, int64_t length) {
    LoadAsFloat(grid.desc.dtype, ElementAt(grid, n, h, w, 0), grid.strides[2], taps->xs + at, length);
    LoadAsFloat(grid.desc.dtype, ElementAt(grid, n, h, w, 1), grid.strides[2], taps->ys + at, length);
  });
  const Axis<float> x_axis(shape.in_width, modes);
  const Axis<float> y_axis(shape.in_height, modes);
  int32_t t = 0;
  for (int64_t q = 0; q < count; ++q) {
    taps->tap_begin[q] = t;
    AxisTaps<float, K> tx, ty;
    ComputeTaps(x_axis, taps->xs[q], &tx);
    ComputeTaps(y_axis, taps->ys[q], &ty);
    for (int j = 0; j < K; ++j) {
      if (!ty.valid[j]) continue;
      for (int i = 0; i < K; ++i) {
        if (!tx.valid[i]) continue;
        taps->offset[t] = (ty.index[j] * shape.in_width + tx.index[i]) * kBlockLanes;
        taps->weight[t] = tx.weight[i] * ty.weight[j];
        if (want_grad_weights) {
          taps->grad_x_weight[t] = tx.dweight[i] * ty.weight[j];
          taps->grad_y_weight[t] = tx.weight[i] * ty.dweight[j];
        }
        ++t;
      }
    }
  }
  taps->tap_begin[count] = t;
}

// Copies input rows (any float dtype, any strides) into the blocked fp32 layout [N][blocks][Hin][Win][lanes],
// padding channels zero: blocked rows [row_begin, row_end), row r = (n * blocks + block) * Hin + h.
void CopyInputBlockedRows(const SamplerShape& s, const SamplerOperand& input, int64_t row_begin, int64_t row_end,
                          float* blocked, BlockTaps& buffers) {
  const int64_t blocks = ChannelBlocks(s);
  for (int64_t r = row_begin; r < row_end; ++r) {
    const int64_t nb = r / s.in_height;
    const int64_t h = r - nb * s.in_height;
    const int64_t n = nb / blocks;
    const int64_t c0 = (nb - n * blocks) * kBlockLanes;
    float* dst = blocked + r * s.in_width * kBlockLanes;
    const int64_t lanes = std::min(kBlockLanes, s.channels - c0);
    std::fill(buffers.rows + lanes * kBlockTilePixels, buffers.rows + kBlockLanes * kBlockTilePixels, 0.0f);
    for (int64_t w0 = 0; w0 < s.in_width; w0 += kBlockTilePixels) {
      const int64_t count = std::min(kBlockTilePixels, s.in_width - w0);
      for (int64_t lane = 0; lane < lanes; ++lane) {
        LoadAsFloat(input.desc.dtype, ElementAt(input, n, c0 + lane, h, w0), input.strides[3],
                    buffers.rows + lane * kBlockTilePixels, count);
      }
      HWY_DYNAMIC_DISPATCH(RowsToLines)(buffers.rows, kBlockTilePixels, count, dst + w0 * kBlockLanes);
    }
  }
}

// The whole blocked input, in chunks of blocked rows.
void CopyInputBlocked(const SamplerShape& s, const SamplerOperand& input, float* blocked) {
  ParallelFor(s.batch * ChannelBlocks(s) * s.in_height, 16, [&](int64_t row_begin, int64_t row_end) {
    CopyInputBlockedRows(s, input, row_begin, row_end, blocked, BlockTapsFor());
  });
}

// Blocked fp32 inputGrad sums of block [c0, c0 + 16) of image n -> inputGrad's dtype and strides. Each piece of a
// row is transposed into the [lane][pixel] buffer (writing straight into 16 channel rows of the tensor would alias
// in L1 like the gathers above), then copied out channel by channel: a unit-stride FLOAT inputGrad of at least
// kStreamMinBytes with non-temporal stores (it cannot stay in cache for the caller anyway, and the stores need not
// fetch the lines first), a smaller one with memcpy.
void WriteInputGradPlane(const BackwardParams& p, int64_t n, int64_t c0, const float* plane, BlockTaps& buffers) {
  const SamplerShape& s = p.shape;
  const bool direct = p.input_grad.desc.dtype == ACL_FLOAT && p.input_grad.strides[3] == 1;
  const int64_t input_grad_bytes = s.batch * s.channels * s.in_height * s.in_width * int64_t{sizeof(float)};
  const bool stream = direct && input_grad_bytes >= kStreamMinBytes;
  const int64_t lanes = std::min(kBlockLanes, s.channels - c0);
  const int64_t plane_pixels = s.in_height * s.in_width;
  for (int64_t h = 0; h < s.in_height; ++h) {
    for (int64_t w0 = 0; w0 < s.in_width; w0 += kBlockTilePixels) {
      const int64_t count = std::min(kBlockTilePixels, s.in_width - w0);
      const int64_t first = h * s.in_width + w0;
      HWY_DYNAMIC_DISPATCH(LinesToRows)
      (plane + first * kBlockLanes, count, plane_pixels - first, buffers.rows, kBlockTilePixels);
      for (int64_t lane = 0; lane < lanes; ++lane) {
        const float* row = buffers.rows + lane * kBlockTilePixels;
        char* dst = ElementAt(p.input_grad, n, c0 + lane, h, w0);
        if (stream) {
          HWY_DYNAMIC_DISPATCH(StreamRow)(row, count, reinterpret_cast<float*>(dst));
        } else if (direct) {
          std::memcpy(dst, row, static_cast<size_t>(count) * sizeof(float));
        } else {
          StoreFromFloat(row, p.input_grad.desc.dtype, dst, p.input_grad.strides[3], count);
        }
      }
    }
  }
  if (stream) hwy::FlushStream();
}

template <int K>
void RunForwardBlocked(const ForwardParams& p, void* workspace) {
  const SamplerShape& s = p.shape;
  float* blocked = WorkspaceArray<float>(workspace, p.workspace.input_copy);
  CopyInputBlocked(s, p.input, blocked);
  const int64_t blocks = ChannelBlocks(s);
  const int64_t plane = BlockedPlaneElements(s);
  const int64_t pixels = s.out_height * s.out_width;
  const int64_t tiles = (pixels + kBlockTilePixels - 1) / kBlockTilePixels;
  const bool direct_out = p.out.desc.dtype == ACL_FLOAT && p.out.strides[3] == 1;
  ParallelFor(s.batch * tiles, 1, [&](int64_t task_begin, int64_t task_end) {
    BlockTaps& taps = BlockTapsFor();
    for (int64_t task = task_begin; task < task_end; ++task) {
      const int64_t n = task / tiles;
      const int64_t begin = (task - n * tiles) * kBlockTilePixels;
      const int64_t end = std::min(begin + kBlockTilePixels, pixels);
      const int64_t count = end - begin;
      ListBlockTaps<K>(s, p.modes, p.grid, n, begin, end, false, &taps);
      for (int64_t b = 0; b < blocks; ++b) {
        HWY_DYNAMIC_DISPATCH(SampleBlock)
        (blocked + (n * blocks + b) * plane, taps.offset, taps.weight, taps.tap_begin, count, taps.lanes);
        const int64_t c0 = b * kBlockLanes;
        const int64_t lanes = std::min(kBlockLanes, s.channels - c0);
        for (int64_t lane = 0; lane < lanes; ++lane) {
          if (direct_out) {
            ForEachRowSegment(begin, end, s.out_width, [&](int64_t h, int64_t w, int64_t at, int64_t length) {
              HWY_DYNAMIC_DISPATCH(LinesToRow)
              (taps.lanes + at * kBlockLanes, lane, length,
               reinterpret_cast<float*>(ElementAt(p.out, n, c0 + lane, h, w)));
            });
            continue;
          }
          HWY_DYNAMIC_DISPATCH(LinesToRow)(taps.lanes, lane, count, taps.row);
          ForEachRowSegment(begin, end, s.out_width, [&](int64_t h, int64_t w, int64_t at, int64_t length) {
            StoreFromFloat(taps.row + at, p.out.desc.dtype, ElementAt(p.out, n, c0 + lane, h, w), p.out.strides[3],
                           length);
          });
        }
      }
    }
  });
}

// Writes gridGrad[n, pixels [begin, end)] from x and y sums (fp32).
void StoreGridGradFloat(const BackwardParams& p, int64_t n, int64_t begin, int64_t end, const float* gx,
                        const float* gy) {
  ForEachRowSegment(begin, end, p.shape.out_width, [&](int64_t h, int64_t w, int64_t at, int64_t length) {
    StoreFromFloat(gx + at, p.grid_grad.desc.dtype, ElementAt(p.grid_grad, n, h, w, 0), p.grid_grad.strides[2],
                   length);
    StoreFromFloat(gy + at, p.grid_grad.desc.dtype, ElementAt(p.grid_grad, n, h, w, 1), p.grid_grad.strides[2],
                   length);
  });
}

// The workspace arrays of the backward (null when not needed): blocked input copy, blocked inputGrad sums, and
// the blocks' gridGrad partials [block][n][pixel][x, y].
struct BackwardBlockedPlanes {
  float* input = nullptr;
  float* input_grad = nullptr;
  float* partials = nullptr;
};

// Blocks [b_begin, b_end) of image n: zero their inputGrad sums and copy their input blocks, then per tile list
// the taps once and run every block on them (each block's sums in the same order as if it ran alone), then write
// the blocks' inputGrad.
template <int K>
void BackwardImageBlocks(const BackwardParams& p, const BackwardBlockedPlanes& planes, int64_t n, int64_t b_begin,
                         int64_t b_end, BlockTaps& taps) {
  const SamplerShape& s = p.shape;
  const int64_t pixels = s.out_height * s.out_width;
  const int64_t blocks = ChannelBlocks(s);
  const int64_t plane = BlockedPlaneElements(s);
  const bool gather = planes.input != nullptr;
  const bool scatter = planes.input_grad != nullptr;
  for (int64_t b = b_begin; b < b_end; ++b) {
    const int64_t nb = n * blocks + b;
    if (scatter) std::fill(planes.input_grad + nb * plane, planes.input_grad + (nb + 1) * plane, 0.0f);
    if (gather) CopyInputBlockedRows(s, p.input, nb * s.in_height, (nb + 1) * s.in_height, planes.input, taps);
  }
  for (int64_t begin = 0; begin < pixels; begin += kBlockTilePixels) {
    const int64_t end = std::min(begin + kBlockTilePixels, pixels);
    const int64_t count = end - begin;
    ListBlockTaps<K>(s, p.modes, p.grid, n, begin, end, gather, &taps);
    for (int64_t b = b_begin; b < b_end; ++b) {
      const int64_t nb = n * blocks + b;
      const int64_t c0 = b * kBlockLanes;
      const int64_t lanes = std::min(kBlockLanes, s.channels - c0);
      // gradOutput of the block's channels, transposed to [pixel][lane]; rows of missing channels (C not a
      // multiple of 16) read as 0.
      for (int64_t lane = 0; lane < lanes; ++lane) {
        float* row = taps.rows + lane * kBlockTilePixels;
        ForEachRowSegment(begin, end, s.out_width, [&](int64_t h, int64_t w, int64_t at, int64_t length) {
          LoadAsFloat(p.grad_output.desc.dtype, ElementAt(p.grad_output, n, c0 + lane, h, w),
                      p.grad_output.strides[3], row + at, length);
        });
      }
      std::fill(taps.rows + lanes * kBlockTilePixels, taps.rows + kBlockLanes * kBlockTilePixels, 0.0f);
      HWY_DYNAMIC_DISPATCH(RowsToLines)(taps.rows, kBlockTilePixels, count, taps.lanes);
      HWY_DYNAMIC_DISPATCH(BackwardBlock)
      (gather ? planes.input + nb * plane : nullptr, scatter ? planes.input_grad + nb * plane : nullptr, taps.offset,
       taps.weight, taps.grad_x_weight, taps.grad_y_weight, taps.tap_begin, taps.lanes, count,
       gather ? planes.partials + ((b * s.batch + n) * pixels + begin) * 2 : nullptr);
    }
  }
  if (scatter) {
    for (int64_t b = b_begin; b < b_end; ++b) {
      WriteInputGradPlane(p, n, b * kBlockLanes, planes.input_grad + (n * blocks + b) * plane, taps);
    }
  }
}

template <int K>
void RunBackwardBlocked(const BackwardParams& p, void* workspace) {
  const SamplerShape& s = p.shape;
  const bool nearest = p.modes.interpolation == Interpolation::kNearest;
  const int64_t pixels = s.out_height * s.out_width;
  const int64_t blocks = ChannelBlocks(s);
  // Gathering the input is needed for gridGrad only, and nearest's gridGrad is 0.
  const bool gather = p.want_grid_grad && !nearest && pixels > 0 && blocks > 0;
  const bool scatter = p.want_input_grad && blocks > 0;
  float* blocked_input = nullptr;
  float* blocked_grad = nullptr;
  float* partials = nullptr;  // [block][n][pixel][x, y]
  if (gather) {
    blocked_input = WorkspaceArray<float>(workspace, p.workspace.input_copy);
    partials = WorkspaceArray<float>(workspace, p.workspace.grid_partials);
  }
  if (scatter) blocked_grad = WorkspaceArray<float>(workspace, p.workspace.input_grad_acc);

  if (gather || scatter) {
    BackwardBlockedPlanes planes;
    planes.input = blocked_input;
    planes.input_grad = blocked_grad;
    planes.partials = partials;
    // Consecutive blocks of one image go together when there are enough tasks to keep every thread busy: they
    // share the tile's tap list (what a task covers changes nothing in any result, see the NOTE).
    const int64_t tasks_wanted = 2 * static_cast<int64_t>(NumThreads());
    const int64_t blocks_per_task =
        std::max<int64_t>(1, std::min<int64_t>(blocks, s.batch * blocks / std::max<int64_t>(tasks_wanted, 1)));
    ParallelFor(s.batch * blocks, blocks_per_task, [&](int64_t task_begin, int64_t task_end) {
      BlockTaps& taps = BlockTapsFor();
      int64_t task = task_begin;
      while (task < task_end) {
        const int64_t n = task / blocks;
        const int64_t b_begin = task - n * blocks;
        const int64_t b_end = std::min(blocks, b_begin + (task_end - task));
        BackwardImageBlocks<K>(p, planes, n, b_begin, b_end, taps);
        task += b_end - b_begin;
      }
    });
  }

  if (p.want_grid_grad && pixels > 0) {
    // gridGrad = the blocks' partial sums added in ascending block order (0 for nearest or C == 0).
    const int64_t tiles = (pixels + kBlockTilePixels - 1) / kBlockTilePixels;
    ParallelFor(s.batch * tiles, 4, [&](int64_t task_begin, int64_t task_end) {
      float gx[kBlockTilePixels];
      float gy[kBlockTilePixels];
      for (int64_t task = task_begin; task < task_end; ++task) {
        const int64_t n = task / tiles;
        const int64_t begin = (task - n * tiles) * kBlockTilePixels;
        const int64_t end = std::min(begin + kBlockTilePixels, pixels);
        const int64_t count = end - begin;
        std::fill(gx, gx + count, 0.0f);
        std::fill(gy, gy + count, 0.0f);
        if (gather) {
          for (int64_t b = 0; b < blocks; ++b) {
            const float* partial = partials + ((b * s.batch + n) * pixels + begin) * 2;
            for (int64_t q = 0; q < count; ++q) {
              gx[q] += partial[2 * q];
              gy[q] += partial[2 * q + 1];
            }
          }
        }
        StoreGridGradFloat(p, n, begin, end, gx, gy);
      }
    });
  }

}

template <class T>
void RunForwardTyped(const ForwardParams& p, void* workspace) {
  switch (p.modes.interpolation) {
    case Interpolation::kNearest:
      return RunForward<T, 1>(p, workspace);
    case Interpolation::kBicubic:
      return RunForward<T, 4>(p, workspace);
    default:
      return RunForward<T, 2>(p, workspace);
  }
}

template <class T>
void RunBackwardTyped(const BackwardParams& p, void* workspace) {
  switch (p.modes.interpolation) {
    case Interpolation::kNearest:
      return RunBackward<T, 1>(p, workspace);
    case Interpolation::kBicubic:
      return RunBackward<T, 4>(p, workspace);
    default:
      return RunBackward<T, 2>(p, workspace);
  }
}

void RunForwardFloat(const ForwardParams& p, void* workspace) {
  switch (p.modes.interpolation) {
    case Interpolation::kNearest:
      return RunForwardBlocked<1>(p, workspace);
    case Interpolation::kBicubic:
      return RunForwardBlocked<4>(p, workspace);
    default:
      return RunForwardBlocked<2>(p, workspace);
  }
}

void RunBackwardFloat(const BackwardParams& p, void* workspace) {
  switch (p.modes.interpolation) {
    case Interpolation::kNearest:
      return RunBackwardBlocked<1>(p, workspace);
    case Interpolation::kBicubic:
      return RunBackwardBlocked<4>(p, workspace);
    default:
      return RunBackwardBlocked<2>(p, workspace);
  }
}

}  // namespace

aclnnStatus RunForwardCpu(const ForwardParams& params, void* workspace) {
  const SamplerShape& s = params.shape;
  if (s.batch * s.channels * s.out_height * s.out_width == 0) return ACLNN_SUCCESS;
  if (params.input.desc.dtype == ACL_DOUBLE) {
    RunForwardTyped<double>(params, workspace);
  } else {
    RunForwardFloat(params, workspace);
  }
  return ACLNN_SUCCESS;
}

aclnnStatus RunBackwardCpu(const BackwardParams& params, void* workspace) {
  if (!params.want_input_grad && !params.want_grid_grad) return ACLNN_SUCCESS;
  if (params.shape.batch == 0) return ACLNN_SUCCESS;
  if (params.input.desc.dtype == ACL_DOUBLE) {
    RunBackwardTyped<double>(params, workspace);
  } else {
    RunBackwardFloat(params, workspace);
  }
  return ACLNN_SUCCESS;
}

}  // namespace pacl::grid_sampler2d
#endif  // HWY_ONCE
