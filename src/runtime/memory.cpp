// "Device" and host memory: both are host memory here, but every live allocation is registered so that frees of
// unknown pointers and copies that overrun an allocation are refused instead of corrupting memory.
//
// NOTE: aclrtMalloc's memory comes from the block cache (cpu/block_cache.h): a freed block stays mapped and is
// handed out again, so a workspace allocated and freed around every operator call costs no page faults after the
// first. aclrtFree returns at once without waiting for the streams (CANN's semantics); the block is reused only
// after the work queued before the free has finished. aclrtFreeHost, and the copy and set functions, first wait
// until the work enqueued on every stream has finished, because a queued kernel may still read or write the memory
// (the application did not have to synchronise, as on Ascend the copy engine orders them). Stream failures are left
// for the next synchronisation.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "acl/acl.h"
#include "cpu/block_cache.h"
#include "pacl/runtime.h"
#include "runtime_state.h"

using pacl::rt::AllocationRegistry;
using pacl::rt::Fail;
using pacl::rt::RuntimeState;
using pacl::rt::State;

namespace {

constexpr size_t kAlignment = 64;  // a cache line: enough for every SIMD load the kernels use

int32_t PagePolicy(int32_t policy) {
  const int32_t type_bits = ACL_MEM_TYPE_LOW_BAND_WIDTH | ACL_MEM_TYPE_HIGH_BAND_WIDTH;
  return policy & ~type_bits;
}

bool IsValidPolicy(int32_t policy) {
  const int32_t base = PagePolicy(policy);
  return base >= ACL_MEM_MALLOC_HUGE_FIRST && base <= ACL_MEM_MALLOC_NORMAL_ONLY_P2P;
}

bool AllowsHugePages(int32_t policy) {
  const int32_t base = PagePolicy(policy);
  return base != ACL_MEM_MALLOC_NORMAL_ONLY && base != ACL_MEM_MALLOC_NORMAL_ONLY_P2P;
}

// Every check of a free: ptr starts a live allocation of registry. Expects the mutex.
aclError CheckReleasableLocked(RuntimeState& state, const char* function, const char* param, void* ptr,
                               AllocationRegistry RuntimeState::*registry,
                               AllocationRegistry RuntimeState::*other_registry, const char* other_allocator) {
  uintptr_t base = 0;
  size_t size = 0;
  if ((state.*registry).Find(ptr, &base, &size)) {
    if (base == reinterpret_cast<uintptr_t>(ptr)) return ACL_SUCCESS;
    return Fail(ACL_ERROR_INVALID_PARAM, function, "%s %p points inside the allocation at %p (%zu bytes), not to its start",
                param, ptr, reinterpret_cast<void*>(base), size);
  }
  if ((state.*other_registry).Find(ptr, &base, &size)) {
    return Fail(ACL_ERROR_INVALID_PARAM, function, "%s %p was allocated by %s: free it with the matching function",
                param, ptr, other_allocator);
  }
  return Fail(ACL_ERROR_INVALID_PARAM, function,
              "%s %p is not a live allocation (never allocated here, or already freed)", param, ptr);
}

aclError CheckSize(const char* function, size_t size) {
  const size_t limit = pacl::rt::MachineMemoryBytes();
  if (size <= limit) return ACL_SUCCESS;
  return Fail(ACL_ERROR_BAD_ALLOC, function, "size (%zu) exceeds the memory of the machine (%zu bytes)", size, limit);
}

void Register(void* memory, size_t size, AllocationRegistry RuntimeState::*registry) {
  RuntimeState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  (state.*registry).Add(memory, size);
}

aclError AllocateHost(const char* function, const char* param, void** ptr, size_t size) {
  if (aclError error = CheckSize(function, size)) return error;
  const size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;  // no overflow: size <= SIZE_MAX / 2
  void* memory = std::aligned_alloc(kAlignment, rounded);
  if (memory == nullptr) {
    return Fail(ACL_ERROR_BAD_ALLOC, function, "cannot allocate %zu bytes for %s (out of memory)", size, param);
  }
  Register(memory, size, &RuntimeState::host_memory);
  *ptr = memory;
  return ACL_SUCCESS;
}

aclError ReleaseHost(const char* function, const char* param, void* ptr) {
  if (ptr == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, function, "%s must not be null", param);
  RuntimeState& state = State();
  auto check = [&]() {
    return CheckReleasableLocked(state, function, param, ptr, &RuntimeState::host_memory, &RuntimeState::device_memory,
                                 "aclrtMalloc (use aclrtFree)");
  };
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (aclError error = check()) return error;
  }
  // Queued kernels may still use the memory.
  pacl::rt::WaitForAllStreams();
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (aclError error = check()) return error;  // another thread freed it meanwhile
    state.host_memory.Remove(ptr);
  }
  std::free(ptr);
  return ACL_SUCCESS;
}

