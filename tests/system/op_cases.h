// One ready-to-run call of each aclnn operator, in each of its dtypes, for the conformance suite and the
// whole-library tests (concurrency, lifecycle): random inputs in device memory, NaN-prefilled outputs with guard
// bytes, the call of the operator-call table (op_calls.h) bound to them, and the float64 reference of the outputs.
// Public API only (plus the test harness of tests/support/).
//
// Filled by registration: each operator's src/ops/<op>/test/<op>_cases.cpp registers a CaseMaker per aclnn function
// (const CaseRegistration kRegistration({...}) at namespace scope; pacl_op_cases is linked whole).
#ifndef PACL_TESTS_SYSTEM_OP_CASES_H_
#define PACL_TESTS_SYSTEM_OP_CASES_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "op_calls.h"
#include "op_test_util.h"

namespace systest {

// How big a case is. kSmall: a few thousand elements, for loops that repeat a call many times. kConcurrency: large
// enough that every kernel splits its work into several ParallelFor chunks (so the OpenMP path runs), small enough
// that the whole suite stays fast under the sanitizers.
enum class CaseSize { kSmall, kConcurrency };

// The inputs of a case: tensors (and host arrays) that the operator only reads, so several cases (and threads) may
// share them. Built once, never modified.
struct CaseInputs {
  std::vector<optest::DeviceTensor> tensors;
  std::shared_ptr<aclIntArray> int_array;     // NsaCompress's actSeqLen
  std::shared_ptr<aclBoolArray> bool_array;   // GridSampler2DBackward's outputMask
  std::vector<std::vector<double>> expected;  // float64 reference of each output, logical row-major order
};

struct OutputSpec {
  std::vector<int64_t> shape;
  aclDataType dtype;
  optest::Layout layout;
};

// One operator call: shared inputs, its own outputs. Not copyable (it owns device memory); Clone() gives a case with
// the same inputs and fresh outputs.
class OpCase {
 public:
  // The operator call on a case's tensors (an entry of the operator-call table).
  using MakeCall = std::function<opcall::OpCall(const OpCase& c)>;

  OpCase(std::string name, std::shared_ptr<const CaseInputs> inputs, std::vector<OutputSpec> output_specs,
         MakeCall make_call);
  OpCase(const OpCase&) = delete;
  OpCase& operator=(const OpCase&) = delete;

  const std::string& name() const { return name_; }
  const CaseInputs& inputs() const { return *inputs_; }
  aclTensor* input(size_t i) const { return inputs_->tensors[i].get(); }
  aclTensor* output(size_t i) const { return outputs_[i].get(); }
  const std::vector<optest::DeviceTensor>& outputs() const { return outputs_; }
  opcall::OpCall call() const { return make_call_(*this); }
  opcall::Phase2Function phase2() const { return call().op().phase2; }

  // Phase 1 (aclnnXxxGetWorkspaceSize) on this case's tensors.
  aclnnStatus GetWorkspaceSize(uint64_t* workspace_size, aclOpExecutor** executor) const {
    return opcall::GetWorkspaceSize(call(), workspace_size, executor);
  }
  // Phase 1, then phase 2 on stream with a workspace that the caller keeps until the stream is synchronised
  // (*workspace: null when none is needed). Records a gtest failure and returns false on any error.
  bool Enqueue(aclrtStream stream, void** workspace) const;
  // Enqueue + aclrtSynchronizeStream + aclrtFree of the workspace.
  bool RunAndWait(aclrtStream stream) const;

  // Sets every output element back to NaN (integer outputs: -12345; aclrtMemcpy: waits for the work queued on every
  // stream).
  void ResetOutputs();
  // The outputs' element bytes, one output after the other.
  std::vector<uint8_t> OutputBytes() const;
  // "" when every output is within the dtype's tolerance of the float64 reference (relative 2-norm error) and no
  // guard byte was touched, else what is wrong.
  std::string CheckAgainstReference() const;
  // "" when no guard byte around or between the outputs' elements was touched.
  std::string CheckGuards() const;

  std::unique_ptr<OpCase> Clone() const;

 private:
  std::string name_;
  std::shared_ptr<const CaseInputs> inputs_;
  std::vector<OutputSpec> output_specs_;
  std::vector<optest::DeviceTensor> outputs_;
  MakeCall make_call_;
};

// How the cases of one aclnn function are made: a case in dtype with inputs drawn from seed; layouts vary with
// variant (contiguous, transposed, padded views), and so do the modes of the operators that have them.
struct CaseMaker {
  const opcall::OpInfo* op;         // the function, as the operator-call table names it
  std::vector<aclDataType> dtypes;  // every dtype it accepts
  std::unique_ptr<OpCase> (*make)(aclDataType dtype, uint64_t seed, int variant, CaseSize size);
  std::string folder = "";  // the operator's folder under src/ops ("grid_sampler2d"), set by the registration
};

// Adds an operator's case makers; its <op>_cases.cpp holds one, at namespace scope. The operator's folder is taken
// from the path of the file that registers (src/ops/<op>/test/<op>_cases.cpp): its outputs' digests live there.
class CaseRegistration {
 public:
  CaseRegistration(std::initializer_list<CaseMaker> makers, const char* registering_file = __builtin_FILE());
};

// Every registered maker, ordered by the function's name.
const std::vector<CaseMaker>& AllCaseMakers();
// The maker of the function called name ("ScaledMaskedSoftmax"); fails the test (and returns nullptr) when none.
const CaseMaker* FindCaseMaker(const std::string& name);

// A case of the function `name` in dtype (FindCaseMaker, then its make); nullptr when none.
std::unique_ptr<OpCase> MakeCase(const std::string& name, aclDataType dtype, uint64_t seed, int variant,
                                 CaseSize size);

// For the makers: the layout of a case's operand number `operand` in variant; the case's name,
// "<op>/<dtype>/v<variant>"; a vector rounded to dtype.
optest::Layout LayoutFor(int variant, int operand);
std::string CaseName(const opcall::OpInfo& op, aclDataType dtype, int variant);
std::vector<double> Rounded(std::vector<double> values, aclDataType dtype);

// One case per operator and dtype, seeds derived from base_seed.
std::vector<std::unique_ptr<OpCase>> MakeAllCases(uint64_t base_seed, CaseSize size);
// One case per operator, in its dtype number `rotation` (modulo its dtype count): rotations 0 to 3 together cover
// every operator and dtype (no operator has more than four).
std::vector<std::unique_ptr<OpCase>> MakeOneDTypePerOp(uint64_t base_seed, int rotation, CaseSize size);

}  // namespace systest

#endif  // PACL_TESTS_SYSTEM_OP_CASES_H_
