// The CUDA entries in the implementation lists of MultiScaleDeformableAttnFunction and
// MultiScaleDeformableAttentionGrad, in order of preference (pacl/op_glue.h: phase 1 takes the first that fits the
// call). Compiled only in a build with the CUDA backend.
#include "msda/cuda/msda_cuda.h"
#include "msda/msda_params.h"
#include "pacl/op_glue.h"

namespace pacl::msda {
namespace {

// The CUDA kernels take any c up to 256 (at most 8 channels a lane) in the three CANN dtypes; DOUBLE and wider rows
// have no CUDA kernel (161002).
template <class Params>
bool CudaTakes(const Params& params) {
  return params.in.value.dtype != ACL_DOUBLE && params.shape.channels <= kMaxChannels;
}

const Implementation<ForwardParams> kForward[] = {
    {"cuda", /*deterministic=*/true, CudaTakes<ForwardParams>, PlanForwardCuda, RunForwardCuda},
};

const Implementation<BackwardParams> kBackward[] = {
    // Atomic first: taken only when ACL_OPT_DETERMINISTIC is off (BindImplementation skips it otherwise).
    {"cuda-atomic", /*deterministic=*/false, CudaTakes<BackwardParams>, PlanBackwardCudaAtomic, RunBackwardCudaAtomic},
    {"cuda", /*deterministic=*/true, CudaTakes<BackwardParams>, PlanBackwardCudaDeterministic,
     RunBackwardCudaDeterministic},
};

const ImplementationFragment<ForwardParams> kForwardOnCuda("cuda", kForward);
const ImplementationFragment<BackwardParams> kBackwardOnCuda("cuda", kBackward);

}  // namespace
}  // namespace pacl::msda
