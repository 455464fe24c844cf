#include "stream.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <system_error>
#include <utility>
#include <vector>

#include "backend.h"
#include "cpu/strict_memory.h"
#include "pacl/error.h"
#include "runtime_state.h"

namespace pacl::rt {

namespace {

// The native stream of the task running on this thread (CurrentNativeStream), and its stream.
thread_local void* t_native_stream = nullptr;
thread_local Stream* t_stream = nullptr;

// How long a stream's worker polls for its next task, and a thread synchronising with the stream for its tasks'
// completion, before they sleep on a condition variable. Waking a sleeping thread costs tens of microseconds on a VM
// (a futex wake that crosses cores), and a small call in CANN's pattern (phase 1, phase 2, synchronise, repeat)
// paid it twice: now each side usually finds the other awake, and a notify that finds nobody asleep makes no system
// call. Short enough that an idle program loses no measurable CPU to it (the worker polls once after each task, then
// sleeps; Lifecycle.IdleWorkersUseNoCpu). A synchronising thread stops polling when a kernel's parallel region
// starts, and nobody polls once kernels' teams have taken every CPU (PollingLeavesKernelsTheirCores).
constexpr std::chrono::microseconds kPollBeforeSleep{50};

// Strict mode's held streams (hold_), for ReleaseHeldWork and FindUnfinishedUseOnAnyStream, and the threads now
// waiting in a synchronisation: while there are any, new work is released at once (a task another thread enqueues
// may be what the waiting one needs, as on a device that runs work as it comes).
std::mutex g_held_streams_mutex;
std::vector<Stream*> g_held_streams;
std::atomic<int> g_synchronising{0};

// Kernels' parallel regions running now, in any stream, and whether any team has had a thread on every CPU
// (EnterParallelRegion).
std::atomic<int> g_parallel_regions{0};
std::atomic<bool> g_a_team_used_every_cpu{false};

// Whether polling cannot take a core from a kernel: only while the kernels' teams leave a CPU free. A team's threads
// use every core during a region and, with libgomp, spin for a while after it; a polling worker and a polling caller
// on top of them delayed every call (by 10-30% for small softmax calls on two vCPUs). Where teams take every CPU the
// runtime waits as before, without polling.
bool PollingLeavesKernelsTheirCores() { return !g_a_team_used_every_cpu.load(std::memory_order_relaxed); }

// Polls ready() until it holds or kPollBeforeSleep has passed; whether it held.
template <typename Ready>
bool PollBriefly(Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + kPollBeforeSleep;
  for (int round = 0;; ++round) {
    if (ready()) return true;
    if ((round & 15) == 15 && std::chrono::steady_clock::now() >= deadline) return false;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }
}

}  // namespace

void* CurrentNativeStream() { return t_native_stream; }

aclError WaitForThisTasksDeviceWork(std::string* error) {
  if (t_stream == nullptr || t_native_stream == nullptr) return ACL_SUCCESS;
  return t_stream->SynchronizeNative(error);
}

bool DebugSync() {
  static const bool enabled = [] {
    const char* value = std::getenv("ACLNN_DEBUG_SYNC");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return enabled;
}

void EnterParallelRegion(bool team_uses_every_cpu) {
  g_parallel_regions.fetch_add(1, std::memory_order_relaxed);
  if (team_uses_every_cpu) g_a_team_used_every_cpu.store(true, std::memory_order_relaxed);
}
void LeaveParallelRegion() { g_parallel_regions.fetch_sub(1, std::memory_order_relaxed); }

std::shared_ptr<Stream> Stream::Create(uint64_t serial, const void* owner_handle, uint64_t owner_serial,
                                       bool is_default, int32_t device_id, const DeviceEntry& device,
                                       std::string* error) {
  std::shared_ptr<Stream> stream(
      new Stream(serial, owner_handle, owner_serial, is_default, device.backend, device.ordinal));
  stream->device_id_ = device_id;
  if (device.backend->CreateNativeStream(device.ordinal, &stream->native_stream_, error) != ACL_SUCCESS) {
    stream->joined_ = true;  // no worker to join
    return nullptr;
  }
  try {
    stream->worker_ = std::thread([raw = stream.get()] { raw->WorkerLoop(); });
  } catch (const std::system_error& e) {
    *error = StrFormat("cannot start the stream's worker thread: %s", e.what());
    stream->joined_ = true;  // nothing to join
    return nullptr;
  }
  stream->worker_id_ = stream->worker_.get_id();
  return stream;
}

std::shared_ptr<Stream> Stream::Adopt(uint64_t serial, const void* owner_handle, uint64_t owner_serial,
                                      int32_t device_id, const DeviceEntry& device, void* external,
                                      std::string* error) {
  std::shared_ptr<Stream> stream(
      new Stream(serial, owner_handle, owner_serial, /*is_default=*/false, device.backend, device.ordinal));
  stream->device_id_ = device_id;
  stream->adopted_ = true;
  stream->joined_ = true;  // there is no worker
  if (device.backend->AdoptNativeStream(device.ordinal, external, &stream->native_stream_, error) != ACL_SUCCESS) {
    return nullptr;
  }
  return stream;
}

Stream::Stream(uint64_t serial, const void* owner_handle, uint64_t owner_serial, bool is_default, Backend* backend,
               int ordinal)
    : serial_(serial),
      owner_handle_(owner_handle),
      owner_serial_(owner_serial),
      is_default_(is_default),
      backend_(backend),
      ordinal_(ordinal),
      hold_(strict::Enabled() && backend->is_cpu()) {
  if (hold_) {
    std::lock_guard<std::mutex> lock(g_held_streams_mutex);
    g_held_streams.push_back(this);
  }
}

Stream::~Stream() {
  if (hold_) {
    std::lock_guard<std::mutex> lock(g_held_streams_mutex);
    g_held_streams.erase(std::find(g_held_streams.begin(), g_held_streams.end(), this));
  }
  Shutdown(/*discard_pending=*/false);  // runs what is queued, held or not
  if (native_stream_ != nullptr && !adopted_) backend_->DestroyNativeStream(ordinal_, native_stream_);
}

bool Stream::Enqueue(Task task, std::vector<MemoryUse> uses, bool device_ordered) {
  if (adopted_) return RunInline(task, device_ordered);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return false;
    queue_.push_back(QueuedTask{std::move(task), device_ordered});
    ++enqueued_;
    if (hold_) {
      unfinished_uses_.push_back(std::move(uses));
      if (g_synchronising.load() > 0) released_ = enqueued_;
    }
  }
  work_available_.notify_one();
  return true;
}

void Stream::Release() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (released_ == enqueued_) return;
    released_ = enqueued_;
  }
  work_available_.notify_all();
}

