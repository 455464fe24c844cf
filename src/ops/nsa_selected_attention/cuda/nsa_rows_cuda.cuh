// Row access shared by the NSA attention kernels on CUDA (NsaSelectedAttention, NsaCompressAttention): 3-D views as
// plain kernel arguments, elements widened to fp32 and rounded back once, the softmax statistics' 8 lanes. Only .cu
// files include it.
#ifndef PACL_OPS_NSA_SELECTED_ATTENTION_CUDA_NSA_ROWS_CUDA_CUH_
#define PACL_OPS_NSA_SELECTED_ATTENTION_CUDA_NSA_ROWS_CUDA_CUH_

#include <math_constants.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "pacl/cuda_kernels.cuh"
#include "pacl/tensor.h"

namespace pacl::nsa_rows_cuda {

// The last dim of softmaxMax / softmaxSum (CANN's layout repeats each row's value 8 times).
inline constexpr int kStatisticLanes = 8;

// A view of up to 3 dims as the kernels address it: element (i0, i1, i2) at data + offset + i0 * s0 + i1 * s1 + i2 *
// s2 elements (TensorDesc, with its std::string helpers and 8 dims, is too heavy for a kernel argument).
struct View {
  void* data = nullptr;
  int64_t offset = 0;
  int64_t stride[3] = {};
};

inline View ViewOf(const TensorDesc& t) {
  View v;
  v.data = t.data;
  v.offset = t.offset;
  for (int i = 0; i < 3 && i < t.rank; ++i) v.stride[i] = t.strides[i];
  return v;
}

__device__ __forceinline__ int64_t ElementOf(const View& v, int64_t i0, int64_t i1, int64_t i2) {
  return v.offset + i0 * v.stride[0] + i1 * v.stride[1] + i2 * v.stride[2];
}
template <class Storage>
__device__ __forceinline__ float LoadElement(const View& v, int64_t i0, int64_t i1, int64_t i2) {
  return cuda::ToCompute(static_cast<const Storage*>(v.data)[ElementOf(v, i0, i1, i2)]);
}
template <class Storage>
__device__ __forceinline__ void StoreElement(const View& v, int64_t i0, int64_t i1, int64_t i2, float value) {
  static_cast<Storage*>(v.data)[ElementOf(v, i0, i1, i2)] = cuda::FromCompute<Storage>(value);
}

// Lane 0 of a FLOAT statistic (token, head, 8 lanes), and a value into all 8.
__device__ __forceinline__ float Statistic(const View& v, int64_t t, int64_t n) {
  return static_cast<const float*>(v.data)[ElementOf(v, t, n, 0)];
}
__device__ __forceinline__ void StoreStatistic(const View& v, int64_t t, int64_t n, float value) {
  for (int lane = 0; lane < kStatisticLanes; ++lane) static_cast<float*>(v.data)[ElementOf(v, t, n, lane)] = value;
}

// Element (row, column) of a 2-D BOOL / UINT8 mask: nonzero = masked.
__device__ __forceinline__ bool Masked(const View& mask, int64_t row, int64_t column) {
  return static_cast<const uint8_t*>(mask.data)[ElementOf(mask, row, column, 0)] != 0;
}

// ---- Launch glue ----

// Calls launch(Storage{}) with the storage type of FLOAT16 or BFLOAT16 (the NSA operators' dtypes: phase 1 refuses
// the rest, 161002 here for any other); the status of its launches.
template <class Launcher>
aclnnStatus DispatchHalfWidth(const char* op_name, aclDataType dtype, Launcher&& launch) {
  return cuda::DispatchFloating</*kWithDouble=*/false>(op_name, dtype, [&](auto storage) {
    using Storage = decltype(storage);
    if constexpr (std::is_same_v<Storage, float>) {
      return cuda::UnsupportedDType(op_name, dtype);
    } else {
      launch(storage);
      return cuda::LaunchStatus(op_name, "kernel launch");
    }
  });
}

// Lets `kernel` use `bytes` of dynamic shared memory (above 48 KiB it must ask); a failure shows at its launch.
template <class Kernel>
void AllowSharedMemory(Kernel kernel, size_t bytes) {
  constexpr size_t kDefaultLimit = 48 * 1024;
  if (bytes > kDefaultLimit) {
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  }
}

// ---- The softmax rows of a thread block's query heads (lane k of warp w holds key k of rows g = w, w + warps, ...) ----

inline constexpr int kLanes = 32;

// A lane's running maximum of its scores: a NaN score makes it NaN for good (no number compares greater than NaN).
__device__ __forceinline__ void UpdateMax(float* max, float score) {
  if (isnan(score)) {
    *max = score;
  } else if (score > *max) {
    *max = score;
  }
}

// row_max[g] from the lanes' maxima lane_max[g][32] (NaN when any lane's is NaN), for g < group; warps of the block
// take rows g = warp, warp + warps, ...
__device__ __forceinline__ void ReduceRowMaxima(const float* lane_max, int group, int warps, float* row_max) {
  const int lane = threadIdx.x % kLanes;
  for (int g = threadIdx.x / kLanes; g < group; g += warps) {
    const float m = lane_max[g * kLanes + lane];
    const bool any_nan = __any_sync(0xffffffffu, isnan(m));
    const float max = cuda::WarpReduce(isnan(m) ? -CUDART_INF_F : m, [](float a, float b) { return fmaxf(a, b); });
    if (lane == 0) row_max[g] = any_nan ? CUDART_NAN_F : max;
  }
}

// row_sum[g] from the lanes' partial sums lane_sum[g][32] (a butterfly): 0 for a row without a key (maximum -inf),
// NaN for a NaN or +inf maximum, as the CPU's softmax rows give.
__device__ __forceinline__ void ReduceRowSums(const float* lane_sum, const float* row_max, int group, int warps,
                                              float* row_sum) {
  const int lane = threadIdx.x % kLanes;
  for (int g = threadIdx.x / kLanes; g < group; g += warps) {
    const float m = row_max[g];
    const float l = cuda::WarpSum(lane_sum[g * kLanes + lane]);
    if (lane == 0) row_sum[g] = m == -CUDART_INF_F ? 0.0f : (m < CUDART_INF_F ? l : CUDART_NAN_F);
  }
}

// A dimension known at compile time, usable where an int64_t dimension is (std::integral_constant's conversion is
// host-only).
template <int kValue>
struct Constant {
  __host__ __device__ constexpr operator int64_t() const { return kValue; }
};

// sums[g][d] += the sum over the tile's rows k < n, ascending, of weights[g][k] * rows[k * row_stride + d], for g <
// group and d < dim: one fused multiply-add chain per element, each element owned by one thread. (Dim and Stride:
// int64_t, or Constant<N>.)
template <class Dim, class Stride>
__device__ __forceinline__ void AccumulateTile(float* sums, const float* weights, const float* rows, int group, Dim dim,
                                               Stride row_stride, int n) {
  for (int64_t i = threadIdx.x; i < group * dim; i += blockDim.x) {
    const float* w = weights + (i / dim) * kLanes;
    const float* row = rows + i % dim;
    float sum = sums[i];
    for (int k = 0; k < n; ++k) sum = fmaf(w[k], row[k * row_stride], sum);
    sums[i] = sum;
  }
}

// The G rows (t, h * G + g, :) of out = sums / l (0 for a row without a key, NaN for a NaN or +inf maximum, as the
// CPU's FinishRow), and the rows' statistics in their 8 lanes.
template <class Storage>
__device__ __forceinline__ void WriteSoftmaxRows(const View& out, const View& max_out, const View& sum_out, int64_t t,
                                                 int64_t h, int group, int64_t dim_v, const float* sums,
                                                 const float* row_max, const float* row_sum) {
  for (int64_t i = threadIdx.x; i < group * dim_v; i += blockDim.x) {
    const int64_t g = i / dim_v;
    const float m = row_max[g];
    const float value = m == -CUDART_INF_F ? 0.0f : (m < CUDART_INF_F ? sums[i] / row_sum[g] : CUDART_NAN_F);
    StoreElement<Storage>(out, t, h * group + g, i % dim_v, value);
  }
  if (threadIdx.x < group) {
    StoreStatistic(max_out, t, h * group + threadIdx.x, row_max[threadIdx.x]);
    StoreStatistic(sum_out, t, h * group + threadIdx.x, row_sum[threadIdx.x]);
  }
}

}  // namespace pacl::nsa_rows_cuda

#endif  // PACL_OPS_NSA_SELECTED_ATTENTION_CUDA_NSA_ROWS_CUDA_CUH_
