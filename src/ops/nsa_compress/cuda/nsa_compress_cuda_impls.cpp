// The CUDA entries in the implementation lists of NsaCompress and NsaCompressGrad, in order of preference
// (pacl/op_glue.h: phase 1 takes the first that fits the call). Compiled only in a build with the CUDA backend.
#include "nsa_compress/cuda/nsa_compress_cuda.h"
#include "nsa_compress/nsa_compress_params.h"
#include "pacl/op_glue.h"

namespace pacl::nsa_compress {
namespace {

const Implementation<ForwardParams> kForward[] = {
    {"cuda", /*deterministic=*/true, /*supports=*/nullptr, PlanForwardCuda, RunForwardCuda},
};

const Implementation<BackwardParams> kBackward[] = {
    {"cuda", /*deterministic=*/true, /*supports=*/nullptr, PlanBackwardCuda, RunBackwardCuda},
};

const ImplementationFragment<ForwardParams> kForwardOnCuda("cuda", kForward);
const ImplementationFragment<BackwardParams> kBackwardOnCuda("cuda", kBackward);

}  // namespace
}  // namespace pacl::nsa_compress
