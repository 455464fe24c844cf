// The operator-call table: each aclnn operator's call as plain data (its operands and attributes), with one function
// that makes the phase-1 call for any of them and one that runs the whole CANN sequence. The operator tests, the
// conformance and whole-library tests, the large-tensor tests, the parity runners, the benchmark, the demo and the
// fuzzers all call the operators through it, so they exercise the same binding of arguments on every device (the
// idea of XNNPACK's testers and ggml's test-backend-ops). Public API only; no test framework. (The CANN-style sample
// program calls the API directly: it shows users how to write such code.)
//
// The table is filled by registration: each operator's folder has src/ops/<op>/test/<op>_calls.{h,cpp}, which
// define one argument struct per aclnn function (its phase-1 arguments in the API's order, under the API's names in
// snake case) and register it:
//
//   struct GridSampler2D {                                  // <op>_calls.h, namespace opcall
//     const aclTensor* input = nullptr;  ...
//     static const OpInfo& Info();                          // {"GridSampler2D", aclnnGridSampler2D}
//     aclnnStatus Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const;
//   };
//   const Registration kRegistration({&GridSampler2D::Info(), &GridSampler2DBackward::Info()});  // <op>_calls.cpp
//
// Any such struct converts to an OpCall. (pacl_op_calls is linked whole, so every registration is in every program
// that uses the table: tests/CMakeLists.txt.)
#ifndef PACL_TESTS_SUPPORT_OP_CALLS_H_
#define PACL_TESTS_SUPPORT_OP_CALLS_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"

namespace opcall {

// Phase 2 of an operator: aclnnXxx(workspace, workspaceSize, executor, stream).
using Phase2Function = aclnnStatus (*)(void*, uint64_t, aclOpExecutor*, aclrtStream);

// One aclnn operator (a forward or a backward function pair).
struct OpInfo {
  const char* name;       // without the "aclnn" prefix: "GridSampler2DBackward"
  Phase2Function phase2;  // aclnnGridSampler2DBackward
};

// Adds operators to the table; an operator's <op>_calls.cpp holds one, at namespace scope.
class Registration {
 public:
  Registration(std::initializer_list<const OpInfo*> ops);
};

// Every registered operator, ordered by name.
const std::vector<const OpInfo*>& AllOps();
// The registered operator called name ("GridSampler2D"); nullptr when there is none.
const OpInfo* FindOp(const std::string& name);

// One operator call: its operator and its phase 1 bound to the arguments. Made from an argument struct.
class OpCall {
 public:
  template <class Args, class = std::enable_if_t<std::is_same_v<decltype(Args::Info()), const OpInfo&>>>
  OpCall(const Args& args)  // NOLINT(google-explicit-constructor): a struct is a call
      : op_(&Args::Info()),
        phase1_([args](uint64_t* workspace_size, aclOpExecutor** executor) {
          return args.Phase1(workspace_size, executor);
        }) {}

  const OpInfo& op() const { return *op_; }
  // aclnnXxxGetWorkspaceSize with the call's arguments.
  aclnnStatus GetWorkspaceSize(uint64_t* workspace_size, aclOpExecutor** executor) const {
    return phase1_(workspace_size, executor);
  }

 private:
  const OpInfo* op_;
  std::function<aclnnStatus(uint64_t*, aclOpExecutor**)> phase1_;
};

// aclnnXxxGetWorkspaceSize with the call's arguments.
inline aclnnStatus GetWorkspaceSize(const OpCall& call, uint64_t* workspace_size, aclOpExecutor** executor) {
  return call.GetWorkspaceSize(workspace_size, executor);
}

// Phase 2 with a workspace of workspace_size bytes from aclrtMalloc (none for 0), then aclrtSynchronizeStream, then
// aclrtFree. ACLNN_ERR_INNER when the workspace cannot be allocated.
aclnnStatus RunPhase2(Phase2Function run, uint64_t workspace_size, aclOpExecutor* executor, aclrtStream stream);

// The whole sequence of CANN's samples: phase 1, then RunPhase2. The first failing status.
aclnnStatus Run(const OpCall& call, aclrtStream stream);

// The dtype's name as the tests, the benchmark and the demo print it: "FLOAT", "FLOAT16", "BFLOAT16", "DOUBLE",
// "BOOL", "UINT8", "INT32", "INT64"; "UNSUPPORTED" for any other.
const char* DTypeName(aclDataType dtype);

// The API takes some optional strings (NsaCompress's layout) as char* but never writes them.
inline char* MutableString(const char* text) { return const_cast<char*>(text); }

}  // namespace opcall

#endif  // PACL_TESTS_SUPPORT_OP_CALLS_H_
