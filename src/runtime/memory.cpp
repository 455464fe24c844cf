// Device and host memory, on the current context's device (backend.h): every live allocation is registered with
// its device, so that frees of unknown pointers, frees with the wrong function and copies that overrun an
// allocation are refused instead of corrupting memory.
//
// NOTE: on the CPU, aclrtMalloc's memory comes from the block cache (cpu/block_cache.h): a freed block stays mapped
// and is handed out again, so a workspace allocated and freed around every operator call costs no page faults
// after the first; on CUDA from the device's stream-ordered memory pool. aclrtFree returns without waiting for the
// streams (CANN's semantics); the memory is reused only after the work queued before the free has finished.
// aclrtFreeHost, and the copy and set functions, first wait until the work enqueued on every stream has finished,
// because a queued kernel may still read or write the memory (the application did not have to synchronise, as on
// Ascend the copy engine orders them). Stream failures are left for the next synchronisation.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "backend.h"
#include "cpu/block_cache.h"
#include "cpu/strict_memory.h"
#include "pacl/error.h"
#include "pacl/runtime.h"
#include "runtime_state.h"
#include "stream.h"

using pacl::rt::AllocationRegistry;
using pacl::rt::Fail;
using pacl::rt::RuntimeState;
using pacl::rt::State;

namespace {

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
}

aclError CheckSize(const char* function, size_t size) {
  const size_t limit = pacl::rt::MachineMemoryBytes();
  if (size <= limit) return ACL_SUCCESS;
  return Fail(ACL_ERROR_BAD_ALLOC, function, "size (%zu) exceeds the memory of the machine (%zu bytes)", size, limit);
}

void Register(void* memory, size_t size, int32_t device_id, AllocationRegistry RuntimeState::*registry) {
  RuntimeState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  (state.*registry).Add(memory, size, device_id);
}

// The current context's device (device 0 when the thread has none); 0 (ACL_SUCCESS) or a failure when there is no
// device at all.
aclError CurrentDeviceFor(const char* function, int32_t* device_id, const pacl::rt::DeviceEntry** device) {
  std::string why;
  const std::vector<pacl::rt::DeviceEntry>& devices = pacl::rt::Devices(&why);
  if (devices.empty()) return Fail(ACL_ERROR_RT_NO_DEVICE, function, "there is no device: %s", why.c_str());
  RuntimeState& state = State();
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    *device_id = pacl::rt::CurrentDeviceIdLocked(state);
  }
  *device = &devices[static_cast<size_t>(*device_id)];
  return ACL_SUCCESS;
}

const pacl::rt::DeviceEntry& DeviceOf(int32_t device_id) {
  return pacl::rt::Devices()[static_cast<size_t>(device_id)];
}

aclError AllocateHost(const char* function, const char* param, void** ptr, size_t size) {
  if (aclError error = CheckSize(function, size)) return error;
  int32_t device_id = 0;
  const pacl::rt::DeviceEntry* device = nullptr;
  if (aclError error = CurrentDeviceFor(function, &device_id, &device)) return error;
  std::string reason;
  void* memory = nullptr;
  if (aclError error = device->backend->MallocHost(size, &memory, &reason)) {
    return Fail(error, function, "cannot allocate %zu bytes for %s: %s", size, param, reason.c_str());
  }
  Register(memory, size, device_id, &RuntimeState::host_memory);
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
  int32_t device_id = 0;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (aclError error = check()) return error;  // another thread freed it meanwhile
    uintptr_t base = 0;
    size_t size = 0;
    state.host_memory.Find(ptr, &base, &size, &device_id);
    state.host_memory.Remove(ptr);
  }
  std::string reason;
  if (aclError error = DeviceOf(device_id).backend->FreeHost(ptr, &reason)) {
    return Fail(error, function, "cannot free %s %p: %s", param, ptr, reason.c_str());
  }
  return ACL_SUCCESS;
}

