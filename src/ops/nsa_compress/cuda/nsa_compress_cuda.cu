// NOTE [NsaCompress on CUDA]
//
// Problem: that of the CPU kernels (see the NOTE in cpu/nsa_compress_cpu.cpp). Which sequence holds a token or a
// block, and which blocks cover a token, come from nsa_compress_blocks.h, the code the CPU runs. The sequences
// (from the host array actSeqLen, listed in phase 1) are copied into the workspace at the start of each run (up to
// 64 as a kernel argument, more by a copy from host memory). fp32 arithmetic, one rounding per output element.
//
// Two layouts of the threads, chosen by D alone. Row chunks (D / 8 a power of two <= 32, e.g. D = 64, 128, 256): a
// thread owns a chunk of 8 elements of a row, the G = D / 8 threads of a row are adjacent lanes of one warp; a chunk
// moves as one 16-byte access where every (T, N, D) operand has unit stride along D and 16-byte aligned rows (the
// common case), element by element through the strides otherwise, with the same arithmetic. Elements (any other D):
// a thread owns one element. Forward and inputGrad sum the same terms in the same order in both layouts:
// Forward: out[block, n, d] = sum over j ascending of weight[j, n] * input[start + j, n, d], from 0.
// Backward, inputGrad[t, n, d]: the sum over the blocks covering t, ascending, of weight[j, n] * outputGrad[block,
// n, d] (0 when no block covers t).
// Backward, weightGrad[j, n] = sum over blocks and d of outputGrad[block, n, d] * input[start + j, n, d].
//   Row chunks: the inputGrad kernel (a thread takes one chunk of 4 consecutive tokens, whose covering blocks'
//   outputGrad chunks it loads once while they are the same), which reads outputGrad[block, n, :] for each block
//   covering token t = start + j anyway, also reads input[t, n, :] and forms the row's dot product (each lane its
//   chunk's 8 products in order, then a butterfly over the row's G lanes) into dots[j][n][block] in the workspace:
//   written once each, by the token's row, so the input is read once in all. Then one thread block per (j, n)
//   adds dots[j][n][.] over the blocks in a fixed order (WeightGradFromDotsKernel). Workspace: blocks * blockSize *
//   N fp32.
//   Element layout: one warp per (chunk of kBlocksPerChunk blocks, n, j) sums its chunk (blocks ascending, lane
//   owning d = lane, lane + 32, ..., each lane in order, then a warp butterfly) into a partial; one thread per
//   (j, n) then adds the chunks' partials in ascending order. Workspace: chunks * blockSize * N fp32.
// Every order is fixed by the shape and actSeqLen: the same bits on every run, for every view of the same values.
#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "nsa_compress/nsa_compress_blocks.h"
#include "nsa_compress/cuda/nsa_compress_cuda.h"
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

// ---- Row chunks ----

constexpr int kChunk = 8;  // FLOAT16/BFLOAT16 elements in 16 bytes
// Covering blocks of a token whose outputGrad chunks the inputGrad kernel holds: 2, as many as NSA's usual
// blockSize = 2 * stride gives (more are loaded as they come).
constexpr int kHeld = 2;
// Consecutive tokens one thread of the inputGrad kernel takes (same head and chunk).
constexpr int kRunTokens = 4;
// Its blocks a multiprocessor holds at once: 3 (80 registers a thread; unbounded it takes some 90, which leaves 2).
constexpr int kInputGradBlocksPerMultiprocessor = 3;

// A chunk as loaded (8 elements of Storage in 16 bytes), converted where used: a thread holds several.
template <class Storage, bool kVector>
__device__ __forceinline__ uint4 LoadRawChunk(const TensorDesc& t, int64_t i0, int64_t n, int64_t d) {
  const Storage* data = static_cast<const Storage*>(t.data);
  if constexpr (kVector) {
    return *reinterpret_cast<const uint4*>(data + RowElement(t, i0, n, d));
  } else {
    uint4 raw;
    Storage* values = reinterpret_cast<Storage*>(&raw);
#pragma unroll
    for (int e = 0; e < kChunk; ++e) values[e] = data[RowElement(t, i0, n, d + e)];
    return raw;
  }
}
template <class Storage>
__device__ __forceinline__ float RawElement(const uint4& raw, int e) {
  return cuda::ToCompute(reinterpret_cast<const Storage*>(&raw)[e]);
}

