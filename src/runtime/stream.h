// A stream: an asynchronous FIFO of tasks run in order by one worker thread of its own.
#ifndef PACL_RUNTIME_STREAM_H_
#define PACL_RUNTIME_STREAM_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pacl/runtime.h"

namespace pacl::rt {

struct DeviceEntry;
class Backend;

// The first failure a stream saw since it was last synchronised.
struct StreamFailure {
  aclError code = ACL_SUCCESS;
  std::string message;
};

class Stream {
 public:
  // Creates the device's native stream (if it has them) and starts the worker thread; returns nullptr (with *error
  // set) when either fails. Tasks run with `owner` as the worker's current context, so they see that context's
  // options, and with the device active on the worker; after each task the worker waits for the device work the
  // task enqueued on the native stream, so a task completes when its device work has.
  static std::shared_ptr<Stream> Create(uint64_t serial, const void* owner_handle, uint64_t owner_serial,
                                        bool is_default, int32_t device_id, const DeviceEntry& device,
                                        std::string* error);
  // A stream over a native stream the application owns (paclrtCreateStreamFromNative): it has no worker. Each task
  // runs on the thread that enqueues it, as the worker would run it, so its device work is enqueued on the native
  // stream in the program's order, between the application's own work there. The native stream is not destroyed.
  static std::shared_ptr<Stream> Adopt(uint64_t serial, const void* owner_handle, uint64_t owner_serial,
                                       int32_t device_id, const DeviceEntry& device, void* external,
                                       std::string* error);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  uint64_t serial() const { return serial_; }
  const void* owner_handle() const { return owner_handle_; }
  bool is_default() const { return is_default_; }
  const void* handle() const { return this; }
  void* native_stream() const { return native_stream_; }
  int32_t device_id() const { return device_id_; }
  bool adopted() const { return adopted_; }

  // Appends task (uses: the memory it touches, kept in strict mode; device_ordered: see EnqueueTaskOnDevice); false
  // when the stream is shutting down.
  bool Enqueue(Task task, std::vector<MemoryUse> uses = {}, bool device_ordered = false);
  // Strict mode holds a CPU stream's tasks back until the program synchronises (docs/strict_mode.md): lets every
  // task enqueued so far run.
  void Release();
  // Strict mode: a use of [begin, end) by a task of this stream that has not finished (only writes when
  // written_only); false when there is none.
  bool FindUnfinishedUse(uintptr_t begin, uintptr_t end, bool written_only, MemoryUse* found);
  // The number of tasks enqueued so far: WaitUntilCompleted(EnqueuedCount()) waits for all of them.
  uint64_t EnqueuedCount();
  // The number of tasks that have finished (run, or discarded at process exit).
  uint64_t CompletedCount();
  void WaitUntilCompleted(uint64_t count);
  // Returns and clears the first failure since the last call.
  StreamFailure TakeFailure();
  // Whether the calling thread is this stream's worker (waiting for the stream there would deadlock).
  // (An adopted stream: the thread running one of its tasks.)
  bool IsWorkerThread() const {
    const std::thread::id self = std::this_thread::get_id();
    return self == worker_id_ || (adopted_ && self == inline_thread_.load(std::memory_order_relaxed));
  }

  // Stops the worker and joins it. With discard_pending, queued tasks that have not started are dropped (process
  // exit); otherwise they run first. Idempotent.
  void Shutdown(bool discard_pending);

  // Waits for the device work enqueued on the native stream (the backend's error text in *error).
  aclError SynchronizeNative(std::string* error);

 private:
  Stream(uint64_t serial, const void* owner_handle, uint64_t owner_serial, bool is_default, Backend* backend,
         int ordinal);
  struct QueuedTask {
    Task task;
    bool device_ordered = false;
  };