// A strict-mode finding of function at address: the report ("<function>: <message>", with the stacks of the block at
// address), then the failure with message.
aclError StrictFail(const char* function, const void* address, const std::string& message) {
  pacl::rt::strict::Report(pacl::StrFormat("%s: %s", function, message.c_str()), address);
  return Fail(ACL_ERROR_INVALID_PARAM, function, "%s", message.c_str());
}

// When p lies inside a registered allocation, [p, p + count) must fit in it; in strict mode p must not lie in
// freed device memory. Expects the mutex.
aclError CheckRangeLocked(RuntimeState& state, const char* function, const char* param, const void* p,
                          size_t count) {
  std::string freed;
  if (pacl::rt::strict::DescribeFreed(p, &freed)) {
    return StrictFail(function, p, pacl::StrFormat("%s (%p) lies in %s", param, p, freed.c_str()));
  }
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

// A copy or a fill by the current device's backend; native_stream nullptr: now.
using DeviceWork = std::function<aclError(pacl::rt::Backend* backend, void* native_stream, std::string* reason)>;

// (In strict mode the device memory they touch is opened for them: pacl::rt::strict::Access.)
DeviceWork CopyWork(void* dst, const void* src, size_t count) {
  return [dst, src, count](pacl::rt::Backend* backend, void* native_stream, std::string* reason) {
    const pacl::rt::strict::Access access({{dst, count}, {src, count}});
    return backend->Copy(dst, src, count, native_stream, reason);
  };
}

DeviceWork FillWork(void* dst, int32_t value, size_t count) {
  return [dst, value, count](pacl::rt::Backend* backend, void* native_stream, std::string* reason) {
    const pacl::rt::strict::Access access({{dst, count}});
    return backend->Fill(dst, value, count, native_stream, reason);
  };
}

std::string DescribeCopy(const void* dst, const void* src, size_t count) {
  return pacl::StrFormat("copying %zu bytes from %p to %p", count, src, dst);
}

std::string DescribeFill(const void* dst, size_t count) {
  return pacl::StrFormat("setting %zu bytes at %p", count, dst);
}

// Runs work on the current device: now, after the work already enqueued on every stream (the synchronous calls), or
// in stream order on stream (the Async calls, which return at once). A failure is recorded as "<function>: <what>
// failed: <reason>" (on the worker thread for the Async calls, and reported by the next synchronisation).
aclError RunDeviceWork(const char* function, const std::string& what, bool stream_order, aclrtStream stream,
                       DeviceWork work, std::vector<pacl::rt::MemoryUse> uses = {}) {
  int32_t device_id = 0;
  const pacl::rt::DeviceEntry* device = nullptr;
  if (aclError error = CurrentDeviceFor(function, &device_id, &device)) return error;
  auto run = [function, what, backend = device->backend, work = std::move(work)](void* native_stream) {
    std::string reason;
    const aclError error = work(backend, native_stream, &reason);
    if (error != ACL_SUCCESS) return Fail(error, function, "%s failed: %s", what.c_str(), reason.c_str());
    return ACL_SUCCESS;
  };
  if (!stream_order) {
    // Normal mode orders a synchronous copy or fill after all queued work. CANN does not promise that, so strict
    // mode does not wait (StrictUnfinishedWorkCheck has refused a copy that touches unfinished work's memory).
    if (!pacl::rt::strict::Enabled()) pacl::rt::WaitForAllStreams();
    return run(nullptr);
  }
  return pacl::rt::EnqueueTaskFor(
      function, stream, [run] { return run(pacl::rt::CurrentNativeStream()); }, nullptr, device_id, std::move(uses));
}

// Strict mode, for the synchronous copies and fills: writing dst, or reading src, while work that has not finished
// uses that memory (reads or writes it; for src, writes it) is what a missing aclrtSynchronizeStream looks like on
// an NPU: refused with a report. src may be null (a fill).
aclError StrictUnfinishedWorkCheck(const char* function, const void* dst, const void* src, size_t count) {
  if (!pacl::rt::strict::Enabled() || count == 0) return ACL_SUCCESS;
  std::string what;
  const char* param = "dst";
  const void* p = dst;
  bool found = pacl::rt::FindUnfinishedUseOnAnyStream(dst, count, /*written_only=*/false, &what);
  if (!found && src != nullptr) {
    param = "src";
    p = src;
    found = pacl::rt::FindUnfinishedUseOnAnyStream(src, count, /*written_only=*/true, &what);
  }
  if (!found) return ACL_SUCCESS;
  return StrictFail(function, p,
                    pacl::StrFormat("%s (%p, %zu bytes) overlaps %s; synchronise (aclrtSynchronizeStream) first",
                                    param, p, count, what.c_str()));
}

// The memory an Async copy or fill touches (strict mode's record; src null for a fill).
std::vector<pacl::rt::MemoryUse> AsyncUses(const char* function, void* dst, const void* src, size_t count) {
  std::vector<pacl::rt::MemoryUse> uses;
  if (!pacl::rt::strict::Enabled()) return uses;
  uses.push_back({dst, count, true, pacl::StrFormat("%s's dst", function)});
  if (src != nullptr) uses.push_back({src, count, false, pacl::StrFormat("%s's src", function)});
  return uses;
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
  int32_t device_id = 0;
  const pacl::rt::DeviceEntry* device = nullptr;
  if (aclError error = CurrentDeviceFor(kFunction, &device_id, &device)) return error;
  if (device->kind == pacl::rt::DeviceKind::kCpu) {
    if (aclError error = CheckSize(kFunction, size)) return error;
  }
  std::string reason;
  void* memory = nullptr;
  if (aclError error = device->backend->Malloc(device->ordinal, size, AllowsHugePages(policy), &memory, &reason)) {
    return Fail(error, kFunction, "cannot allocate %zu bytes for devPtr on device %d (out of memory: %s)", size,
                static_cast<int>(device_id), reason.c_str());
  }
  Register(memory, size, device_id, &RuntimeState::device_memory);
  *devPtr = memory;
  return ACL_SUCCESS;
}

aclError aclrtFree(void* devPtr) {
  static const char* const kFunction = "aclrtFree";
  if (devPtr == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, kFunction, "devPtr must not be null");
  RuntimeState& state = State();
  if (pacl::rt::strict::Enabled()) {
    // CANN's aclrtFree releases at once: memory that queued work still uses would be reused under it.
    uintptr_t base = 0;
    size_t size = 0;
    std::string what;
    if (pacl::rt::FindDeviceAllocation(devPtr, &base, &size) && base == reinterpret_cast<uintptr_t>(devPtr) &&
        pacl::rt::FindUnfinishedUseOnAnyStream(devPtr, size, /*written_only=*/false, &what)) {
      return StrictFail(kFunction, devPtr,
                        pacl::StrFormat("devPtr %p (an allocation of %zu bytes) is still used by %s; synchronise "
                                        "before freeing it",
                                        devPtr, size, what.c_str()));
    }
  }
  int32_t device_id = 0;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (aclError error = CheckReleasableLocked(state, kFunction, "devPtr", devPtr, &RuntimeState::device_memory,
                                               &RuntimeState::host_memory, "aclrtMallocHost (use aclrtFreeHost)")) {
      return error;
    }
    uintptr_t base = 0;
    size_t size = 0;
    state.device_memory.Find(devPtr, &base, &size, &device_id);
    state.device_memory.Remove(devPtr);
  }
  // The memory carries a fence: it is not reused before the work queued until now has finished.
  const pacl::rt::DeviceEntry& device = DeviceOf(device_id);
  std::string reason;
  if (aclError error = device.backend->Free(device.ordinal, devPtr, pacl::rt::PendingWorkFence(), &reason)) {
    return Fail(error, kFunction, "cannot free devPtr %p on device %d: %s", devPtr, static_cast<int>(device_id),
                reason.c_str());
  }
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
  static const char* const kFunction = "aclrtMemcpy";
  if (aclError error = CheckMemcpy(kFunction, dst, destMax, src, count, kind)) return error;
  if (aclError error = StrictUnfinishedWorkCheck(kFunction, dst, src, count)) return error;
  return RunDeviceWork(kFunction, DescribeCopy(dst, src, count), /*stream_order=*/false, nullptr,
                       CopyWork(dst, src, count));
}

aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream) {
  static const char* const kFunction = "aclrtMemcpyAsync";
  if (aclError error = CheckMemcpy(kFunction, dst, destMax, src, count, kind)) return error;
  return RunDeviceWork(kFunction, DescribeCopy(dst, src, count), /*stream_order=*/true, stream,
                       CopyWork(dst, src, count), AsyncUses(kFunction, dst, src, count));
}

aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count) {
  static const char* const kFunction = "aclrtMemset";
  if (aclError error = CheckMemset(kFunction, devPtr, maxCount, count)) return error;
  if (aclError error = StrictUnfinishedWorkCheck(kFunction, devPtr, nullptr, count)) return error;
  return RunDeviceWork(kFunction, DescribeFill(devPtr, count), /*stream_order=*/false, nullptr,
                       FillWork(devPtr, value, count));
}

aclError aclrtMemsetAsync(void* devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream) {
  static const char* const kFunction = "aclrtMemsetAsync";
  if (aclError error = CheckMemset(kFunction, devPtr, maxCount, count)) return error;
  return RunDeviceWork(kFunction, DescribeFill(devPtr, count), /*stream_order=*/true, stream,
                       FillWork(devPtr, value, count), AsyncUses(kFunction, devPtr, nullptr, count));
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
  int32_t device_id = 0;
  const pacl::rt::DeviceEntry* device = nullptr;
  if (aclError error = CurrentDeviceFor(kFunction, &device_id, &device)) return error;
  std::string reason;
  if (aclError error = device->backend->MemInfo(device->ordinal, attr, free, total, &reason)) {
    return Fail(error, kFunction, "cannot read the memory of device %d: %s", static_cast<int>(device_id),
                reason.c_str());
  }
  return ACL_SUCCESS;
}

}  // extern "C"

