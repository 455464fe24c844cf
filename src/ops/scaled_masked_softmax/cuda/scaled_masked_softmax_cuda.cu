// NOTE [Scaled masked softmax on CUDA]
//
// Problem and arithmetic: those of the CPU kernel (cpu/scaled_masked_softmax_cpu.cpp): rows of S2 <= 4096
// elements, fp32 arithmetic whatever the storage dtype, forward v = mask ? -10000 : x * scale, y = exp(v - max) /
// sum; backward out = mask ? 0 : (scale * y) * (dy - sum(dy * y)). A row holding an unmasked NaN (or +inf) is NaN
// everywhere, as on the CPU: the max ignores NaN, so the NaN reaches the sum of exponentials and with it every y
// (+inf through inf - inf). exp is pacl's (hd::CanonicalExp, the scalar twin of the CPU's vector Exp: the same
// bits per element, at most about 1 ulp; CUDA's expf allows 2).
//
// Layout: one row per group of kThreadsPerRow threads: a warp for S2 <= 1024, a block of 128 threads above. Thread t
// of a group holds elements t, t + kThreadsPerRow, ... in registers (at most 32), so a row is read from memory once
// and written once, and adjacent threads touch adjacent elements (coalesced when the row has unit stride). Every
// operand is addressed through its own element strides for (b, n, s1, s2) and offset (any view; the mask's strides
// are 0 along the dims it broadcasts).
//
// Determinism: a thread sums its own elements in index order (fused multiply-adds for dy * y), the warp combines
// the threads' sums by a butterfly, a 128-thread row adds its four warps' totals in warp order. No atomics, no
// dependence on timing: the same bits on every run. (They are not the CPU's bits: the CPU sums 16 interleaved
// partials; both are checked against the same float64 reference.) No workspace.
#include "pacl/cuda_kernels.cuh"
#include "pacl/host_device.h"
#include "scaled_masked_softmax/scaled_masked_softmax_params.h"

namespace pacl::scaled_masked_softmax {
namespace {

constexpr int kBlockThreads = 128;
// Elements per thread: kMaxRowLength over 128 threads, or S2 <= 1024 over a warp.
constexpr int kMaxPerThread = 32;
constexpr int64_t kWarpRowLimit = 1024;
static_assert(kMaxRowLength <= kMaxPerThread * kBlockThreads, "a row must fit the registers of one block");

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

__device__ __forceinline__ bool Masked(const SoftmaxOperand& mask, int64_t row_start, int64_t k) {
  return static_cast<const uint8_t*>(mask.desc.data)[row_start + k * mask.strides[3]] != 0;
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

template <class Storage, int kThreadsPerRow>
__global__ void __launch_bounds__(kBlockThreads) ForwardKernel(const ForwardParams p, int64_t rows) {
  static_assert(kThreadsPerRow == 32 || kThreadsPerRow == kBlockThreads, "a row is a warp or the whole block");
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
    const int64_t y_start = RowStart(p.y, r);
    float v[kMaxPerThread];
    float local_max = -INFINITY;
#pragma unroll
    for (int j = 0; j < kMaxPerThread; ++j) {
      const int64_t k = t + int64_t{j} * kThreadsPerRow;
      v[j] = -INFINITY;
      if (k < n) {
        v[j] = Masked(p.mask, mask_start, k)
                   ? kMaskedLogit
                   : cuda::Load<Storage>(p.x.desc, x_start + k * p.x.strides[3]) * p.scale;
        local_max = fmaxf(local_max, v[j]);
      }
    }
    const float row_max = RowReduce<kThreadsPerRow>(local_max, scratch, Max());
    float local_sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kMaxPerThread; ++j) {
      const int64_t k = t + int64_t{j} * kThreadsPerRow;
      if (k < n) {
        v[j] = hd::CanonicalExp(v[j] - row_max);
        local_sum += v[j];
      }
    }
    // The row max contributes exp(0) = 1, so the sum is >= 1 (or NaN).
    const float inverse_sum = 1.0f / RowReduce<kThreadsPerRow>(local_sum, scratch, cuda::Plus());
#pragma unroll
    for (int j = 0; j < kMaxPerThread; ++j) {
      const int64_t k = t + int64_t{j} * kThreadsPerRow;
      if (k < n) cuda::Store<Storage>(p.y.desc, y_start + k * p.y.strides[3], v[j] * inverse_sum);
    }
  }
}

template <class Storage, int kThreadsPerRow>
__global__ void __launch_bounds__(kBlockThreads) BackwardKernel(const BackwardParams p, int64_t rows) {
  static_assert(kThreadsPerRow == 32 || kThreadsPerRow == kBlockThreads, "a row is a warp or the whole block");
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
    float dy[kMaxPerThread];
    float y[kMaxPerThread];
    float local_sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kMaxPerThread; ++j) {
      const int64_t k = t + int64_t{j} * kThreadsPerRow;
      dy[j] = 0.0f;
      y[j] = 0.0f;
      if (k < n) {
        dy[j] = cuda::Load<Storage>(p.grad_output.desc, dy_start + k * p.grad_output.strides[3]);
        y[j] = cuda::Load<Storage>(p.y.desc, y_start + k * p.y.strides[3]);
        local_sum = fmaf(dy[j], y[j], local_sum);
      }
    }
    const float s = RowReduce<kThreadsPerRow>(local_sum, scratch, cuda::Plus());
#pragma unroll
    for (int j = 0; j < kMaxPerThread; ++j) {
      const int64_t k = t + int64_t{j} * kThreadsPerRow;
      if (k < n) {
        const float g = Masked(p.mask, mask_start, k) ? 0.0f : (p.scale * y[j]) * (dy[j] - s);
        cuda::Store<Storage>(p.out.desc, out_start + k * p.out.strides[3], g);
      }
    }
  }
}

template <class Params, template <class, int> class Launcher>
aclnnStatus Launch(const char* op_name, const Params& params, aclDataType dtype, const KernelContext& context) {
  if (aclnnStatus status = cuda::Activate(op_name, context)) return status;
  const int64_t rows = params.shape.batch * params.shape.heads * params.shape.query_len;
  if (rows == 0 || params.shape.key_len == 0) return ACLNN_SUCCESS;
  const bool warp_rows = params.shape.key_len <= kWarpRowLimit;
  return cuda::DispatchFloating</*kWithDouble=*/false>(op_name, dtype, [&](auto storage) -> aclnnStatus {
    using Storage = decltype(storage);
    const cudaStream_t stream = cuda::StreamOf(context);
    if (warp_rows) {
      Launcher<Storage, 32>::Run(params, rows, cuda::GridBlocks(rows, kBlockThreads / 32), stream);
    } else {
      Launcher<Storage, kBlockThreads>::Run(params, rows, cuda::GridBlocks(rows, 1), stream);
    }
    return cuda::LaunchStatus(op_name, "kernel launch");
  });
}

template <class Storage, int kThreadsPerRow>
struct ForwardLauncher {
  static void Run(const ForwardParams& p, int64_t rows, unsigned int blocks, cudaStream_t stream) {
    ForwardKernel<Storage, kThreadsPerRow><<<blocks, kBlockThreads, 0, stream>>>(p, rows);
  }
};
template <class Storage, int kThreadsPerRow>
struct BackwardLauncher {
  static void Run(const BackwardParams& p, int64_t rows, unsigned int blocks, cudaStream_t stream) {
    BackwardKernel<Storage, kThreadsPerRow><<<blocks, kBlockThreads, 0, stream>>>(p, rows);
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