// Elements [d, d + 8) of row (i0, n) as floats, and back (one rounding each). kVector: one 16-byte access (unit
// stride along D, aligned rows); otherwise element by element through the strides.
template <class Storage, bool kVector>
__device__ __forceinline__ void LoadRowChunk(const TensorDesc& t, int64_t i0, int64_t n, int64_t d, float* out) {
  const uint4 raw = LoadRawChunk<Storage, kVector>(t, i0, n, d);
#pragma unroll
  for (int e = 0; e < kChunk; ++e) out[e] = RawElement<Storage>(raw, e);
}
template <class Storage, bool kVector>
__device__ __forceinline__ void StoreRowChunk(const TensorDesc& t, int64_t i0, int64_t n, int64_t d, const float* in) {
  Storage* data = static_cast<Storage*>(t.data);
  if constexpr (kVector) {
    uint4 raw;
    Storage* values = reinterpret_cast<Storage*>(&raw);
#pragma unroll
    for (int e = 0; e < kChunk; ++e) values[e] = cuda::FromCompute<Storage>(in[e]);
    *reinterpret_cast<uint4*>(data + RowElement(t, i0, n, d)) = raw;
  } else {
#pragma unroll
    for (int e = 0; e < kChunk; ++e) data[RowElement(t, i0, n, d + e)] = cuda::FromCompute<Storage>(in[e]);
  }
}

