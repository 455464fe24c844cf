// Phase-1 planning of the CPU kernels: the backward's workspace (per-chunk weightGrad partial sums, see the NOTE in
// nsa_compress_cpu.cpp), from the shape only.
#include <cstdint>

#include "nsa_compress/nsa_compress_params.h"
#include "pacl/workspace_plan.h"

namespace pacl::nsa_compress {

WorkspacePlan PlanBackwardWorkspace(const NsaShape& s) {
  WorkspacePlan plan;
  WorkspaceLayout layout;
  if (s.blocks > 0) {
    const uint64_t chunks = static_cast<uint64_t>((s.tokens + kBackwardTokensPerChunk - 1) / kBackwardTokensPerChunk);
    const uint64_t per_chunk = SaturatingMul(static_cast<uint64_t>(s.block_size), static_cast<uint64_t>(s.heads));
    plan.weight_grad_partials = layout.Reserve(SaturatingMul(SaturatingMul(chunks, per_chunk), sizeof(float)));
  }
  plan.bytes = layout.TotalBytes();
  return plan;
}

}  // namespace pacl::nsa_compress
