// The CUDA implementation of NsaCompress and NsaCompressGrad (its entries: nsa_compress_cuda_impls.cpp).
#ifndef PACL_OPS_NSA_COMPRESS_CUDA_NSA_COMPRESS_CUDA_H_
#define PACL_OPS_NSA_COMPRESS_CUDA_NSA_COMPRESS_CUDA_H_

#include <cstdint>

#include "nsa_compress/nsa_compress_params.h"
#include "pacl/op_glue.h"

namespace pacl::nsa_compress {

// The CUDA kernels (nsa_compress_cuda.cu), enqueued on the context's CUDA stream, with their workspace plans.
uint64_t PlanForwardCuda(ForwardParams* params);
uint64_t PlanBackwardCuda(BackwardParams* params);
aclnnStatus RunForwardCuda(const ForwardParams& params, const KernelContext& context);
aclnnStatus RunBackwardCuda(const BackwardParams& params, const KernelContext& context);

}  // namespace pacl::nsa_compress

#endif  // PACL_OPS_NSA_COMPRESS_CUDA_NSA_COMPRESS_CUDA_H_
