// The state behind libascendcl: contexts, streams, memory registries and options, shared by the runtime sources.
//
// NOTE: one mutex (RuntimeState::mutex) guards everything here. It is never held while waiting for a stream or
// while a stream's worker is joined, so tasks may call back into the runtime. Handles given to applications
// (contexts, streams) are looked up in the registries before use and never dereferenced blindly; a thread's
// current context is remembered as (handle, serial) so a context destroyed behind its back reads as "none" even
// if a new context later reuses the address. The state is created on first use and never destroyed, so calls
// made during static destruction still find it; an atexit handler stops the worker threads at process exit.
#ifndef PACL_RUNTIME_RUNTIME_STATE_H_
#define PACL_RUNTIME_RUNTIME_STATE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#include "event.h"
#include "stream.h"

namespace pacl::rt {

inline constexpr int kOptionCount = 3;  // aclSysParamOpt values 0..2

struct OptionSet {
  int64_t value[kOptionCount] = {};
  bool is_set[kOptionCount] = {};
};

struct Context {
  uint64_t serial = 0;
  int32_t device_id = 0;                   // an index into Devices()
  bool is_default = false;                 // the device's default context (aclrtSetDevice)
  std::shared_ptr<Stream> default_stream;  // the nullptr stream, created on first use
  OptionSet options;
};

// Live allocations: address -> size in bytes and the device they belong to.
class AllocationRegistry {
 public:
  void Add(const void* base, size_t size, int32_t device_id) {
    blocks_[reinterpret_cast<uintptr_t>(base)] = Block{size, device_id};
  }
  // Removes the allocation that starts exactly at base; false if there is none.
  bool Remove(const void* base) { return blocks_.erase(reinterpret_cast<uintptr_t>(base)) != 0; }
  // The allocation containing p (base <= p < base + size); false if none does.
  bool Find(const void* p, uintptr_t* base, size_t* size, int32_t* device_id = nullptr) const;

 private:
  struct Block {
    size_t size = 0;
    int32_t device_id = 0;
  };
  std::map<uintptr_t, Block> blocks_;
};

// A device's default context (aclrtSetDevice / aclrtResetDevice count references to it).
struct DefaultContext {
  Context* context = nullptr;
  int refs = 0;
};

struct RuntimeState {
  std::mutex mutex;
  bool initialized = false;  // between aclInit and aclFinalize
  bool shut_down = false;    // process exit has stopped the workers
  bool exit_handler_registered = false;
  uint64_t next_serial = 1;
  std::unordered_map<const void*, std::unique_ptr<Context>> contexts;  // by handle
  std::map<int32_t, DefaultContext> default_contexts;  // by device id
  std::unordered_map<const void*, std::shared_ptr<Stream>> streams;  // by handle, default streams included
  std::unordered_map<const void*, std::shared_ptr<Event>> events;    // by handle
  OptionSet process_options;
  AllocationRegistry device_memory;
  AllocationRegistry host_memory;
};

RuntimeState& State();

// All of the *Locked functions expect State().mutex to be held.

// The calling thread's current context, or nullptr when it has none (or it was destroyed).
Context* CurrentContextLocked(RuntimeState& state);
// Makes context (may be nullptr) current on the calling thread.
void SetCurrentContext(const Context* context);
void SetCurrentContextRef(const void* handle, uint64_t serial);
void GetCurrentContextRef(const void** handle, uint64_t* serial);

// A live context by handle, or nullptr.
Context* FindContextLocked(RuntimeState& state, const void* handle);
Context* CreateContextLocked(RuntimeState& state, int32_t device_id, bool is_default);
// Removes context and its streams from the registries; returns the streams, which the caller shuts down
// after releasing the mutex.
std::vector<std::shared_ptr<Stream>> DestroyContextLocked(RuntimeState& state, Context* context);
// Destroys every context (aclFinalize).
std::vector<std::shared_ptr<Stream>> DestroyAllContextsLocked(RuntimeState& state);

// A stream created by aclrtCreateStream (not a default stream), or nullptr.
std::shared_ptr<Stream> FindUserStreamLocked(RuntimeState& state, const void* handle);
// context's default stream, created if needed; nullptr with *error set if its worker cannot start.
std::shared_ptr<Stream> DefaultStreamLocked(RuntimeState& state, Context* context, std::string* error);
// A new stream of context; adopt: over the application's native stream external_native (Stream::Adopt).
std::shared_ptr<Stream> CreateStreamLocked(RuntimeState& state, Context* context, bool is_default,
                                           std::string* error, bool adopt = false, void* external_native = nullptr);
// Enqueues task on stream (nullptr: the current context's default stream) like EnqueueTask, with failures
// recorded under function's name; *used (if not null) receives the stream. expected_device >= 0: the stream must
// belong to that device (ACL_ERROR_RT_STREAM_CONTEXT otherwise). uses: the memory the task touches (strict mode).
aclError EnqueueTaskFor(const char* function, aclrtStream stream, Task task, std::shared_ptr<Stream>* used,
                        int32_t expected_device = -1, std::vector<MemoryUse> uses = {}, bool device_ordered = false);

// Every live stream, oldest first.
std::vector<std::shared_ptr<Stream>> AllStreamsLocked(RuntimeState& state);

// Shuts the streams down outside the mutex, running what is still queued.
void DrainAndStop(const std::vector<std::shared_ptr<Stream>>& streams);
// Waits (without the mutex) until every task enqueued on any stream before the call has finished. Failures stay
// on their streams for the next synchronisation. A task calling this skips its own stream.
void WaitForAllStreams();
// The streams that have unfinished work now, with their enqueued counts (empty when every stream is idle).
StreamFence PendingWorkFence();

// The "device memory" of the CPU: the machine's physical RAM (SIZE_MAX / 2 if unknown).
size_t MachineMemoryBytes();

// Records "<function>: <formatted>" on the calling thread and returns code.
aclError Fail(aclError code, const char* function, const char* format, ...) __attribute__((format(printf, 3, 4)));

// The message used when the calling thread has no current context.
aclError FailNoContext(const char* function);

// Validates a device id against Devices(); records a message naming function on failure.
aclError CheckDeviceId(const char* function, int32_t device_id);
// The device of the calling thread's current context, or device 0 when it has none. Expects the mutex.
int32_t CurrentDeviceIdLocked(RuntimeState& state);

// Clears the calling thread's pending error messages (a worker does so after each task).
void ClearRecentErrorMessages();

}  // namespace pacl::rt

#endif  // PACL_RUNTIME_RUNTIME_STATE_H_
