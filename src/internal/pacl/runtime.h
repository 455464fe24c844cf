// What the operator libraries need from the runtime (libascendcl): running work on streams and reading
// the options in force. Not installed; not for applications.
#ifndef PACL_RUNTIME_H_
#define PACL_RUNTIME_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#include "pacl/export.h"

namespace pacl::rt {

// A unit of work for a stream's worker thread. It returns ACL_SUCCESS or an error code; on error it should
// have called SetRecentErrorMessage (on the worker thread), and the stream hands that code and message to the
// next aclrtSynchronizeStream / aclrtSynchronizeDevice.
using Task = std::function<aclError()>;

// Device memory a task reads or writes, recorded in strict mode (docs/strict_mode.md) so that freeing it, or copying
// from or into it, before the task has finished is reported.
struct MemoryUse {
  const void* data = nullptr;
  uint64_t bytes = 0;
  bool written = false;
  std::string what;  // "aclnnScaledMaskedSoftmax's y"
};

// Appends task to stream's FIFO (nullptr: the current context's default stream) and returns without waiting.
// The task runs with the stream's context current. Fails (with a message) for an unknown stream, or for nullptr
// when the calling thread has no current context; an explicit stream may be used from any thread.
PACL_INTERNAL_API aclError EnqueueTask(aclrtStream stream, Task task);
// The same, for work of device device_id (an aclrt device id): a stream of another device is refused
// (ACL_ERROR_RT_STREAM_CONTEXT, with a message naming both devices). device_ordered: the task only enqueues work on
// the stream's native stream (CurrentNativeStream), in that stream's order, and reads nothing that earlier tasks'
// device work writes; such a task may start before the device work of the tasks before it has finished (the worker
// then waits for several tasks' device work at once), so a stream of operator calls keeps the GPU busy.
PACL_INTERNAL_API aclError EnqueueTaskOnDevice(aclrtStream stream, int32_t device_id, Task task,
                                               std::vector<MemoryUse> uses = {}, bool device_ordered = false);
// The native stream (cudaStream_t) of the aclrtStream whose task runs on the calling thread; nullptr on the CPU.
PACL_INTERNAL_API void* CurrentNativeStream();
// Waits for the device work enqueued so far on that native stream (nothing to wait for on the CPU); the backend's
// error (a kernel fault, with the device's text) in *error.
PACL_INTERNAL_API aclError WaitForThisTasksDeviceWork(std::string* error);
// ACLNN_DEBUG_SYNC=1: every operator call waits for its own device work, so that a device fault is reported by the
// call whose kernels caused it, named by operator (otherwise a later call or synchronisation finds it).
PACL_INTERNAL_API bool DebugSync();

// Brackets a kernel's parallel region, saying whether its team has a thread on every CPU the process may use.
// Streams' workers and synchronising threads poll briefly before they sleep, but not while a region runs, and not
// at all once a team has taken every CPU (stream.cpp, PollingLeavesKernelsTheirCores).
PACL_INTERNAL_API void EnterParallelRegion(bool team_uses_every_cpu);
PACL_INTERNAL_API void LeaveParallelRegion();

// Whether ACL_OPT_DETERMINISTIC is on for the calling thread: its current context's value if that context set
// one, else the process-wide value (aclrtSetSysParamOpt), else true: this library is deterministic unless an
// application turns the option off (then a device may use faster kernels whose results vary from run to run).
PACL_INTERNAL_API bool DeterministicEnabled();

// A kind of device: the place of its backend in the runtime's registry (src/runtime/backend_registry.cpp). The CPU
// is kind 0 in every build, the only one the runtime and the operators name in code; every other kind is known by
// its registry key ("cuda"), which is also the word ACLNN_DEVICE and the operators' implementation lists use.
enum class DeviceKind : int { kCpu = 0 };
PACL_INTERNAL_API const char* DeviceKindName(DeviceKind kind);  // for messages: "CPU", "CUDA"
PACL_INTERNAL_API const char* DeviceKindKey(DeviceKind kind);   // the registry key: "cpu", "cuda"

// A device as the operator layer sees it: its kind, its aclrt device id, and its name for messages ("CPU",
// "CUDA device 0 (NVIDIA H100 ...)").
struct DeviceRef {
  DeviceKind kind = DeviceKind::kCpu;
  int32_t id = 0;
};

// Whether a kernel of device can read and write memory at p (always, on the CPU); false with *why saying what p is
// instead ("host memory: ...", "memory of CUDA device 1").
PACL_INTERNAL_API bool DeviceCanAccess(DeviceRef device, const void* p, std::string* why);

// The live aclrtMalloc allocation (of any device) that holds address p: its start and size in bytes. False when p
// lies in none (host memory, memory of another allocator, or memory already freed).
PACL_INTERNAL_API bool FindDeviceAllocation(const void* p, uintptr_t* base, size_t* size);

// Whether p lies in CPU device memory that aclrtFree released and that is not handed out again (an idle block of
// the block cache); *what then describes it. (Freed GPU memory is not tracked.)
PACL_INTERNAL_API bool IsFreedDeviceMemory(const void* p, std::string* what);

// Strict mode (ACLNN_STRICT=1 or aclInit's "strict": true; docs/strict_mode.md): whether it is on, and its report
// (one block on stderr beginning "ACLNN_STRICT: ", what happened, the allocation and free stacks of the device
// memory at address if there is one, then the calling stack).
PACL_INTERNAL_API bool StrictMode();
PACL_INTERNAL_API void StrictReport(const std::string& what, const void* address);

// The device of the calling thread's current context (phase 1 binds an operator call to it); the CPU, device 0,
// when the thread has no current context.
PACL_INTERNAL_API DeviceRef CurrentDevice();

// The state of aclrtMalloc's block cache (src/runtime/cpu/block_cache.h), for tests and benchmarks.
struct MemoryCacheStats {
  size_t live_blocks = 0;
  size_t live_bytes = 0;  // the size classes' bytes, not the requested ones
  size_t idle_blocks = 0;
  size_t idle_bytes = 0;
  uint64_t reused = 0;  // allocations served from the cache
  uint64_t mapped = 0;  // allocations that mapped new memory
};
PACL_INTERNAL_API MemoryCacheStats DeviceMemoryCacheStats();
// The bytes a request of size bytes occupies (its size class).
PACL_INTERNAL_API size_t DeviceMemoryClassBytes(size_t size);

}  // namespace pacl::rt

#endif  // PACL_RUNTIME_H_