namespace pacl::rt {

bool FindDeviceAllocation(const void* p, uintptr_t* base, size_t* size) {
  RuntimeState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  return state.device_memory.Find(p, base, size);
}

bool IsFreedDeviceMemory(const void* p, std::string* what) {
  if (strict::DescribeFreed(p, what)) return true;
  {
    RuntimeState& state = State();
    std::lock_guard<std::mutex> lock(state.mutex);
    uintptr_t base = 0;
    size_t size = 0;
    if (state.device_memory.Find(p, &base, &size)) return false;  // live (a block may be handed out again)
  }
  // On the CPU a freed block stays mapped in the block cache until it is reused or given back, so a pointer into
  // an idle block can only come from an allocation that was freed. (Freed GPU memory goes back to a pool shared
  // with the rest of the process, so it is not tracked.)
  uintptr_t block = 0;
  size_t bytes = 0;
  if (!cpu::DeviceBlockCache().FindIdle(p, &block, &bytes)) return false;
  *what = StrFormat("memory freed by aclrtFree (an idle block of %zu bytes at %p, kept for reuse)", bytes,
                    reinterpret_cast<void*>(block));
  return true;
}

bool StrictMode() { return strict::Enabled(); }

void StrictReport(const std::string& what, const void* address) { strict::Report(what, address); }

MemoryCacheStats DeviceMemoryCacheStats() { return cpu::DeviceBlockCache().Stats(); }

size_t DeviceMemoryClassBytes(size_t size) { return cpu::BlockCache::ClassBytes(size); }

}  // namespace pacl::rt
