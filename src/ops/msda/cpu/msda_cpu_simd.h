// The vector loops of the CPU kernels (msda_cpu.cpp), compiled for every SIMD target in msda_cpu_simd.cpp and
// called for the best one the CPU runs (Highway's dynamic dispatch), and what they share with the drivers.
#ifndef PACL_OPS_MSDA_CPU_MSDA_CPU_SIMD_H_
#define PACL_OPS_MSDA_CPU_MSDA_CPU_SIMD_H_

#include <cstdint>

#include "msda/msda_params.h"
#include "pacl/convert.h"

namespace pacl::msda {

// A row's points (levels * points <= 256), padded to a multiple of kPointAlign (the widest vector).
inline constexpr int64_t kMaxRowPoints = kMaxLevels * kMaxPoints;
inline constexpr int64_t kPointAlign = 16;

// Per point of a row (index level * points + point): its level's size and first key. The int32 fields are only
// used on the fast path (every map inside [0, nk) with nk < 2^31 and H, W <= 2^24, so that float(W) is exact and
// keys fit in int32). Padding lanes hold a 1 x 1 map.
struct LevelLanes {
  alignas(64) float width_f[kMaxRowPoints];
  alignas(64) float height_f[kMaxRowPoints];
  alignas(64) int32_t width_i[kMaxRowPoints];
  alignas(64) int32_t height_i[kMaxRowPoints];
  alignas(64) int32_t start_i[kMaxRowPoints];
};

// A row is one (image, query, head): its P = levels * points sample points, padded to kPointAlign (the stride), and
// their 4 corners, corner k of point i stored at [k * stride + i]. key == -1 marks a corner that is neither read nor
// written (its weights are 0). Each loop is described where it is defined (msda_cpu_simd.cpp).
namespace simd {
// The corners of a row's points on the fast path (int32 keys; d_dx, d_dy: the backward's, else nullptr).
void FastCorners(const float* loc, float* attn, const LevelLanes& lanes, int64_t stride, int32_t* keys,
                 float* weights, float* d_dx, float* d_dy);
// Forward: out = the row's attention-weighted sum of its corners' value rows of `kind` (pacl::RowKind: fp32 for the
// workspace copy or a FLOAT value in place, else FLOAT16 / BFLOAT16 bits in place).
void WeightedRowSum32(int kind, const void* rows, int64_t key_stride, const int32_t* keys, const float* weights,
                      const float* attn, int64_t points, int64_t stride, int64_t channels, float* out);
void WeightedRowSum64(int kind, const void* rows, int64_t key_stride, const int64_t* keys, const float* weights,
                      const float* attn, int64_t points, int64_t stride, int64_t channels, float* out);
// Backward: the gradValue scatter and the corners' dot products with grad.
void CornerBackward32(int kind, const void* rows, int64_t key_stride, float* grad_rows, int64_t grad_key_stride,
                      const int32_t* keys, const float* weights, const float* attn, int64_t points, int64_t stride,
                      int64_t channels, const float* grad, float* dots);
void CornerBackward64(int kind, const void* rows, int64_t key_stride, float* grad_rows, int64_t grad_key_stride,
                      const int64_t* keys, const float* weights, const float* attn, int64_t points, int64_t stride,
                      int64_t channels, const float* grad, float* dots);
// Backward: gradAttnWeight and gradLocation of the row's points from their corners' dots.
void PointGradients(const float* weights, const float* d_dx, const float* d_dy, const float* dots, const float* attn,
                    const LevelLanes& lanes, int64_t stride, float* attn_grad, float* loc_grad);
}  // namespace simd

}  // namespace pacl::msda

#endif  // PACL_OPS_MSDA_CPU_MSDA_CPU_SIMD_H_
