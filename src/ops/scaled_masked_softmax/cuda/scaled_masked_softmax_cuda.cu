// NOTE [Scaled masked softmax on CUDA]
//
// Problem and arithmetic: those of the CPU kernel (cpu/scaled_masked_softmax_cpu.cpp): rows of S2 <= 4096
// elements, fp32 arithmetic whatever the storage dtype, forward v = mask ? -10000 : x * scale, y = exp(v - max) /
// sum; backward out = mask ? 0 : (scale * y) * (dy - sum(dy * y)). A row holding an unmasked NaN (or +inf) is NaN
// everywhere, as on the CPU: the max ignores NaN, so the NaN reaches the sum of exponentials and with it every y
// (+inf through inf - inf). exp is CUDA's expf (at most 2 ulp) in every dtype, so that a FLOAT16/BFLOAT16 output
// is the FLOAT output rounded once, as on the CPU; hd::CanonicalExp (the CPU's bits, about 1 ulp) took some twenty
// instructions an element and left the forward issue-bound.
//
// Layout: one row per group of kThreadsPerRow threads: a warp for S2 <= 1024, a block of 128 threads above. A row
// is cut into chunks of 16 bytes of storage (8 FLOAT16/BF16 or 4 FLOAT elements); thread t of a group holds chunks
// t, t + kThreadsPerRow, ... in registers (at most 32 elements, as few chunks as the row needs), so a row is read
// from memory once and written once and adjacent threads touch adjacent chunks. When every operand has unit stride
// along S2, 16-byte aligned rows and S2 a multiple of the chunk (the common case), a chunk moves as one 16-byte
// access (its mask bytes as one 8- or 4-byte access), several in flight per thread; otherwise every element is
// addressed through its operand's element strides for (b, n, s1, s2) and offset (any view; the mask's strides are
// 0 along the dims it broadcasts), with the same assignment of elements to threads, hence the same bits. The
// forward of vector rows longer than a warp's runs pipelined: a grid of resident blocks, each keeping its next rows'
// chunks on their way into shared memory (cp.async) while it computes one (see ForwardPipelinedKernel).
//
// Determinism: a thread sums its own elements in index order (fused multiply-adds for dy * y), the warp combines
// the threads' sums by a butterfly, a 128-thread row adds its four warps' totals in warp order. No atomics, no
// dependence on timing or on the memory layout: the same bits on every run and for every view of the same values.
// (They are not the CPU's bits: the CPU sums 16 interleaved partials; both are checked against the same float64
// reference.) No workspace.
#include <type_traits>

#include "pacl/cuda_kernels.cuh"
#include "scaled_masked_softmax/cuda/scaled_masked_softmax_cuda.h"
#include "scaled_masked_softmax/scaled_masked_softmax_params.h"

