// aclOpExecutor: the bound operator call that phase 1 creates and phase 2 runs, its registry, and the public
// executor functions.
//
// NOTE: handles come from the application, which may pass one that was never created, already ran or was
// destroyed. An executor is therefore never reached through the handle alone: every call first looks the pointer up
// in a registry of the executors this library knows (compared as values, never dereferenced when unknown). An
// executor that ran (non-repeatable) or was destroyed releases its kernel at once but keeps its small struct as a
// "tombstone" in a bounded FIFO, so its address cannot be handed to a new executor while it is remembered and a stale
// handle reliably gets "already ran" / "was destroyed" instead of a use-after-free. The kernel is held by a
// shared_ptr that each enqueued task copies, so a run still queued on a stream keeps its kernel (and the parameters
// it captured) alive after the executor is released. All registry state is guarded by one mutex; EnqueueTask is
// called under it, which is safe because the runtime never calls back into this library.
#include <cinttypes>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>

#include "aclnn/acl_meta.h"
#include "aclnn/opdev/op_errno.h"
#include "pacl/error.h"
#include "pacl/op_glue.h"
#include "pacl/runtime.h"

struct aclOpExecutor {
  enum class State {
    kReady,      // created, not run yet (or repeatable: may run again)
    kRan,        // a non-repeatable executor whose run was enqueued: a tombstone
    kDestroyed,  // released by aclDestroyAclOpExecutor: a tombstone
  };

  std::string op_name;
  uint64_t workspace_size = 0;
  std::shared_ptr<const pacl::Kernel> kernel;  // null once the executor is a tombstone
  pacl::rt::DeviceRef device;                  // the device phase 1 bound the call to
  State state = State::kReady;
  bool repeatable = false;
  std::vector<pacl::rt::MemoryUse> memory_uses;  // strict mode: what each run touches, besides the workspace
};

namespace {

using State = aclOpExecutor::State;

// How many released executors stay remembered; beyond it the oldest tombstone is freed and its address forgotten.
constexpr size_t kMaxTombstones = 1024;

struct Registry {
  std::mutex mutex;
  std::unordered_set<const aclOpExecutor*> known;  // live executors and tombstones
  std::deque<aclOpExecutor*> tombstones;           // oldest first
};

// Never destroyed: executors may be released by other static destructors or stream workers during exit.
Registry& GetRegistry() {
  static Registry* registry = new Registry;
  return *registry;
}

// Turns a live executor into a tombstone (registry mutex held) and evicts the oldest tombstone beyond the bound.
void Bury(Registry& registry, aclOpExecutor* executor, State state) {
  executor->state = state;
  executor->kernel.reset();
  registry.tombstones.push_back(executor);
  while (registry.tombstones.size() > kMaxTombstones) {
    aclOpExecutor* oldest = registry.tombstones.front();
    registry.tombstones.pop_front();
    registry.known.erase(oldest);
    delete oldest;
  }
}

aclnnStatus Refuse(aclnnStatus status, const std::string& message) {
  pacl::SetRecentErrorMessage(message);
  return status;
}

// Checks that executor is one this library knows and may still use (registry mutex held); records the failure
// message, prefixed with function, and returns its status otherwise.
aclnnStatus CheckUsable(const Registry& registry, const char* function, const aclOpExecutor* executor) {
  if (executor == nullptr) {
    return Refuse(ACLNN_ERR_PARAM_NULLPTR, pacl::StrFormat("%s: executor must not be null", function));
  }
  if (registry.known.count(executor) == 0) {
    return Refuse(ACLNN_ERR_PARAM_INVALID,
                  pacl::StrFormat("%s: executor %p is not a live executor: it was never created by a "
                                  "GetWorkspaceSize call, or it was released long ago",
                                  function, static_cast<const void*>(executor)));
  }
  if (executor->state == State::kDestroyed) {
    return Refuse(ACLNN_ERR_PARAM_INVALID,
                  pacl::StrFormat("%s: executor %p (created by %sGetWorkspaceSize) was destroyed by "
                                  "aclDestroyAclOpExecutor",
                                  function, static_cast<const void*>(executor), executor->op_name.c_str()));
  }
  if (executor->state == State::kRan) {
    return Refuse(ACLNN_ERR_PARAM_INVALID,
                  pacl::StrFormat("%s: executor %p (created by %sGetWorkspaceSize) already ran; an executor runs "
                                  "once unless aclSetAclOpExecutorRepeatable is called before its first run",
                                  function, static_cast<const void*>(executor), executor->op_name.c_str()));
  }
  return ACLNN_SUCCESS;
}

// The stream task of one run: calls the kernel and hands a failure to the stream as an aclError carrying the same
// code (161002, 561000, ...), with the kernel's message recorded on the worker thread.
aclError RunKernel(const std::shared_ptr<const pacl::Kernel>& kernel, const pacl::KernelContext& context,
                   const std::string& op_name) {
  aclnnStatus status = ACLNN_ERR_INNER;
  try {
    status = (*kernel)(context);
  } catch (const std::exception& error) {
    pacl::SetRecentErrorMessage(pacl::StrFormat("%s: the kernel failed: %s", op_name.c_str(), error.what()));
    return ACLNN_ERR_INNER;
  }
  if (status == ACLNN_SUCCESS) return ACL_SUCCESS;
  if (pacl::RecentErrorMessage().empty()) {
    pacl::SetRecentErrorMessage(pacl::StrFormat("%s: the kernel failed with status %d", op_name.c_str(), status));
  }
  return static_cast<aclError>(status);
}

}  // namespace

