// Plain-data parameters of aclnnGridSampler2D (forward) and aclnnGridSampler2DBackward, filled by phase 1
// (grid_sampler2d_api.cpp) and consumed by the kernels (cpu/, cuda/).
#ifndef PACL_OPS_GRID_SAMPLER2D_PARAMS_H_
#define PACL_OPS_GRID_SAMPLER2D_PARAMS_H_

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "aclnn/acl_meta.h"
#include "pacl/tensor.h"

namespace pacl {
struct KernelContext;
}  // namespace pacl

namespace pacl::grid_sampler2d {

// The enum values of the API (PyTorch's).
enum class Interpolation : int { kBilinear = 0, kNearest = 1, kBicubic = 2 };
enum class Padding : int { kZeros = 0, kBorder = 1, kReflection = 2 };

// input (N, C, Hin, Win), grid (N, Hout, Wout, 2), out / gradOutput (N, C, Hout, Wout).
struct SamplerShape {
  int64_t batch = 0;       // N
  int64_t channels = 0;    // C
  int64_t in_height = 0;   // Hin (>= 1)
  int64_t in_width = 0;    // Win (>= 1)
  int64_t out_height = 0;  // Hout
  int64_t out_width = 0;   // Wout
};

struct SamplerModes {
  Interpolation interpolation = Interpolation::kBilinear;
  Padding padding = Padding::kZeros;
  bool align_corners = false;
};

// One tensor as the kernels see it: a copy of the caller's view (dtype, data, offset, element strides of its four
// dims). All tensors of one call share one dtype: FLOAT16, BFLOAT16, FLOAT or DOUBLE.
struct SamplerOperand {
  TensorDesc desc;
  int64_t strides[4] = {};
};

// Where the kernels' scratch arrays live in the caller's workspace (byte offsets from the workspace start
// rounded up to 64 bytes; -1 when the array is not needed). Sized in phase 1 from the shape and dtype only.
struct WorkspacePlan {
  int64_t input_copy = -1;      // fp32 path: blocked fp32 copy [N][ceil(C/16)][Hin][Win][16] of the input
                                // (the forward: of images_per_pass images at a time)
  int64_t images_per_pass = 0;  // fp32 forward: images whose blocked copy the workspace holds at once
  int64_t input_grad_acc = -1;  // fp32 path: blocked fp32 inputGrad sums, the same layout
  int64_t grid_partials = -1;   // compute type (blocks, N, Hout*Wout, 2): per-channel-block gridGrad sums
  uint64_t bytes = 0;            // total, including 64 bytes of slack to align the caller's pointer
};

struct ForwardParams {
  SamplerShape shape;
  SamplerModes modes;
  SamplerOperand input;
  SamplerOperand grid;
  SamplerOperand out;
  WorkspacePlan workspace;
};

struct BackwardParams {
  SamplerShape shape;
  SamplerModes modes;
  bool want_input_grad = false;  // outputMask[0]
  bool want_grid_grad = false;   // outputMask[1]
  int64_t channels_per_block = 1;  // the backward's channel blocks (see the NOTE in cpu/grid_sampler2d_cpu.cpp)
  SamplerOperand grad_output;
  SamplerOperand input;
  SamplerOperand grid;
  SamplerOperand input_grad;
  SamplerOperand grid_grad;
  WorkspacePlan workspace;
};

inline constexpr const char* kForwardName = "aclnnGridSampler2D";
inline constexpr const char* kBackwardName = "aclnnGridSampler2DBackward";


// The CPU implementation's planning (cpu/grid_sampler2d_cpu_plan.cpp): the channel block size of the backward,
// and both workspace layouts.
int64_t BackwardChannelsPerBlock(const SamplerShape& shape, aclDataType dtype);

// Channels per block of the fp32 path (FLOAT, FLOAT16, BFLOAT16): one 64-byte line of fp32.
constexpr int64_t kFloatChannelsPerBlock = 16;
WorkspacePlan PlanForwardWorkspace(const ForwardParams& params);
WorkspacePlan PlanBackwardWorkspace(const BackwardParams& params);

// The CPU kernels (phase 2). workspace holds at least params.workspace.bytes bytes (nullptr when that is 0).
// They return ACLNN_SUCCESS; they read and write only the elements of the views (and the workspace).
aclnnStatus RunForwardCpu(const ForwardParams& params, void* workspace);
aclnnStatus RunBackwardCpu(const BackwardParams& params, void* workspace);

}  // namespace pacl::grid_sampler2d

#endif  // PACL_OPS_GRID_SAMPLER2D_PARAMS_H_