namespace pacl::scaled_masked_softmax {
namespace {

constexpr int kBlockThreads = 128;
// The strided (element by element) kernels get at most 64 registers a thread (8 blocks of 128 threads fill a
// multiprocessor's register file): unbounded, the compiler hoists every element's address and load and takes up to
// 240, leaving 2 blocks a multiprocessor.
constexpr int kStridedBlocksPerMultiprocessor = 8;
// Elements per thread: a row of S2 <= kWarpRowLimit over a warp (no block barriers), a longer one (up to
// kMaxRowLength) over 128 threads: a row of 2048 in one warp needs 64 elements and over 100 registers a thread,
// and ran a third slower than in 128 threads (docs/cuda_tuning.md).
constexpr int64_t kWarpRowLimit = 1024;
constexpr int kMaxPerThread = 32;
static_assert(kWarpRowLimit <= 32 * kMaxPerThread, "a warp row must fit one warp's registers");
static_assert(kMaxRowLength <= kBlockThreads * kMaxPerThread, "a row must fit one block's registers");

// Elements of a 16-byte chunk of Storage, and the most chunks a thread holds.
template <class Storage>
constexpr int kChunk = static_cast<int>(16 / sizeof(Storage));
template <class Storage>
constexpr int kChunksPerThread = kMaxPerThread / kChunk<Storage>;

struct RowIndex {
  int64_t b, n, q;
};

__device__ __forceinline__ RowIndex RowOf(const SoftmaxShape& shape, int64_t row) {
  RowIndex index;
  index.q = row % shape.query_len;
  const int64_t bn = row / shape.query_len;
  index.n = bn % shape.heads;
  index.b = bn / shape.heads;
  return index;
}

// Element index (from the view's data pointer) of element 0 of a row.
__device__ __forceinline__ int64_t RowStart(const SoftmaxOperand& operand, const RowIndex& r) {
  return operand.desc.offset + r.b * operand.strides[0] + r.n * operand.strides[1] + r.q * operand.strides[2];
}

// Chunk access. kVector: the chunk [k0, k0 + kChunk) is one aligned 16-byte access at row_start + k0 (unit stride);
// otherwise element by element through strides[3], elements past the row's end (k >= n) are neither read nor
// written (loads give 0).
template <class Storage, bool kVector>
__device__ __forceinline__ void LoadChunk(const SoftmaxOperand& operand, int64_t row_start, int64_t k0, int64_t n,
                                          float* out) {
  constexpr int V = kChunk<Storage>;
  const Storage* data = static_cast<const Storage*>(operand.desc.data);
  if constexpr (kVector) {
    const uint4 raw = *reinterpret_cast<const uint4*>(data + row_start + k0);
    const Storage* elements = reinterpret_cast<const Storage*>(&raw);
#pragma unroll
    for (int e = 0; e < V; ++e) out[e] = cuda::ToCompute(elements[e]);
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) {
      out[e] = k0 + e < n ? cuda::ToCompute(data[row_start + (k0 + e) * operand.strides[3]]) : 0.0f;
    }
  }
}

template <class Storage, bool kVector>
__device__ __forceinline__ void StoreChunk(const SoftmaxOperand& operand, int64_t row_start, int64_t k0, int64_t n,
                                           const float* values) {
  constexpr int V = kChunk<Storage>;
  Storage* data = static_cast<Storage*>(operand.desc.data);
  if constexpr (kVector) {
    uint4 raw;
    Storage* elements = reinterpret_cast<Storage*>(&raw);
#pragma unroll
    for (int e = 0; e < V; ++e) elements[e] = cuda::FromCompute<Storage>(values[e]);
    *reinterpret_cast<uint4*>(data + row_start + k0) = raw;
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) {
      if (k0 + e < n) data[row_start + (k0 + e) * operand.strides[3]] = cuda::FromCompute<Storage>(values[e]);
    }
  }
}

// The mask bytes of a chunk (up to 8): byte e of lo (e < 4) or of hi (e >= 4) nonzero when element k0 + e is
// masked. Testing a byte in place takes two instructions; gathering the bytes into a bit field took four more.
struct MaskChunk {
  unsigned lo = 0;
  unsigned hi = 0;
};
// Whether element e of the chunk is masked (e is a compile-time constant once the element loops are unrolled).
template <int V>
__device__ __forceinline__ bool IsMaskedAt(const MaskChunk& m, int e) {
  const unsigned word = e < 4 ? m.lo : m.hi;
  return (word & (0xFFu << (8 * (e & 3)))) != 0;
}

// kVector: one aligned access of kChunk bytes; otherwise byte by byte through strides[3] (nothing past the row's
// end).
template <int V, bool kVector>
__device__ __forceinline__ MaskChunk LoadMaskChunk(const SoftmaxOperand& mask, int64_t row_start, int64_t k0,
                                                   int64_t n) {
  const uint8_t* data = static_cast<const uint8_t*>(mask.desc.data);
  MaskChunk chunk;
  if constexpr (kVector && V == 8) {
    const uint2 word = *reinterpret_cast<const uint2*>(data + row_start + k0);
    chunk.lo = word.x;
    chunk.hi = word.y;
  } else if constexpr (kVector) {
    chunk.lo = *reinterpret_cast<const unsigned*>(data + row_start + k0);
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) {
      if (k0 + e < n && data[row_start + (k0 + e) * mask.strides[3]] != 0) {
        (e < 4 ? chunk.lo : chunk.hi) |= 1u << (8 * (e & 3));
      }
    }
  }
  return chunk;
}

struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// The sum or max (combine) of one value per thread over a row's group of kThreadsPerRow threads, the same bits in
// every thread of the group: the warp butterfly of cuda::WarpReduce, then for 128-thread rows the four warps'
// results in warp order. scratch: kBlockThreads / 32 floats of shared memory.
template <int kThreadsPerRow, class Combine>
__device__ __forceinline__ float RowReduce(float v, float* scratch, Combine combine) {
  v = cuda::WarpReduce(v, combine);
  if (kThreadsPerRow == 32) return v;
  __syncthreads();  // the previous reduction's reads of scratch are done
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  return combine(combine(scratch[0], scratch[1]), combine(scratch[2], scratch[3]));
}

// e^x of x <= 0 (or NaN) for the forward. FLOAT: CUDA's expf (at most 2 ulp; a few fused multiply-adds around the
// special-function unit's 2^x), where hd::CanonicalExp (the CPU's bits, about 1 ulp) took some twenty instructions.
// FLOAT16/BFLOAT16: the special-function unit's 2^x of x * log2(e) alone (ex2.approx, subnormal results kept: two
// instructions): its error, under 2^-21 relative for the x > -104 whose e^x a BFLOAT16 can hold, is far below half a
// unit of the stored result (2^-12, 2^-9). Either way an element's exponential depends on its value alone.
template <class Storage>
__device__ __forceinline__ float RowExp(float x) {
  if constexpr (std::is_same_v<Storage, float>) {
    return expf(x);
  } else {
    float y;
    asm("ex2.approx.f32 %0, %1;" : "=f"(y) : "f"(x * 1.4426950408889634f));
    return y;
  }
}

// The forward of one row held by a group of kThreadsPerRow threads, thread t holding chunks t, t + kThreadsPerRow,
// ... (v: the logits as loaded, masked: their mask bytes): v becomes the outputs. Elements past the row's end (k >=
// n) take no part; kWholeChunks (n a multiple of V) tests that once a chunk.
template <class Storage, int kThreadsPerRow, int kChunks, bool kWholeChunks>
__device__ __forceinline__ void SoftmaxRow(float* v, const MaskChunk* masked, int t, int64_t n, float scale,
                                           float* scratch) {
  constexpr int V = kChunk<Storage>;
  float local_max = -INFINITY;
#pragma unroll
  for (int j = 0; j < kChunks; ++j) {
    const int64_t k0 = (t + int64_t{j} * kThreadsPerRow) * V;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      float& value = v[j * V + e];
      if (kWholeChunks ? k0 < n : k0 + e < n) {
        value = IsMaskedAt<V>(masked[j], e) ? kMaskedLogit : value * scale;
        local_max = fmaxf(local_max, value);
      } else {
        value = -INFINITY;
      }
    }
  }
  const float row_max = RowReduce<kThreadsPerRow>(local_max, scratch, Max());
  float local_sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kChunks; ++j) {
    const int64_t k0 = (t + int64_t{j} * kThreadsPerRow) * V;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      if (kWholeChunks ? k0 < n : k0 + e < n) {
        v[j * V + e] = RowExp<Storage>(v[j * V + e] - row_max);
        local_sum += v[j * V + e];
      }
    }
  }
  // The row max contributes exp(0) = 1, so the sum is >= 1 (or NaN).
  const float inverse_sum = 1.0f / RowReduce<kThreadsPerRow>(local_sum, scratch, cuda::Plus());
#pragma unroll
  for (int j = 0; j < kChunks * V; ++j) v[j] *= inverse_sum;
}

