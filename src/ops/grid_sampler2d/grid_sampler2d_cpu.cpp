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
// Memory layout and loops. Work goes in tiles of kTilePixels (2048; bicubic 512) consecutive output pixels of one
// image. A tile's taps go into fixed-size arrays (struct of arrays, [tap][pixel], one per thread on the heap, padded
// to whole vectors); then the channel loop runs outside and the pixel loop inside, so each channel plane of input /
// inputGrad is touched by the whole tile while it is hot in cache, and gradOutput / out rows are read and written
// as contiguous segments (converted with pacl::LoadAsFloat / StoreFromFloat for fp16/bf16 and any stride). The tile
// size is a measured compromise: 256 pixels made a random grid re-fetch every 256 KiB plane from L3 once per tile
// (about 2x slower); 8192 made the tap arrays spill L2; sorting a tile's pixels by input row did not help.
// Vector code (Highway, dynamic dispatch): the FLOAT gathers (forward output, backward gridGrad) run GatherIndex
// over 32-bit tap offsets when a plane's offsets fit in int32 (always, short of 8 GiB planes); the inputGrad scatter
// stays scalar. DOUBLE and huge planes use the scalar loops (int64 offsets).
// Compute type: fp32 for FLOAT/FLOAT16/BFLOAT16, double for DOUBLE.
// An fp16/bf16 input is first converted into an fp32 (N, C, Hin, Win) copy in the workspace (the taps then gather
// fp32); an fp16/bf16 inputGrad is accumulated in fp32 workspace planes and rounded once at the end. A FLOAT or
// DOUBLE inputGrad is accumulated in place, through its own strides (phase 1 checked its elements are distinct).
//
// Forward: pacl::ParallelFor over (n, tile) - disjoint outputs, each sum over the taps in a fixed order.
// Backward: inputGrad is a scatter. Each task owns (n, block of channels_per_block channels), a block size fixed
// by the shape alone (phase 1), so no two tasks write the same inputGrad element and each element receives its
// contributions in a fixed order (pixels ascending, taps in order). The task zeros its inputGrad planes, walks all
// tiles of image n, scatters weight * gradOutput and gathers the input values for gridGrad; gridGrad sums over all
// channels, so the task writes its block's per-pixel sums (channels ascending) into the workspace
// ([block][n][pixel][x, y]) and a second ParallelFor over (n, tile) adds the blocks in ascending order and writes
// gridGrad (a single block writes gridGrad directly). Nothing depends on the thread count or the schedule, so the
// results are bit-identical run to run and for any number of threads.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <climits>
#include <cstring>
#include <memory>

#include <type_traits>

#include "grid_sampler2d/grid_sampler2d_params.h"
#include "pacl/convert.h"
#include "pacl/dtype.h"
#include "pacl/parallel.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "grid_sampler2d/grid_sampler2d_cpu.cpp"
// foreach_target.h must come first: it re-includes this file once per target.
// clang-format off
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// clang-format on

// Per-target vector loops over a tile's pixels, for FLOAT compute with 32-bit tap offsets. Arrays are [tap][pixel]
// with tap_stride pixels per row; `padded` is the pixel count rounded up to kPixelPadding (the plan fills the extra
// lanes with offset 0, weight 0, not valid). valid == nullptr means every tap may be read (the caller checked that
// plane[0], which the not-valid taps read, is finite, so their weight 0 gives exactly 0); otherwise a not-valid tap
// contributes exactly 0 whatever the values. The arithmetic (one MulAdd per tap, taps in order) is the same either
// way, so the choice does not change any result.
HWY_BEFORE_NAMESPACE();
namespace pacl::grid_sampler2d {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;

HWY_INLINE hn::Mask<DF> ValidLanes(DF d, const uint8_t* bytes) {
  const hn::Rebind<uint8_t, DF> d8;
  const hn::RebindToUnsigned<DF> du;
  return hn::RebindMask(d, hn::Ne(hn::PromoteTo(du, hn::LoadU(d8, bytes)), hn::Zero(du)));
}

HWY_INLINE hn::Vec<DF> GatherTap(DF d, const float* plane, const int32_t* offsets, const uint8_t* valid) {
  const hn::Vec<DF> v = hn::GatherIndex(d, plane, hn::LoadU(DI(), offsets));
  return valid == nullptr ? v : hn::IfThenElseZero(ValidLanes(d, valid), v);
}

// values[q] = sum over taps of weight * plane[offset].
void GatherWeighted(const float* plane, const int32_t* offsets, const float* weights, const uint8_t* valid,
                    int64_t tap_stride, int taps, int64_t padded, float* values) {
  const DF d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t q = 0; q < padded; q += lanes) {
    auto sum = hn::Zero(d);
    for (int k = 0; k < taps; ++k) {
      const int64_t at = k * tap_stride + q;
      sum = hn::MulAdd(hn::LoadU(d, weights + at),
                       GatherTap(d, plane, offsets + at, valid == nullptr ? nullptr : valid + at), sum);
    }
    hn::StoreU(sum, d, values + q);
  }
}

