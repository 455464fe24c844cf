// What the vector kernels (msda_cpu.cpp) and the generic ones (msda_cpu_generic.cpp) share: the feature maps of a
// call as read in phase 2 from spatialShape and levelStartIndex (device data, never trusted), and the element
// addressing of the caller's views.
#ifndef PACL_OPS_MULTI_SCALE_DEFORMABLE_ATTENTION_CPU_MSDA_CPU_COMMON_H_
#define PACL_OPS_MULTI_SCALE_DEFORMABLE_ATTENTION_CPU_MSDA_CPU_COMMON_H_

#include <cstdint>
#include <vector>

#include "msda/msda_params.h"
#include "pacl/index.h"
#include "pacl/tensor.h"

namespace pacl::msda {

// One feature map as the caller described it (untrusted).
struct Level {
  int64_t height = 0;
  int64_t width = 0;
  int64_t start = 0;
  bool map_in_keys = false;  // every pixel of the map is a key in [0, nk): corners need no key check
};

inline std::vector<Level> ReadLevels(const TensorDesc& spatial_shape, const TensorDesc& level_start_index,
                                     int64_t levels, int64_t keys) {
  std::vector<Level> result(static_cast<size_t>(levels));
  for (int64_t l = 0; l < levels; ++l) {
    Level& level = result[static_cast<size_t>(l)];
    const int64_t row = spatial_shape.offset + l * spatial_shape.strides[0];
    level.height = LoadIndex(spatial_shape, row);
    level.width = LoadIndex(spatial_shape, row + spatial_shape.strides[1]);
    level.start = LoadIndex(level_start_index, level_start_index.offset + l * level_start_index.strides[0]);
    int64_t area = 0;
    level.map_in_keys = level.height > 0 && level.width > 0 &&
                        !__builtin_mul_overflow(level.height, level.width, &area) && level.start >= 0 &&
                        level.start <= keys && area <= keys - level.start;
  }
  return result;
}

// Element index of (b, q, h, l, p) in location (coordinate 0) / attnWeight / their gradients.
inline int64_t PointElement(const TensorDesc& t, int64_t b, int64_t q, int64_t h, int64_t l, int64_t p) {
  return t.offset + b * t.strides[0] + q * t.strides[1] + h * t.strides[2] + l * t.strides[3] + p * t.strides[4];
}

// Element index of channel 0 of row (b, key, h) of value / gradValue.
inline int64_t ElementOf(const TensorDesc& t, int64_t b, int64_t key, int64_t h) {
  return t.offset + b * t.strides[0] + key * t.strides[1] + h * t.strides[2];
}

// Element index of channel c of row (b, q, h) of output / gradOutput.
inline int64_t HeadRowElement(const HeadRows& rows, int64_t b, int64_t q, int64_t h, int64_t c) {
  return rows.desc.offset + b * rows.batch_stride + q * rows.query_stride + h * rows.head_stride +
         c * rows.channel_stride;
}

}  // namespace pacl::msda

#endif  // PACL_OPS_MULTI_SCALE_DEFORMABLE_ATTENTION_CPU_MSDA_CPU_COMMON_H_
