// An event of the CPU device: a marker recorded on a stream, complete once the stream's worker has run every task
// enqueued before it.
//
// NOTE: each aclrtRecordEvent starts a new generation and enqueues a task holding a token for it; the generation
// completes when that token is destroyed, i.e. right after the task ran, or when a stream shutting down at process
// exit discards it, so no waiter can hang on a record that will never run. Queries, aclrtSynchronizeEvent and
// aclrtEventElapsedTime look at the latest generation only (a re-record supersedes the earlier one, as in CANN and
// CUDA); aclrtStreamWaitEvent waits for the generation that was latest when it was called.
#ifndef PACL_RUNTIME_EVENT_H_
#define PACL_RUNTIME_EVENT_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_set>

namespace pacl::rt {

class Stream;

class Event : public std::enable_shared_from_this<Event> {
 public:
  using Clock = std::chrono::steady_clock;

  // Completes its generation when destroyed.
  class RecordToken {
   public:
    RecordToken(std::shared_ptr<Event> event, uint64_t generation)
        : event_(std::move(event)), generation_(generation) {}
    ~RecordToken() { event_->Complete(generation_); }
    RecordToken(const RecordToken&) = delete;
    RecordToken& operator=(const RecordToken&) = delete;

   private:
    std::shared_ptr<Event> event_;
    uint64_t generation_;
  };

  // A new generation, recorded on stream; the token completes it.
  std::shared_ptr<RecordToken> BeginRecord(const Stream* stream);
  // The latest generation (0: never recorded) and the stream it was recorded on.
  uint64_t Latest(const Stream** stream);
  bool IsComplete(uint64_t generation);
  void WaitFor(uint64_t generation);
  // When the latest generation completed; false if it was never recorded or has not completed.
  bool LatestCompletionTime(Clock::time_point* time);

 private:
  void Complete(uint64_t generation);

  std::mutex mutex_;
  std::condition_variable completed_;
  uint64_t latest_ = 0;
  const Stream* latest_stream_ = nullptr;
  std::unordered_set<uint64_t> pending_;
  bool latest_time_valid_ = false;
  Clock::time_point latest_time_;
};

}  // namespace pacl::rt

#endif  // PACL_RUNTIME_EVENT_H_
