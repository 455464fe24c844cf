// Streams: aclrtCreateStream / aclrtDestroyStream / aclrtSynchronizeStream and pacl::rt::EnqueueTask.
#include <mutex>
#include <string>
#include <utility>

#include "acl/acl.h"
#include "backend.h"
#include "pacl/error.h"
#include "pacl/runtime.h"
#include "portable_aclnn/native_stream.h"
#include "runtime_state.h"

using pacl::rt::Context;
using pacl::rt::Fail;
using pacl::rt::FailNoContext;
using pacl::rt::RuntimeState;
using pacl::rt::State;
using pacl::rt::Stream;

namespace {

aclError FailUnknownStream(const char* function, const void* stream) {
  return Fail(ACL_ERROR_INVALID_PARAM, function,
              "stream %p is not a live stream (not created by aclrtCreateStream, or already destroyed)", stream);
}

}  // namespace

extern "C" {

aclError aclrtCreateStream(aclrtStream* stream) {
  if (stream == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream", "stream must not be null");
  RuntimeState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  Context* context = pacl::rt::CurrentContextLocked(state);
  if (context == nullptr) return FailNoContext("aclrtCreateStream");
  std::string error;
  std::shared_ptr<Stream> created = pacl::rt::CreateStreamLocked(state, context, /*is_default=*/false, &error);
  if (created == nullptr) return Fail(ACL_ERROR_RT_INTERNAL_ERROR, "aclrtCreateStream", "%s", error.c_str());
  *stream = const_cast<void*>(created->handle());
  return ACL_SUCCESS;
}

aclError paclrtCreateStreamFromNative(aclrtStream* stream, void* nativeStream) {
  if (stream == nullptr) {
    return Fail(ACL_ERROR_INVALID_PARAM, "paclrtCreateStreamFromNative", "stream must not be null");
  }
  RuntimeState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  Context* context = pacl::rt::CurrentContextLocked(state);
  if (context == nullptr) return FailNoContext("paclrtCreateStreamFromNative");
  const std::vector<pacl::rt::DeviceEntry>& devices = pacl::rt::Devices();
  if (static_cast<size_t>(context->device_id) < devices.size() &&
      devices[static_cast<size_t>(context->device_id)].kind == pacl::rt::DeviceKind::kCpu) {
    return Fail(ACL_ERROR_FEATURE_UNSUPPORTED, "paclrtCreateStreamFromNative",
                "the current device %d is the CPU, which has no native streams (set a CUDA device first)",
                static_cast<int>(context->device_id));
  }
  std::string error;
  std::shared_ptr<Stream> created =
      pacl::rt::CreateStreamLocked(state, context, /*is_default=*/false, &error, /*adopt=*/true, nativeStream);
  if (created == nullptr) {
    return Fail(ACL_ERROR_INVALID_PARAM, "paclrtCreateStreamFromNative", "cannot use native stream %p on device %d: %s",
                nativeStream, static_cast<int>(context->device_id), error.c_str());
  }
  *stream = const_cast<void*>(created->handle());
  return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream) {
  if (stream == nullptr) {
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream",
                "stream must not be null (the default stream is not destroyed by the application)");
  }
  RuntimeState& state = State();
  std::shared_ptr<Stream> found;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    found = pacl::rt::FindUserStreamLocked(state, stream);
    if (found == nullptr) return FailUnknownStream("aclrtDestroyStream", stream);
    if (found->IsWorkerThread()) {
      return Fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream",
                  "stream %p cannot be destroyed by one of its own tasks", stream);
    }
    state.streams.erase(found->handle());
  }
  found->Shutdown(/*discard_pending=*/false);  // drains, then joins the worker
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  RuntimeState& state = State();
  std::shared_ptr<Stream> found;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (stream == nullptr) {
      Context* context = pacl::rt::CurrentContextLocked(state);
      if (context == nullptr) return FailNoContext("aclrtSynchronizeStream");
      found = context->default_stream;
      if (found == nullptr) return ACL_SUCCESS;  // the default stream never received work
    } else {
      found = pacl::rt::FindUserStreamLocked(state, stream);
      if (found == nullptr) return FailUnknownStream("aclrtSynchronizeStream", stream);
    }
  }
  if (found->IsWorkerThread()) {
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeStream",
                "called from a task running on stream %p, which would wait for itself", found->handle());
  }
  found->WaitUntilCompleted(found->EnqueuedCount());
  pacl::rt::StreamFailure failure = found->TakeFailure();
  if (failure.code != ACL_SUCCESS) pacl::SetRecentErrorMessage(failure.message);
  return failure.code;
}

}  // extern "C"

namespace pacl::rt {

aclError EnqueueTask(aclrtStream stream, Task task) {
  return EnqueueTaskFor("pacl::rt::EnqueueTask", stream, std::move(task), nullptr);
}

aclError EnqueueTaskOnDevice(aclrtStream stream, int32_t device_id, Task task, std::vector<MemoryUse> uses,
                             bool device_ordered) {
  return EnqueueTaskFor("pacl::rt::EnqueueTask", stream, std::move(task), nullptr, device_id, std::move(uses),
                        device_ordered);
}

aclError EnqueueTaskFor(const char* function, aclrtStream stream, Task task, std::shared_ptr<Stream>* used,
                        int32_t expected_device, std::vector<MemoryUse> uses, bool device_ordered) {
  if (!task) return Fail(ACL_ERROR_INVALID_PARAM, function, "task must not be empty");
  RuntimeState& state = State();
  std::shared_ptr<Stream> found;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (state.shut_down) {
      return Fail(ACL_ERROR_RT_INTERNAL_ERROR, function, "the runtime has shut down (process exit)");
    }
    if (stream == nullptr) {
      Context* context = CurrentContextLocked(state);
      if (context == nullptr) return FailNoContext(function);
      std::string error;
      found = DefaultStreamLocked(state, context, &error);
      if (found == nullptr) return Fail(ACL_ERROR_RT_INTERNAL_ERROR, function, "%s", error.c_str());
    } else {
      found = FindUserStreamLocked(state, stream);
      if (found == nullptr) return FailUnknownStream(function, stream);
    }
  }
  if (expected_device >= 0 && found->device_id() != expected_device) {
    return Fail(ACL_ERROR_RT_STREAM_CONTEXT, function,
                "stream %p belongs to device %d, but the work is for device %d (set that device, or use one of its "
                "streams)",
                found->handle(), static_cast<int>(found->device_id()), static_cast<int>(expected_device));
  }
  if (!found->Enqueue(std::move(task), std::move(uses), device_ordered)) {
    return Fail(ACL_ERROR_INVALID_PARAM, function, "stream %p is being destroyed", found->handle());
  }
  if (found->adopted()) {
    // The task has run on this thread: its failure is this call's (device faults still surface when the program
    // synchronises).
    StreamFailure failure = found->TakeFailure();
    if (failure.code != ACL_SUCCESS) return Fail(failure.code, function, "%s", failure.message.c_str());
  }
  if (used != nullptr) *used = std::move(found);
  return ACL_SUCCESS;
}

}  // namespace pacl::rt
