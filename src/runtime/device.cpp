// Devices and contexts: the CPU is device 0; contexts are current per thread.
#include <mutex>

#include "acl/acl.h"
#include "pacl/error.h"
#include "pacl/runtime.h"
#include "cpu/block_cache.h"
#include "runtime_state.h"

using pacl::rt::CheckDeviceId;
using pacl::rt::Context;
using pacl::rt::Fail;
using pacl::rt::FailNoContext;
using pacl::rt::RuntimeState;
using pacl::rt::State;
using pacl::rt::Stream;

namespace {

bool HasStreamRunningOnThisThread(const std::vector<std::shared_ptr<Stream>>& streams) {
  for (const auto& stream : streams) {
    if (stream->IsWorkerThread()) return true;
  }
  return false;
}

// Whether the calling thread is the worker of one of context's streams.
bool CalledFromTaskOfLocked(RuntimeState& state, const Context* context) {
  for (const auto& entry : state.streams) {
    if (entry.second->owner_handle() == context && entry.second->IsWorkerThread()) return true;
  }
  return false;
}

}  // namespace

extern "C" {

aclError aclrtSetDevice(int32_t deviceId) {
  if (aclError error = CheckDeviceId("aclrtSetDevice", deviceId)) return error;
  RuntimeState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (state.default_context == nullptr) {
    state.default_context = pacl::rt::CreateContextLocked(state, /*is_default=*/true);
    state.default_context_refs = 0;
  }
  ++state.default_context_refs;
  pacl::rt::SetCurrentContext(state.default_context);
  return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId) {
  if (aclError error = CheckDeviceId("aclrtResetDevice", deviceId)) return error;
  RuntimeState& state = State();
  std::vector<std::shared_ptr<Stream>> streams;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (state.default_context == nullptr) return ACL_SUCCESS;  // nothing set: nothing to release
    if (state.default_context_refs == 1 && CalledFromTaskOfLocked(state, state.default_context)) {
      return Fail(ACL_ERROR_INVALID_PARAM, "aclrtResetDevice",
                  "called from a task of the default context's own stream, which would wait for itself");
    }
    if (--state.default_context_refs > 0) return ACL_SUCCESS;
    streams = pacl::rt::DestroyContextLocked(state, state.default_context);
  }
  // Synchronise: queued work runs before the workers stop. Failures die with the context.
  pacl::rt::DrainAndStop(streams);
  pacl::rt::cpu::DeviceBlockCache().ReleaseIdle();  // the cached memory goes back to the system
  return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t* deviceId) {
  if (deviceId == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice", "deviceId must not be null");
  RuntimeState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (pacl::rt::CurrentContextLocked(state) == nullptr) return FailNoContext("aclrtGetDevice");
  *deviceId = pacl::rt::kOnlyDeviceId;
  return ACL_SUCCESS;
}

aclError aclrtGetDeviceCount(uint32_t* count) {
  if (count == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount", "count must not be null");
  *count = 1;
  return ACL_SUCCESS;
}

aclError aclrtGetRunMode(aclrtRunMode* runMode) {
  if (runMode == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetRunMode", "runMode must not be null");
  *runMode = ACL_HOST;
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeDevice(void) {
  RuntimeState& state = State();
  std::vector<std::shared_ptr<Stream>> streams;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    streams = pacl::rt::AllStreamsLocked(state);
  }
  if (HasStreamRunningOnThisThread(streams)) {
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeDevice",
                "called from a task running on a stream, which would wait for itself");
  }
  std::vector<uint64_t> counts;
  counts.reserve(streams.size());
  for (const auto& stream : streams) counts.push_back(stream->EnqueuedCount());
  aclError first_error = ACL_SUCCESS;
  for (size_t i = 0; i < streams.size(); ++i) {
    streams[i]->WaitUntilCompleted(counts[i]);
    pacl::rt::StreamFailure failure = streams[i]->TakeFailure();
    if (failure.code == ACL_SUCCESS) continue;
    pacl::SetRecentErrorMessage(failure.message);
    if (first_error == ACL_SUCCESS) first_error = failure.code;
  }
  return first_error;
}

aclError aclrtCreateContext(aclrtContext* context, int32_t deviceId) {
  if (context == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateContext", "context must not be null");
  if (aclError error = CheckDeviceId("aclrtCreateContext", deviceId)) return error;
  RuntimeState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  Context* created = pacl::rt::CreateContextLocked(state, /*is_default=*/false);
  pacl::rt::SetCurrentContext(created);
  *context = created;
  return ACL_SUCCESS;
}

aclError aclrtDestroyContext(aclrtContext context) {
  if (context == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyContext", "context must not be null");
  RuntimeState& state = State();
  std::vector<std::shared_ptr<Stream>> streams;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    Context* found = pacl::rt::FindContextLocked(state, context);
    if (found == nullptr) {
      return Fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyContext",
                  "context %p is not a live context (not created by aclrtCreateContext, or already destroyed)",
                  context);
    }
    if (found->is_default) {
      return Fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyContext",
                  "context %p is the default context of device %d: release it with aclrtResetDevice", context,
                  pacl::rt::kOnlyDeviceId);
    }
    if (CalledFromTaskOfLocked(state, found)) {
      return Fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyContext",
                  "called from a task running on a stream of context %p, which would wait for itself", context);
    }
    streams = pacl::rt::DestroyContextLocked(state, found);
  }
  pacl::rt::DrainAndStop(streams);
  return ACL_SUCCESS;
}

aclError aclrtSetCurrentContext(aclrtContext context) {
  if (context == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtSetCurrentContext", "context must not be null");
  RuntimeState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  Context* found = pacl::rt::FindContextLocked(state, context);
  if (found == nullptr) {
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtSetCurrentContext",
                "context %p is not a live context (not created by aclrtCreateContext or aclrtSetDevice, or already "
                "destroyed)",
                context);
  }
  pacl::rt::SetCurrentContext(found);
  return ACL_SUCCESS;
}

aclError aclrtGetCurrentContext(aclrtContext* context) {
  if (context == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetCurrentContext", "context must not be null");
  RuntimeState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  Context* current = pacl::rt::CurrentContextLocked(state);
  if (current == nullptr) return FailNoContext("aclrtGetCurrentContext");
  *context = current;
  return ACL_SUCCESS;
}

}  // extern "C"

namespace pacl::rt {

const char* DeviceKindName(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu:
      return "CPU";
    case DeviceKind::kCuda:
      return "CUDA";
  }
  return "unknown device";
}

DeviceRef CurrentDevice() {
  // Device 0, the CPU, is the only device of this build; a context always belongs to it.
  return DeviceRef{DeviceKind::kCpu, kOnlyDeviceId};
}

}  // namespace pacl::rt