bool Stream::FindUnfinishedUse(uintptr_t begin, uintptr_t end, bool written_only, MemoryUse* found) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const std::vector<MemoryUse>& task_uses : unfinished_uses_) {
    for (const MemoryUse& use : task_uses) {
      const uintptr_t use_begin = reinterpret_cast<uintptr_t>(use.data);
      if ((written_only && !use.written) || use.bytes == 0 || use_begin >= end || begin >= use_begin + use.bytes) {
        continue;
      }
      *found = use;
      return true;
    }
  }
  return false;
}

uint64_t Stream::EnqueuedCount() {
  std::lock_guard<std::mutex> lock(mutex_);
  return enqueued_;
}

uint64_t Stream::CompletedCount() {
  if (adopted_ && !IsWorkerThread() &&
      completed_.load(std::memory_order_acquire) < enqueued_.load(std::memory_order_acquire)) {
    // The device work of the tasks run so far has finished once the native stream is idle (and no task is being
    // run meanwhile: its kernels may not be enqueued yet).
    std::unique_lock<std::mutex> inline_lock(inline_mutex_, std::try_to_lock);
    if (inline_lock.owns_lock() && backend_->NativeStreamIdle(ordinal_, native_stream_)) {
      std::lock_guard<std::mutex> lock(mutex_);
      completed_.store(enqueued_.load());
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_;
}

void Stream::WaitUntilCompleted(uint64_t count) {
  auto completed = [&] { return completed_.load(std::memory_order_acquire) >= count; };
  if (completed()) return;
  if (adopted_) {
    FinishAdopted();
    return;
  }
  const SynchronisingScope synchronising;  // strict mode: lets the held work run
  if (!hold_ && PollingLeavesKernelsTheirCores()) {
    PollBriefly([&] { return completed() || g_parallel_regions.load(std::memory_order_relaxed) > 0; });
  }
  if (completed()) return;
  std::unique_lock<std::mutex> lock(mutex_);
  work_completed_.wait(lock, [&] { return completed_ >= count; });
}

StreamFailure Stream::TakeFailure() {
  std::lock_guard<std::mutex> lock(mutex_);
  StreamFailure taken = std::move(failure_);
  failure_ = StreamFailure{};
  return taken;
}

void Stream::Shutdown(bool discard_pending) {
  if (adopted_) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      stopping_ = true;
    }
    // At process exit the application's native stream may be gone already: no wait then.
    if (!discard_pending) FinishAdopted();
    return;
  }
  std::deque<QueuedTask> discarded;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (joined_) return;
    joined_ = true;
    stopping_ = true;
    if (discard_pending) {
      discarded.swap(queue_);
      completed_ += discarded.size();
    }
  }
  work_available_.notify_all();
  work_completed_.notify_all();
  discarded.clear();  // outside the lock: a task's captures may do anything when destroyed
  if (IsWorkerThread()) {
    // A task is shutting its own stream down (only possible on the process-exit path, where the task called
    // exit()): joining would deadlock, and the thread never returns to the loop anyway.
    worker_.detach();
  } else {
    worker_.join();
  }
}

