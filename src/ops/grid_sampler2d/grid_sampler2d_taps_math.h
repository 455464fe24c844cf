// The taps of the grid sampler along one axis, shared by the CPU kernels (cpu/) and the CUDA kernels (cuda/):
// the source coordinate of a grid coordinate (unnormalize, then border clipping or reflection), and each tap's
// input index, weight and derivative with respect to the grid coordinate, for nearest (1 tap), bilinear (2) and
// bicubic (4). A 2-D sample's taps are the products of its two axes' taps. These rules are PyTorch's
// (grid_sampler_compute_source_index and its gradient), with the edge cases stated where they are handled. Everything
// here is scalar and host-device (pacl/host_device.h), so the CPU operator tests check the GPU's per-element math.
#ifndef PACL_OPS_GRID_SAMPLER2D_GRID_SAMPLER2D_TAPS_MATH_H_
#define PACL_OPS_GRID_SAMPLER2D_GRID_SAMPLER2D_TAPS_MATH_H_

#include <cstdint>

#include "grid_sampler2d/grid_sampler2d_params.h"
#include "pacl/host_device.h"

namespace pacl::grid_sampler2d {

// PyTorch's bicubic convolution constant.
inline constexpr double kCubicA = -0.75;

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

  PACL_HOST_DEVICE Axis(int64_t axis_size, const SamplerModes& modes)
      : size(axis_size),
        size_value(static_cast<T>(axis_size)),
        scale(modes.align_corners ? static_cast<T>(axis_size - 1) / 2 : static_cast<T>(axis_size) / 2),
        align_corners(modes.align_corners),
        padding(modes.padding),
        reflect_min(modes.align_corners ? T(0) : T(-0.5)),
        reflect_span(modes.align_corners ? static_cast<T>(axis_size - 1) : static_cast<T>(axis_size)) {}

  PACL_HOST_DEVICE T Unnormalize(T coord) const {
    return align_corners ? (coord + 1) * scale : (coord + 1) * scale - T(0.5);
  }

  // Clip to [0, size - 1]; the gradient is 0 on and beyond the borders (PyTorch's rule).
  PACL_HOST_DEVICE T Clip(T src, T* grad) const {
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
  PACL_HOST_DEVICE T Reflect(T src, T* grad) const {
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
    const T extra = hd::Fmod(distance, period);  // exact
    if (extra < reflect_span) {
      *grad *= sign;
      return extra + reflect_min;
    }
    *grad *= -sign;
    return period - extra + reflect_min;
  }

  // The padded source coordinate of bilinear and nearest and its derivative with respect to the grid
  // coordinate. False when the sample contributes nothing along this axis (NaN; +-Inf under reflection).
  PACL_HOST_DEVICE_INLINE bool PaddedSource(T coord, T* src_out, T* grad_out) const {
    T src = Unnormalize(coord);
    T grad = scale;
    switch (padding) {
      case Padding::kBorder:
        if (hd::IsNan(src)) return false;
        src = Clip(src, &grad);
        break;
      case Padding::kReflection:
        if (!hd::IsFinite(src)) return false;
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
  PACL_HOST_DEVICE int64_t PadIndex(int64_t t) const {
    if (padding == Padding::kBorder) return hd::Min(hd::Max(t, int64_t{0}), size - 1);
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
PACL_HOST_DEVICE_INLINE void ComputeTaps(const Axis<T>& axis, T coord, AxisTaps<T, 1>* taps) {  // nearest
  T src, grad;
  if (!axis.PaddedSource(coord, &src, &grad)) return;
  const T rounded = hd::NearbyInt(src);  // half to even under the default rounding mode, as PyTorch
  if (!(rounded > -1 && rounded < axis.size_value)) return;
  const int64_t i = static_cast<int64_t>(rounded);
  if (i < 0 || i >= axis.size) return;
  taps->valid[0] = true;
  taps->index[0] = i;
  taps->weight[0] = 1;
}

template <class T>
PACL_HOST_DEVICE_INLINE void ComputeTaps(const Axis<T>& axis, T coord, AxisTaps<T, 2>* taps) {  // bilinear
  T src, grad;
  if (!axis.PaddedSource(coord, &src, &grad)) return;
  // src == -1 still has a tap (index 0, weight 0) whose derivative counts, as in PyTorch.
  if (!(src >= -1 && src < axis.size_value)) return;
  const T low = hd::Floor(src);
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
PACL_HOST_DEVICE_INLINE T CubicNear(T x) {  // |x| <= 1
  const T a = static_cast<T>(kCubicA);
  return ((a + 2) * x - (a + 3)) * x * x + 1;
}
template <class T>
PACL_HOST_DEVICE_INLINE T CubicFar(T x) {  // 1 < |x| < 2
  const T a = static_cast<T>(kCubicA);
  return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}
template <class T>
PACL_HOST_DEVICE_INLINE T CubicNearSlope(T x) {
  const T a = static_cast<T>(kCubicA);
  return (3 * (a + 2) * x - 2 * (a + 3)) * x;
}
template <class T>
PACL_HOST_DEVICE_INLINE T CubicFarSlope(T x) {
  const T a = static_cast<T>(kCubicA);
  return (3 * a * x - 10 * a) * x + 8 * a;
}

template <class T>
PACL_HOST_DEVICE_INLINE void ComputeTaps(const Axis<T>& axis, T coord, AxisTaps<T, 4>* taps) {  // bicubic
  const T src = axis.Unnormalize(coord);
  if (!hd::IsFinite(src)) return;
  T low = hd::Floor(src);
  const T frac = src - low;
  if (axis.padding == Padding::kReflection) {
    // Reflection is periodic in the integer tap position: reduce exactly, keeping the fraction.
    const T period = axis.align_corners ? 2 * (axis.size_value - 1) : 2 * axis.size_value;
    if (period > 0) {
      low = hd::Fmod(low, period);
      if (low < 0) low += period;
    } else {
      low = 0;
    }
  } else {
    // Beyond this range every tap is outside the input (zeros) or clips to the same edge (border): clamping in
    // floating point changes nothing and makes the conversion safe.
    low = hd::Min(hd::Max(low, T(-4)), axis.size_value + 2);
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

}  // namespace pacl::grid_sampler2d

#endif  // PACL_OPS_GRID_SAMPLER2D_GRID_SAMPLER2D_TAPS_MATH_H_
