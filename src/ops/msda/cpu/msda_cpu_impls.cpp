// The CPU's entries in the implementation lists of MultiScaleDeformableAttnFunction and
// MultiScaleDeformableAttentionGrad, in order of preference (pacl/op_glue.h: phase 1 takes the first that fits the
// call).
#include "msda/msda_params.h"
#include "pacl/op_glue.h"

namespace pacl::msda {
namespace {

// CANN's range (FLOAT, FLOAT16, BFLOAT16; c a multiple of 8 in [8, 256]): the vector kernels; the generic ones take
// the rest (DOUBLE, any channel count).
template <class Params>
bool InVectorRange(const Params& params) {
  return VectorKernelsTake(params.shape, params.in.value.dtype);
}

uint64_t PlanGenericBackward(BackwardParams* params) {
  params->workspace = PlanGenericBackwardWorkspace(*params);
  return params->workspace.bytes;
}

const Implementation<ForwardParams> kForward[] = {
    {"cpu", /*deterministic=*/true, InVectorRange<ForwardParams>, PlanInto<ForwardParams, PlanForwardWorkspace>,
     RunWithWorkspace<ForwardParams, RunForwardCpu>},
    {"cpu-generic", /*deterministic=*/true, /*supports=*/nullptr, /*plan=*/nullptr,
     RunWithWorkspace<ForwardParams, RunForwardCpuGeneric>},
};

const Implementation<BackwardParams> kBackward[] = {
    {"cpu", /*deterministic=*/true, InVectorRange<BackwardParams>, PlanInto<BackwardParams, PlanBackwardWorkspace>,
     RunWithWorkspace<BackwardParams, RunBackwardCpu>},
    {"cpu-generic", /*deterministic=*/true, /*supports=*/nullptr, PlanGenericBackward,
     RunWithWorkspace<BackwardParams, RunBackwardCpuGeneric>},
};

const ImplementationFragment<ForwardParams> kForwardOnCpu("cpu", kForward);
const ImplementationFragment<BackwardParams> kBackwardOnCpu("cpu", kBackward);

}  // namespace
}  // namespace pacl::msda