void Stream::WorkerLoop() {
  SetCurrentContextRef(owner_handle_, owner_serial_);
  t_native_stream = native_stream_;
  t_stream = this;
  std::string activation_error;
  const aclError activation = backend_->Activate(ordinal_, &activation_error);
  std::unique_lock<std::mutex> lock(mutex_);
  // Device-ordered tasks run without waiting for their device work (native streams only): their count. They are
  // complete once FinishLaunched has waited for the native stream.
  uint64_t launched = 0;
  while (true) {
    if (launched > 0 && !NextMayOverlap(launched)) {
      if (queue_.empty() && !stopping_) {
        // The caller usually queues its next call while the device still runs this one: take it if it comes
        // before the device work ends, so that the device has the next kernels queued behind the current ones.
        const uint64_t taken = enqueued_.load(std::memory_order_relaxed);
        lock.unlock();
        PollBriefly([&] {
          return enqueued_.load(std::memory_order_acquire) > taken ||
                 backend_->NativeStreamIdle(ordinal_, native_stream_);
        });
        lock.lock();
      }
      if (!NextMayOverlap(launched)) {
        FinishLaunched(lock, launched);
        launched = 0;
      }
    }
    if (launched == 0 && queue_.empty() && !stopping_ && !hold_ && PollingLeavesKernelsTheirCores()) {
      // A caller that synchronises after each call enqueues the next task soon after this one completes.
      const uint64_t taken = completed_.load(std::memory_order_relaxed);
      lock.unlock();
      PollBriefly([&] { return enqueued_.load(std::memory_order_acquire) > taken; });
      lock.lock();
    }
    // A held stream's next task (the completed_-th) waits for its release; stopping runs everything. (With tasks
    // launched, the queue's front is known to be there.)
    work_available_.wait(lock, [&] { return (!queue_.empty() && (!hold_ || completed_ < released_)) || stopping_; });
    if (queue_.empty()) break;  // stopping, and everything queued (launched tasks too) has run
    QueuedTask next = std::move(queue_.front());
    queue_.pop_front();
    // A task that is not device-ordered runs only once the device work before it has finished.
    if (launched > 0 && !next.device_ordered) {
      FinishLaunched(lock, launched);
      launched = 0;
    }
    // Strict mode: the device memory the task uses is open to it (and to its kernel's threads) while it runs.
    std::vector<MemoryUse> uses;
    if (hold_ && !unfinished_uses_.empty()) uses = unfinished_uses_.front();
    const bool overlap = next.device_ordered && native_stream_ != nullptr && activation == ACL_SUCCESS;
    lock.unlock();
    if (activation == ACL_SUCCESS) {
      const strict::Access access = strict::Access::Of(uses);
      RunOne(next.task, /*wait_for_device=*/!overlap);
    } else {
      // Every task fails with the reason rather than running on the wrong device.
      std::lock_guard<std::mutex> failure_lock(mutex_);
      RecordFailureLocked(activation, DeviceUnusable(activation_error));
    }
    // Release the task's captures before reporting it complete (a launched task's device work needs none of them:
    // its kernels' arguments were copied at launch).
    next.task = nullptr;
    lock.lock();
    if (hold_ && !unfinished_uses_.empty()) unfinished_uses_.pop_front();
    if (overlap) {
      ++launched;
    } else {
      ++completed_;
      work_completed_.notify_all();
    }
  }
}

