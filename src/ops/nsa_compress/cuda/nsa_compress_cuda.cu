// NOTE [NsaCompress on CUDA]
//
// Problem: that of the CPU kernels (see the NOTE in cpu/nsa_compress_cpu.cpp). Which sequence holds a token or a
// block, and which blocks cover a token, come from nsa_compress_blocks.h, the code the CPU runs. The sequences
// (from the host array actSeqLen, listed in phase 1) are copied into the workspace at the start of each run. fp32
// arithmetic, one rounding per output element.
//
// Forward: one thread per output element (block, head, d), d fastest (adjacent threads read adjacent elements of
// each input row): out = sum over j ascending of weight[j, n] * input[start + j, n, d].
// Backward, inputGrad: one thread per element (t, n, d): the sum over the covering blocks, ascending, of
// weight[j, n] * outputGrad[block, n, d] (0 when no block covers t).
// Backward, weightGrad[j, n] = sum over blocks and d of outputGrad[block, n, d] * input[start + j, n, d]: one warp
// per (chunk of kBlocksPerChunk blocks, n, j) sums its chunk (blocks ascending, lane owning d = lane, lane + 32,
// ..., each lane in order, then a warp butterfly) into a partial in the workspace; one thread per (j, n) then adds
// the chunks' partials in ascending order. Every order is fixed by the shape and actSeqLen: bit-identical on every
// run. Workspace: the sequences and (backward) the partials, chunks * blockSize * N fp32.
#include <cstdint>
#include <vector>

#include "nsa_compress/nsa_compress_blocks.h"
#include "nsa_compress/nsa_compress_params.h"
#include "pacl/cuda_kernels.cuh"

