// The CPU's entries in the implementation lists of ScaledMaskedSoftmax and ScaledMaskedSoftmaxBackward, in order of
// preference (pacl/op_glue.h: phase 1 takes the first that fits the call).
#include "scaled_masked_softmax/scaled_masked_softmax_params.h"
#include "pacl/op_glue.h"

namespace pacl::scaled_masked_softmax {
namespace {

const Implementation<ForwardParams> kForward[] = {
    {"cpu", /*deterministic=*/true, /*supports=*/nullptr, /*plan=*/nullptr,
     [](const ForwardParams& params, const KernelContext&) { return RunForwardCpu(params); }},
};

const Implementation<BackwardParams> kBackward[] = {
    {"cpu", /*deterministic=*/true, /*supports=*/nullptr, /*plan=*/nullptr,
     [](const BackwardParams& params, const KernelContext&) { return RunBackwardCpu(params); }},
};

const ImplementationFragment<ForwardParams> kForwardOnCpu("cpu", kForward);
const ImplementationFragment<BackwardParams> kBackwardOnCpu("cpu", kBackward);

}  // namespace
}  // namespace pacl::scaled_masked_softmax
