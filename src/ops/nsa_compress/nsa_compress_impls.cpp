// The implementations of NsaCompress and NsaCompressGrad, in order of preference per device.
#include "nsa_compress/nsa_compress_params.h"
#include "pacl/op_glue.h"

namespace pacl::nsa_compress {
namespace {

uint64_t PlanBackwardCpu(BackwardParams* params) {
  params->workspace = PlanBackwardWorkspace(params->shape);
  return params->workspace.bytes;
}

const Implementation<ForwardParams> kForwardImplementations[] = {
    {"cpu", rt::DeviceKind::kCpu, /*deterministic=*/true, /*supports=*/nullptr, /*plan=*/nullptr,
     RunWithWorkspace<ForwardParams, RunForwardCpu>},
#if PACL_WITH_CUDA
    {"cuda", rt::DeviceKind::kCuda, /*deterministic=*/true, /*supports=*/nullptr, PlanForwardCuda, RunForwardCuda},
#endif
};

const Implementation<BackwardParams> kBackwardImplementations[] = {
    {"cpu", rt::DeviceKind::kCpu, /*deterministic=*/true, /*supports=*/nullptr, PlanBackwardCpu,
     RunWithWorkspace<BackwardParams, RunBackwardCpu>},
#if PACL_WITH_CUDA
    {"cuda", rt::DeviceKind::kCuda, /*deterministic=*/true, /*supports=*/nullptr, PlanBackwardCuda, RunBackwardCuda},
#endif
};

}  // namespace

aclnnStatus BindForward(const ForwardParams& params, uint64_t* workspace_size, aclOpExecutor** executor) {
  return BindImplementation(kForwardName, params.input.dtype, params, kForwardImplementations, workspace_size,
                            executor);
}

aclnnStatus BindBackward(const BackwardParams& params, uint64_t* workspace_size, aclOpExecutor** executor) {
  return BindImplementation(kBackwardName, params.input.dtype, params, kBackwardImplementations, workspace_size,
                            executor);
}

}  // namespace pacl::nsa_compress
