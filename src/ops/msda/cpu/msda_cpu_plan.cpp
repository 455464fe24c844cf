// Phase-1 planning of the CPU kernels: the workspace layouts (see the NOTE in msda_cpu.cpp), from the shapes, dtypes
// and strides, and from where the tensors lie (an input that shares memory with an output is copied, never read in
// place; an output that shares memory with an input is never the accumulator).
#include <cstdint>

#include "msda/msda_params.h"
#include "pacl/workspace_plan.h"

namespace pacl::msda {
namespace {

// Elements of the fp32 arrays (batch, heads, keys, channels) of the workspace.
uint64_t PlaneElements(const MsdaShape& s) {
  uint64_t elements = SaturatingMul(static_cast<uint64_t>(s.batch), static_cast<uint64_t>(s.heads));
  elements = SaturatingMul(elements, static_cast<uint64_t>(s.keys));
  return SaturatingMul(elements, static_cast<uint64_t>(s.channels));
}

// Corner reads per value row from which the kernels work on compact fp32 planes even for FLOAT tensors (see
// PlanForwardWorkspace and PlanBackwardWorkspace).
constexpr uint64_t kCopyWhenReadsPerRow = 8;

// The forward can read a FLOAT value with unit channel stride in place, and the backward can accumulate into such
// a gradValue in place; anything else goes through an fp32 array.
bool NeedsFloatCopy(const TensorDesc& t) { return t.dtype != ACL_FLOAT || t.strides[3] != 1; }

// The corners the kernels read: bs x nq x nh x nl x np x 4.
uint64_t CornerReads(const MsdaShape& s) {
  const uint64_t row_corners = static_cast<uint64_t>(s.heads * s.levels * s.points * 4);
  return SaturatingMul(SaturatingMul(static_cast<uint64_t>(s.batch), static_cast<uint64_t>(s.queries)), row_corners);
}

// Whether they reach kCopyWhenReadsPerRow per value row (bs x nk x nh).
bool ManyCornerReads(const MsdaShape& s) {
  const uint64_t value_rows = SaturatingMul(
      SaturatingMul(static_cast<uint64_t>(s.batch), static_cast<uint64_t>(s.keys)), static_cast<uint64_t>(s.heads));
  return CornerReads(s) >= SaturatingMul(value_rows, kCopyWhenReadsPerRow);
}

// Bytes to reserve so that the next array starts half a 4 KiB page away from `other` (modulo 4096). The backward
// loads a corner's value row right after storing to its gradValue sums row: where the two arrays start a multiple
// of 4 KiB apart (the copy's size, bs x nh x nk x c x 4 bytes, is one whenever bs x nh x nk x c is a multiple of
// 1024, e.g. c 32, nh 8, bs 4 and an even nk), every such load matches the pending store's page offset and waits
// for it (4K aliasing, which slowed the Deformable-DETR encoder's backward measurably on AMD Zen 4).
uint64_t PaddingToHalfPageApart(const WorkspaceLayout& layout, int64_t other) {
  constexpr uint64_t kPage = 4096;
  const uint64_t next = layout.NextOffset();
  const uint64_t wanted = (static_cast<uint64_t>(other) + kPage / 2) % kPage;
  return (wanted + kPage - next % kPage) % kPage;
}

}  // namespace

WorkspacePlan PlanForwardWorkspace(const ForwardParams& params) {
  // value is read in place only when its channels have unit stride and the queries are few (a FLOAT16/BFLOAT16 row
  // is then widened in registers as it is read): the compact fp32 copy costs a pass over value but keeps a head's
  // rows dense in the cache (faster on the Deformable-DETR encoder), which pays off once the corners read outnumber
  // value's rows several times.
  const MsdaShape& s = params.shape;
  WorkspacePlan plan;
  WorkspaceLayout layout;
  const uint64_t elements = PlaneElements(s);
  const bool value_apart = !params.in.value.MayShareMemoryWith(params.output.desc);
  if (elements > 0 && CornerReads(s) > 0 &&
      (params.in.value.strides[3] != 1 || ManyCornerReads(s) || !value_apart)) {
    plan.value_copy = layout.Reserve(SaturatingMul(elements, sizeof(float)));
  }
  // A copy taken with few corner reads (strided channels) is filled row by row as corners first reach it, rather
  // than by a pass over all of value (faster on the Deformable-DETR decoder). Not in the backward: there the rows it
  // reaches missed the cache one by one where the passes over whole arrays stream (slower on the same decoder, for
  // value and for the gradValue sums alike; docs/ops/msda.md, log).
  plan.rows_on_first_touch = plan.value_copy >= 0 && !ManyCornerReads(s) && value_apart;
  plan.value_copy_per_task = plan.value_copy >= 0 && !plan.rows_on_first_touch && value_apart;
  plan.bytes = layout.TotalBytes();
  return plan;
}

WorkspacePlan PlanBackwardWorkspace(const BackwardParams& params) {
  // With many corner reads per value row (an encoder's queries, as many as keys) the backward works on compact
  // fp32 copies: its tasks walk one (image, head) plane at a time, and in the caller's (bs, nk, nh, c) layout a
  // plane's rows lie nh * c floats apart, which crowds them into a fraction of the cache sets (slower than copying,
  // zeroing and converting these arrays). With few (a decoder's hundreds of queries over tens of
  // thousands of keys) those passes over all of value and gradValue are most of the work, so a value with unit
  // channel stride is read in place (FLOAT16/BFLOAT16 rows widened in registers) and
  // a FLOAT gradValue with unit channel stride is zeroed and accumulated in place, each only if it shares no memory
  // with the other side's tensors (a caller's aliasing must not change what is read).
  const MsdaShape& s = params.shape;
  WorkspacePlan plan;
  WorkspaceLayout layout;
  const uint64_t elements = PlaneElements(s);
  const bool many_reads = ManyCornerReads(s);
  const TensorDesc* outputs[] = {&params.grad_value, &params.grad_location, &params.grad_attn_weight};
  const TensorDesc* inputs[] = {&params.in.value, &params.in.location, &params.in.attn_weight,
                                &params.grad_output.desc};
  bool value_apart = true;
  for (const TensorDesc* output : outputs) value_apart = value_apart && !params.in.value.MayShareMemoryWith(*output);
  bool grad_value_apart = true;
  for (const TensorDesc* input : inputs) {
    grad_value_apart = grad_value_apart && !params.grad_value.MayShareMemoryWith(*input);
  }
  if (elements > 0 && s.queries > 0 && (params.in.value.strides[3] != 1 || many_reads || !value_apart)) {
    plan.value_copy = layout.Reserve(SaturatingMul(elements, sizeof(float)));
  }
  if (elements > 0 && (NeedsFloatCopy(params.grad_value) || many_reads || !grad_value_apart)) {
    if (plan.value_copy >= 0) layout.Reserve(PaddingToHalfPageApart(layout, plan.value_copy));
    plan.grad_value_sums = layout.Reserve(SaturatingMul(elements, sizeof(float)));
  } else if (elements > 0) {
    plan.grad_value_in_place = true;
  }
  plan.bytes = layout.TotalBytes();
  return plan;
}

}  // namespace pacl::msda