namespace pacl {

aclnnStatus CreateExecutor(const char* op_name, uint64_t workspace_size, Kernel kernel, uint64_t* workspace_size_out,
                           aclOpExecutor** executor_out, rt::DeviceRef device) {
  const char* name = op_name != nullptr ? op_name : "";
  if (workspace_size_out == nullptr) {
    return Refuse(ACLNN_ERR_PARAM_NULLPTR, StrFormat("%s: workspaceSize must not be null", name));
  }
  if (executor_out == nullptr) {
    return Refuse(ACLNN_ERR_PARAM_NULLPTR, StrFormat("%s: executor must not be null", name));
  }
  if (!kernel) return Refuse(ACLNN_ERR_INNER, StrFormat("%s: internal error: the executor has no kernel", name));

  aclOpExecutor* executor = nullptr;
  try {
    executor = new aclOpExecutor;
    executor->op_name = name;
    executor->workspace_size = workspace_size;
    executor->device = device;
    executor->kernel = std::make_shared<const Kernel>(std::move(kernel));
    if (rt::StrictMode()) executor->memory_uses = std::move(StrictMemoryUsesOfThisCall());
    Registry& registry = GetRegistry();
    std::lock_guard<std::mutex> lock(registry.mutex);
    registry.known.insert(executor);
  } catch (const std::exception&) {
    delete executor;
    return Refuse(ACLNN_ERR_INNER, StrFormat("%s: out of memory while creating the executor", name));
  }
  *workspace_size_out = workspace_size;
  *executor_out = executor;
  return ACLNN_SUCCESS;
}

aclnnStatus RunExecutor(const char* op_name, void* workspace, uint64_t workspace_size, aclOpExecutor* executor,
                        aclrtStream stream) {
  const char* name = op_name != nullptr ? op_name : "";
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  const aclnnStatus usable = CheckUsable(registry, name, executor);
  if (usable != ACLNN_SUCCESS) return usable;
  if (executor->op_name != name) {
    return Refuse(ACLNN_ERR_PARAM_INVALID,
                  StrFormat("%s: executor was created by %sGetWorkspaceSize, not by %sGetWorkspaceSize", name,
                            executor->op_name.c_str(), name));
  }
  if (workspace == nullptr && executor->workspace_size > 0) {
    return Refuse(ACLNN_ERR_PARAM_NULLPTR,
                  StrFormat("%s: workspace must not be null: the executor needs %" PRIu64 " bytes", name,
                            executor->workspace_size));
  }
  if (workspace_size < executor->workspace_size) {
    return Refuse(ACLNN_ERR_PARAM_INVALID, StrFormat("%s: workspaceSize %" PRIu64 " is smaller than the %" PRIu64
                                                     " bytes GetWorkspaceSize asked for",
                                                     name, workspace_size, executor->workspace_size));
  }

  KernelContext context;
  context.workspace = executor->workspace_size > 0 ? workspace : nullptr;
  context.workspace_size = executor->workspace_size;
  context.device = executor->device;
  aclError enqueued = ACL_SUCCESS;
  try {
    std::shared_ptr<const Kernel> kernel = executor->kernel;
    std::string kernel_op_name = executor->op_name;
    std::vector<rt::MemoryUse> uses;
    if (rt::StrictMode()) {
      uses = executor->memory_uses;
      if (context.workspace != nullptr) {
        uses.push_back({context.workspace, context.workspace_size, true, kernel_op_name + "'s workspace"});
      }
    }
    enqueued = rt::EnqueueTaskOnDevice(
        stream, executor->device.id,
        [kernel, context, kernel_op_name]() {
          KernelContext run_context = context;
          run_context.native_stream = rt::CurrentNativeStream();
          const aclError ran = RunKernel(kernel, run_context, kernel_op_name);
          if (ran != ACL_SUCCESS || run_context.native_stream == nullptr || !rt::DebugSync()) return ran;
          std::string fault;
          const aclError waited = rt::WaitForThisTasksDeviceWork(&fault);
          if (waited == ACL_SUCCESS) return ACL_SUCCESS;
          SetRecentErrorMessage(StrFormat("%s: its device work failed (ACLNN_DEBUG_SYNC=1: each call waits for its "
                                          "own kernels): %s",
                                          kernel_op_name.c_str(), fault.c_str()));
          return static_cast<aclError>(ACLNN_ERR_RUNTIME_ERROR);
        },
        std::move(uses), /*device_ordered=*/true);
  } catch (const std::exception&) {
    return Refuse(ACLNN_ERR_INNER, StrFormat("%s: out of memory while enqueueing the run", name));
  }
  if (enqueued != ACL_SUCCESS) {
    // The runtime recorded why; say which call it broke. The executor did not run and stays usable.
    const std::string reason = RecentErrorMessage();
    return Refuse(ACLNN_ERR_RUNTIME_ERROR,
                  StrFormat("%s: cannot run on stream %p (aclError %d): %s", name, stream, enqueued,
                            reason.empty() ? "the runtime refused the task" : reason.c_str()));
  }
  if (!executor->repeatable) Bury(registry, executor, State::kRan);
  return ACLNN_SUCCESS;
}

}  // namespace pacl