template <class Storage, int kThreadsPerRow, bool kVector, int kChunks>
__global__ void __launch_bounds__(kBlockThreads, kVector ? 1 : kStridedBlocksPerMultiprocessor)
    ForwardKernel(const ForwardParams p, int64_t rows) {
  static_assert(kThreadsPerRow == 32 || kThreadsPerRow == kBlockThreads, "a row is a warp or the whole block");
  static_assert(kChunks <= kChunksPerThread<Storage>, "at most kMaxPerThread elements a thread");
  constexpr int V = kChunk<Storage>;
  __shared__ float scratch[kBlockThreads / 32];
  constexpr int kRowsPerBlock = kBlockThreads / kThreadsPerRow;
  const int t = threadIdx.x % kThreadsPerRow;
  const int64_t n = p.shape.key_len;
  // The loop condition is the same for all threads of a row group (a warp or the block).
  for (int64_t row = int64_t{blockIdx.x} * kRowsPerBlock + threadIdx.x / kThreadsPerRow; row < rows;
       row += int64_t{gridDim.x} * kRowsPerBlock) {
    const RowIndex r = RowOf(p.shape, row);
    const int64_t x_start = RowStart(p.x, r);
    const int64_t mask_start = RowStart(p.mask, r);
    float v[kChunks * V];
    MaskChunk masked[kChunks];
    // All loads first, so that they are in flight together.
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
      const int64_t k0 = (t + int64_t{j} * kThreadsPerRow) * V;
      if (k0 < n) {
        LoadChunk<Storage, kVector>(p.x, x_start, k0, n, v + j * V);
        masked[j] = LoadMaskChunk<V, kVector>(p.mask, mask_start, k0, n);
      }
    }
    SoftmaxRow<Storage, kThreadsPerRow, kChunks, kVector>(v, masked, t, n, p.scale, scratch);
    const int64_t y_start = RowStart(p.y, r);
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
      const int64_t k0 = (t + int64_t{j} * kThreadsPerRow) * V;
      if (k0 < n) StoreChunk<Storage, kVector>(p.y, y_start, k0, n, v + j * V);
    }
  }
}

// ---- The pipelined forward: long rows of 16-byte chunks ----
//
// A block of kBlockThreads threads works through rows blockIdx.x, blockIdx.x + gridDim.x, ... (a grid of as many
// blocks as the GPU holds at once) and keeps the next kStages - 1 rows' logits and mask bytes on their way into
// shared memory (cp.async) while it computes the current one: the register kernel has only the rows of its resident
// blocks in flight, and each of them only until its loads land, too few bytes to cover the memory latency (it ran
// at 66-69% of copy bandwidth on an H100). Each thread copies exactly the chunks it later reads (the register
// kernel's assignment), so no barrier guards the stages, and the arithmetic is SoftmaxRow's: the same bits.
constexpr int kStages = 3;

template <class Storage, int kChunks>
struct PipelineStage {
  uint4 x[kChunks][kBlockThreads];
  uint2 mask[kChunks][kBlockThreads];  // kChunk bytes used (the copies write 8 or 4)
};

__device__ __forceinline__ void CopyAsync16(void* shared, const void* global) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(address), "l"(global) : "memory");
}
template <int kBytes>
__device__ __forceinline__ void CopyAsyncSmall(void* shared, const void* global) {
  static_assert(kBytes == 4 || kBytes == 8, "cp.async.ca copies 4, 8 or 16 bytes");
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(address), "l"(global), "n"(kBytes) : "memory");
}
__device__ __forceinline__ void CommitCopies() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most kPending of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void WaitCopies() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}

// Starts the copies of row `row`'s chunks of this thread into `stage` (nothing past the last row), and commits
// them as one group (an empty one past the last row, so that the group count stays one per row).
template <class Storage, int kChunks>
__device__ __forceinline__ void IssueRow(const ForwardParams& p, int64_t row, int64_t rows,
                                         PipelineStage<Storage, kChunks>& stage) {
  constexpr int V = kChunk<Storage>;
  if (row < rows) {
    const RowIndex r = RowOf(p.shape, row);
    const Storage* x = static_cast<const Storage*>(p.x.desc.data) + RowStart(p.x, r);
    const uint8_t* mask = static_cast<const uint8_t*>(p.mask.desc.data) + RowStart(p.mask, r);
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
      const int64_t k0 = (threadIdx.x + int64_t{j} * kBlockThreads) * V;
      if (k0 < p.shape.key_len) {
        CopyAsync16(&stage.x[j][threadIdx.x], x + k0);
        CopyAsyncSmall<V>(&stage.mask[j][threadIdx.x], mask + k0);
      }
    }
  }
  CommitCopies();
}