// When p lies inside a registered allocation, [p, p + count) must fit in it. Expects the mutex.
aclError CheckRangeLocked(RuntimeState& state, const char* function, const char* param, const void* p,
                          size_t count) {
  uintptr_t base = 0;
  size_t size = 0;
  const char* kind = "device";
  bool found = state.device_memory.Find(p, &base, &size);
  if (!found) {
    kind = "host";
    found = state.host_memory.Find(p, &base, &size);
  }
  if (!found) return ACL_SUCCESS;  // memory we did not allocate: the caller vouches for it
  const size_t offset = reinterpret_cast<uintptr_t>(p) - base;
  if (count <= size - offset) return ACL_SUCCESS;
  return Fail(ACL_ERROR_INVALID_PARAM, function,
              "%s (%p) + count (%zu) overruns the %s allocation at %p of %zu bytes: only %zu bytes follow %s",
              param, p, count, kind, reinterpret_cast<void*>(base), size, size - offset, param);
}

// The checks shared by aclrtMemcpy and aclrtMemcpyAsync.
aclError CheckMemcpy(const char* function, void* dst, size_t destMax, const void* src, size_t count,
                     aclrtMemcpyKind kind) {
  if (dst == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, function, "dst must not be null");
  if (src == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, function, "src must not be null");
  if (count > destMax) {
    return Fail(ACL_ERROR_INVALID_PARAM, function, "count (%zu) must not exceed destMax (%zu)", count, destMax);
  }
  const int kind_value = static_cast<int>(kind);
  if (kind_value < ACL_MEMCPY_HOST_TO_HOST || kind_value > ACL_MEMCPY_DEFAULT) {
    return Fail(ACL_ERROR_INVALID_PARAM, function, "kind (%d) is not an aclrtMemcpyKind: expected 0..4", kind_value);
  }
  RuntimeState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (aclError error = CheckRangeLocked(state, function, "dst", dst, count)) return error;
  return CheckRangeLocked(state, function, "src", src, count);
}

// The checks shared by aclrtMemset and aclrtMemsetAsync.
aclError CheckMemset(const char* function, void* devPtr, size_t maxCount, size_t count) {
  if (devPtr == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, function, "devPtr must not be null");
  if (count > maxCount) {
    return Fail(ACL_ERROR_INVALID_PARAM, function, "count (%zu) must not exceed maxCount (%zu)", count, maxCount);
  }
  RuntimeState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  return CheckRangeLocked(state, function, "devPtr", devPtr, count);
}

// MemAvailable from /proc/meminfo (what can be allocated without swapping), or the free pages when it is missing.
size_t AvailableMemoryBytes() {
  if (FILE* file = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    unsigned long long kib = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, file) != nullptr) {
      found = std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
    }
    std::fclose(file);
    if (found) return static_cast<size_t>(std::min<unsigned long long>(kib, SIZE_MAX >> 10) << 10);
  }
  const long pages = ::sysconf(_SC_AVPHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page_size) : 0;
}

// Whether the kernel may back madvise'd memory with transparent huge pages ("[always]" or "[madvise]").
bool TransparentHugePagesEnabled() {
  FILE* file = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (file == nullptr) return false;
  char text[128] = {};
  const bool read = std::fgets(text, sizeof text, file) != nullptr;
  std::fclose(file);
  return read && std::strstr(text, "[never]") == nullptr;
}

}  // namespace

extern "C" {

aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
  static const char* const kFunction = "aclrtMalloc";
  if (devPtr == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, kFunction, "devPtr must not be null");
  if (size == 0) return Fail(ACL_ERROR_INVALID_PARAM, kFunction, "size must be greater than 0, got 0");
  if (!IsValidPolicy(static_cast<int32_t>(policy))) {
    return Fail(ACL_ERROR_INVALID_PARAM, kFunction,
                "policy (%d) is not an aclrtMemMallocPolicy: expected 0..5, optionally combined with "
                "ACL_MEM_TYPE_LOW_BAND_WIDTH (0x100) or ACL_MEM_TYPE_HIGH_BAND_WIDTH (0x1000)",
                static_cast<int>(policy));
  }
  if (aclError error = CheckSize(kFunction, size)) return error;
  std::string reason;
  void* memory = pacl::rt::cpu::DeviceBlockCache().Allocate(size, AllowsHugePages(policy), &reason);
  if (memory == nullptr) {
    return Fail(ACL_ERROR_BAD_ALLOC, kFunction, "cannot allocate %zu bytes for devPtr (out of memory: %s)", size,
                reason.c_str());
  }
  Register(memory, size, &RuntimeState::device_memory);
  *devPtr = memory;
  return ACL_SUCCESS;
}

