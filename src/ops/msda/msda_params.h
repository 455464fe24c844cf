// Plain-data parameters of aclnnMultiScaleDeformableAttnFunction (forward) and
// aclnnMultiScaleDeformableAttentionGrad, filled by phase 1 (msda_api.cpp) and consumed by the kernels (cpu/,
// cuda/).
#ifndef PACL_OPS_MULTI_SCALE_DEFORMABLE_ATTENTION_MSDA_PARAMS_H_
#define PACL_OPS_MULTI_SCALE_DEFORMABLE_ATTENTION_MSDA_PARAMS_H_

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "aclnn/acl_meta.h"
#include "pacl/tensor.h"

namespace pacl {
struct KernelContext;
}  // namespace pacl

namespace pacl::msda {

// Limits of the API (the seeds' constraints). The channel rule (a multiple of 8 in [8, 256]) and the dtypes
// (FLOAT, FLOAT16, BFLOAT16) are CANN's; beyond them (DOUBLE, any c >= 1) the CPU runs its generic kernels, an
// extension for mmcv's callers (cpu/msda_cpu_generic.cpp).
inline constexpr int64_t kMaxChannels = 256;
inline constexpr int64_t kChannelMultiple = 8;
inline constexpr int64_t kMaxQueriesExclusive = 500000;
inline constexpr int64_t kMaxLevels = 16;
inline constexpr int64_t kMaxHeads = 16;
inline constexpr int64_t kMaxPoints = 16;

// value (batch, keys, heads, channels); location (batch, queries, heads, levels, points, 2);
// attnWeight (batch, queries, heads, levels, points); output / gradOutput rows (batch, queries, heads, channels).
struct MsdaShape {
  int64_t batch = 0;
  int64_t keys = 0;
  int64_t heads = 0;
  int64_t channels = 0;
  int64_t levels = 0;
  int64_t queries = 0;
  int64_t points = 0;
};

// A (batch, query, head, channel) view of output or gradOutput, whichever of its accepted shapes the caller used:
// (batch, queries, heads * channels) or (batch, queries, heads, channels). Element strides.
struct HeadRows {
  TensorDesc desc;
  int64_t batch_stride = 0;
  int64_t query_stride = 0;
  int64_t head_stride = 0;
  int64_t channel_stride = 0;
};

// Where the kernels' fp32 arrays live in the workspace (byte offsets from the 64-byte aligned workspace start;
// -1 when not needed). Both have the layout (batch, heads, keys, channels).
struct WorkspacePlan {
  int64_t value_copy = -1;       // value in fp32 (forward: unless value is FLOAT with unit channel stride)
  int64_t grad_value_sums = -1;  // backward: the gradValue sums
  bool grad_value_in_place = false;  // backward: gradValue (FLOAT, unit channel stride) is the accumulator itself
  // Forward with few corner reads per value row: value_copy is filled row by row, when a corner first touches it.
  bool rows_on_first_touch = false;
  // Forward: value shares no memory with the output, so a task may copy its (image, head) plane into value_copy
  // just before it walks it, while other tasks already write their outputs (otherwise the whole copy comes first).
  bool value_copy_per_task = false;
  uint64_t bytes = 0;
};

// The inputs both operators take.
struct MsdaInputs {
  TensorDesc value;
  TensorDesc spatial_shape;      // (levels, 2) INT32/INT64: (H, W) per level; read only in phase 2
  TensorDesc level_start_index;  // (levels) INT32/INT64; read only in phase 2
  TensorDesc location;
  TensorDesc attn_weight;
};

struct ForwardParams {
  MsdaShape shape;
  MsdaInputs in;
  HeadRows output;
  WorkspacePlan workspace;
};

struct BackwardParams {
  MsdaShape shape;
  MsdaInputs in;
  HeadRows grad_output;
  TensorDesc grad_value;
  TensorDesc grad_location;
  TensorDesc grad_attn_weight;
  WorkspacePlan workspace;
};

// Phase-1 planning (from the shapes and dtypes only).
inline constexpr const char* kForwardName = "aclnnMultiScaleDeformableAttnFunction";
inline constexpr const char* kBackwardName = "aclnnMultiScaleDeformableAttentionGrad";


// The CPU implementation's workspace plans (cpu/msda_cpu_plan.cpp).
WorkspacePlan PlanForwardWorkspace(const ForwardParams& params);
WorkspacePlan PlanBackwardWorkspace(const BackwardParams& params);

// The CPU kernels (phase 2). workspace holds at least params.workspace.bytes bytes (nullptr when that is 0).
aclnnStatus RunForwardCpu(const ForwardParams& params, void* workspace);
aclnnStatus RunBackwardCpu(const BackwardParams& params, void* workspace);

// The generic CPU kernels (cpu/msda_cpu_generic.cpp) for what the vector ones do not take: DOUBLE, or channels not a
// multiple of 8 or above 256 (VectorKernelsTake false). The forward needs no workspace.
bool VectorKernelsTake(const MsdaShape& shape, aclDataType dtype);
WorkspacePlan PlanGenericBackwardWorkspace(const BackwardParams& params);
aclnnStatus RunForwardCpuGeneric(const ForwardParams& params, void* workspace);
aclnnStatus RunBackwardCpuGeneric(const BackwardParams& params, void* workspace);

}  // namespace pacl::msda

#endif  // PACL_OPS_MULTI_SCALE_DEFORMABLE_ATTENTION_MSDA_PARAMS_H_
