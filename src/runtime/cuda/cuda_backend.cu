// The CUDA device (see the NOTE in backend.h), on the CUDA runtime linked statically: it opens the driver on the
// first call, so a machine without one merely has no CUDA device.
//
// NOTE: memory comes from each GPU's default stream-ordered pool (cudaMallocAsync), whose release threshold is
// raised so that freed memory stays cached in the pool, as the CPU's block cache keeps its blocks: a workspace
// allocated and freed around every operator call costs no cudaMalloc. Allocation and free are ordered on one
// internal stream per GPU; aclrtMalloc waits for its allocation, so the memory is usable on any stream at once.
// aclrtFree first waits for the fence (the work queued before the free; a task's device work is complete when the
// task is, see Stream), then frees in pool order without further waiting. aclrtMallocHost is pinned memory
// (cudaMallocHost). Copies use cudaMemcpyDefault (unified addressing tells the directions apart). Every CUDA error
// maps to an aclError, with CUDA's error name and text in the message.
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "../backend.h"
#include "pacl/error.h"

namespace pacl::rt {
namespace {

std::string ErrorText(cudaError_t error) {
  return StrFormat("%s: %s", cudaGetErrorName(error), cudaGetErrorString(error));
}

aclError ToAclError(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return ACL_SUCCESS;
    case cudaErrorMemoryAllocation:
      return ACL_ERROR_BAD_ALLOC;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidMemcpyDirection:
      return ACL_ERROR_INVALID_PARAM;
    case cudaErrorInvalidDevice:
      return ACL_ERROR_RT_INVALID_DEVICEID;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
      return ACL_ERROR_RT_NO_DEVICE;
    default:
      return ACL_ERROR_RT_INTERNAL_ERROR;
  }
}

// ACL_SUCCESS, or the mapped code with "<what>: <CUDA error name>: <text>" in *error.
aclError Check(cudaError_t status, const char* what, std::string* error) {
  if (status == cudaSuccess) return ACL_SUCCESS;
  if (error != nullptr) *error = StrFormat("%s: %s", what, ErrorText(status).c_str());
  return ToAclError(status);
}

class CudaDevice final : public Backend {
 public:

  aclError Malloc(int ordinal, size_t size, bool, void** ptr, std::string* error) override {
    cudaStream_t pool_stream = nullptr;
    if (aclError status = PoolStream(ordinal, &pool_stream, error)) return status;
    if (aclError status = Check(cudaMallocAsync(ptr, size, pool_stream), "cudaMallocAsync", error)) return status;
    return Check(cudaStreamSynchronize(pool_stream), "cudaStreamSynchronize (allocation)", error);
  }

  aclError Free(int ordinal, void* ptr, StreamFence fence, std::string* error) override {
    WaitForFence(fence);  // the device work queued before the free has finished once its tasks have
    cudaStream_t pool_stream = nullptr;
    if (aclError status = PoolStream(ordinal, &pool_stream, error)) return status;
    return Check(cudaFreeAsync(ptr, pool_stream), "cudaFreeAsync", error);
  }

  aclError MallocHost(size_t size, void** ptr, std::string* error) override {
    return Check(cudaMallocHost(ptr, size), "cudaMallocHost", error);
  }

  aclError FreeHost(void* ptr, std::string* error) override { return Check(cudaFreeHost(ptr), "cudaFreeHost", error); }

  // native_stream nullptr: a synchronous copy, finished on return. cudaMemcpy alone returns before a device-to-device
  // copy is done (and cudaMemset before a fill of device memory), and aclrtFree would then hand the memory back to
  // the pool under the running copy: both wait for the legacy default stream they ran on.
  aclError Copy(void* dst, const void* src, size_t count, void* native_stream, std::string* error) override {
    if (count == 0) return ACL_SUCCESS;
    if (native_stream == nullptr) {
      if (aclError status = Check(cudaMemcpy(dst, src, count, cudaMemcpyDefault), "cudaMemcpy", error)) return status;
      return Check(cudaStreamSynchronize(cudaStreamLegacy), "cudaMemcpy (waiting for it)", error);
    }
    return Check(cudaMemcpyAsync(dst, src, count, cudaMemcpyDefault, static_cast<cudaStream_t>(native_stream)),
                 "cudaMemcpyAsync", error);
  }

