// The CUDA implementation of GridSampler2D and GridSampler2DBackward (its entries in the implementation lists:
// grid_sampler2d_cuda_impls.cpp). A plan computes the workspace layout from the parameters alone: phase 1 sizes the
// workspace with it, and phase 2 computes it again to find the arrays.
#ifndef PACL_OPS_GRID_SAMPLER2D_CUDA_GRID_SAMPLER2D_CUDA_H_
#define PACL_OPS_GRID_SAMPLER2D_CUDA_GRID_SAMPLER2D_CUDA_H_

#include <cstdint>

#include "grid_sampler2d/grid_sampler2d_params.h"
#include "pacl/op_glue.h"

namespace pacl::grid_sampler2d {

// The CUDA backward's workspace (byte offsets from the workspace start rounded up to 64 bytes; -1 when unused):
// the deterministic inputGrad gathers through a sort of the taps by input element (see the NOTE in
// grid_sampler2d_cuda.cu); the atomic one accumulates into a compute-type copy of inputGrad.
struct CudaWorkspacePlan {
  int64_t tap_count = 0;      // E = N * Hout * Wout * K * K
  int64_t keys = -1;          // uint64 [2][E]: the input element each tap adds to (double buffer of the sort)
  int64_t tap_ids = -1;       // int64 [2][E]: the taps, sorted along
  int64_t weights = -1;       // compute type [E]: each tap's weight
  int64_t segment_starts = -1;  // int64 [N * Hin * Win + 1]: where each input element's taps begin
  int64_t sort_scratch = -1;    // CUB's radix sort scratch, sized in phase 1 (pacl/cuda_sort.cuh), the last array
  int64_t accumulator = -1;   // compute type [N][C][Hin][Win] (the atomic implementation)
  uint64_t bytes = 0;
};

// The CUDA implementations (grid_sampler2d_cuda.cu), enqueued on the context's CUDA stream. The backward has two:
// deterministic (a sort of the taps, then a gather; the default) and atomic (float atomics, chosen only when
// ACL_OPT_DETERMINISTIC is turned off). A plan returns the workspace bytes; Supports is false when the tap count
// overflows.
aclnnStatus RunForwardCuda(const ForwardParams& params, const KernelContext& context);
bool SupportsBackwardCuda(const BackwardParams& params);
uint64_t PlanBackwardCudaDeterministic(BackwardParams* params);
uint64_t PlanBackwardCudaAtomic(BackwardParams* params);
aclnnStatus RunBackwardCudaDeterministic(const BackwardParams& params, const KernelContext& context);
aclnnStatus RunBackwardCudaAtomic(const BackwardParams& params, const KernelContext& context);

}  // namespace pacl::grid_sampler2d

#endif  // PACL_OPS_GRID_SAMPLER2D_CUDA_GRID_SAMPLER2D_CUDA_H_
