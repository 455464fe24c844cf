// The CPU's entries in the implementation lists of NsaSelectedAttention and NsaSelectedAttentionGrad, in order of
// preference (pacl/op_glue.h: phase 1 takes the first that fits the call).
#include "nsa_selected_attention/nsa_selected_attention_params.h"
#include "pacl/op_glue.h"

namespace pacl::nsa_selected_attention {
namespace {

uint64_t PlanBackwardCpu(BackwardParams* params) {
  params->workspace = PlanBackwardWorkspace(params->shape);
  return params->workspace.bytes;
}

const Implementation<ForwardParams> kForward[] = {
    {"cpu", /*deterministic=*/true, /*supports=*/nullptr, /*plan=*/nullptr,
     RunWithWorkspace<ForwardParams, RunForwardCpu>},
};

const Implementation<BackwardParams> kBackward[] = {
    {"cpu", /*deterministic=*/true, /*supports=*/nullptr, PlanBackwardCpu,
     RunWithWorkspace<BackwardParams, RunBackwardCpu>},
};

const ImplementationFragment<ForwardParams> kForwardOnCpu("cpu", kForward);
const ImplementationFragment<BackwardParams> kBackwardOnCpu("cpu", kBackward);

}  // namespace
}  // namespace pacl::nsa_selected_attention
