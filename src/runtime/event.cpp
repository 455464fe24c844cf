// Events: aclrtCreateEvent / aclrtDestroyEvent / aclrtRecordEvent / aclrtQueryEvent / aclrtQueryEventStatus /
// aclrtSynchronizeEvent / aclrtStreamWaitEvent / aclrtEventElapsedTime.
#include "event.h"

#include <mutex>
#include <utility>

#include "acl/acl.h"
#include "runtime_state.h"

namespace pacl::rt {

std::shared_ptr<Event::RecordToken> Event::BeginRecord(const Stream* stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t generation = ++latest_;
  latest_stream_ = stream;
  pending_.insert(generation);
  latest_time_valid_ = false;
  return std::make_shared<RecordToken>(shared_from_this(), generation);
}

uint64_t Event::Latest(const Stream** stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stream != nullptr) *stream = latest_stream_;
  return latest_;
}

bool Event::IsComplete(uint64_t generation) {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_.count(generation) == 0;
}

void Event::WaitFor(uint64_t generation) {
  std::unique_lock<std::mutex> lock(mutex_);
  completed_.wait(lock, [&] { return pending_.count(generation) == 0; });
}

bool Event::LatestCompletionTime(Clock::time_point* time) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!latest_time_valid_) return false;
  *time = latest_time_;
  return true;
}

void Event::Complete(uint64_t generation) {
  const Clock::time_point now = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.erase(generation);
    if (generation == latest_) {
      latest_time_ = now;
      latest_time_valid_ = true;
    }
  }
  completed_.notify_all();
}

}  // namespace pacl::rt

using pacl::rt::Context;
using pacl::rt::Event;
using pacl::rt::Fail;
using pacl::rt::FailNoContext;
using pacl::rt::RuntimeState;
using pacl::rt::State;
using pacl::rt::Stream;

namespace {

// The live event behind handle, or nullptr with a message naming function and param.
std::shared_ptr<Event> FindEvent(const char* function, const char* param, aclrtEvent handle) {
  if (handle == nullptr) {
    Fail(ACL_ERROR_INVALID_PARAM, function, "%s must not be null", param);
    return nullptr;
  }
  RuntimeState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  auto it = state.events.find(handle);
  if (it != state.events.end()) return it->second;
  Fail(ACL_ERROR_INVALID_PARAM, function,
       "%s %p is not a live event (not created by aclrtCreateEvent, or already destroyed)", param, handle);
  return nullptr;
}

// Whether event's latest record has completed (true when it was never recorded); the lookups and checks shared by
// aclrtQueryEvent and aclrtQueryEventStatus.
aclError LatestRecordComplete(const char* function, aclrtEvent event, const void* status, bool* complete) {
  if (status == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, function, "status must not be null");
  std::shared_ptr<Event> found = FindEvent(function, "event", event);
  if (found == nullptr) return ACL_ERROR_INVALID_PARAM;
  *complete = found->IsComplete(found->Latest(nullptr));
  return ACL_SUCCESS;
}

}  // namespace

extern "C" {

aclError aclrtCreateEvent(aclrtEvent* event) {
  static const char* const kFunction = "aclrtCreateEvent";
  if (event == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, kFunction, "event must not be null");
  RuntimeState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (pacl::rt::CurrentContextLocked(state) == nullptr) return FailNoContext(kFunction);
  auto created = std::make_shared<Event>();
  state.events.emplace(created.get(), created);
  *event = created.get();
  return ACL_SUCCESS;
}

aclError aclrtDestroyEvent(aclrtEvent event) {
  static const char* const kFunction = "aclrtDestroyEvent";
  if (event == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, kFunction, "event must not be null");
  RuntimeState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  // A record or wait still queued keeps the event object alive until it has run.
  if (state.events.erase(event) == 0) {
    return Fail(ACL_ERROR_INVALID_PARAM, kFunction,
                "event %p is not a live event (not created by aclrtCreateEvent, or already destroyed)", event);
  }
  return ACL_SUCCESS;
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
  static const char* const kFunction = "aclrtRecordEvent";
  std::shared_ptr<Event> found = FindEvent(kFunction, "event", event);
  if (found == nullptr) return ACL_ERROR_INVALID_PARAM;
  // The task is enqueued before the generation starts, so a refused record leaves the event as it was. The task
  // may run (or, at process exit, be discarded) before the generation exists: then the generation completes as soon
  // as it is created, which is right, since everything enqueued before the record has finished.
  struct RecordSlot {
    std::mutex mutex;
    bool ran = false;
    std::shared_ptr<Event::RecordToken> token;  // completes the generation when released
  };
  auto slot = std::make_shared<RecordSlot>();
  std::shared_ptr<Stream> used;
  aclError error = pacl::rt::EnqueueTaskFor(
      kFunction, stream,
      [slot] {
        std::shared_ptr<Event::RecordToken> token;
        {
          std::lock_guard<std::mutex> lock(slot->mutex);
          slot->ran = true;
          token = std::move(slot->token);
        }
        return ACL_SUCCESS;  // token released here
      },
      &used);
  if (error != ACL_SUCCESS) return error;
  std::shared_ptr<Event::RecordToken> token = found->BeginRecord(used.get());
  std::lock_guard<std::mutex> lock(slot->mutex);
  if (!slot->ran) slot->token = std::move(token);
  return ACL_SUCCESS;
}

aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus* status) {
  pacl::rt::ReleaseHeldWork();  // strict mode: a program that polls for completion gets it
  bool complete = false;
  if (aclError error = LatestRecordComplete("aclrtQueryEvent", event, status, &complete)) return error;
  *status = complete ? ACL_EVENT_STATUS_COMPLETE : ACL_EVENT_STATUS_NOT_READY;
  return ACL_SUCCESS;
}

aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus* status) {
  pacl::rt::ReleaseHeldWork();
  bool complete = false;
  if (aclError error = LatestRecordComplete("aclrtQueryEventStatus", event, status, &complete)) return error;
  *status = complete ? ACL_EVENT_RECORDED_STATUS_COMPLETE : ACL_EVENT_RECORDED_STATUS_NOT_READY;
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeEvent(aclrtEvent event) {
  static const char* const kFunction = "aclrtSynchronizeEvent";
  std::shared_ptr<Event> found = FindEvent(kFunction, "event", event);
  if (found == nullptr) return ACL_ERROR_INVALID_PARAM;
  const Stream* recorded_on = nullptr;
  const uint64_t latest = found->Latest(&recorded_on);
  if (found->IsComplete(latest)) return ACL_SUCCESS;
  if (recorded_on != nullptr && recorded_on->IsWorkerThread()) {
    return Fail(ACL_ERROR_INVALID_PARAM, kFunction,
                "called from a task of stream %p, on which event %p is recorded after it: it would wait for itself",
                recorded_on->handle(), event);
  }
  pacl::rt::SynchronisingScope synchronising;
  found->WaitFor(latest);
  return ACL_SUCCESS;
}

aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
  static const char* const kFunction = "aclrtStreamWaitEvent";
  std::shared_ptr<Event> found = FindEvent(kFunction, "event", event);
  if (found == nullptr) return ACL_ERROR_INVALID_PARAM;
  const uint64_t latest = found->Latest(nullptr);
  // Never recorded, or already complete: nothing to wait for, but the stream must still be valid.
  return pacl::rt::EnqueueTaskFor(
      kFunction, stream,
      [found, latest] {
        found->WaitFor(latest);
        return ACL_SUCCESS;
      },
      nullptr);
}

aclError aclrtEventElapsedTime(float* ms, aclrtEvent startEvent, aclrtEvent endEvent) {
  static const char* const kFunction = "aclrtEventElapsedTime";
  if (ms == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, kFunction, "ms must not be null");
  std::shared_ptr<Event> start = FindEvent(kFunction, "startEvent", startEvent);
  if (start == nullptr) return ACL_ERROR_INVALID_PARAM;
  std::shared_ptr<Event> end = FindEvent(kFunction, "endEvent", endEvent);
  if (end == nullptr) return ACL_ERROR_INVALID_PARAM;
  Event::Clock::time_point start_time, end_time;
  const std::pair<Event*, const char*> events[] = {{start.get(), "startEvent"}, {end.get(), "endEvent"}};
  Event::Clock::time_point* times[] = {&start_time, &end_time};
  for (int i = 0; i < 2; ++i) {
    if (events[i].first->LatestCompletionTime(times[i])) continue;
    const bool recorded = events[i].first->Latest(nullptr) != 0;
    return Fail(ACL_ERROR_INVALID_PARAM, kFunction, "%s %p %s", events[i].second,
                i == 0 ? startEvent : endEvent,
                recorded ? "has not completed yet (synchronise it first)" : "was never recorded (aclrtRecordEvent)");
  }
  *ms = std::chrono::duration<float, std::milli>(end_time - start_time).count();
  return ACL_SUCCESS;
}

}  // extern "C"
