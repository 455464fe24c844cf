// The deterministic scatter-to-gather of the CUDA backward kernels (grid sampler inputGrad, MSDA gradValue): the
// contributions are listed as (key = the element they add to, id = their position in a fixed order) pairs, sorted
// by key with CUB's stable radix sort (ids stay ascending within a key), and each element then sums its segment of
// the sorted pairs in that order. Only .cu files include it.
#ifndef PACL_CUDA_SORT_CUH_
#define PACL_CUDA_SORT_CUH_

#include <cub/device/device_radix_sort.cuh>

#include <cstdint>

#include "pacl/cuda_kernels.cuh"
#include "pacl/error.h"

namespace pacl::cuda {

// Sorts the pairs (*keys, *ids) (count of them, keys at most max_key) by key, stably, in stream order; CUB's scratch
// comes from the device's stream-ordered pool on the stream. ACLNN_SUCCESS (the sorted pairs are then
// keys->Current(), ids->Current()), or 361001 with "<op_name>: sorting <what> ...: <CUDA error>".
template <class Key, class Id>
aclnnStatus StableSortPairs(const char* op_name, const char* what, cub::DoubleBuffer<Key>* keys,
                            cub::DoubleBuffer<Id>* ids, int64_t count, uint64_t max_key, cudaStream_t stream) {
  int end_bit = 1;  // only the bits a key can have set
  while (end_bit < 64 && (uint64_t{1} << end_bit) <= max_key) ++end_bit;
  size_t scratch_bytes = 0;
  cudaError_t error = cub::DeviceRadixSort::SortPairs(nullptr, scratch_bytes, *keys, *ids, count, 0, end_bit, stream);
  void* scratch = nullptr;
  if (error == cudaSuccess) error = cudaMallocAsync(&scratch, scratch_bytes > 0 ? scratch_bytes : 1, stream);
  if (error == cudaSuccess) {
    error = cub::DeviceRadixSort::SortPairs(scratch, scratch_bytes, *keys, *ids, count, 0, end_bit, stream);
    const cudaError_t freed = cudaFreeAsync(scratch, stream);
    if (error == cudaSuccess) error = freed;
  }
  if (error == cudaSuccess) return ACLNN_SUCCESS;
  cudaGetLastError();  // reported here, not left for the next call to find
  SetRecentErrorMessage(StrFormat("%s: sorting %s (CUB radix sort, %zu bytes of scratch): %s: %s", op_name, what,
                                  scratch_bytes, cudaGetErrorName(error), cudaGetErrorString(error)));
  return ACLNN_ERR_RUNTIME_ERROR;
}

// starts[k] = the first position of sorted_keys (entries of them) whose key is >= k, for k in [0, key_count]: key k's
// segment is [starts[k], starts[k + 1]).
template <class Offset>
__global__ void SegmentStartsKernel(const uint64_t* sorted_keys, int64_t entries, int64_t key_count, Offset* starts) {
  for (int64_t key = GridStart(); key <= key_count; key += GridStride()) {
    int64_t low = 0;
    int64_t high = entries;
    while (low < high) {
      const int64_t mid = low + (high - low) / 2;
      if (sorted_keys[mid] < static_cast<uint64_t>(key)) {
        low = mid + 1;
      } else {
        high = mid;
      }
    }
    starts[key] = static_cast<Offset>(low);
  }
}

}  // namespace pacl::cuda

#endif  // PACL_CUDA_SORT_CUH_
