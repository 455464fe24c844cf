// The CUDA entries in the implementation lists of ScaledMaskedSoftmax and ScaledMaskedSoftmaxBackward, in order of
// preference (pacl/op_glue.h: phase 1 takes the first that fits the call). Compiled only in a build with the CUDA
// backend.
#include "scaled_masked_softmax/cuda/scaled_masked_softmax_cuda.h"
#include "scaled_masked_softmax/scaled_masked_softmax_params.h"
#include "pacl/op_glue.h"

namespace pacl::scaled_masked_softmax {
namespace {

const Implementation<ForwardParams> kForward[] = {
    {"cuda", /*deterministic=*/true, /*supports=*/nullptr, /*plan=*/nullptr, RunForwardCuda},
};

const Implementation<BackwardParams> kBackward[] = {
    {"cuda", /*deterministic=*/true, /*supports=*/nullptr, /*plan=*/nullptr, RunBackwardCuda},
};

const ImplementationFragment<ForwardParams> kForwardOnCuda("cuda", kForward);
const ImplementationFragment<BackwardParams> kBackwardOnCuda("cuda", kBackward);

}  // namespace
}  // namespace pacl::scaled_masked_softmax