  void WorkerLoop();
  // An adopted stream's Enqueue: runs task now, on the calling thread.
  bool RunInline(Task& task, bool device_ordered);
  // An adopted stream: waits for the device work of every task run so far and counts them complete.
  void FinishAdopted();
  void FinishAdoptedHoldingInlineMutex();
  // Keeps code and message as the stream's failure unless an earlier one is still to be reported (mutex_ held);
  // ACL_SUCCESS records nothing.
  void RecordFailureLocked(aclError code, std::string message);
  // The failure of a task run where the stream's device cannot be made current (why: the backend's reason).
  std::string DeviceUnusable(const std::string& why) const;
  // Runs task; wait_for_device: then waits for its device work too (otherwise FinishLaunched does, later).
  void RunOne(Task& task, bool wait_for_device);
  // Waits for the device work enqueued on the native stream so far; on failure *message says so.
  aclError WaitForDeviceWork(std::string* message);
  // Waits for the device work of the tasks run without waiting (launched of them), records its failure, and counts
  // them complete. Called and returns with lock held (released while waiting).
  void FinishLaunched(std::unique_lock<std::mutex>& lock, uint64_t launched);
  // Whether the worker may run the next task before the device work of the `launched` tasks run without waiting has
  // finished: it is queued, device-ordered, and not too many are outstanding. Called with mutex_ held.
  bool NextMayOverlap(uint64_t launched) const;

  const uint64_t serial_;
  const void* const owner_handle_;
  const uint64_t owner_serial_;
  const bool is_default_;
  int32_t device_id_ = 0;  // the index of its device in Devices()
  Backend* const backend_;
  const int ordinal_;
  void* native_stream_ = nullptr;
  bool adopted_ = false;     // Adopt: no worker, the native stream is the application's
  std::mutex inline_mutex_;  // an adopted stream: held while a task runs or its device work is waited for
  std::atomic<std::thread::id> inline_thread_{};

  std::mutex mutex_;
  std::condition_variable work_available_;
  std::condition_variable work_completed_;
  std::deque<QueuedTask> queue_;
  const bool hold_;           // strict mode on the CPU: tasks run only once released
  uint64_t released_ = 0;     // tasks [0, released_) may run (hold_)
  std::deque<std::vector<MemoryUse>> unfinished_uses_;  // per task not yet finished, oldest first (hold_)
  // Written under mutex_; atomic so that the short spins before a wait (WorkerLoop, WaitUntilCompleted) can read
  // them without it.
  std::atomic<uint64_t> enqueued_{0};
  std::atomic<uint64_t> completed_{0};
  bool stopping_ = false;
  bool joined_ = false;
  StreamFailure failure_;
  std::thread worker_;
  std::thread::id worker_id_;
};

// A point in the work of every stream: the tasks each had enqueued at some moment. Memory released at that moment
// may still be used by those tasks, so it is not reused (or unmapped) before the fence has passed.
struct StreamPosition {
  std::weak_ptr<Stream> stream;  // expired once the stream is destroyed, which first runs its queue
  uint64_t enqueued = 0;
};
using StreamFence = std::vector<StreamPosition>;

// Strict mode: lets the held work of every stream run (each synchronisation does, and so does enqueueing while a
// thread is synchronising); and finds a use of [begin, end) by unfinished work on any stream, described in *what.
void ReleaseHeldWork();
bool FindUnfinishedUseOnAnyStream(const void* begin, size_t bytes, bool written_only, std::string* what);
// Strict mode, around a synchronising wait: releases the held work, and releases new work at once while it lives.
class SynchronisingScope {
 public:
  SynchronisingScope();
  ~SynchronisingScope();
  SynchronisingScope(const SynchronisingScope&) = delete;
  SynchronisingScope& operator=(const SynchronisingScope&) = delete;
};

// Whether every task covered by fence has finished (never blocks).
bool FencePassed(const StreamFence& fence);
// Waits until fence has passed, except on a stream whose worker is the calling thread (it would wait for itself);
// returns false when it skipped such a stream.
bool WaitForFence(const StreamFence& fence);

}  // namespace pacl::rt

#endif  // PACL_RUNTIME_STREAM_H_
