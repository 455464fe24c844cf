// Phase-1 planning of the CPU kernels: the backward's workspace (see the NOTE in nsa_selected_attention_cpu.cpp),
// from the shape only. The forward needs none.
#include <cstdint>

#include "nsa_selected_attention/nsa_selected_attention_params.h"
#include "pacl/workspace_plan.h"

namespace pacl::nsa_selected_attention {

WorkspacePlan PlanBackwardWorkspace(const AttentionShape& s) {
  WorkspacePlan plan;
  WorkspaceLayout layout;
  const auto q_tokens = static_cast<uint64_t>(s.q_tokens);
  const auto kv_heads = static_cast<uint64_t>(s.kv_heads);
  const auto blocks = static_cast<uint64_t>(s.kv_tokens / s.block_size);
  plan.delta = layout.Reserve(SaturatingMul(SaturatingMul(q_tokens, static_cast<uint64_t>(s.q_heads)), sizeof(float)));
  plan.offsets = layout.Reserve(SaturatingMul(SaturatingMul(kv_heads, blocks + 1), sizeof(int64_t)));
  plan.entries = layout.Reserve(SaturatingMul(
      SaturatingMul(SaturatingMul(kv_heads, q_tokens), static_cast<uint64_t>(s.block_count)), sizeof(uint32_t)));
  plan.bytes = layout.TotalBytes();
  return plan;
}

}  // namespace pacl::nsa_selected_attention