bool Stream::RunInline(Task& task, bool device_ordered) {
  std::lock_guard<std::mutex> inline_lock(inline_mutex_);
  // A task that is not device-ordered runs once the device work before it has finished, as on a worker.
  if (!device_ordered) FinishAdoptedHoldingInlineMutex();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return false;
    ++enqueued_;
  }
  // The calling thread runs the task as the worker would: with the stream's context current and its native stream
  // the task's. The thread's own are put back afterwards.
  const void* caller_context = nullptr;
  uint64_t caller_context_serial = 0;
  GetCurrentContextRef(&caller_context, &caller_context_serial);
  void* const caller_native_stream = t_native_stream;
  Stream* const caller_stream = t_stream;
  SetCurrentContextRef(owner_handle_, owner_serial_);
  t_native_stream = native_stream_;
  t_stream = this;
  inline_thread_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  std::string activation_error;
  const aclError activation = backend_->Activate(ordinal_, &activation_error);
  if (activation == ACL_SUCCESS) {
    RunOne(task, /*wait_for_device=*/!device_ordered);
  } else {
    std::lock_guard<std::mutex> lock(mutex_);
    RecordFailureLocked(activation, DeviceUnusable(activation_error));
  }
  task = nullptr;
  inline_thread_.store(std::thread::id(), std::memory_order_relaxed);
  t_native_stream = caller_native_stream;
  t_stream = caller_stream;
  SetCurrentContextRef(caller_context, caller_context_serial);
  if (!device_ordered) {
    std::lock_guard<std::mutex> lock(mutex_);
    completed_.store(enqueued_.load());
    work_completed_.notify_all();
  }
  return true;
}

void Stream::FinishAdopted() {
  std::lock_guard<std::mutex> inline_lock(inline_mutex_);
  FinishAdoptedHoldingInlineMutex();
}

void Stream::FinishAdoptedHoldingInlineMutex() {
  const uint64_t run = enqueued_.load(std::memory_order_acquire);
  if (completed_.load(std::memory_order_acquire) >= run) return;
  std::string message;
  const aclError code = WaitForDeviceWork(&message);
  std::lock_guard<std::mutex> lock(mutex_);
  RecordFailureLocked(code, std::move(message));
  completed_.store(run);
  work_completed_.notify_all();
}

bool Stream::NextMayOverlap(uint64_t launched) const {
  // At most this many tasks' device work outstanding, so that a program that synchronises with an early task
  // while others keep queueing work is not kept waiting for long.
  constexpr uint64_t kMostLaunched = 16;
  return launched < kMostLaunched && !queue_.empty() && queue_.front().device_ordered && !stopping_;
}

aclError Stream::SynchronizeNative(std::string* error) {
  return backend_->SynchronizeNativeStream(ordinal_, native_stream_, error);
}

aclError Stream::WaitForDeviceWork(std::string* message) {
  std::string device_error;
  const aclError code = backend_->SynchronizeNativeStream(ordinal_, native_stream_, &device_error);
  if (code != ACL_SUCCESS) {
    *message = StrFormat("device work of a task on stream %p failed: %s", handle(), device_error.c_str());
  }
  return code;
}