// gx[q] += grad[q] * sum over taps of grad_x_weight * plane[offset]; gy likewise.
void GatherGridGrad(const float* plane, const int32_t* offsets, const float* grad_x_weights,
                    const float* grad_y_weights, const uint8_t* valid, int64_t tap_stride, int taps,
                    const float* grad, int64_t padded, float* gx, float* gy) {
  const DF d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t q = 0; q < padded; q += lanes) {
    auto sx = hn::Zero(d);
    auto sy = hn::Zero(d);
    for (int k = 0; k < taps; ++k) {
      const int64_t at = k * tap_stride + q;
      const auto v = GatherTap(d, plane, offsets + at, valid == nullptr ? nullptr : valid + at);
      sx = hn::MulAdd(hn::LoadU(d, grad_x_weights + at), v, sx);
      sy = hn::MulAdd(hn::LoadU(d, grad_y_weights + at), v, sy);
    }
    const auto g = hn::LoadU(d, grad + q);
    hn::StoreU(hn::MulAdd(sx, g, hn::LoadU(d, gx + q)), d, gx + q);
    hn::StoreU(hn::MulAdd(sy, g, hn::LoadU(d, gy + q)), d, gy + q);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace pacl::grid_sampler2d
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pacl::grid_sampler2d {

HWY_EXPORT(GatherWeighted);
HWY_EXPORT(GatherGridGrad);

namespace {

// Output pixels per tile. Large enough that, for a scattered (random) grid, one visit of a channel plane touches
// most of its cache lines several times (the plane then stays in L2 for the visit instead of every tap missing),
// small enough that the tile's tap arrays stay in L2 (see the NOTE).
constexpr int64_t kTilePixels = 2048;
// Bicubic has 16 taps per pixel: a smaller tile keeps its arrays about the same size.
constexpr int64_t kBicubicTilePixels = 512;
// Tiles are processed in whole vectors of up to this many lanes (fp32 on AVX-512); the plan pads to it.
constexpr int64_t kPixelPadding = 16;
// PyTorch's bicubic convolution constant.
constexpr double kCubicA = -0.75;

// ---- Rows of the caller's tensors, in the compute type ----

char* ElementAt(const SamplerOperand& operand, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  const int64_t element = operand.desc.offset + i0 * operand.strides[0] + i1 * operand.strides[1] +
                          i2 * operand.strides[2] + i3 * operand.strides[3];
  return static_cast<char*>(operand.desc.data) + element * static_cast<int64_t>(DataTypeSize(operand.desc.dtype));
}

// dst[i] = src[i * stride] converted to T, for a row of the tensor's own dtype.
void LoadRow(aclDataType dtype, const char* src, int64_t stride, float* dst, int64_t n) {
  LoadAsFloat(dtype, src, stride, dst, n);
}
void LoadRow(aclDataType /*dtype: DOUBLE*/, const char* src, int64_t stride, double* dst, int64_t n) {
  const double* values = reinterpret_cast<const double*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = values[i * stride];
}
void StoreRow(const float* src, aclDataType dtype, char* dst, int64_t stride, int64_t n) {
  StoreFromFloat(src, dtype, dst, stride, n);
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
  bool PaddedSource(T coord, T* src_out, T* grad_out) const {
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

template <class T>
void ComputeTaps(const Axis<T>& axis, T coord, AxisTaps<T, 2>* taps) {  // bilinear
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
// Offset: int32_t for the vector (gather) loops, when every offset in an input plane fits; else int64_t.
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
  const uintptr_t aligned = (reinterpret_cast<uintptr_t>(workspace) + 63) / 64 * 64;
  return reinterpret_cast<T*>(aligned + static_cast<uintptr_t>(offset));
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

// Whether every element offset h*strideH + w*strideW of a plane fits in int32 (the vector gathers' indices).
bool PlaneOffsetsFitInt32(const SamplerShape& s, const int64_t* strides) {
  const int64_t reach = (s.in_height - 1) * (strides[2] < 0 ? -strides[2] : strides[2]) +
                        (s.in_width - 1) * (strides[3] < 0 ? -strides[3] : strides[3]);
  return reach <= INT32_MAX;
}

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
  constexpr int kTaps = K * K;
  using Plan = TilePlan<T, K, Offset>;
  Plan& plan = PlanFor<T, K, Offset>();
  PlanTile(p.shape, p.modes, p.grid, n, begin, end, true, input.Plane(), false, PlaneStrides{}, false, &plan);
  T values[Plan::kPixels];
  for (int64_t c = 0; c < p.shape.channels; ++c) {
    const T* plane = input.Plane(n, c);
    if constexpr (std::is_same_v<Offset, int32_t>) {
      HWY_DYNAMIC_DISPATCH(GatherWeighted)
      (plane, &plan.input_offset[0][0], &plan.weight[0][0], std::isfinite(plane[0]) ? nullptr : &plan.valid[0][0],
       Plan::kPixels, kTaps, plan.padded, values);
    } else {
      ScalarGatherWeighted(plan, plane, values);
    }
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
  if constexpr (std::is_same_v<T, float>) {
    if (PlaneOffsetsFitInt32(p.shape, input.strides)) return RunForwardTiles<T, K, int32_t>(p, input);
  }
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
  constexpr int kTaps = K * K;
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
        if constexpr (std::is_same_v<Offset, int32_t>) {
          HWY_DYNAMIC_DISPATCH(GatherGridGrad)
          (input_plane, &plan.input_offset[0][0], &plan.grad_x_weight[0][0], &plan.grad_y_weight[0][0],
           std::isfinite(input_plane[0]) ? nullptr : &plan.valid[0][0], kTile, kTaps, grad, padded, gx, gy);
        } else {
          ScalarGatherGridGrad(plan, grad, input_plane, gx, gy);
        }
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

  bool int32_offsets = false;
  if constexpr (std::is_same_v<T, float>) int32_offsets = !gather || PlaneOffsetsFitInt32(s, ctx.input.strides);
  if constexpr (std::is_same_v<T, float>) {
    if (int32_offsets) RunBackwardWithOffsets<T, K, int32_t>(p, ctx, scatter, gather);
  }
  if (!int32_offsets) RunBackwardWithOffsets<T, K, int64_t>(p, ctx, scatter, gather);
  if (p.want_grid_grad && pixels > 0 && (!gather || ctx.blocks > 1)) FinishGridGrad(p, ctx, !gather);
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

}  // namespace

aclnnStatus RunForwardCpu(const ForwardParams& params, void* workspace) {
  const SamplerShape& s = params.shape;
  if (s.batch * s.channels * s.out_height * s.out_width == 0) return ACLNN_SUCCESS;
  if (params.input.desc.dtype == ACL_DOUBLE) {
    RunForwardTyped<double>(params, workspace);
  } else {
    RunForwardTyped<float>(params, workspace);
  }
  return ACLNN_SUCCESS;
}

aclnnStatus RunBackwardCpu(const BackwardParams& params, void* workspace) {
  if (!params.want_input_grad && !params.want_grid_grad) return ACLNN_SUCCESS;
  if (params.shape.batch == 0) return ACLNN_SUCCESS;
  if (params.input.desc.dtype == ACL_DOUBLE) {
    RunBackwardTyped<double>(params, workspace);
  } else {
    RunBackwardTyped<float>(params, workspace);
  }
  return ACLNN_SUCCESS;
}

}  // namespace pacl::grid_sampler2d
#endif  // HWY_ONCE
