#include "runtime_state.h"

#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "backend.h"
#include "pacl/error.h"

namespace pacl::rt {

namespace {

struct CurrentContextRef {
  const void* handle = nullptr;
  uint64_t serial = 0;
};

// Plain data, so it is usable at any point of a thread's life (no destructor ordering to worry about).
thread_local CurrentContextRef t_current_context;

// Stops the worker threads at process exit (or when the library is unloaded: atexit in a shared library is bound
// to it). It is registered when the first stream is created, so it runs before the destructors of the static
// objects that existed then: tasks never run while those are being torn down.
void StopWorkersAtExit() {
  RuntimeState& state = State();
  std::vector<std::shared_ptr<Stream>> streams;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    state.shut_down = true;
    for (auto& entry : state.streams) streams.push_back(entry.second);
    state.streams.clear();
    for (auto& entry : state.contexts) entry.second->default_stream.reset();
  }
  // Work still queued at exit is dropped: the objects it refers to may be gone.
  for (const auto& stream : streams) stream->Shutdown(/*discard_pending=*/true);
}

}  // namespace

bool AllocationRegistry::Find(const void* p, uintptr_t* base, size_t* size, int32_t* device_id) const {
  const uintptr_t address = reinterpret_cast<uintptr_t>(p);
  auto it = blocks_.upper_bound(address);  // first block starting after p
  if (it == blocks_.begin()) return false;
  --it;
  if (address - it->first >= it->second.size) return false;
  *base = it->first;
  *size = it->second.size;
  if (device_id != nullptr) *device_id = it->second.device_id;
  return true;
}

RuntimeState& State() {
  static RuntimeState* const state = new RuntimeState;  // never destroyed, see runtime_state.h
  return *state;
}

Context* CurrentContextLocked(RuntimeState& state) {
  Context* context = FindContextLocked(state, t_current_context.handle);
  if (context == nullptr || context->serial != t_current_context.serial) return nullptr;
  return context;
}

void SetCurrentContext(const Context* context) {
  if (context == nullptr) {
    SetCurrentContextRef(nullptr, 0);
  } else {
    SetCurrentContextRef(context, context->serial);
  }
}

void GetCurrentContextRef(const void** handle, uint64_t* serial) {
  *handle = t_current_context.handle;
  *serial = t_current_context.serial;
}

void SetCurrentContextRef(const void* handle, uint64_t serial) {
  t_current_context.handle = handle;
  t_current_context.serial = serial;
}

Context* FindContextLocked(RuntimeState& state, const void* handle) {
  if (handle == nullptr) return nullptr;
  auto it = state.contexts.find(handle);
  return it == state.contexts.end() ? nullptr : it->second.get();
}

Context* CreateContextLocked(RuntimeState& state, int32_t device_id, bool is_default) {
  auto context = std::make_unique<Context>();
  context->serial = state.next_serial++;
  context->device_id = device_id;
  context->is_default = is_default;
  Context* raw = context.get();
  state.contexts.emplace(raw, std::move(context));
  return raw;
}

std::vector<std::shared_ptr<Stream>> DestroyContextLocked(RuntimeState& state, Context* context) {
  std::vector<std::shared_ptr<Stream>> removed;
  for (auto it = state.streams.begin(); it != state.streams.end();) {
    if (it->second->owner_handle() == context) {
      removed.push_back(std::move(it->second));
      it = state.streams.erase(it);
    } else {
      ++it;
    }
  }
  auto default_entry = state.default_contexts.find(context->device_id);
  if (default_entry != state.default_contexts.end() && default_entry->second.context == context) {
    state.default_contexts.erase(default_entry);
  }
  state.contexts.erase(context);
  return removed;
}

std::vector<std::shared_ptr<Stream>> DestroyAllContextsLocked(RuntimeState& state) {
  std::vector<std::shared_ptr<Stream>> removed;
  for (auto& entry : state.streams) removed.push_back(std::move(entry.second));
  state.streams.clear();
  state.contexts.clear();
  state.default_contexts.clear();
  return removed;
}

std::shared_ptr<Stream> FindUserStreamLocked(RuntimeState& state, const void* handle) {
  if (handle == nullptr) return nullptr;
  auto it = state.streams.find(handle);
  if (it == state.streams.end() || it->second->is_default()) return nullptr;
  return it->second;
}

