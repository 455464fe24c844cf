// The CUDA implementation of NsaSelectedAttention and NsaSelectedAttentionGrad (its entries in the implementation
// lists: nsa_selected_attention_cuda_impls.cpp). A plan computes the workspace layout from the parameters (and, in
// phase 1, CUB's scratch size on the device): phase 1 sizes the workspace with it, and phase 2 computes it again to
// find the arrays.
#ifndef PACL_OPS_NSA_SELECTED_ATTENTION_CUDA_NSA_SELECTED_ATTENTION_CUDA_H_
#define PACL_OPS_NSA_SELECTED_ATTENTION_CUDA_NSA_SELECTED_ATTENTION_CUDA_H_

#include <cstdint>

#include "nsa_selected_attention/nsa_selected_attention_params.h"
#include "pacl/op_glue.h"
#include "pacl/workspace_plan.h"

namespace pacl::nsa_selected_attention {

// The CUDA workspace (byte offsets from the workspace start rounded up to 64 bytes; -1 when unused; see the NOTE in
// nsa_selected_attention_cuda.cu).
struct CudaWorkspacePlan {
  int64_t sequences = -1;       // Sequence [sequence count]: a device copy of the host list
  int64_t delta = -1;           // backward: fp32 (q_tokens, q_heads), rowsum(attentionOutGrad * attentionOut)
  int64_t pairs = 0;            // backward: kv_heads * q_tokens * block_count (KV head, token, slot) entries
  int64_t keys = -1;            // backward: uint64 [2][pairs], the (KV head, key block) each entry selects
  int64_t tokens = -1;          // backward: uint32 [2][pairs], the entry's query token
  int64_t segment_starts = -1;  // backward: int64 [kv_heads * kv_blocks + 1]
  int64_t sort_scratch = -1;    // backward: CUB's radix sort scratch, sized in phase 1 (pacl/cuda_sort.cuh), last
  uint64_t bytes = 0;
};

CudaWorkspacePlan PlanCudaForward(const ForwardParams& params);
CudaWorkspacePlan PlanCudaBackward(const BackwardParams& params, DeviceQuery query);

// The kernels (nsa_selected_attention_cuda.cu), enqueued on the context's CUDA stream.
aclnnStatus RunForwardCuda(const ForwardParams& params, const KernelContext& context);
aclnnStatus RunBackwardCuda(const BackwardParams& params, const KernelContext& context);

}  // namespace pacl::nsa_selected_attention

#endif  // PACL_OPS_NSA_SELECTED_ATTENTION_CUDA_NSA_SELECTED_ATTENTION_CUDA_H_