// The sum of one value per lane over the aligned group of kGroup lanes holding a row (a butterfly: the same bits in
// every lane of the group). Every lane of the warp takes part.
template <int kGroup>
__device__ __forceinline__ float GroupSum(float v) {
#pragma unroll
  for (int offset = kGroup / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

struct LargerCount {
  __device__ int64_t operator()(int64_t a, int64_t b) const { return a > b ? a : b; }
};

// out[block, n, 8c .. 8c + 8): one thread per (block, n, c), c < dim / 8.
template <class Storage, bool kVector>
__global__ void __launch_bounds__(kThreads)
    ForwardRowsKernel(const Tensors p, const Sequence* sequences, int64_t sequence_count) {
  const NsaShape& s = p.shape;
  const int64_t group = s.dim / kChunk;
  const int64_t count = s.blocks * s.heads * group;
  for (int64_t index = cuda::GridStart(); index < count; index += cuda::GridStride()) {
    const int64_t d = (index % group) * kChunk;
    const int64_t n = (index / group) % s.heads;
    const int64_t block = index / (group * s.heads);
    const int64_t start = BlockStart(sequences, sequence_count, s.stride, block);
    float sum[kChunk] = {};
    if (start >= 0) {
#pragma unroll 4
      for (int64_t j = 0; j < s.block_size; ++j) {
        float x[kChunk];
        LoadRowChunk<Storage, kVector>(p.input, start + j, n, d, x);
        const float w = Weight(p.weight, j, n);
#pragma unroll
        for (int e = 0; e < kChunk; ++e) sum[e] = fmaf(w, x[e], sum[e]);
      }
    }
    StoreRowChunk<Storage, kVector>(p.output, block, n, d, sum);
  }
}

// inputGrad[t, n, 8c .. 8c + 8) and the dots of rows (t, n) with the outputGrad rows of the blocks covering t, for
// kRunTokens consecutive tokens t: one thread per (run, n, c), kGroup = dim / 8 lanes a row. A thread looks its
// first token's sequence up once, loads its tokens' input chunks together, and loads the covering blocks'
// outputGrad chunks once for as long as consecutive tokens share them (tokens of one stride window do); a thread
// per token, each with its own lookups, divisions and dependent loads, was issue- and latency-bound (30% of copy
// bandwidth on an H100). The loop runs over whole warps (the group sums need every lane); lanes past the end take
// part without touching memory. Each token's sums are those of the element kernel, term for term.
template <class Storage, int kGroup, bool kVector>
__global__ void __launch_bounds__(kThreads, kInputGradBlocksPerMultiprocessor)
    InputGradRowsKernel(const Tensors p, const Sequence* sequences, int64_t sequence_count, float* dots) {
  static_assert(kHeld == 2, "the held outputGrad chunks are picked by r == 0 / r == 1");
  const NsaShape& s = p.shape;
  const int64_t runs = (s.tokens + kRunTokens - 1) / kRunTokens;
  const int64_t count = runs * s.heads * kGroup;
  const int lane = threadIdx.x % 32;
  const int64_t warp_stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t base = cuda::GridStart() - lane; base < count; base += warp_stride) {
    const int64_t index = base + lane;
    const bool active = index < count;
    const int64_t d = (index % kGroup) * kChunk;
    const int64_t row = index / kGroup;  // (run, n)
    const int64_t n = row % s.heads;
    const int64_t t0 = (row / s.heads) * kRunTokens;
    uint4 x[kRunTokens] = {};
#pragma unroll
    for (int i = 0; i < kRunTokens; ++i) {
      if (active && t0 + i < s.tokens) x[i] = LoadRawChunk<Storage, kVector>(p.input, t0 + i, n, d);
    }
    // The sequence holding the token (sequences are in token order: a later token's is the same or a later one).
    int64_t q = active ? SequenceOfToken(sequences, sequence_count, t0) : sequence_count;
    uint4 g[kHeld] = {};
    int64_t held_first = -1;  // the global index of the first covering block whose outputGrad chunks g holds
    int64_t held_count = 0;
#pragma unroll
    for (int i = 0; i < kRunTokens; ++i) {
      const int64_t t = t0 + i;
      const bool in_range = active && t < s.tokens;
      while (in_range && q < sequence_count && sequences[q].end <= t) ++q;
      Sequence seq;
      CoveringBlocks covering;
      if (in_range && q < sequence_count) {
        seq = sequences[q];
        covering = BlocksCovering(t - seq.start, s.block_size, s.stride, seq.blocks);
      }
      const int64_t first = seq.first_block + covering.first;
      if (covering.count > 0 && (first != held_first || covering.count != held_count)) {
#pragma unroll
        for (int r = 0; r < kHeld; ++r) {
          if (r < covering.count) g[r] = LoadRawChunk<Storage, kVector>(p.output_grad, first + r, n, d);
        }
        held_first = first;
        held_count = covering.count;
      }
      // The covering counts of the warp's rows may differ: every lane runs the largest.
      const int64_t rounds = cuda::WarpReduce(covering.count, LargerCount());
      float sum[kChunk] = {};
      for (int64_t r = 0; r < rounds; ++r) {
        const bool covered = r < covering.count;
        const int64_t k = covering.first + r;
        const int64_t j = t - seq.start - k * s.stride;
        float dot = 0.0f;
        if (covered) {
          const uint4 row_g = r == 0   ? g[0]
                              : r == 1 ? g[1]
                                       : LoadRawChunk<Storage, kVector>(p.output_grad, seq.first_block + k, n, d);
          const float w = Weight(p.weight, j, n);
#pragma unroll
          for (int e = 0; e < kChunk; ++e) {
            const float ge = RawElement<Storage>(row_g, e);
            sum[e] = fmaf(w, ge, sum[e]);
            dot = fmaf(ge, RawElement<Storage>(x[i], e), dot);
          }
        }
        dot = GroupSum<kGroup>(dot);
        if (covered && d == 0) dots[(j * s.heads + n) * s.blocks + seq.first_block + k] = dot;
      }
      if (in_range) StoreRowChunk<Storage, kVector>(p.input_grad, t, n, d, sum);
    }
  }
}

// weightGrad[j, n] = the sum over blocks of dots[j][n][block]: one thread block per (j, n), thread i adding the
// blocks i, i + kThreads, ... in order (a few loads each, all in flight), then the warps' butterflies and the
// warps' totals in warp order.
template <class Storage>
__global__ void __launch_bounds__(kThreads) WeightGradFromDotsKernel(const Tensors p, const float* dots) {
  const NsaShape& s = p.shape;
  __shared__ float warp_sums[kThreads / 32];
  for (int64_t w = blockIdx.x; w < s.block_size * s.heads; w += gridDim.x) {
    const int64_t n = w % s.heads;
    const int64_t j = w / s.heads;
    const float* row = dots + w * s.blocks;  // dots[j][n][.]
    float sum = 0.0f;
#pragma unroll 4
    for (int64_t block = threadIdx.x; block < s.blocks; block += kThreads) sum += row[block];
    sum = cuda::WarpSum(sum);
    __syncthreads();  // the previous (j, n)'s reads of warp_sums are done
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
      float total = 0.0f;
      for (int k = 0; k < kThreads / 32; ++k) total += warp_sums[k];
      const TensorDesc& wg = p.weight_grad;
      cuda::Store<Storage>(wg, wg.offset + j * wg.strides[0] + n * wg.strides[1], total);
    }
  }
}

// ---- Element layout ----

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

// ---- Host side ----

