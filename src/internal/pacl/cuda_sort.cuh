// The deterministic scatter-to-gather of the CUDA backward kernels (grid sampler inputGrad, MSDA gradValue): the
// contributions are listed as (key = the element they add to, id = their position in a fixed order) pairs, sorted
// by key with CUB's stable radix sort (ids stay ascending within a key), and each element then sums its segment of
// the sorted pairs in that order. CUB's scratch is part of the operator's workspace, sized in phase 1, so phase 2
// allocates nothing and cannot run out of memory after phase 1 succeeded. Only .cu files include it.
#ifndef PACL_CUDA_SORT_CUH_
#define PACL_CUDA_SORT_CUH_

#include <cstdint>
#include <cub/device/device_radix_sort.cuh>

#include "pacl/cuda_kernels.cuh"
#include "pacl/error.h"
#include "pacl/op_glue.h"

namespace pacl::cuda {

// The low key bits a sort of keys at most max_key looks at.
inline int SortEndBit(uint64_t max_key) {
  int end_bit = 1;
  while (end_bit < 64 && (uint64_t{1} << end_bit) <= max_key) ++end_bit;
  return end_bit;
}

// Phase 1: the bytes of scratch CUB's radix sort needs to sort up to `count` (Key, Id) pairs whose keys are at most
// max_key on the device phase 1 binds to (a host-side query of its architecture: nothing is allocated or enqueued;
// when the calling thread's current device is another, its own context, or none, is put back exactly). The plan
// reserves them as its last workspace array. At least 1; 0 when the query failed, which the sort in phase 2 then
// reports.
template <class Key, class Id>
uint64_t SortScratchBytes(int64_t count, uint64_t max_key) {
  const int device = static_cast<int>(CurrentBindingTarget().device.id);
  int previous = device;
  void* saved_context = nullptr;
  if (cudaGetDevice(&previous) != cudaSuccess ||
      (previous != device && (!SaveCurrentContext(&saved_context) || cudaSetDevice(device) != cudaSuccess))) {
    cudaGetLastError();
    return 0;
  }
  size_t bytes = 0;
  cub::DoubleBuffer<Key> keys;  // empty buffers: a size query reads no data
  cub::DoubleBuffer<Id> ids;
  const cudaError_t error = cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, ids, count, 0, SortEndBit(max_key));
  if (previous != device) RestoreCurrentContext(saved_context);
  if (error != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return bytes > 0 ? bytes : 1;
}

// Phase 2: CUB's scratch, the plan's last array at `offset`: everything from there to the end of the workspace phase
// 1 asked for (at least what SortScratchBytes said then). The sort can never write past the caller's workspace: CUB
// fails with cudaErrorInvalidValue when it is given fewer bytes than it needs.
struct SortScratch {
  void* data = nullptr;
  uint64_t bytes = 0;
};
inline SortScratch SortScratchInWorkspace(const KernelContext& context, int64_t offset) {
  if (context.workspace == nullptr || offset < 0) return {};
  char* begin = WorkspaceArray<char>(context.workspace, offset);
  char* end = static_cast<char*>(context.workspace) + context.workspace_size;
  return {begin, end > begin ? static_cast<uint64_t>(end - begin) : 0};
}

// Sorts the pairs (*keys, *ids) (count of them, keys at most max_key) by key, stably, in stream order, in `scratch`;
// nothing is allocated. ACLNN_SUCCESS (the sorted pairs are then keys->Current(), ids->Current()), or 361001 with
// "<op_name>: sorting <what> (CUB radix sort, <n> bytes of scratch in the workspace): <CUDA error>".
template <class Key, class Id>
aclnnStatus StableSortPairs(const char* op_name, const char* what, cub::DoubleBuffer<Key>* keys,
                            cub::DoubleBuffer<Id>* ids, int64_t count, uint64_t max_key, SortScratch scratch,
                            cudaStream_t stream) {
  size_t scratch_bytes = scratch.bytes;
  // No scratch: phase 1's size query failed (SortScratchBytes); a null pointer would make CUB's call a size query.
  cudaError_t error = cudaErrorInvalidValue;
  if (scratch.data != nullptr && scratch_bytes > 0) {
    error = cub::DeviceRadixSort::SortPairs(scratch.data, scratch_bytes, *keys, *ids, count, 0, SortEndBit(max_key),
                                            stream);
  }
  if (error == cudaSuccess) return ACLNN_SUCCESS;
  cudaGetLastError();  // reported here, not left for the next call to find
  SetRecentErrorMessage(StrFormat("%s: sorting %s (CUB radix sort, %llu bytes of scratch in the workspace): %s: %s",
                                  op_name, what, static_cast<unsigned long long>(scratch.bytes),
                                  cudaGetErrorName(error), cudaGetErrorString(error)));
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
