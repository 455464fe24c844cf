// The CUDA implementation of NsaCompressAttention (its entries in the implementation list:
// nsa_compress_attention_cuda_impls.cpp).
#ifndef PACL_OPS_NSA_COMPRESS_ATTENTION_CUDA_NSA_COMPRESS_ATTENTION_CUDA_H_
#define PACL_OPS_NSA_COMPRESS_ATTENTION_CUDA_NSA_COMPRESS_ATTENTION_CUDA_H_

#include <cstdint>

#include "nsa_compress_attention/nsa_compress_attention_params.h"
#include "pacl/op_glue.h"

namespace pacl::nsa_compress_attention {

// Whether one (token, KV head) item's shared memory (the group's query rows and sums, a tile of keys and values, the
// sequence's importance and block scores) fits the 227 KiB a thread block of sm_90 may have; larger calls have no
// CUDA implementation (phase 1: 161002).
bool SupportsCuda(const ForwardParams& params);
// The workspace: a device copy of the sequences.
uint64_t PlanForwardCuda(ForwardParams* params);
// The kernel (nsa_compress_attention_cuda.cu), enqueued on the context's CUDA stream.
aclnnStatus RunForwardCuda(const ForwardParams& params, const KernelContext& context);

}  // namespace pacl::nsa_compress_attention

#endif  // PACL_OPS_NSA_COMPRESS_ATTENTION_CUDA_NSA_COMPRESS_ATTENTION_CUDA_H_
