// The two paths of the CPU kernels and the vector loops of the blocked one (see the NOTE in grid_sampler2d_cpu.cpp).
#ifndef PACL_OPS_GRID_SAMPLER2D_CPU_GRID_SAMPLER2D_PATHS_H_
#define PACL_OPS_GRID_SAMPLER2D_CPU_GRID_SAMPLER2D_PATHS_H_

#include <cstdint>

#include "grid_sampler2d/grid_sampler2d_params.h"

namespace pacl::grid_sampler2d {

// The plane path (DOUBLE): grid_sampler2d_plane.cpp.
void RunForwardPlanePath(const ForwardParams& p, void* workspace);
void RunBackwardPlanePath(const BackwardParams& p, void* workspace);

// The channel-blocked fp32 path (FLOAT, FLOAT16, BFLOAT16): grid_sampler2d_blocked.cpp.
void RunForwardBlockedPath(const ForwardParams& p, void* workspace);
void RunBackwardBlockedPath(const BackwardParams& p, void* workspace);

// The blocked path's vector loops, for the best SIMD target of the CPU (grid_sampler2d_simd.cpp, where each is
// described). A block is 16 fp32 lanes: one 64-byte line.
namespace simd {
void SampleBlock(const float* plane, const int64_t* offsets, const float* weights, const int32_t* tap_begin,
                 int64_t count, float* values);
void BackwardBlock(const float* plane, float* input_grad_plane, const int64_t* offsets, const float* weights,
                   const float* grad_x_weights, const float* grad_y_weights, const int32_t* tap_begin,
                   const float* grad, int64_t count, float* partial);
void RowsToLines(const float* rows, int64_t row_stride, int64_t count, float* lines);
void LinesToRows(const float* lines, int64_t count, int64_t readable, float* rows, int64_t row_stride);
}  // namespace simd

}  // namespace pacl::grid_sampler2d

#endif  // PACL_OPS_GRID_SAMPLER2D_CPU_GRID_SAMPLER2D_PATHS_H_
