// "Device" and host memory: both are host memory here, but every live allocation is registered so that frees of
// unknown pointers and copies that overrun an allocation are refused instead of corrupting memory.
//
// NOTE: the copy and free functions first wait until the work enqueued on every stream has finished, because a
// queued kernel may still read or write the memory (the application did not have to synchronise, as on Ascend the
// copy engine orders them). Stream failures are left for the next synchronisation.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "acl/acl.h"
#include "runtime_state.h"

using pacl::rt::AllocationRegistry;
using pacl::rt::Fail;
using pacl::rt::RuntimeState;
using pacl::rt::State;

namespace {

constexpr size_t kAlignment = 64;  // a cache line: enough for every SIMD load the kernels use

// The "device memory" of the CPU: its physical RAM. Larger requests fail up front rather than relying on
// overcommit (and on allocators, such as the sanitizers', that abort on absurd sizes).
size_t DeviceMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return SIZE_MAX / 2;
  const unsigned long long bytes = static_cast<unsigned long long>(pages) * static_cast<unsigned long long>(page_size);
  return bytes > SIZE_MAX / 2 ? SIZE_MAX / 2 : static_cast<size_t>(bytes);
}

bool IsValidPolicy(int32_t policy) {
  const int32_t type_bits = ACL_MEM_TYPE_LOW_BAND_WIDTH | ACL_MEM_TYPE_HIGH_BAND_WIDTH;
  const int32_t base = policy & ~type_bits;
  return base >= ACL_MEM_MALLOC_HUGE_FIRST && base <= ACL_MEM_MALLOC_NORMAL_ONLY_P2P;
}

aclError Allocate(const char* function, const char* param, void** ptr, size_t size,
                  AllocationRegistry RuntimeState::*registry) {
  const size_t limit = DeviceMemoryBytes();
  if (size > limit) {
    return Fail(ACL_ERROR_BAD_ALLOC, function, "size (%zu) exceeds the memory of the machine (%zu bytes)", size, limit);
  }
  const size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;  // no overflow: size <= SIZE_MAX / 2
  void* memory = std::aligned_alloc(kAlignment, rounded);
  if (memory == nullptr) {
    return Fail(ACL_ERROR_BAD_ALLOC, function, "cannot allocate %zu bytes for %s (out of memory)", size, param);
  }
  RuntimeState& state = State();
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    (state.*registry).Add(memory, size);
  }
  *ptr = memory;
  return ACL_SUCCESS;
}

aclError Release(const char* function, const char* param, void* ptr, AllocationRegistry RuntimeState::*registry,
                 AllocationRegistry RuntimeState::*other_registry, const char* other_allocator) {
  if (ptr == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, function, "%s must not be null", param);
  RuntimeState& state = State();
  auto check = [&]() -> aclError {
    uintptr_t base = 0;
    size_t size = 0;
    if ((state.*registry).Find(ptr, &base, &size)) {
      if (base == reinterpret_cast<uintptr_t>(ptr)) return ACL_SUCCESS;
      return Fail(ACL_ERROR_INVALID_PARAM, function,
                  "%s %p points inside the allocation at %p (%zu bytes), not to its start", param, ptr,
                  reinterpret_cast<void*>(base), size);
    }
    if ((state.*other_registry).Find(ptr, &base, &size)) {
      return Fail(ACL_ERROR_INVALID_PARAM, function, "%s %p was allocated by %s: free it with the matching function",
                  param, ptr, other_allocator);
    }
    return Fail(ACL_ERROR_INVALID_PARAM, function,
                "%s %p is not a live allocation (never allocated here, or already freed)", param, ptr);
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
    (state.*registry).Remove(ptr);
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
  return Allocate(kFunction, "devPtr", devPtr, size, &RuntimeState::device_memory);
}

aclError aclrtFree(void* devPtr) {
  return Release("aclrtFree", "devPtr", devPtr, &RuntimeState::device_memory, &RuntimeState::host_memory,
                 "aclrtMallocHost (use aclrtFreeHost)");
}

aclError aclrtMallocHost(void** hostPtr, size_t size) {
  static const char* const kFunction = "aclrtMallocHost";
  if (hostPtr == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, kFunction, "hostPtr must not be null");
  if (size == 0) return Fail(ACL_ERROR_INVALID_PARAM, kFunction, "size must be greater than 0, got 0");
  return Allocate(kFunction, "hostPtr", hostPtr, size, &RuntimeState::host_memory);
}

aclError aclrtFreeHost(void* hostPtr) {
  return Release("aclrtFreeHost", "hostPtr", hostPtr, &RuntimeState::host_memory, &RuntimeState::device_memory,
                 "aclrtMalloc (use aclrtFree)");
}

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind) {
  static const char* const kFunction = "aclrtMemcpy";
  if (dst == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, kFunction, "dst must not be null");
  if (src == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, kFunction, "src must not be null");
  if (count > destMax) {
    return Fail(ACL_ERROR_INVALID_PARAM, kFunction, "count (%zu) must not exceed destMax (%zu)", count, destMax);
  }
  const int kind_value = static_cast<int>(kind);
  if (kind_value < ACL_MEMCPY_HOST_TO_HOST || kind_value > ACL_MEMCPY_DEFAULT) {
    return Fail(ACL_ERROR_INVALID_PARAM, kFunction, "kind (%d) is not an aclrtMemcpyKind: expected 0..4", kind_value);
  }
  RuntimeState& state = State();
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (aclError error = CheckRangeLocked(state, kFunction, "dst", dst, count)) return error;
    if (aclError error = CheckRangeLocked(state, kFunction, "src", src, count)) return error;
  }
  pacl::rt::WaitForAllStreams();  // ordered after the work already enqueued
  if (count > 0) std::memmove(dst, src, count);
  return ACL_SUCCESS;
}

aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count) {
  static const char* const kFunction = "aclrtMemset";
  if (devPtr == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, kFunction, "devPtr must not be null");
  if (count > maxCount) {
    return Fail(ACL_ERROR_INVALID_PARAM, kFunction, "count (%zu) must not exceed maxCount (%zu)", count, maxCount);
  }
  RuntimeState& state = State();
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (aclError error = CheckRangeLocked(state, kFunction, "devPtr", devPtr, count)) return error;
  }
  pacl::rt::WaitForAllStreams();
  if (count > 0) std::memset(devPtr, static_cast<unsigned char>(value), count);
  return ACL_SUCCESS;
}

}  // extern "C"
