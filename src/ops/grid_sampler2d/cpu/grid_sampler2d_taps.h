// The CPU kernels' shared pieces (see the NOTE in grid_sampler2d_cpu.cpp): tile sizes, element addressing and rows
// of the caller's tensors. The taps along one axis (source coordinates, padding, weights and their derivatives),
// which both paths compute once per output pixel, are grid_sampler2d_taps_math.h's, shared with the CUDA kernels.
// Scalar code, compiled once for the baseline target.
#ifndef PACL_OPS_GRID_SAMPLER2D_CPU_GRID_SAMPLER2D_TAPS_H_
#define PACL_OPS_GRID_SAMPLER2D_CPU_GRID_SAMPLER2D_TAPS_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "grid_sampler2d/grid_sampler2d_params.h"
#include "grid_sampler2d/grid_sampler2d_taps_math.h"
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

template <class T>
T* WorkspaceArray(void* workspace, int64_t offset) {
  // The plan's offsets are relative to the workspace rounded up to 64 bytes (phase 1 asked for 64 bytes more).
  return reinterpret_cast<T*>(AlignedWorkspace(workspace) + offset);
}


}  // namespace pacl::grid_sampler2d

#endif  // PACL_OPS_GRID_SAMPLER2D_CPU_GRID_SAMPLER2D_TAPS_H_
