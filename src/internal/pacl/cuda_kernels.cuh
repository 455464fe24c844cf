// What the CUDA kernels of the operators (src/ops/*/cuda/*.cu, compiled by nvcc into libopapi) share: the storage
// types of the dtypes and their conversions to the compute type, element addressing of the caller's views, the
// deterministic reductions, the dtype dispatch, and the launch glue (the call's GPU made current, launch errors as
// ACLNN statuses with CUDA's text). Only .cu files include it.
//
// Determinism: every reduction here combines its terms in an order fixed by the problem's shape alone (a thread's
// own terms in index order, then a butterfly across the warp, then the warps' totals in warp order), never by
// timing, and the default (deterministic) implementations use no floating-point atomics: a call gives the same bits
// on every run. Only the "cuda-atomic" backward implementations (the grid sampler's and MSDA's, chosen only when an
// application turns ACL_OPT_DETERMINISTIC off) add with float atomics, and their results vary from run to run.
#ifndef PACL_CUDA_KERNELS_CUH_
#define PACL_CUDA_KERNELS_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "pacl/op_glue.h"
#include "pacl/tensor.h"
#include "pacl/workspace_plan.h"

namespace pacl::cuda {

// ---- Storage and compute types ----

// FLOAT, FLOAT16 and BFLOAT16 compute in float, DOUBLE in double.
template <class Storage>
struct ComputeTypeOf {
  using type = float;
};
template <>
struct ComputeTypeOf<double> {
  using type = double;
};
template <class Storage>
using ComputeType = typename ComputeTypeOf<Storage>::type;

__device__ __forceinline__ float ToCompute(float v) { return v; }
__device__ __forceinline__ double ToCompute(double v) { return v; }
__device__ __forceinline__ float ToCompute(__half v) { return __half2float(v); }
__device__ __forceinline__ float ToCompute(__nv_bfloat16 v) { return __bfloat162float(v); }

// The value rounded once, to nearest even, into the storage type.
template <class Storage>
__device__ __forceinline__ Storage FromCompute(ComputeType<Storage> v);
template <>
__device__ __forceinline__ float FromCompute<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ double FromCompute<double>(double v) {
  return v;
}
template <>
__device__ __forceinline__ __half FromCompute<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 FromCompute<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// Element `element` (an element index counted from the view's data pointer: offset and strides applied) of a view
// whose storage type is Storage.
template <class Storage>
__device__ __forceinline__ ComputeType<Storage> Load(const TensorDesc& desc, int64_t element) {
  return ToCompute(static_cast<const Storage*>(desc.data)[element]);
}
template <class Storage>
__device__ __forceinline__ void Store(const TensorDesc& desc, int64_t element, ComputeType<Storage> v) {
  static_cast<Storage*>(desc.data)[element] = FromCompute<Storage>(v);
}

// ---- Deterministic reductions ----

// The combination of one value per lane over the 32 lanes of a warp, the same bits in every lane: a butterfly,
// where each step combines the two halves' partial results (combine(a, b) in one lane, combine(b, a) in its
// partner: equal for an operation that commutes, as + and max do).
template <class T, class Combine>
__device__ __forceinline__ T WarpReduce(T v, Combine combine) {
  for (int offset = 16; offset > 0; offset /= 2) v = combine(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
struct Plus {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
template <class T>
__device__ __forceinline__ T WarpSum(T v) {
  return WarpReduce(v, Plus());
}

// The grid-stride loop of a one-dimensional launch: for (i = GridStart(); i < count; i += GridStride()).
__device__ __forceinline__ int64_t GridStart() { return int64_t{blockIdx.x} * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t GridStride() { return int64_t{gridDim.x} * blockDim.x; }

// Array `offset` (a byte offset of a pacl::WorkspaceLayout plan) of a workspace.
template <class T>
T* WorkspaceArray(void* workspace, int64_t offset) {
  return reinterpret_cast<T*>(AlignedWorkspace(workspace) + offset);
}

// ---- Launch glue ----

inline cudaStream_t StreamOf(const KernelContext& context) {
  return static_cast<cudaStream_t>(context.native_stream);
}

// Blocks of a one-dimensional launch over `items` items of `per_block` each, capped so that the count fits CUDA's
// grid limit; kernels cover the rest with a grid-stride loop.
inline unsigned int GridBlocks(int64_t items, int64_t per_block) {
  constexpr int64_t kMaxBlocks = int64_t{1} << 30;
  int64_t blocks = (items + per_block - 1) / per_block;
  if (blocks < 1) blocks = 1;
  return static_cast<unsigned int>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// ---- Small host arrays ----

// Up to kInlineItems items of a small host array (an operator's sequence list) reach the GPU as a kernel argument,
// which a one-block kernel stores into the workspace: a cudaMemcpyAsync from pageable host memory first waits for
// the stream's earlier work, which would leave the GPU idle between calls queued back to back. Longer arrays go by
// that copy.
inline constexpr int kInlineBytes = 2048;
template <class T>
struct InlineArray {
  static constexpr int kItems = kInlineBytes / static_cast<int>(sizeof(T));
  T items[kItems];
};

template <class T>
__global__ void StoreInlineArrayKernel(const InlineArray<T> array, int64_t count, T* out) {
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) out[i] = array.items[i];
}

// Copies host[0, count) to device (workspace memory) in stream order. ACLNN_SUCCESS, or 361001 with
// "<op_name>: copying <what>: <CUDA error>".
template <class T>
aclnnStatus CopyToDevice(const char* op_name, const char* what, const T* host, size_t count, T* device,
                         cudaStream_t stream);

// The calling thread's current CUDA (driver) context, nullptr when it has none, for a phase-1 query that must run on
// another device: putting the thread back with cudaSetDevice would create the primary context of the device it
// restores, so a thread that had none (its current device reads as 0 then) would gain one on GPU 0, as every process
// of a one-GPU-each job would. SaveCurrentContext is false when the driver's functions cannot be found.
bool SaveCurrentContext(void** context);
void RestoreCurrentContext(void* context);

// Makes the call's GPU current on the calling thread (the stream's worker). ACLNN_SUCCESS, or 361001 with CUDA's
// error in the message "<op_name>: cudaSetDevice(<id>): <name>: <text>".
aclnnStatus Activate(const char* op_name, const KernelContext& context);
// After the launches of one call: ACLNN_SUCCESS, or 361001 with "<op_name>: <what>: <CUDA error name>: <text>".
aclnnStatus LaunchStatus(const char* op_name, const char* what);

// 161002 "<op_name>: no CUDA kernel for <dtype>".
aclnnStatus UnsupportedDType(const char* op_name, aclDataType dtype);

// Calls fn(Storage{}) with the storage type of a floating dtype: FLOAT, FLOAT16, BFLOAT16, and DOUBLE when
// kWithDouble; 161002 for any other (phase 1 has refused those already).
template <bool kWithDouble, class Fn>
aclnnStatus DispatchFloating(const char* op_name, aclDataType dtype, Fn&& fn) {
  if (dtype == ACL_DOUBLE && !kWithDouble) return UnsupportedDType(op_name, dtype);
  switch (dtype) {
    case ACL_FLOAT:
      return fn(float{});
    case ACL_FLOAT16:
      return fn(__half{});
    case ACL_BF16:
      return fn(__nv_bfloat16{});
    case ACL_DOUBLE:
      if constexpr (kWithDouble) return fn(double{});
      return UnsupportedDType(op_name, dtype);
    default:
      return UnsupportedDType(op_name, dtype);
  }
}

template <class T>
aclnnStatus CopyToDevice(const char* op_name, const char* what, const T* host, size_t count, T* device,
                         cudaStream_t stream) {
  if (count == 0) return ACLNN_SUCCESS;
  if (count <= static_cast<size_t>(InlineArray<T>::kItems)) {
    InlineArray<T> array;
    for (size_t i = 0; i < count; ++i) array.items[i] = host[i];
    StoreInlineArrayKernel<T><<<1, 64, 0, stream>>>(array, static_cast<int64_t>(count), device);
    return LaunchStatus(op_name, what);
  }
  if (cudaMemcpyAsync(device, host, count * sizeof(T), cudaMemcpyHostToDevice, stream) != cudaSuccess) {
    return LaunchStatus(op_name, what);
  }
  return ACLNN_SUCCESS;
}

}  // namespace pacl::cuda

#endif  // PACL_CUDA_KERNELS_CUH_