template <class Storage, int kChunks>
__global__ void __launch_bounds__(kBlockThreads) ForwardPipelinedKernel(const ForwardParams p, int64_t rows) {
  constexpr int V = kChunk<Storage>;
  __shared__ PipelineStage<Storage, kChunks> stages[kStages];
  __shared__ float scratch[kBlockThreads / 32];
  const int t = threadIdx.x;
  const int64_t n = p.shape.key_len;
  const int64_t step = gridDim.x;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) IssueRow(p, blockIdx.x + s * step, rows, stages[s]);
  int stage = 0;
  for (int64_t row = blockIdx.x; row < rows; row += step) {
    IssueRow(p, row + (kStages - 1) * step, rows, stages[(stage + kStages - 1) % kStages]);
    WaitCopies<kStages - 1>();  // this row's group has landed
    float v[kChunks * V];
    MaskChunk masked[kChunks];
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
      const int64_t k0 = (t + int64_t{j} * kBlockThreads) * V;
      if (k0 < n) {
        const uint4 raw = stages[stage].x[j][t];
        const Storage* elements = reinterpret_cast<const Storage*>(&raw);
#pragma unroll
        for (int e = 0; e < V; ++e) v[j * V + e] = cuda::ToCompute(elements[e]);
        const uint2 word = stages[stage].mask[j][t];
        masked[j].lo = word.x;
        masked[j].hi = V == 8 ? word.y : 0u;
      }
    }
    SoftmaxRow<Storage, kBlockThreads, kChunks, true>(v, masked, t, n, p.scale, scratch);
    const int64_t y_start = RowStart(p.y, RowOf(p.shape, row));
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
      const int64_t k0 = (t + int64_t{j} * kBlockThreads) * V;
      if (k0 < n) StoreChunk<Storage, true>(p.y, y_start, k0, n, v + j * V);
    }
    stage = (stage + 1) % kStages;
  }
  WaitCopies<0>();  // no copy outlives the block
}

// Whether the pipelined forward's stages for kChunks chunks a thread fit the 48 KiB of static shared memory.
template <class Storage, int kChunks>
constexpr bool kPipelineFits = kStages * sizeof(PipelineStage<Storage, kChunks>) <= 40 * 1024;

template <class Storage, int kThreadsPerRow, bool kVector, int kChunks>
__global__ void __launch_bounds__(kBlockThreads, kVector ? 1 : kStridedBlocksPerMultiprocessor)
    BackwardKernel(const BackwardParams p, int64_t rows) {
  static_assert(kThreadsPerRow == 32 || kThreadsPerRow == kBlockThreads, "a row is a warp or the whole block");
  static_assert(kChunks <= kChunksPerThread<Storage>, "at most kMaxPerThread elements a thread");
  constexpr int V = kChunk<Storage>;
  __shared__ float scratch[kBlockThreads / 32];
  constexpr int kRowsPerBlock = kBlockThreads / kThreadsPerRow;
  const int t = threadIdx.x % kThreadsPerRow;
  const int64_t n = p.shape.key_len;
  for (int64_t row = int64_t{blockIdx.x} * kRowsPerBlock + threadIdx.x / kThreadsPerRow; row < rows;
       row += int64_t{gridDim.x} * kRowsPerBlock) {
    const RowIndex r = RowOf(p.shape, row);
    const int64_t dy_start = RowStart(p.grad_output, r);
    const int64_t y_start = RowStart(p.y, r);
    const int64_t mask_start = RowStart(p.mask, r);
    const int64_t out_start = RowStart(p.out, r);
    float dy[kChunks * V];
    float y[kChunks * V];
    MaskChunk masked[kChunks];
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
      const int64_t k0 = (t + int64_t{j} * kThreadsPerRow) * V;
#pragma unroll
      for (int e = 0; e < V; ++e) dy[j * V + e] = y[j * V + e] = 0.0f;
      if (k0 < n) {
        LoadChunk<Storage, kVector>(p.grad_output, dy_start, k0, n, dy + j * V);
        LoadChunk<Storage, kVector>(p.y, y_start, k0, n, y + j * V);
        masked[j] = LoadMaskChunk<V, kVector>(p.mask, mask_start, k0, n);
      }
    }
    float local_sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
      const int64_t k0 = (t + int64_t{j} * kThreadsPerRow) * V;
#pragma unroll
      for (int e = 0; e < V; ++e) {
        if (k0 + e < n) local_sum = fmaf(dy[j * V + e], y[j * V + e], local_sum);
      }
    }
    const float s = RowReduce<kThreadsPerRow>(local_sum, scratch, cuda::Plus());
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
      const int64_t k0 = (t + int64_t{j} * kThreadsPerRow) * V;
      if (k0 < n) {
        float g[V];
#pragma unroll
        for (int e = 0; e < V; ++e) {
          g[e] = IsMaskedAt<V>(masked[j], e) ? 0.0f : (p.scale * y[j * V + e]) * (dy[j * V + e] - s);
        }
        StoreChunk<Storage, kVector>(p.out, out_start, k0, n, g);
      }
    }
  }
}