// Whether a (T, N, D) view's rows can move as 16-byte chunks: unit stride along D and the first element of every
// row 16-byte aligned.
bool RowsInChunks(const TensorDesc& t) {
  const auto aligned = [](int64_t elements) { return elements % kChunk == 0; };
  return (t.strides[2] == 1 || t.shape[2] <= 1) && reinterpret_cast<uintptr_t>(t.data) % 16 == 0 &&
         aligned(t.offset) && (t.shape[0] <= 1 || aligned(t.strides[0])) && (t.shape[1] <= 1 || aligned(t.strides[1]));
}

// Lanes a row takes in the row-chunk layout (dim / 8, a power of two <= 32), or 0 where that layout does not apply.
// It depends on D alone, so every view of the same values gives the same bits.
int RowGroup(const NsaShape& s) {
  if (s.dim % kChunk != 0) return 0;
  const int64_t group = s.dim / kChunk;
  return group <= 32 && (group & (group - 1)) == 0 ? static_cast<int>(group) : 0;
}

// Whether every (T, N, D) operand's rows move as 16-byte accesses (else the row-chunk kernels address elements).
bool VectorRows(std::initializer_list<const TensorDesc*> rows) {
  for (const TensorDesc* t : rows) {
    if (!RowsInChunks(*t)) return false;
  }
  return true;
}

// Calls launch(std::bool_constant<kVector>{}).
template <class Launcher>
void WithVectorRows(bool vector, Launcher&& launch) {
  if (vector) return launch(std::true_type{});
  return launch(std::false_type{});
}

// Calls launch(std::integral_constant<int, G>{}) for the row group G (1, 2, 4, 8, 16 or 32).
template <class Launcher>
void WithRowGroup(int group, Launcher&& launch) {
  switch (group) {
    case 1:
      return launch(std::integral_constant<int, 1>{});
    case 2:
      return launch(std::integral_constant<int, 2>{});
    case 4:
      return launch(std::integral_constant<int, 4>{});
    case 8:
      return launch(std::integral_constant<int, 8>{});
    case 16:
      return launch(std::integral_constant<int, 16>{});
    default:
      return launch(std::integral_constant<int, 32>{});
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
  // (In stream order: a kernel argument for a few, else a copy; see cuda::CopyToDevice.)
  if (aclnnStatus status = cuda::CopyToDevice(op_name, "copying the sequences", sequences.data(), sequences.size(),
                                              device_sequences, call.stream)) {
    return status;
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
  // Row chunks: a dot per (block, j, n); elements: a partial per (chunk, n, j).
  const int64_t partials = RowGroup(s) > 0 ? s.blocks : chunks;
  params->workspace = Plan(params->sequences.size(), partials * s.heads * s.block_size);
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
    if (count == 0) return;
    if (RowGroup(p.shape) > 0) {
      WithVectorRows(VectorRows({&p.input, &p.output}), [&](auto vector) {
        ForwardRowsKernel<Storage, decltype(vector)::value>
            <<<cuda::GridBlocks(count / kChunk, kThreads), kThreads, 0, call.stream>>>(tensors, call.sequences,
                                                                                         call.sequence_count);
      });
    } else {
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
    const int64_t weight_count = s.block_size * s.heads;
    if (const int group = RowGroup(s)) {
      float* dots = s.blocks > 0 ? cuda::WorkspaceArray<float>(context.workspace, p.workspace.weight_grad_partials)
                                 : nullptr;
      if (input_count > 0) {
        const bool vector = VectorRows({&p.output_grad, &p.input, &p.input_grad});
        WithRowGroup(group, [&](auto group_constant) {
          WithVectorRows(vector, [&](auto vector_constant) {
            const int64_t runs = (s.tokens + kRunTokens - 1) / kRunTokens;
            InputGradRowsKernel<Storage, decltype(group_constant)::value, decltype(vector_constant)::value>
                <<<cuda::GridBlocks(runs * s.heads * group, kThreads), kThreads, 0, call.stream>>>(
                    tensors, call.sequences, call.sequence_count, dots);
          });
        });
      }
      if (weight_count > 0) {
        WeightGradFromDotsKernel<Storage><<<cuda::GridBlocks(weight_count, 1), kThreads, 0, call.stream>>>(tensors,
                                                                                                        dots);
      }
      return;
    }
    if (input_count > 0) {
      InputGradKernel<Storage><<<cuda::GridBlocks(input_count, kThreads), kThreads, 0, call.stream>>>(
          tensors, call.sequences, call.sequence_count);
    }
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