aclError aclrtFree(void* devPtr) {
  static const char* const kFunction = "aclrtFree";
  if (devPtr == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, kFunction, "devPtr must not be null");
  RuntimeState& state = State();
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (aclError error = CheckReleasableLocked(state, kFunction, "devPtr", devPtr, &RuntimeState::device_memory,
                                               &RuntimeState::host_memory, "aclrtMallocHost (use aclrtFreeHost)")) {
      return error;
    }
    state.device_memory.Remove(devPtr);
  }
  // No waiting: the block carries a fence and is not reused before the work queued until now has finished.
  pacl::rt::cpu::DeviceBlockCache().Release(devPtr, pacl::rt::PendingWorkFence());
  return ACL_SUCCESS;
}

aclError aclrtMallocHost(void** hostPtr, size_t size) {
  static const char* const kFunction = "aclrtMallocHost";
  if (hostPtr == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, kFunction, "hostPtr must not be null");
  if (size == 0) return Fail(ACL_ERROR_INVALID_PARAM, kFunction, "size must be greater than 0, got 0");
  return AllocateHost(kFunction, "hostPtr", hostPtr, size);
}

aclError aclrtFreeHost(void* hostPtr) { return ReleaseHost("aclrtFreeHost", "hostPtr", hostPtr); }

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind) {
  if (aclError error = CheckMemcpy("aclrtMemcpy", dst, destMax, src, count, kind)) return error;
  pacl::rt::WaitForAllStreams();  // ordered after the work already enqueued
  if (count > 0) std::memmove(dst, src, count);
  return ACL_SUCCESS;
}

aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream) {
  static const char* const kFunction = "aclrtMemcpyAsync";
  if (aclError error = CheckMemcpy(kFunction, dst, destMax, src, count, kind)) return error;
  return pacl::rt::EnqueueTaskFor(
      kFunction, stream,
      [dst, src, count] {
        if (count > 0) std::memmove(dst, src, count);
        return ACL_SUCCESS;
      },
      nullptr);
}

aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count) {
  if (aclError error = CheckMemset("aclrtMemset", devPtr, maxCount, count)) return error;
  pacl::rt::WaitForAllStreams();
  if (count > 0) std::memset(devPtr, static_cast<unsigned char>(value), count);
  return ACL_SUCCESS;
}

aclError aclrtMemsetAsync(void* devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream) {
  static const char* const kFunction = "aclrtMemsetAsync";
  if (aclError error = CheckMemset(kFunction, devPtr, maxCount, count)) return error;
  return pacl::rt::EnqueueTaskFor(
      kFunction, stream,
      [devPtr, value, count] {
        if (count > 0) std::memset(devPtr, static_cast<unsigned char>(value), count);
        return ACL_SUCCESS;
      },
      nullptr);
}

aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t* free, size_t* total) {
  static const char* const kFunction = "aclrtGetMemInfo";
  if (free == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, kFunction, "free must not be null");
  if (total == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, kFunction, "total must not be null");
  const int attr_value = static_cast<int>(attr);
  if (attr_value < ACL_DDR_MEM || attr_value > ACL_HBM_MEM_P2P_NORMAL) {
    return Fail(ACL_ERROR_INVALID_PARAM, kFunction, "attr (%d) is not an aclrtMemAttr: expected 0..9", attr_value);
  }
  {
    RuntimeState& state = State();
    std::lock_guard<std::mutex> lock(state.mutex);
    if (pacl::rt::CurrentContextLocked(state) == nullptr) return pacl::rt::FailNoContext(kFunction);
  }
  // The CPU has no HBM: as CANN does on such hardware, HBM queries read the DDR figures. It has no peer devices
  // (P2P: 0 and 0). Huge pages are transparent huge pages: the same memory, unless the kernel turned them off.
  *free = 0;
  *total = 0;
  const bool p2p = attr_value >= ACL_DDR_MEM_P2P_HUGE;
  const bool huge = attr == ACL_DDR_MEM_HUGE || attr == ACL_HBM_MEM_HUGE;
  if (p2p || (huge && !TransparentHugePagesEnabled())) return ACL_SUCCESS;
  const size_t machine = pacl::rt::MachineMemoryBytes();
  const size_t cached = pacl::rt::cpu::DeviceBlockCache().Stats().idle_bytes;  // ours to hand out at once
  *total = machine;
  *free = std::min(machine, AvailableMemoryBytes() + cached);
  return ACL_SUCCESS;
}

}  // extern "C"

namespace pacl::rt {

MemoryCacheStats DeviceMemoryCacheStats() { return cpu::DeviceBlockCache().Stats(); }

size_t DeviceMemoryClassBytes(size_t size) { return cpu::BlockCache::ClassBytes(size); }

}  // namespace pacl::rt