std::shared_ptr<Stream> CreateStreamLocked(RuntimeState& state, Context* context, bool is_default,
                                           std::string* error, bool adopt, void* external_native) {
  if (state.shut_down) {
    *error = "the runtime has shut down (process exit)";
    return nullptr;
  }
  if (!state.exit_handler_registered) {
    // Without the handler the workers would simply be abandoned at exit; the runtime still works.
    state.exit_handler_registered = std::atexit(StopWorkersAtExit) == 0;
  }
  const std::vector<DeviceEntry>& devices = Devices();
  if (context->device_id < 0 || static_cast<size_t>(context->device_id) >= devices.size()) {
    *error = StrFormat("the context's device %d no longer exists", static_cast<int>(context->device_id));
    return nullptr;
  }
  const DeviceEntry& device = devices[static_cast<size_t>(context->device_id)];
  std::shared_ptr<Stream> stream =
      adopt ? Stream::Adopt(state.next_serial++, context, context->serial, context->device_id, device,
                            external_native, error)
          : Stream::Create(state.next_serial++, context, context->serial, is_default, context->device_id, device,
                           error);
  if (stream != nullptr) state.streams.emplace(stream->handle(), stream);
  return stream;
}

std::shared_ptr<Stream> DefaultStreamLocked(RuntimeState& state, Context* context, std::string* error) {
  if (context->default_stream == nullptr) {
    context->default_stream = CreateStreamLocked(state, context, /*is_default=*/true, error);
  }
  return context->default_stream;
}

std::vector<std::shared_ptr<Stream>> AllStreamsLocked(RuntimeState& state) {
  std::vector<std::shared_ptr<Stream>> streams;
  streams.reserve(state.streams.size());
  for (const auto& entry : state.streams) streams.push_back(entry.second);
  std::sort(streams.begin(), streams.end(), [](const std::shared_ptr<Stream>& a, const std::shared_ptr<Stream>& b) {
    return a->serial() < b->serial();
  });
  return streams;
}

void DrainAndStop(const std::vector<std::shared_ptr<Stream>>& streams) {
  for (const auto& stream : streams) stream->Shutdown(/*discard_pending=*/false);
}

void WaitForAllStreams() {
  // The fence takes every busy stream's count first, so work enqueued while we wait on one stream does not delay us.
  WaitForFence(PendingWorkFence());
}

size_t MachineMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return SIZE_MAX / 2;
  const unsigned long long bytes = static_cast<unsigned long long>(pages) * static_cast<unsigned long long>(page_size);
  return bytes > SIZE_MAX / 2 ? SIZE_MAX / 2 : static_cast<size_t>(bytes);
}

StreamFence PendingWorkFence() {
  RuntimeState& state = State();
  std::vector<std::shared_ptr<Stream>> streams;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    streams = AllStreamsLocked(state);
  }
  StreamFence fence;
  for (const auto& stream : streams) {
    const uint64_t enqueued = stream->EnqueuedCount();
    if (stream->CompletedCount() < enqueued) fence.push_back(StreamPosition{stream, enqueued});
  }
  return fence;
}

aclError Fail(aclError code, const char* function, const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int length = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string detail;
  if (length > 0) {
    detail.resize(static_cast<size_t>(length) + 1);
    std::vsnprintf(&detail[0], detail.size(), format, args);
    detail.resize(static_cast<size_t>(length));
  }
  va_end(args);
  SetRecentErrorMessage(std::string(function) + ": " + detail);
  return code;
}

aclError FailNoContext(const char* function) {
  return Fail(ACL_ERROR_RT_CONTEXT_NULL, function,
              "the calling thread has no current context (call aclrtSetDevice or aclrtSetCurrentContext first)");
}

aclError CheckDeviceId(const char* function, int32_t device_id) {
  std::string why;
  const std::vector<DeviceEntry>& devices = Devices(&why);
  if (device_id >= 0 && static_cast<size_t>(device_id) < devices.size()) return ACL_SUCCESS;
  if (devices.empty()) {
    return Fail(ACL_ERROR_RT_NO_DEVICE, function, "deviceId (%d) is invalid: there is no device (%s)", device_id,
                why.c_str());
  }
  std::string list;
  for (size_t i = 0; i < devices.size(); ++i) {
    list += StrFormat("%s%zu: %s", i == 0 ? "" : "; ", i, devices[i].name.c_str());
  }
  return Fail(ACL_ERROR_RT_INVALID_DEVICEID, function, "deviceId (%d) is invalid: the devices are %s", device_id,
              list.c_str());
}

int32_t CurrentDeviceIdLocked(RuntimeState& state) {
  const Context* context = CurrentContextLocked(state);
  return context != nullptr ? context->device_id : 0;
}

}  // namespace pacl::rt