  // dst must be memory the GPU can write: device, managed or pinned host memory. Pageable host memory is refused
  // here, since a system with HMM accepts it in cudaMemset and then faults on the GPU, which poisons the context.
  aclError Fill(void* dst, int value, size_t count, void* native_stream, std::string* error) override {
    if (count == 0) return ACL_SUCCESS;
    cudaPointerAttributes attributes{};
    if (aclError status = Check(cudaPointerGetAttributes(&attributes, dst), "cudaPointerGetAttributes", error)) {
      return status;
    }
    if (attributes.type == cudaMemoryTypeUnregistered) {
      if (error != nullptr) *error = "devPtr is pageable host memory, which the GPU cannot write: use aclrtMalloc";
      return ACL_ERROR_INVALID_PARAM;
    }
    if (native_stream == nullptr) {
      if (aclError status = Check(cudaMemset(dst, value, count), "cudaMemset", error)) return status;
      return Check(cudaStreamSynchronize(cudaStreamLegacy), "cudaMemset (waiting for it)", error);
    }
    return Check(cudaMemsetAsync(dst, value, count, static_cast<cudaStream_t>(native_stream)), "cudaMemsetAsync",
                 error);
  }

  // The GPU's memory for every attribute but the peer-to-peer ones (no P2P memory is set aside: 0 and 0).
  aclError MemInfo(int ordinal, aclrtMemAttr attr, size_t* free, size_t* total, std::string* error) override {
    *free = 0;
    *total = 0;
    if (static_cast<int>(attr) >= ACL_DDR_MEM_P2P_HUGE) return ACL_SUCCESS;
    if (aclError status = Activate(ordinal, error)) return status;
    return Check(cudaMemGetInfo(free, total), "cudaMemGetInfo", error);
  }

  void ReleaseCachedMemory(int ordinal) override {
    cudaStream_t pool_stream = nullptr;
    if (PoolStream(ordinal, &pool_stream, nullptr) != ACL_SUCCESS) return;
    cudaMemPool_t pool = nullptr;
    if (cudaStreamSynchronize(pool_stream) != cudaSuccess) return;
    if (cudaDeviceGetDefaultMemPool(&pool, ordinal) != cudaSuccess) return;
    cudaMemPoolTrimTo(pool, 0);
  }

  aclError CreateNativeStream(int ordinal, void** native, std::string* error) override {
    if (aclError status = Activate(ordinal, error)) return status;
    cudaStream_t stream = nullptr;
    if (aclError status = Check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate", error)) {
      return status;
    }
    *native = stream;
    return ACL_SUCCESS;
  }

  aclError AdoptNativeStream(int ordinal, void* external, void** native, std::string* error) override {
    if (aclError status = Activate(ordinal, error)) return status;
    if (external == nullptr) {
      *native = cudaStreamLegacy;  // the null stream: a handle that is not null, for code that tests for "none"
      return ACL_SUCCESS;
    }
    const cudaStream_t stream = static_cast<cudaStream_t>(external);
    if (stream != cudaStreamLegacy && stream != cudaStreamPerThread) {
      int owner = -1;
      if (aclError status = Check(cudaStreamGetDevice(stream, &owner), "cudaStreamGetDevice", error)) return status;
      if (owner != ordinal) {
        *error = StrFormat("native stream %p belongs to CUDA device %d, not to CUDA device %d", external, owner,
                           ordinal);
        return ACL_ERROR_INVALID_PARAM;
      }
    }
    *native = external;
    return ACL_SUCCESS;
  }

  void DestroyNativeStream(int ordinal, void* native) override {
    if (Activate(ordinal, nullptr) == ACL_SUCCESS) cudaStreamDestroy(static_cast<cudaStream_t>(native));
  }

