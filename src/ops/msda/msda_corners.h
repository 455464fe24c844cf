// The corners of one sample point of multi-scale deformable attention, shared by the CPU kernels (cpu/, the generic
// path) and the CUDA kernels (cuda/): the point's pixel position on its level, the 4 bilinear corners with their
// weights and the weights' derivatives with respect to the pixel position, and each corner's key checked exactly
// against the value tensor (the level's size and start come from device data and are never trusted). Host-device
// (pacl/host_device.h), so the CPU tests check what the GPU computes.
#ifndef PACL_OPS_MULTI_SCALE_DEFORMABLE_ATTENTION_MSDA_CORNERS_H_
#define PACL_OPS_MULTI_SCALE_DEFORMABLE_ATTENTION_MSDA_CORNERS_H_

#include <cstdint>

#include "pacl/host_device.h"

namespace pacl::msda {

// The key start + y * width + x (0 <= y, 0 <= x < width) computed exactly: true, with *key, when it lies in
// [0, keys). A y * width + x beyond 2^64 - 1 exceeds any key whatever start (>= -2^63) is.
PACL_HOST_DEVICE_INLINE bool ExactKey(int64_t start, int64_t y, int64_t width, int64_t x, int64_t keys,
                                      int64_t* key) {
  const uint64_t uy = static_cast<uint64_t>(y);
  const uint64_t uwidth = static_cast<uint64_t>(width);
  const uint64_t ux = static_cast<uint64_t>(x);
  if (uwidth != 0 && uy > UINT64_MAX / uwidth) return false;
  uint64_t offset = uy * uwidth;
  if (offset > UINT64_MAX - ux) return false;
  offset += ux;
  if (start >= 0) {
    if (start >= keys || offset >= static_cast<uint64_t>(keys - start)) return false;
    *key = start + static_cast<int64_t>(offset);
    return true;
  }
  const uint64_t minus_start = static_cast<uint64_t>(-(start + 1)) + 1;
  if (offset < minus_start || offset - minus_start >= static_cast<uint64_t>(keys)) return false;
  *key = static_cast<int64_t>(offset - minus_start);
  return true;
}

// Whether every pixel of a height x width level starting at key `start` has its key start + y * width + x inside
// [0, keys): start >= 0 and height * width <= keys - start (no product formed, so no overflow). For such a level the
// corners' keys need no ExactKey check; a kernel decides it once per level, not once per corner.
PACL_HOST_DEVICE_INLINE bool LevelFitsKeys(int64_t height, int64_t width, int64_t start, int64_t keys) {
  if (height <= 0 || width <= 0 || start < 0 || start > keys) return false;
  const uint64_t room = static_cast<uint64_t>(keys - start);
  return static_cast<uint64_t>(height) <= room / static_cast<uint64_t>(width);
}

// Corner k (0: (y0, x0), 1: (y0, x0 + 1), 2: (y0 + 1, x0), 3: (y0 + 1, x0 + 1)) of a point: its key (-1 when it is
// outside the map or the key outside [0, nk): never read or written), bilinear weight, and the weight's
// derivatives with respect to the pixel position x and y.
// T: the arithmetic type, float (every dtype on the vector and CUDA paths) or double (DOUBLE, the generic CPU path).
template <class T>
struct PointCornersOf {
  int64_t key[4];
  T weight[4];
  T d_dx[4];
  T d_dy[4];
};
using PointCorners = PointCornersOf<float>;

// The corners of the point at location (loc_x, loc_y) in [0, 1] on a height x width map starting at key `start`
// (pixel position loc * size - 0.5, fused). False when the point has no valid corner: it lies outside
// (-1, W) x (-1, H) (or is NaN), or every corner's key falls outside [0, keys) (possible only with inconsistent
// levels); the caller then drops the point (its attention weight counts as 0, so its gradients are exactly 0 even
// for a NaN, infinite or huge weight). level_fits: LevelFitsKeys(height, width, start, keys) is known to hold, so a
// corner inside the map takes its key without the exact check (the same result, fewer instructions).
template <class T>
PACL_HOST_DEVICE_INLINE bool ComputeCorners(int64_t height, int64_t width, int64_t start, int64_t keys, T loc_x,
                                            T loc_y, PointCornersOf<T>* corners, bool level_fits = false) {
  for (int k = 0; k < 4; ++k) {
    corners->key[k] = -1;
    corners->weight[k] = T(0);
    corners->d_dx[k] = T(0);
    corners->d_dy[k] = T(0);
  }
  const T width_f = static_cast<T>(width);
  const T height_f = static_cast<T>(height);
  // Fused, as the CPU's vector path computes them: the same bits on every path, target and device.
  const T x = hd::Fma(loc_x, width_f, T(-0.5));
  const T y = hd::Fma(loc_y, height_f, T(-0.5));
  if (!(x > T(-1) && x < width_f && y > T(-1) && y < height_f)) return false;
  // x and y lie in (-1, 2^63): their floors convert exactly.
  const T floor_x = hd::Floor(x);
  const T floor_y = hd::Floor(y);
  const int64_t x0 = static_cast<int64_t>(floor_x);
  const int64_t y0 = static_cast<int64_t>(floor_y);
  const T ax = x - floor_x;
  const T ay = y - floor_y;
  const T bx = T(1) - ax;
  const T by = T(1) - ay;
  const int64_t corner_y[4] = {y0, y0, y0 + 1, y0 + 1};
  const int64_t corner_x[4] = {x0, x0 + 1, x0, x0 + 1};
  const T weight[4] = {by * bx, by * ax, ay * bx, ay * ax};
  const T d_dx[4] = {-by, by, -ay, ay};
  const T d_dy[4] = {-bx, -ax, bx, ax};
  bool any_valid = false;
  for (int k = 0; k < 4; ++k) {
    if (corner_y[k] < 0 || corner_y[k] >= height || corner_x[k] < 0 || corner_x[k] >= width) continue;
    int64_t key = 0;
    if (level_fits) {
      key = start + corner_y[k] * width + corner_x[k];
    } else if (!ExactKey(start, corner_y[k], width, corner_x[k], keys, &key)) {
      continue;
    }
    corners->key[k] = key;
    corners->weight[k] = weight[k];
    corners->d_dx[k] = d_dx[k];
    corners->d_dy[k] = d_dy[k];
    any_valid = true;
  }
  return any_valid;
}

}  // namespace pacl::msda

#endif  // PACL_OPS_MULTI_SCALE_DEFORMABLE_ATTENTION_MSDA_CORNERS_H_