namespace pacl::nsa_compress {
namespace {

constexpr int kThreads = 256;

// What the kernels need of the parameters (which hold a std::vector, so cannot be kernel arguments themselves).
struct Tensors {
  NsaShape shape;
  TensorDesc input, weight, output;              // forward
  TensorDesc output_grad, input_grad, weight_grad;  // backward (with input and weight)
};

__device__ __forceinline__ int64_t RowElement(const TensorDesc& t, int64_t i0, int64_t n, int64_t d) {
  return t.offset + i0 * t.strides[0] + n * t.strides[1] + d * t.strides[2];
}

__device__ __forceinline__ float Weight(const TensorDesc& weight, int64_t j, int64_t n) {
  const int64_t at = weight.offset + j * weight.strides[0] + n * weight.strides[1];
  return weight.dtype == ACL_BF16 ? cuda::Load<__nv_bfloat16>(weight, at) : cuda::Load<__half>(weight, at);
}

// The first token of block `block`, or -1 when no sequence holds it.
__device__ __forceinline__ int64_t BlockStart(const Sequence* sequences, int64_t count, int64_t stride,
                                             int64_t block) {
  const int64_t q = SequenceOfBlock(sequences, count, block);
  if (q >= count) return -1;
  return sequences[q].start + (block - sequences[q].first_block) * stride;
}

template <class Storage>
__global__ void __launch_bounds__(kThreads)
    ForwardKernel(const Tensors p, const Sequence* sequences, int64_t sequence_count) {
  const NsaShape& s = p.shape;
  const int64_t count = s.blocks * s.heads * s.dim;
  for (int64_t index = cuda::GridStart(); index < count; index += cuda::GridStride()) {
    const int64_t d = index % s.dim;
    const int64_t n = (index / s.dim) % s.heads;
    const int64_t block = index / (s.dim * s.heads);
    const int64_t start = BlockStart(sequences, sequence_count, s.stride, block);
    float sum = 0.0f;
    if (start >= 0) {
      for (int64_t j = 0; j < s.block_size; ++j) {
        sum = fmaf(Weight(p.weight, j, n), cuda::Load<Storage>(p.input, RowElement(p.input, start + j, n, d)), sum);
      }
    }
    cuda::Store<Storage>(p.output, RowElement(p.output, block, n, d), sum);
  }
}

template <class Storage>
__global__ void __launch_bounds__(kThreads)
    InputGradKernel(const Tensors p, const Sequence* sequences, int64_t sequence_count) {
  const NsaShape& s = p.shape;
  const int64_t count = s.tokens * s.heads * s.dim;
  for (int64_t index = cuda::GridStart(); index < count; index += cuda::GridStride()) {
    const int64_t d = index % s.dim;
    const int64_t n = (index / s.dim) % s.heads;
    const int64_t t = index / (s.dim * s.heads);
    const int64_t q = SequenceOfToken(sequences, sequence_count, t);
    float sum = 0.0f;
    if (q < sequence_count) {
      const Sequence seq = sequences[q];
      const CoveringBlocks covering = BlocksCovering(t - seq.start, s.block_size, s.stride, seq.blocks);
      for (int64_t r = 0; r < covering.count; ++r) {
        const int64_t k = covering.first + r;
        const float w = Weight(p.weight, t - seq.start - k * s.stride, n);
        sum = fmaf(w, cuda::Load<Storage>(p.output_grad, RowElement(p.output_grad, seq.first_block + k, n, d)), sum);
      }
    }
    cuda::Store<Storage>(p.input_grad, RowElement(p.input_grad, t, n, d), sum);
  }
}

// partials[chunk][n][j]: one warp per (chunk, n, j).
template <class Storage>
__global__ void __launch_bounds__(kThreads)
    WeightGradPartialsKernel(const Tensors p, const Sequence* sequences, int64_t sequence_count,
                             float* partials) {
  const NsaShape& s = p.shape;
  const int64_t chunks = (s.blocks + kBlocksPerChunk - 1) / kBlocksPerChunk;
  const int64_t warps = chunks * s.heads * s.block_size;
  const int lane = threadIdx.x % 32;
  const int64_t warps_per_grid = int64_t{gridDim.x} * (blockDim.x / 32);
  for (int64_t w = int64_t{blockIdx.x} * (blockDim.x / 32) + threadIdx.x / 32; w < warps; w += warps_per_grid) {
    const int64_t j = w % s.block_size;
    const int64_t n = (w / s.block_size) % s.heads;
    const int64_t chunk = w / (s.block_size * s.heads);
    const int64_t first = chunk * kBlocksPerChunk;
    const int64_t last = first + kBlocksPerChunk < s.blocks ? first + kBlocksPerChunk : s.blocks;
    float sum = 0.0f;
    for (int64_t block = first; block < last; ++block) {
      const int64_t start = BlockStart(sequences, sequence_count, s.stride, block);
      if (start < 0) continue;
      for (int64_t d = lane; d < s.dim; d += 32) {
        sum = fmaf(cuda::Load<Storage>(p.output_grad, RowElement(p.output_grad, block, n, d)),
                   cuda::Load<Storage>(p.input, RowElement(p.input, start + j, n, d)), sum);
      }
    }
    sum = cuda::WarpSum(sum);
    if (lane == 0) partials[w] = sum;
  }
}

template <class Storage>
__global__ void __launch_bounds__(kThreads) WeightGradKernel(const Tensors p, const float* partials) {
  const NsaShape& s = p.shape;
  const int64_t chunks = (s.blocks + kBlocksPerChunk - 1) / kBlocksPerChunk;
  const int64_t count = s.block_size * s.heads;
  for (int64_t index = cuda::GridStart(); index < count; index += cuda::GridStride()) {
    const int64_t n = index % s.heads;
    const int64_t j = index / s.heads;
    float sum = 0.0f;
    for (int64_t chunk = 0; chunk < chunks; ++chunk) sum += partials[(chunk * s.heads + n) * s.block_size + j];
    const TensorDesc& wg = p.weight_grad;
    cuda::Store<Storage>(wg, wg.offset + j * wg.strides[0] + n * wg.strides[1], sum);
  }
}

// The sequences' bytes, and the partials' (backward).
WorkspacePlan Plan(size_t sequence_count, int64_t partial_count) {
  WorkspacePlan plan;
  WorkspaceLayout layout;
  plan.device_sequences = layout.Reserve(SaturatingMul(sequence_count, sizeof(Sequence)));
  if (partial_count > 0) {
    plan.weight_grad_partials = layout.Reserve(SaturatingMul(static_cast<uint64_t>(partial_count), sizeof(float)));
  }
  plan.bytes = layout.TotalBytes();
  return plan;
}

// What a launch needs besides the tensors: the stream and the device copy of the sequences.
struct Call {
  cudaStream_t stream;
  const Sequence* sequences;
  int64_t sequence_count;
};

// Makes the GPU current, copies the sequences into the workspace (in stream order), and calls
// launch(Storage{}, call) with the storage type of the tensors' dtype; the status of the launches.
template <class Launcher>
aclnnStatus Launch(const char* op_name, const std::vector<Sequence>& sequences, const WorkspacePlan& plan,
                   const Tensors& tensors, const KernelContext& context, Launcher&& launch) {
  if (aclnnStatus status = cuda::Activate(op_name, context)) return status;
  Call call;
  call.stream = cuda::StreamOf(context);
  call.sequence_count = static_cast<int64_t>(sequences.size());
  Sequence* device_sequences = cuda::WorkspaceArray<Sequence>(context.workspace, plan.device_sequences);
  call.sequences = device_sequences;
  if (!sequences.empty() && cudaMemcpyAsync(device_sequences, sequences.data(), sequences.size() * sizeof(Sequence),
                                            cudaMemcpyHostToDevice, call.stream) != cudaSuccess) {
    return cuda::LaunchStatus(op_name, "copying the sequences");
  }
  return cuda::DispatchFloating</*kWithDouble=*/false>(op_name, tensors.input.dtype, [&](auto storage) {
    launch(storage, call);
    return cuda::LaunchStatus(op_name, "kernel launch");
  });
}

}  // namespace

uint64_t PlanForwardCuda(ForwardParams* params) {
  params->workspace = Plan(params->sequences.size(), 0);
  return params->workspace.bytes;
}

uint64_t PlanBackwardCuda(BackwardParams* params) {
  const NsaShape& s = params->shape;
  const int64_t chunks = (s.blocks + kBlocksPerChunk - 1) / kBlocksPerChunk;
  params->workspace = Plan(params->sequences.size(), chunks * s.heads * s.block_size);
  return params->workspace.bytes;
}

aclnnStatus RunForwardCuda(const ForwardParams& p, const KernelContext& context) {
  const int64_t count = p.shape.blocks * p.shape.heads * p.shape.dim;
  Tensors tensors;
  tensors.shape = p.shape;
  tensors.input = p.input;
  tensors.weight = p.weight;
  tensors.output = p.output;
  return Launch(kForwardName, p.sequences, p.workspace, tensors, context, [&](auto storage, const Call& call) {
    using Storage = decltype(storage);
    if (count > 0) {
      ForwardKernel<Storage><<<cuda::GridBlocks(count, kThreads), kThreads, 0, call.stream>>>(
          tensors, call.sequences, call.sequence_count);
    }
  });
}

aclnnStatus RunBackwardCuda(const BackwardParams& p, const KernelContext& context) {
  const NsaShape& s = p.shape;
  Tensors tensors;
  tensors.shape = p.shape;
  tensors.input = p.input;
  tensors.weight = p.weight;
  tensors.output_grad = p.output_grad;
  tensors.input_grad = p.input_grad;
  tensors.weight_grad = p.weight_grad;
  return Launch(kBackwardName, p.sequences, p.workspace, tensors, context, [&](auto storage, const Call& call) {
    using Storage = decltype(storage);
    const int64_t input_count = s.tokens * s.heads * s.dim;
    if (input_count > 0) {
      InputGradKernel<Storage><<<cuda::GridBlocks(input_count, kThreads), kThreads, 0, call.stream>>>(
          tensors, call.sequences, call.sequence_count);
    }
    const int64_t weight_count = s.block_size * s.heads;
    if (weight_count == 0) return;
    const int64_t chunks = (s.blocks + kBlocksPerChunk - 1) / kBlocksPerChunk;
    float* partials = chunks > 0 ? cuda::WorkspaceArray<float>(context.workspace, p.workspace.weight_grad_partials)
                                 : nullptr;
    if (chunks > 0) {
      WeightGradPartialsKernel<Storage><<<cuda::GridBlocks(chunks * weight_count, kThreads / 32), kThreads, 0,
                                          call.stream>>>(tensors, call.sequences, call.sequence_count, partials);
    }
    WeightGradKernel<Storage><<<cuda::GridBlocks(weight_count, kThreads), kThreads, 0, call.stream>>>(tensors,
                                                                                                    partials);
  });
}

}  // namespace pacl::nsa_compress
