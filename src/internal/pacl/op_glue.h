// The shared glue of the two-phase aclnn entry points (libnnopbase): argument checks with CANN's status codes and
// messages, executor creation in phase 1, and the checked run of phase 2.
//
//   aclnnStatus aclnnFooGetWorkspaceSize(const aclTensor* x, ..., uint64_t* workspaceSize, aclOpExecutor** executor) {
//     pacl::OpChecker check("aclnnFoo");
//     if (!check.Tensor(x, "x") || !check.OutPointers(workspaceSize, executor)) return check.status();
//     if (!check.Rank(x->desc, "x", 4)) return check.status();
//     FooParams params = ...;                       // plain data, copies of the TensorDescs
//     return pacl::CreateExecutor("aclnnFoo", 0, [params](void* workspace) { return RunFoo(params, workspace); },
//                                 workspaceSize, executor);
//   }
//   aclnnStatus aclnnFoo(void* workspace, uint64_t size, aclOpExecutor* executor, aclrtStream stream) {
//     return pacl::RunExecutor("aclnnFoo", workspace, size, executor, stream);
//   }
#ifndef PACL_OP_GLUE_H_
#define PACL_OP_GLUE_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>

#include "aclnn/acl_meta.h"
#include "aclnn/opdev/op_errno.h"
#include "pacl/export.h"
#include "pacl/tensor.h"

namespace pacl {

// Validates the arguments of one aclnn call. Each check returns true when the rule holds; the first failure sets
// status() and the thread's recent error message, "<op>: <what>", and later checks then return false at once.
class PACL_INTERNAL_API OpChecker {
 public:
  explicit OpChecker(const char* op_name) : op_name_(op_name) {}

  // 161001 when p is null: "<op>: <param> must not be null".
  bool NotNull(const void* p, const char* param);
  // The two phase-1 out-pointers.
  bool OutPointers(const uint64_t* workspace_size, aclOpExecutor* const* executor);
  // A required tensor: not null, and its data pointer not null when it has elements (161001).
  bool Tensor(const aclTensor* t, const char* param);
  // 161002 unless t has the given rank.
  bool Rank(const TensorDesc& t, const char* param, int rank);
  // 161002 unless t's dtype is one of allowed.
  bool DType(const TensorDesc& t, const char* param, std::initializer_list<aclDataType> allowed);
  // 161002 unless a and b have the same dtype / the same view shape.
  bool SameDType(const TensorDesc& a, const char* a_param, const TensorDesc& b, const char* b_param);
  bool SameShape(const TensorDesc& a, const char* a_param, const TensorDesc& b, const char* b_param);
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
};

// The work of one validated call: runs on the stream's worker thread with the caller's workspace (at least the
// size phase 1 asked for; nullptr when that size is 0) and returns ACLNN_SUCCESS or a failure (message set).
using Kernel = std::function<aclnnStatus(void* workspace)>;

// Phase 1's last step: stores workspace_size in *workspace_size_out and a new executor in *executor_out.
// Returns 161001 if either out-pointer is null.
PACL_INTERNAL_API aclnnStatus CreateExecutor(const char* op_name, uint64_t workspace_size, Kernel kernel,
                                             uint64_t* workspace_size_out, aclOpExecutor** executor_out);

// Phase 2: checks the executor (not null 161001; created by op_name, live and not already run unless repeatable:
// 161002), the workspace (null while phase 1 asked for bytes: 161001; workspace_size smaller than asked: 161002),
// then enqueues the kernel on stream (runtime failure: 361001) and returns without waiting. A non-repeatable
// executor is released once its run is enqueued; a second run of it fails with 161002, never touches freed memory.
PACL_INTERNAL_API aclnnStatus RunExecutor(const char* op_name, void* workspace, uint64_t workspace_size,
                                          aclOpExecutor* executor, aclrtStream stream);

}  // namespace pacl

#endif  // PACL_OP_GLUE_H_