void Stream::FinishLaunched(std::unique_lock<std::mutex>& lock, uint64_t launched) {
  lock.unlock();
  std::string message;
  const aclError code = WaitForDeviceWork(&message);
  lock.lock();
  RecordFailureLocked(code, std::move(message));
  completed_ += launched;
  work_completed_.notify_all();
}

void Stream::RunOne(Task& task, bool wait_for_device) {
  aclError code = ACL_SUCCESS;
  std::string message;
  try {
    code = task();
    if (code != ACL_SUCCESS) {
      message = RecentErrorMessage();
      if (message.empty()) {
        message = StrFormat("a task on stream %p failed with error code %d and recorded no message", handle(), code);
      }
    }
  } catch (const std::exception& e) {
    code = ACL_ERROR_INTERNAL_ERROR;
    message = StrFormat("a task on stream %p threw an exception: %s", handle(), e.what());
  } catch (...) {
    code = ACL_ERROR_INTERNAL_ERROR;
    message = StrFormat("a task on stream %p threw an unknown exception", handle());
  }
  if (native_stream_ != nullptr && wait_for_device) {
    // The task's device work is part of it (also of a task that failed after enqueueing some): it completes when
    // that has. The task's own failure, if any, is the one reported.
    std::string device_message;
    const aclError device_code = WaitForDeviceWork(&device_message);
    if (code == ACL_SUCCESS && device_code != ACL_SUCCESS) {
      code = device_code;
      message = std::move(device_message);
    }
  }
  // Messages a task leaves on the worker thread belong to that task alone.
  ClearRecentErrorMessages();
  if (code == ACL_SUCCESS) return;
  std::lock_guard<std::mutex> lock(mutex_);
  RecordFailureLocked(code, std::move(message));
}

void Stream::RecordFailureLocked(aclError code, std::string message) {
  if (code == ACL_SUCCESS || failure_.code != ACL_SUCCESS) return;
  failure_.code = code;
  failure_.message = std::move(message);
}

std::string Stream::DeviceUnusable(const std::string& why) const {
  return StrFormat("stream %p cannot use its device: %s", handle(), why.c_str());
}

SynchronisingScope::SynchronisingScope() {
  if (!strict::Enabled()) return;
  g_synchronising.fetch_add(1);
  ReleaseHeldWork();
}

SynchronisingScope::~SynchronisingScope() {
  if (strict::Enabled()) g_synchronising.fetch_sub(1);
}

void ReleaseHeldWork() {
  std::lock_guard<std::mutex> lock(g_held_streams_mutex);
  for (Stream* stream : g_held_streams) stream->Release();
}

bool FindUnfinishedUseOnAnyStream(const void* begin, size_t bytes, bool written_only, std::string* what) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(begin);
  std::lock_guard<std::mutex> lock(g_held_streams_mutex);
  for (Stream* stream : g_held_streams) {
    MemoryUse use;
    if (stream->FindUnfinishedUse(start, start + bytes, written_only, &use)) {
      *what = StrFormat("%s (%" PRIu64 " bytes at %p, %s by work queued on stream %p that has not finished: the "
                        "program has not synchronised with it)",
                        use.what.c_str(), use.bytes, use.data, use.written ? "written" : "read", stream->handle());
      return true;
    }
  }
  return false;
}

bool FencePassed(const StreamFence& fence) {
  for (const StreamPosition& position : fence) {
    std::shared_ptr<Stream> stream = position.stream.lock();
    if (stream != nullptr && stream->CompletedCount() < position.enqueued) return false;
  }
  return true;
}

bool WaitForFence(const StreamFence& fence) {
  bool waited_for_all = true;
  for (const StreamPosition& position : fence) {
    std::shared_ptr<Stream> stream = position.stream.lock();
    if (stream == nullptr) continue;
    if (stream->IsWorkerThread()) {
      waited_for_all = waited_for_all && stream->CompletedCount() >= position.enqueued;
      continue;
    }
    stream->WaitUntilCompleted(position.enqueued);
  }
  return waited_for_all;
}

}  // namespace pacl::rt
