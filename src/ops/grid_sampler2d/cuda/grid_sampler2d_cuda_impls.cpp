// The CUDA entries in the implementation lists of GridSampler2D and GridSampler2DBackward, in order of preference
// (pacl/op_glue.h: phase 1 takes the first that fits the call). Compiled only in a build with the CUDA backend.
#include "grid_sampler2d/cuda/grid_sampler2d_cuda.h"
#include "grid_sampler2d/grid_sampler2d_params.h"
#include "pacl/op_glue.h"

namespace pacl::grid_sampler2d {
namespace {

const Implementation<ForwardParams> kForward[] = {
    {"cuda", /*deterministic=*/true, /*supports=*/nullptr, /*plan=*/nullptr, RunForwardCuda},
};

const Implementation<BackwardParams> kBackward[] = {
    // Atomic first: taken only when ACL_OPT_DETERMINISTIC is off (BindImplementation skips it otherwise).
    {"cuda-atomic", /*deterministic=*/false, SupportsBackwardCuda, PlanBackwardCudaAtomic, RunBackwardCudaAtomic},
    {"cuda", /*deterministic=*/true, SupportsBackwardCuda, PlanBackwardCudaDeterministic,
     RunBackwardCudaDeterministic},
};

const ImplementationFragment<ForwardParams> kForwardOnCuda("cuda", kForward);
const ImplementationFragment<BackwardParams> kBackwardOnCuda("cuda", kBackward);

}  // namespace
}  // namespace pacl::grid_sampler2d
