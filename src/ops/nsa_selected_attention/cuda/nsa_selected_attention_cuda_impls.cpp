// The CUDA entries in the implementation lists of NsaSelectedAttention and NsaSelectedAttentionGrad, in order of
// preference (pacl/op_glue.h: phase 1 takes the first that fits the call). Compiled only in a build with the CUDA
// backend.
#include "nsa_selected_attention/cuda/nsa_selected_attention_cuda.h"
#include "nsa_selected_attention/nsa_selected_attention_params.h"
#include "pacl/op_glue.h"

namespace pacl::nsa_selected_attention {
namespace {

uint64_t PlanForward(ForwardParams* params) { return PlanCudaForward(*params).bytes; }
uint64_t PlanBackward(BackwardParams* params) { return PlanCudaBackward(*params, DeviceQuery::kAsk).bytes; }

const Implementation<ForwardParams> kForward[] = {
    {"cuda", /*deterministic=*/true, /*supports=*/nullptr, PlanForward, RunForwardCuda},
};

const Implementation<BackwardParams> kBackward[] = {
    {"cuda", /*deterministic=*/true, /*supports=*/nullptr, PlanBackward, RunBackwardCuda},
};

const ImplementationFragment<ForwardParams> kForwardOnCuda("cuda", kForward);
const ImplementationFragment<BackwardParams> kBackwardOnCuda("cuda", kBackward);

}  // namespace
}  // namespace pacl::nsa_selected_attention
