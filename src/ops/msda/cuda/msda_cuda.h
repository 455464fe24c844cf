// The CUDA implementation of MultiScaleDeformableAttnFunction and MultiScaleDeformableAttentionGrad (its entries in the
// implementation lists: msda_cuda_impls.cpp). A plan computes the workspace layout from the parameters alone: phase 1
// sizes the workspace with it, and phase 2 computes it again to find the arrays.
#ifndef PACL_OPS_MSDA_CUDA_MSDA_CUDA_H_
#define PACL_OPS_MSDA_CUDA_MSDA_CUDA_H_

#include <cstdint>

#include "msda/msda_params.h"
#include "pacl/op_glue.h"

namespace pacl::msda {

// The CUDA workspaces (byte offsets from the workspace start rounded up to 64 bytes; -1 when unused; see the NOTE in
// msda_cuda.cu): the forward's holds value's copy alone. The backward's gradValue sums are gathered chunk by chunk: a
// chunk is `chunk_planes` (image, head) planes and, within each, a range of at most `chunk_queries` queries.
struct CudaWorkspacePlan {
  int64_t chunk_planes = 1;
  int64_t chunk_queries = 1;
  int64_t chunk_entries = 0;     // the most (corner) entries of one chunk
  int64_t value_copy = -1;       // value's elements, when an output may share its memory (first)
  int64_t grad_value_sums = -1;  // fp32 (batch, heads, keys, channels)
  int64_t keys = -1;             // uint64 [2][chunk_entries]
  int64_t entry_ids = -1;        // uint32 [2][chunk_entries]
  int64_t weights = -1;          // fp32 [chunk_entries]
  int64_t segment_starts = -1;   // int32 [chunk_planes * keys + 1]
  int64_t sort_scratch = -1;     // CUB's radix sort scratch, sized in phase 1 (pacl/cuda_sort.cuh), the last array
  uint64_t bytes = 0;
};

// The CUDA implementations (msda_cuda.cu), enqueued on the context's CUDA stream. The backward has two: deterministic
// (gradValue gathered through a sort of the corner entries; the default) and atomic (float atomics, only when
// ACL_OPT_DETERMINISTIC is turned off). The forward's workspace holds a copy of value when the output may share its
// memory.
uint64_t PlanForwardCuda(ForwardParams* params);
aclnnStatus RunForwardCuda(const ForwardParams& params, const KernelContext& context);
uint64_t PlanBackwardCudaDeterministic(BackwardParams* params);
uint64_t PlanBackwardCudaAtomic(BackwardParams* params);
aclnnStatus RunBackwardCudaDeterministic(const BackwardParams& params, const KernelContext& context);
aclnnStatus RunBackwardCudaAtomic(const BackwardParams& params, const KernelContext& context);

}  // namespace pacl::msda

#endif  // PACL_OPS_MSDA_CUDA_MSDA_CUDA_H_