// True when every chunk of the operand is one aligned access of chunk_elements elements: unit stride along S2, the
// data pointer plus offset aligned, and the strides of (b, n, s1) multiples of the chunk.
bool ChunksAligned(const SoftmaxOperand& operand, int64_t element_bytes, int64_t chunk_elements) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(operand.desc.data) +
                          static_cast<uintptr_t>(operand.desc.offset * element_bytes);
  if (operand.strides[3] != 1 || start % static_cast<uintptr_t>(chunk_elements * element_bytes) != 0) return false;
  for (int d = 0; d < 3; ++d) {
    if (operand.strides[d] % chunk_elements != 0) return false;
  }
  return true;
}

template <class Storage>
bool VectorRows(const ForwardParams& p) {
  constexpr int64_t V = kChunk<Storage>;
  return p.shape.key_len % V == 0 && ChunksAligned(p.x, sizeof(Storage), V) &&
         ChunksAligned(p.y, sizeof(Storage), V) && ChunksAligned(p.mask, 1, V);
}
template <class Storage>
bool VectorRows(const BackwardParams& p) {
  constexpr int64_t V = kChunk<Storage>;
  return p.shape.key_len % V == 0 && ChunksAligned(p.grad_output, sizeof(Storage), V) &&
         ChunksAligned(p.y, sizeof(Storage), V) && ChunksAligned(p.out, sizeof(Storage), V) &&
         ChunksAligned(p.mask, 1, V);
}

// Launches the kernel with kChunks chunks per thread: the fewest (a power of two) that hold a row, so that
// registers are not spent on chunks a short row never has. The assignment of elements to threads does not depend
// on kChunks, nor do the bits.
template <class Storage, int kThreadsPerRow, bool kVector, template <class, int, bool, int> class Launcher,
          class Params>
void LaunchWithChunks(const Params& params, int64_t rows, unsigned int blocks, cudaStream_t stream) {
  const int64_t row_chunks = (params.shape.key_len + kChunk<Storage> - 1) / kChunk<Storage>;
  const int64_t chunks = (row_chunks + kThreadsPerRow - 1) / kThreadsPerRow;
  constexpr int kMost = kChunksPerThread<Storage>;
  if (chunks <= 1) {
    Launcher<Storage, kThreadsPerRow, kVector, 1>::Run(params, rows, blocks, stream);
  } else if (chunks <= 2) {
    Launcher<Storage, kThreadsPerRow, kVector, 2>::Run(params, rows, blocks, stream);
  } else if (chunks <= 4) {
    Launcher<Storage, kThreadsPerRow, kVector, 4>::Run(params, rows, blocks, stream);
  } else if constexpr (kMost >= 8) {  // FLOAT: 4-element chunks; phase 1 keeps S2 <= kMaxRowLength
    Launcher<Storage, kThreadsPerRow, kVector, 8>::Run(params, rows, blocks, stream);
  }
}

