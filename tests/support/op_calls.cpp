#include "op_calls.h"

#include <algorithm>
#include <cstring>

#include "aclnn/opdev/op_errno.h"

namespace opcall {
namespace {

// Filled during static initialisation (each operator's Registration), read after it.
std::vector<const OpInfo*>& RegisteredOps() {
  static std::vector<const OpInfo*>* const ops = new std::vector<const OpInfo*>;  // never destroyed
  return *ops;
}

}  // namespace

Registration::Registration(std::initializer_list<const OpInfo*> ops) {
  for (const OpInfo* op : ops) RegisteredOps().push_back(op);
}

const std::vector<const OpInfo*>& AllOps() {
  // The order of registration is the linker's; the table's is by name, the same in every program.
  static const std::vector<const OpInfo*> sorted = [] {
    std::vector<const OpInfo*> ops = RegisteredOps();
    std::sort(ops.begin(), ops.end(),
              [](const OpInfo* a, const OpInfo* b) { return std::strcmp(a->name, b->name) < 0; });
    return ops;
  }();
  return sorted;
}

const OpInfo* FindOp(const std::string& name) {
  for (const OpInfo* op : AllOps()) {
    if (name == op->name) return op;
  }
  return nullptr;
}

const char* DTypeName(aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT:
      return "FLOAT";
    case ACL_FLOAT16:
      return "FLOAT16";
    case ACL_BF16:
      return "BFLOAT16";
    case ACL_DOUBLE:
      return "DOUBLE";
    case ACL_BOOL:
      return "BOOL";
    case ACL_UINT8:
      return "UINT8";
    case ACL_INT32:
      return "INT32";
    case ACL_INT64:
      return "INT64";
    default:
      return "UNSUPPORTED";
  }
}

aclnnStatus RunPhase2(Phase2Function run, uint64_t workspace_size, aclOpExecutor* executor, aclrtStream stream) {
  void* workspace = nullptr;
  if (workspace_size > 0 && aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    return ACLNN_ERR_INNER;
  }
  aclnnStatus status = run(workspace, workspace_size, executor, stream);
  if (status == ACLNN_SUCCESS) status = aclrtSynchronizeStream(stream);
  if (workspace != nullptr) aclrtFree(workspace);
  return status;
}

aclnnStatus Run(const OpCall& call, aclrtStream stream) {
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus status = call.GetWorkspaceSize(&workspace_size, &executor);
  if (status != ACLNN_SUCCESS) return status;
  return RunPhase2(call.op().phase2, workspace_size, executor, stream);
}

}  // namespace opcall
