// Plain-data parameters of aclnnNsaCompress (forward) and aclnnNsaCompressGrad, filled by phase 1
// (nsa_compress_api.cpp) and consumed by the kernels (cpu/, cuda/).
#ifndef PACL_OPS_NSA_COMPRESS_NSA_COMPRESS_PARAMS_H_
#define PACL_OPS_NSA_COMPRESS_NSA_COMPRESS_PARAMS_H_

#include <cstdint>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "aclnn/acl_meta.h"
#include "pacl/tensor.h"

namespace pacl {
struct KernelContext;
}  // namespace pacl

namespace pacl::nsa_compress {

// input (tokens, heads, dim) "TND"; weight (block_size, heads); output / outputGrad (blocks, heads, dim).
struct NsaShape {
  int64_t tokens = 0;      // T
  int64_t heads = 0;       // N
  int64_t dim = 0;         // D
  int64_t block_size = 0;  // compressBlockSize
  int64_t stride = 0;      // compressStride
  int64_t blocks = 0;      // total over the sequences
};

// One sequence of actSeqLen: tokens [start, end), its blocks [first_block, first_block + blocks).
struct Sequence {
  int64_t start = 0;
  int64_t end = 0;
  int64_t first_block = 0;
  int64_t blocks = 0;
};

// Where the kernels' arrays live in the workspace (byte offsets from its 64-byte aligned start; -1: not needed).
struct WorkspacePlan {
  int64_t weight_grad_partials = -1;  // backward: fp32 (chunks, heads, block_size)
  int64_t device_sequences = -1;      // CUDA: a device copy of the sequences (the CUDA plans use 256-byte alignment)
  uint64_t bytes = 0;
};

// Blocks per chunk of the forward's tasks, and of the CUDA backward's weightGrad partial sums (fixed, so the
// reduction order is fixed).
inline constexpr int64_t kBlocksPerChunk = 32;
// Tokens per chunk of the CPU backward's tasks and weightGrad partial sums (fixed, so the reduction order is fixed).
inline constexpr int64_t kBackwardTokensPerChunk = 512;

struct ForwardParams {
  NsaShape shape;
  std::vector<Sequence> sequences;  // in actSeqLen order, empty ones included
  TensorDesc input;
  TensorDesc weight;
  TensorDesc output;
  WorkspacePlan workspace;  // CUDA only
};

struct BackwardParams {
  NsaShape shape;
  std::vector<Sequence> sequences;
  TensorDesc output_grad;
  TensorDesc input;
  TensorDesc weight;
  TensorDesc input_grad;
  TensorDesc weight_grad;
  WorkspacePlan workspace;
};

inline constexpr const char* kForwardName = "aclnnNsaCompress";
inline constexpr const char* kBackwardName = "aclnnNsaCompressGrad";


// The CPU implementation's workspace plan of the backward (cpu/nsa_compress_cpu_plan.cpp).
WorkspacePlan PlanBackwardWorkspace(const NsaShape& s);

aclnnStatus RunForwardCpu(const ForwardParams& params, void* workspace);
aclnnStatus RunBackwardCpu(const BackwardParams& params, void* workspace);

}  // namespace pacl::nsa_compress

#endif  // PACL_OPS_NSA_COMPRESS_NSA_COMPRESS_PARAMS_H_
