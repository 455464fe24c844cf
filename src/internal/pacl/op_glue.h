// The shared glue of the two-phase aclnn entry points (libnnopbase): argument checks with CANN's status codes and
// messages, executor creation in phase 1, and the checked run of phase 2.
//
//   aclnnStatus aclnnFooGetWorkspaceSize(const aclTensor* x, ..., uint64_t* workspaceSize, aclOpExecutor** executor) {
//     pacl::OpChecker check("aclnnFoo");
//     if (!check.Tensor(x, "x") || !check.OutPointers(workspaceSize, executor)) return check.status();
//     if (!check.Rank(x->desc, "x", 4)) return check.status();
//     FooParams params = ...;                       // plain data, copies of the TensorDescs
//     return pacl::BindImplementation("aclnnFoo", x->desc.dtype, params, workspaceSize, executor);
//                                                   // the first implementation for the current device
//   }
//   aclnnStatus aclnnFoo(void* workspace, uint64_t size, aclOpExecutor* executor, aclrtStream stream) {
//     return pacl::RunExecutor("aclnnFoo", workspace, size, executor, stream);
//   }
#ifndef PACL_OP_GLUE_H_
#define PACL_OP_GLUE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "aclnn/acl_meta.h"
#include "aclnn/opdev/op_errno.h"
#include "pacl/export.h"
#include "pacl/runtime.h"
#include "pacl/tensor.h"

namespace pacl {

// Validates the arguments of one aclnn call. Each check returns true when the rule holds; the first failure sets
// status() and the thread's recent error message, "<op>: <what>", and later checks then return false at once.
class PACL_INTERNAL_API OpChecker {
 public:
  // Starts a phase 1: in strict mode, the memory uses recorded on this thread (StrictMemoryUsesOfThisCall) restart.
  explicit OpChecker(const char* op_name);

  // 161001 when p is null: "<op>: <param> must not be null".
  bool NotNull(const void* p, const char* param);
  // The two phase-1 out-pointers.
  bool OutPointers(const uint64_t* workspace_size, aclOpExecutor* const* executor);
  // A required tensor: not null, and its data pointer not null when it has elements (161001); data not in memory
  // that aclrtFree released (161002); on a device with memory of its own (a GPU), data must be that device's memory
  // (161002, saying what it is instead).
  bool Tensor(const aclTensor* t, const char* param);
  // 161002 unless t has the given rank.
  bool Rank(const TensorDesc& t, const char* param, int rank);
  // 161002 unless t's dtype is one of allowed.
  bool DType(const TensorDesc& t, const char* param, std::initializer_list<aclDataType> allowed);
  // 161002 unless a and b have the same dtype / the same view shape.
  bool SameDType(const TensorDesc& a, const char* a_param, const TensorDesc& b, const char* b_param);
  bool SameShape(const TensorDesc& a, const char* a_param, const TensorDesc& b, const char* b_param);
  // 161002 unless t has exactly the shape dims: "<param> must be <n>-D, got shape [...]" for another rank, else
  // "<param> must have shape <meaning> = [dims], got [...]" (meaning: "[T of query, N of query, 8]").
  bool Shape(const TensorDesc& t, const char* param, std::initializer_list<int64_t> dims, const char* meaning);
  // 161002 unless t's format is ND or another plain (non-private) layout: ND, NCHW, NHWC, NC, NCL, NCDHW, NDHWC, HWCN.
  bool PlainFormat(const TensorDesc& t, const char* param);
  // 161002 unless the output view t has no two elements sharing memory (TensorDesc::ElementsAreDistinct).
  bool DistinctOutputElements(const TensorDesc& t, const char* param);
  // 161002 with "<op>: " + the formatted message unless ok.
  bool Check(bool ok, const char* format, ...) __attribute__((format(printf, 3, 4)));

  // Records a failure with any status; returns that status.
  aclnnStatus Fail(aclnnStatus status, const std::string& message);

  bool ok() const { return status_ == ACLNN_SUCCESS; }
  aclnnStatus status() const { return status_; }
  const char* op_name() const { return op_name_; }

 private:
  const char* op_name_;
  aclnnStatus status_ = ACLNN_SUCCESS;
  bool device_known_ = false;  // device_ is read once, at the first tensor
  rt::DeviceRef device_;
};

// Strict mode (docs/strict_mode.md): the device memory the current phase 1 on this thread has seen, each tensor's
// storage from its data pointer, outputs (those passed to DistinctOutputElements) marked written. CreateExecutor
// takes them for the executor's runs.
std::vector<rt::MemoryUse>& StrictMemoryUsesOfThisCall();

// What a kernel runs with.
struct KernelContext {
  void* workspace = nullptr;    // the caller's workspace: at least the bytes phase 1 asked for; nullptr when 0
  uint64_t workspace_size = 0;  // the bytes phase 1 asked for
  void* native_stream = nullptr;  // the device's stream (cudaStream_t); nullptr on the CPU, whose kernels run on
                                  // the aclrtStream's worker thread
  rt::DeviceRef device;           // the device the call was bound to in phase 1
};

// The work of one validated call: runs in stream order with the context above and returns ACLNN_SUCCESS or a
// failure (message set).
using Kernel = std::function<aclnnStatus(const KernelContext& context)>;

// One way to run an operator on one kind of device: an entry of its implementation list (oneDNN's implementation
// lists; CANN's op_api picks its kernel per chip in phase 1). Phase 1 checks the arguments once for every device,
// then takes the first entry for the current device that supports the call.
template <class Params>
struct Implementation {
  const char* name;            // "cpu", "cuda-atomic": for messages and tests
  bool deterministic;          // the same bits on every run; skipped when ACL_OPT_DETERMINISTIC is on
  bool (*supports)(const Params& params);  // nullptr: every call phase 1 accepts
  uint64_t (*plan)(Params* params);        // fills the device's part of params (workspace layout); returns the
                                           // workspace bytes; nullptr: none needed
  aclnnStatus (*run)(const Params& params, const KernelContext& context);
};

// The implementations of one aclnn function, device by device. Each kind of device contributes its entries, in
// order of preference, from its own folder of the operator (cpu/<op>_cpu_impls.cpp, cuda/<op>_cuda_impls.cpp)
// through an ImplementationFragment at namespace scope, so a device is added without editing a shared list (as
// oneDNN keeps its GPU lists apart from the CPU's). Filled while libopapi is loaded, read-only afterwards.
template <class Params>
class ImplementationList {
 public:
  struct Fragment {
    const char* device;  // the registry key of the kind of device: "cpu", "cuda"
    const Implementation<Params>* entries;
    size_t count;
  };
  void Add(const Fragment& fragment) { fragments_.push_back(fragment); }
  const std::vector<Fragment>& fragments() const { return fragments_; }