namespace {

// CANN documents 561103 (ACLNN_ERR_INNER_NULLPTR) for a null executor passed to aclSetAclOpExecutorRepeatable and
// aclDestroyAclOpExecutor; phase 2 keeps the usual 161001.
aclnnStatus RefuseNullExecutor(const char* function) {
  return Refuse(ACLNN_ERR_INNER_NULLPTR, pacl::StrFormat("%s: executor must not be null", function));
}

}  // namespace

extern "C" {

aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* executor) {
  if (executor == nullptr) return RefuseNullExecutor("aclSetAclOpExecutorRepeatable");
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  const aclnnStatus usable = CheckUsable(registry, "aclSetAclOpExecutorRepeatable", executor);
  if (usable != ACLNN_SUCCESS) return usable;
  executor->repeatable = true;
  return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* executor) {
  if (executor == nullptr) return RefuseNullExecutor("aclDestroyAclOpExecutor");
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  const char* function = "aclDestroyAclOpExecutor";
  if (executor != nullptr && registry.known.count(executor) != 0 && executor->state == State::kRan) {
    // The run already released it; forget it quietly (CANN programs often destroy after running).
    executor->state = State::kDestroyed;
    return ACLNN_SUCCESS;
  }
  const aclnnStatus usable = CheckUsable(registry, function, executor);
  if (usable != ACLNN_SUCCESS) return usable;
  Bury(registry, executor, State::kDestroyed);
  return ACLNN_SUCCESS;
}

}  // extern "C"
