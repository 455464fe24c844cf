// Devices and contexts: the devices of Devices() (backend.h); contexts are current per thread.
#include <mutex>

#include "acl/acl.h"
#include "pacl/error.h"
#include "pacl/runtime.h"
#include "backend.h"
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
  pacl::rt::DefaultContext& entry = state.default_contexts[deviceId];
  if (entry.context == nullptr) {
    entry.context = pacl::rt::CreateContextLocked(state, deviceId, /*is_default=*/true);
    entry.refs = 0;
  }
  ++entry.refs;
  pacl::rt::SetCurrentContext(entry.context);
  return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId) {
  if (aclError error = CheckDeviceId("aclrtResetDevice", deviceId)) return error;
  RuntimeState& state = State();
  std::vector<std::shared_ptr<Stream>> streams;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    auto entry = state.default_contexts.find(deviceId);
    if (entry == state.default_contexts.end()) return ACL_SUCCESS;  // nothing set: nothing to release
    if (entry->second.refs == 1 && CalledFromTaskOfLocked(state, entry->second.context)) {
      return Fail(ACL_ERROR_INVALID_PARAM, "aclrtResetDevice",
                  "called from a task of the default context's own stream, which would wait for itself");
    }
    if (--entry->second.refs > 0) return ACL_SUCCESS;
    streams = pacl::rt::DestroyContextLocked(state, entry->second.context);
  }
  // Synchronise: queued work runs before the workers stop. Failures die with the context.
  pacl::rt::DrainAndStop(streams);
  // The cached memory goes back to the system.
  const pacl::rt::DeviceEntry& device = pacl::rt::Devices()[static_cast<size_t>(deviceId)];
  device.backend->ReleaseCachedMemory(device.ordinal);
  return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t* deviceId) {
  if (deviceId == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice", "deviceId must not be null");
  RuntimeState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  const Context* context = pacl::rt::CurrentContextLocked(state);
  if (context == nullptr) return FailNoContext("aclrtGetDevice");
  *deviceId = context->device_id;
  return ACL_SUCCESS;
}

aclError aclrtGetDeviceCount(uint32_t* count) {
  if (count == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount", "count must not be null");
  std::string why;
  const size_t devices = pacl::rt::Devices(&why).size();
  if (devices == 0) {
    // CANN reports a machine without devices as an error too; the message says why (e.g. no GPU or driver).
    *count = 0;
    return Fail(ACL_ERROR_RT_NO_DEVICE, "aclrtGetDeviceCount", "there is no device: %s", why.c_str());
  }
  *count = static_cast<uint32_t>(devices);
  return ACL_SUCCESS;
}

aclError aclrtGetRunMode(aclrtRunMode* runMode) {
  if (runMode == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetRunMode", "runMode must not be null");
  *runMode = ACL_HOST;
  return ACL_SUCCESS;
}

const char* aclrtGetSocName(void) {
  std::string why;
  const std::vector<pacl::rt::DeviceEntry>& devices = pacl::rt::Devices(&why);
  if (devices.empty()) {
    Fail(ACL_ERROR_RT_NO_DEVICE, "aclrtGetSocName", "there is no device: %s", why.c_str());
    return nullptr;
  }
  const pacl::rt::DeviceRef device = pacl::rt::CurrentDevice();
  if (static_cast<size_t>(device.id) >= devices.size()) return devices[0].name.c_str();
  return devices[static_cast<size_t>(device.id)].name.c_str();
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
  Context* created = pacl::rt::CreateContextLocked(state, deviceId, /*is_default=*/false);
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
                  static_cast<int>(found->device_id));
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

const char* DeviceKindName(DeviceKind kind) { return KindOf(kind).name; }

const char* DeviceKindKey(DeviceKind kind) { return KindOf(kind).key; }

bool DeviceCanAccess(DeviceRef device, const void* p, std::string* why) {
  const std::vector<DeviceEntry>& devices = Devices();
  if (device.id < 0 || static_cast<size_t>(device.id) >= devices.size()) {
    // No such device (CurrentDevice's answer without one): the run will fail and say so; nothing to check here.
    if (device.kind == DeviceKind::kCpu) return true;
    *why = StrFormat("device %d does not exist", static_cast<int>(device.id));
    return false;
  }
  const DeviceEntry& entry = devices[static_cast<size_t>(device.id)];
  if (entry.kind == DeviceKind::kCpu) {
    // The CPU beside GPUs (ACLNN_DEVICE=cuda,cpu): host code cannot touch their memory.
    for (const DeviceEntry& other : devices) {
      if (other.kind != DeviceKind::kCpu && other.backend->IsDeviceOnlyMemory(p, why)) return false;
    }
  }
  return entry.backend->CanAccess(entry.ordinal, p, why);
}

DeviceRef CurrentDevice() {
  RuntimeState& state = State();
  int32_t device_id = 0;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    device_id = CurrentDeviceIdLocked(state);
  }
  const std::vector<DeviceEntry>& devices = Devices();
  if (static_cast<size_t>(device_id) >= devices.size()) return DeviceRef{DeviceKind::kCpu, device_id};
  return DeviceRef{devices[static_cast<size_t>(device_id)].kind, device_id};
}

}  // namespace pacl::rt