 private:
  std::vector<Fragment> fragments_;
};

// The list of the aclnn function whose parameters are Params (every function has a parameter type of its own).
template <class Params>
ImplementationList<Params>& ImplementationsOf() {
  static ImplementationList<Params>* const list = new ImplementationList<Params>;  // never destroyed
  return *list;
}

// Adds one kind of device's entries to the list of Params' function:
//   const ImplementationFragment<ForwardParams> kForwardOnCpu("cpu", kForwardEntries);
template <class Params>
class ImplementationFragment {
 public:
  template <size_t N>
  ImplementationFragment(const char* device, const Implementation<Params> (&entries)[N]) {
    ImplementationsOf<Params>().Add({device, entries, N});
  }
};

// Phase 1's last step: stores workspace_size in *workspace_size_out and a new executor in *executor_out.
// Returns 161001 if either out-pointer is null.
PACL_INTERNAL_API aclnnStatus CreateExecutor(const char* op_name, uint64_t workspace_size, Kernel kernel,
                                             uint64_t* workspace_size_out, aclOpExecutor** executor_out,
                                             rt::DeviceRef device = rt::CurrentDevice());

// Phase 2: checks the executor (not null 161001; created by op_name, live and not already run unless repeatable:
// 161002), the workspace (null while phase 1 asked for bytes: 161001; workspace_size smaller than asked: 161002),
// then enqueues the kernel on stream (runtime failure: 361001) and returns without waiting. A non-repeatable
// executor is released once its run is enqueued; a second run of it fails with 161002, never touches freed memory.
PACL_INTERNAL_API aclnnStatus RunExecutor(const char* op_name, void* workspace, uint64_t workspace_size,
                                          aclOpExecutor* executor, aclrtStream stream);

// Adapters for the entries of CPU kernels written as Run(params, workspace) with a workspace plan member:
//   {"cpu", /*deterministic=*/true, nullptr, PlanInto<FooParams, PlanFooWorkspace>,
//    RunWithWorkspace<FooParams, RunFooCpu>}
template <class Params, aclnnStatus (*kKernel)(const Params&, void*)>
aclnnStatus RunWithWorkspace(const Params& params, const KernelContext& context) {
  return kKernel(params, context.workspace);
}
template <class Params, auto kPlanner>
uint64_t PlanInto(Params* params) {
  params->workspace = kPlanner(*params);
  return params->workspace.bytes;
}

// The device phase 1 binds to, and whether it must pick a deterministic implementation.
struct BindingTarget {
  rt::DeviceRef device;
  bool deterministic_only = true;
};
PACL_INTERNAL_API BindingTarget CurrentBindingTarget();

// 161002: "<op>: no implementation for <dtype> on device <id> (<kind>)" (what an operator without a kernel for the
// current device, or for that dtype on it, returns); skipped_nondeterministic adds that one was passed over because
// ACL_OPT_DETERMINISTIC is on.
PACL_INTERNAL_API aclnnStatus FailNoImplementation(const char* op_name, aclDataType dtype, const BindingTarget& target,
                                                   bool skipped_nondeterministic);

// Phase 1's last step: of the implementation list of Params' function, the first entry for the current device (and
// deterministic when that is required) whose supports() accepts params plans its workspace and becomes the kernel
// of a new executor (CreateExecutor). dtype names the call in the failure message when no entry fits.
template <class Params>
aclnnStatus BindImplementation(const char* op_name, aclDataType dtype, Params params, uint64_t* workspace_size_out,
                               aclOpExecutor** executor_out) {
  const BindingTarget target = CurrentBindingTarget();
  const char* device = rt::DeviceKindKey(target.device.kind);
  bool skipped_nondeterministic = false;
  for (const auto& fragment : ImplementationsOf<Params>().fragments()) {
    if (std::strcmp(fragment.device, device) != 0) continue;
    for (size_t i = 0; i < fragment.count; ++i) {
      const Implementation<Params>& implementation = fragment.entries[i];
      if (implementation.supports != nullptr && !implementation.supports(params)) continue;
      if (target.deterministic_only && !implementation.deterministic) {
        skipped_nondeterministic = true;
        continue;
      }
      const uint64_t workspace_bytes = implementation.plan != nullptr ? implementation.plan(&params) : 0;
      auto run = implementation.run;
      return CreateExecutor(
          op_name, workspace_bytes, [params, run](const KernelContext& context) { return run(params, context); },
          workspace_size_out, executor_out, target.device);
    }
  }
  return FailNoImplementation(op_name, dtype, target, skipped_nondeterministic);
}

}  // namespace pacl

#endif  // PACL_OP_GLUE_H_
