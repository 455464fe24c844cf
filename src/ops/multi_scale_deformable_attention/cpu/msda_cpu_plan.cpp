// Phase-1 planning of the CPU kernels: the workspace layouts (see the NOTE in msda_cpu.cpp), from the shapes, dtypes
// and strides only.
#include <cstdint>

#include "multi_scale_deformable_attention/msda_params.h"
#include "pacl/workspace_plan.h"

namespace pacl::msda {
namespace {

// Elements of the fp32 arrays (batch, heads, keys, channels) of the workspace.
uint64_t PlaneElements(const MsdaShape& s) {
  uint64_t elements = SaturatingMul(static_cast<uint64_t>(s.batch), static_cast<uint64_t>(s.heads));
  elements = SaturatingMul(elements, static_cast<uint64_t>(s.keys));
  return SaturatingMul(elements, static_cast<uint64_t>(s.channels));
}

// Corner reads per value row from which the forward copies even a FLOAT value (see PlanForwardWorkspace).
constexpr uint64_t kCopyWhenReadsPerRow = 8;

// The forward can read a FLOAT value with unit channel stride in place; anything else goes through an fp32 copy.
bool NeedsFloatCopy(const TensorDesc& t) { return t.dtype != ACL_FLOAT || t.strides[3] != 1; }

}  // namespace

WorkspacePlan PlanForwardWorkspace(const ForwardParams& params) {
  // value is read in place only when it is FLOAT with unit channel stride and the queries are few: the compact
  // fp32 copy costs a pass over value but keeps a head's rows dense in the cache (measured ~20% faster on the
  // Deformable-DETR encoder), which pays off once the corners read outnumber value's rows several times.
  const MsdaShape& s = params.shape;
  WorkspacePlan plan;
  WorkspaceLayout layout;
  const uint64_t elements = PlaneElements(s);
  const uint64_t value_rows = SaturatingMul(
      SaturatingMul(static_cast<uint64_t>(s.batch), static_cast<uint64_t>(s.keys)), static_cast<uint64_t>(s.heads));
  uint64_t corner_reads = SaturatingMul(static_cast<uint64_t>(s.batch), static_cast<uint64_t>(s.queries));
  corner_reads = SaturatingMul(corner_reads, static_cast<uint64_t>(s.heads * s.levels * s.points * 4));
  const bool many_queries = corner_reads >= SaturatingMul(value_rows, kCopyWhenReadsPerRow);
  if (elements > 0 && corner_reads > 0 && (NeedsFloatCopy(params.in.value) || many_queries)) {
    plan.value_copy = layout.Reserve(SaturatingMul(elements, sizeof(float)));
  }
  plan.bytes = layout.TotalBytes();
  return plan;
}

WorkspacePlan PlanBackwardWorkspace(const BackwardParams& params) {
  // The backward always works on compact fp32 copies: its tasks walk one (image, head) plane at a time, and in
  // the caller's (bs, nk, nh, c) layout a plane's rows lie nh * c floats apart, which crowds them into a fraction
  // of the cache sets (measured ~15% slower than copying, zeroing and converting these arrays).
  WorkspacePlan plan;
  WorkspaceLayout layout;
  const uint64_t elements = PlaneElements(params.shape);
  if (elements > 0 && params.shape.queries > 0) {
    plan.value_copy = layout.Reserve(SaturatingMul(elements, sizeof(float)));
  }
  if (elements > 0) plan.grad_value_sums = layout.Reserve(SaturatingMul(elements, sizeof(float)));
  plan.bytes = layout.TotalBytes();
  return plan;
}

}  // namespace pacl::msda