template <class Params, template <class, int, bool, int> class Launcher>
aclnnStatus Launch(const char* op_name, const Params& params, aclDataType dtype, const KernelContext& context) {
  if (aclnnStatus status = cuda::Activate(op_name, context)) return status;
  const int64_t rows = params.shape.batch * params.shape.heads * params.shape.query_len;
  if (rows == 0 || params.shape.key_len == 0) return ACLNN_SUCCESS;
  const bool warp_rows = params.shape.key_len <= kWarpRowLimit;
  return cuda::DispatchFloating</*kWithDouble=*/false>(op_name, dtype, [&](auto storage) -> aclnnStatus {
    using Storage = decltype(storage);
    const cudaStream_t stream = cuda::StreamOf(context);
    const bool vector = VectorRows<Storage>(params);
    const unsigned int blocks = warp_rows ? cuda::GridBlocks(rows, kBlockThreads / 32) : cuda::GridBlocks(rows, 1);
    if (warp_rows && vector) {
      LaunchWithChunks<Storage, 32, true, Launcher>(params, rows, blocks, stream);
    } else if (warp_rows) {
      LaunchWithChunks<Storage, 32, false, Launcher>(params, rows, blocks, stream);
    } else if (vector) {
      LaunchWithChunks<Storage, kBlockThreads, true, Launcher>(params, rows, blocks, stream);
    } else {
      LaunchWithChunks<Storage, kBlockThreads, false, Launcher>(params, rows, blocks, stream);
    }
    return cuda::LaunchStatus(op_name, "kernel launch");
  });
}

// Blocks of `kernel` (kBlockThreads threads each) that the current GPU holds at once: the grid of a kernel that
// walks its rows with a block-stride loop. Blocks per multiprocessor depend on the kernel alone, so they are asked
// once.
template <class Kernel>
unsigned int ResidentBlocks(Kernel kernel) {
  static const int per_multiprocessor = [kernel] {
    int blocks = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kBlockThreads, 0) != cudaSuccess) blocks = 1;
    return blocks > 0 ? blocks : 1;
  }();
  int device = 0;
  int multiprocessors = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    multiprocessors = 1;
  }
  return static_cast<unsigned int>(per_multiprocessor * (multiprocessors > 0 ? multiprocessors : 1));
}

template <class Storage, int kThreadsPerRow, bool kVector, int kChunks>
struct ForwardLauncher {
  static void Run(const ForwardParams& p, int64_t rows, unsigned int blocks, cudaStream_t stream) {
    if constexpr (kThreadsPerRow == kBlockThreads && kVector && kPipelineFits<Storage, kChunks>) {
      const auto kernel = ForwardPipelinedKernel<Storage, kChunks>;
      const unsigned int resident = ResidentBlocks(kernel);
      kernel<<<rows < resident ? static_cast<unsigned int>(rows) : resident, kBlockThreads, 0, stream>>>(p, rows);
    } else {
      ForwardKernel<Storage, kThreadsPerRow, kVector, kChunks><<<blocks, kBlockThreads, 0, stream>>>(p, rows);
    }
  }
};
template <class Storage, int kThreadsPerRow, bool kVector, int kChunks>
struct BackwardLauncher {
  static void Run(const BackwardParams& p, int64_t rows, unsigned int blocks, cudaStream_t stream) {
    BackwardKernel<Storage, kThreadsPerRow, kVector, kChunks><<<blocks, kBlockThreads, 0, stream>>>(p, rows);
  }
};

}  // namespace

aclnnStatus RunForwardCuda(const ForwardParams& params, const KernelContext& context) {
  return Launch<ForwardParams, ForwardLauncher>(kForwardName, params, params.x.desc.dtype, context);
}

aclnnStatus RunBackwardCuda(const BackwardParams& params, const KernelContext& context) {
  return Launch<BackwardParams, BackwardLauncher>(kBackwardName, params, params.grad_output.desc.dtype, context);
}

}  // namespace pacl::scaled_masked_softmax
