// The CUDA implementation of ScaledMaskedSoftmax and ScaledMaskedSoftmaxBackward (its entries:
// scaled_masked_softmax_cuda_impls.cpp).
#ifndef PACL_OPS_SCALED_MASKED_SOFTMAX_CUDA_SCALED_MASKED_SOFTMAX_CUDA_H_
#define PACL_OPS_SCALED_MASKED_SOFTMAX_CUDA_SCALED_MASKED_SOFTMAX_CUDA_H_

#include <cstdint>

#include "scaled_masked_softmax/scaled_masked_softmax_params.h"
#include "pacl/op_glue.h"

namespace pacl::scaled_masked_softmax {

// The CUDA kernels (scaled_masked_softmax_cuda.cu), enqueued on the context's CUDA stream.
aclnnStatus RunForwardCuda(const ForwardParams& params, const KernelContext& context);
aclnnStatus RunBackwardCuda(const BackwardParams& params, const KernelContext& context);

}  // namespace pacl::scaled_masked_softmax

#endif  // PACL_OPS_SCALED_MASKED_SOFTMAX_CUDA_SCALED_MASKED_SOFTMAX_CUDA_H_