  aclError SynchronizeNativeStream(int, void* native, std::string* error) override {
    return Check(cudaStreamSynchronize(static_cast<cudaStream_t>(native)), "the stream's device work", error);
  }

  bool NativeStreamIdle(int, void* native) override {
    return cudaStreamQuery(static_cast<cudaStream_t>(native)) != cudaErrorNotReady;
  }

  aclError Activate(int ordinal, std::string* error) override {
    return Check(cudaSetDevice(ordinal), "cudaSetDevice", error);
  }

  bool IsDeviceOnlyMemory(const void* p, std::string* what) override {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    if (attributes.type != cudaMemoryTypeDevice) return false;
    *what = StrFormat("memory of CUDA device %d", attributes.device);
    return true;
  }

  bool CanAccess(int ordinal, const void* p, std::string* why) override {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
      cudaGetLastError();  // not sticky, but do not leave it for the next call to find
      *why = "not memory CUDA knows";
      return false;
    }
    switch (attributes.type) {
      case cudaMemoryTypeManaged:
        return true;
      case cudaMemoryTypeDevice:
        if (attributes.device == ordinal) return true;
        *why = StrFormat("memory of CUDA device %d", attributes.device);
        return false;
      case cudaMemoryTypeHost:
        *why = "pinned host memory (aclrtMallocHost): copy it to the device with aclrtMemcpy first";
        return false;
      default:
        *why = "host memory: allocate tensor data with aclrtMalloc and copy it there with aclrtMemcpy";
        return false;
    }
  }

 private:
  // The internal allocation stream of GPU ordinal, created (and its pool set to keep freed memory) on first use.
  aclError PoolStream(int ordinal, cudaStream_t* stream, std::string* error) {
    if (aclError status = Activate(ordinal, error)) return status;
    std::lock_guard<std::mutex> lock(mutex_);
    if (static_cast<size_t>(ordinal) >= pool_streams_.size()) pool_streams_.resize(static_cast<size_t>(ordinal) + 1);
    cudaStream_t& slot = pool_streams_[static_cast<size_t>(ordinal)];
    if (slot == nullptr) {
      cudaMemPool_t pool = nullptr;
      if (aclError status = Check(cudaDeviceGetDefaultMemPool(&pool, ordinal), "cudaDeviceGetDefaultMemPool", error)) {
        return status;
      }
      uint64_t keep_everything = UINT64_MAX;
      if (aclError status = Check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_everything),
                                  "cudaMemPoolSetAttribute", error)) {
        return status;
      }
      if (aclError status = Check(cudaStreamCreateWithFlags(&slot, cudaStreamNonBlocking), "cudaStreamCreate", error)) {
        slot = nullptr;
        return status;
      }
    }
    *stream = slot;
    return ACL_SUCCESS;
  }

  std::mutex mutex_;
  std::vector<cudaStream_t> pool_streams_;  // never destroyed: frees may come until process exit
};

Backend* CudaBackend() {
  static CudaDevice* const device = new CudaDevice;  // never destroyed: used until process exit
  return device;
}

int CudaDeviceCount(std::string* why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    if (why != nullptr) *why = StrFormat("cudaGetDeviceCount: %s", ErrorText(status).c_str());
    return 0;
  }
  if (count == 0 && why != nullptr) *why = "the CUDA driver reports no GPU";
  return count;
}

std::string CudaDeviceName(int ordinal) {
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, ordinal) != cudaSuccess) return StrFormat("CUDA device %d", ordinal);
  return StrFormat("CUDA device %d: %s (sm_%d%d, %.1f GiB)", ordinal, properties.name, properties.major,
                   properties.minor, static_cast<double>(properties.totalGlobalMem) / (1 << 30));
}

}  // namespace

const BackendKind& CudaBackendKind() {
  static const BackendKind kind{"cuda", "CUDA", CudaDeviceCount, CudaDeviceName, CudaBackend};
  return kind;
}

}  // namespace pacl::rt
