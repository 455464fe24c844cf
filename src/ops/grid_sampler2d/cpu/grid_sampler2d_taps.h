// The CPU kernels' shared pieces (see the NOTE in grid_sampler2d_cpu.cpp): tile sizes, element addressing and rows
// of the caller's tensors, and the taps along one axis (source coordinates, padding, weights and their derivatives)
// that both paths compute once per output pixel. Scalar code, compiled once for the baseline target.
#ifndef PACL_OPS_GRID_SAMPLER2D_CPU_GRID_SAMPLER2D_TAPS_H_
#define PACL_OPS_GRID_SAMPLER2D_CPU_GRID_SAMPLER2D_TAPS_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "grid_sampler2d/grid_sampler2d_params.h"
#include "hwy/base.h"
#include "pacl/convert.h"
#include "pacl/dtype.h"
#include "pacl/workspace_plan.h"

namespace pacl::grid_sampler2d {

// Output pixels per tile. Large enough that, for a scattered (random) grid, one visit of a channel plane touches
// most of its cache lines several times (the plane then stays in L2 for the visit instead of every tap missing),
// small enough that the tile's tap arrays stay in L2 (see the NOTE).
inline constexpr int64_t kTilePixels = 2048;
// Bicubic has 16 taps per pixel: a smaller tile keeps its arrays about the same size.
inline constexpr int64_t kBicubicTilePixels = 512;
// Plane path: tiles are padded to a multiple of this many pixels.
inline constexpr int64_t kPixelPadding = 16;
// Channels per block of the blocked fp32 path: 16 fp32 = one 64-byte cache line (see the NOTE).
inline constexpr int64_t kBlockLanes = kFloatChannelsPerBlock;
// PyTorch's bicubic convolution constant.
inline constexpr double kCubicA = -0.75;

// ---- Rows of the caller's tensors, in the compute type ----

inline char* ElementAt(const SamplerOperand& operand, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  const int64_t element = operand.desc.offset + i0 * operand.strides[0] + i1 * operand.strides[1] +
                          i2 * operand.strides[2] + i3 * operand.strides[3];
  return static_cast<char*>(operand.desc.data) + element * static_cast<int64_t>(DataTypeSize(operand.desc.dtype));
}

// dst[i] = src[i * stride] converted to T, for a row of the tensor's own dtype.
inline void LoadRow(aclDataType /*dtype: DOUBLE*/, const char* src, int64_t stride, double* dst, int64_t n) {
  const double* values = reinterpret_cast<const double*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = values[i * stride];
}
inline void StoreRow(const double* src, aclDataType /*dtype: DOUBLE*/, char* dst, int64_t stride, int64_t n) {
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

template <class T>
T* WorkspaceArray(void* workspace, int64_t offset) {
  // The plan's offsets are relative to the workspace rounded up to 64 bytes (phase 1 asked for 64 bytes more).
  return reinterpret_cast<T*>(AlignedWorkspace(workspace) + offset);
}


}  // namespace pacl::grid_sampler2d

#endif  // PACL_OPS_GRID_SAMPLER2D_CPU_GRID_SAMPLER2D_TAPS_H_
