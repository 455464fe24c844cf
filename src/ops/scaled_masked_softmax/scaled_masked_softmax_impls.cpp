// The implementations of ScaledMaskedSoftmax and its backward, in order of preference per device.
#include "pacl/op_glue.h"
#include "scaled_masked_softmax/scaled_masked_softmax_params.h"

namespace pacl::scaled_masked_softmax {
namespace {

const Implementation<ForwardParams> kForwardImplementations[] = {
    {"cpu", rt::DeviceKind::kCpu, /*deterministic=*/true, /*supports=*/nullptr, /*plan=*/nullptr,
     [](const ForwardParams& params, const KernelContext&) { return RunForwardCpu(params); }},
#if PACL_WITH_CUDA
    {"cuda", rt::DeviceKind::kCuda, /*deterministic=*/true, /*supports=*/nullptr, /*plan=*/nullptr, RunForwardCuda},
#endif
};

const Implementation<BackwardParams> kBackwardImplementations[] = {
    {"cpu", rt::DeviceKind::kCpu, /*deterministic=*/true, /*supports=*/nullptr, /*plan=*/nullptr,
     [](const BackwardParams& params, const KernelContext&) { return RunBackwardCpu(params); }},
#if PACL_WITH_CUDA
    {"cuda", rt::DeviceKind::kCuda, /*deterministic=*/true, /*supports=*/nullptr, /*plan=*/nullptr, RunBackwardCuda},
#endif
};

}  // namespace

aclnnStatus BindForward(const ForwardParams& params, uint64_t* workspace_size, aclOpExecutor** executor) {
  return BindImplementation(kForwardName, params.x.desc.dtype, params, kForwardImplementations, workspace_size,
                            executor);
}

aclnnStatus BindBackward(const BackwardParams& params, uint64_t* workspace_size, aclOpExecutor** executor) {
  return BindImplementation(kBackwardName, params.grad_output.desc.dtype, params, kBackwardImplementations,
                            workspace_size, executor);
}

}  // namespace pacl::scaled_masked_softmax
