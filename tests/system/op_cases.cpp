#include "system/op_cases.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

namespace systest {

using optest::DeviceTensor;
using optest::Layout;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Relative 2-norm error allowed against the float64 reference. These are sanity bounds (the operator tests check
// precision element by element): a few units of the dtype's epsilon, so an unwritten (NaN) or wrong output fails.
// ResetOutputs' value for integer outputs (indices): no operator writes it.
constexpr double kIntegerFill = -12345.0;

double Tolerance(aclDataType dtype) {
  switch (dtype) {
    case ACL_DOUBLE:
      return 1e-10;
    case ACL_FLOAT:
      return 1e-4;
    case ACL_INT32:  // indices (NsaCompressAttention's topkIndicesOut): exact
    case ACL_INT64:
      return 0.0;
    default:
      return 4.0 * optest::EpsilonOf(dtype);
  }
}

// Filled during static initialisation (each operator's CaseRegistration), read after it.
std::vector<CaseMaker>& RegisteredMakers() {
  static std::vector<CaseMaker>* const makers = new std::vector<CaseMaker>;  // never destroyed
  return *makers;
}

}  // namespace

CaseRegistration::CaseRegistration(std::initializer_list<CaseMaker> makers, const char* registering_file) {
  // ".../src/ops/<op>/test/<op>_cases.cpp" -> "<op>"
  const std::string path = registering_file;
  const size_t ops = path.rfind("src/ops/");
  std::string folder = "?";
  if (ops != std::string::npos) {
    const size_t begin = ops + std::strlen("src/ops/");
    folder = path.substr(begin, path.find('/', begin) - begin);
  }
  for (CaseMaker maker : makers) {
    maker.folder = folder;
    RegisteredMakers().push_back(maker);
  }
}

const std::vector<CaseMaker>& AllCaseMakers() {
  static const std::vector<CaseMaker> sorted = [] {
    std::vector<CaseMaker> makers = RegisteredMakers();
    std::sort(makers.begin(), makers.end(),
              [](const CaseMaker& a, const CaseMaker& b) { return std::strcmp(a.op->name, b.op->name) < 0; });
    return makers;
  }();
  return sorted;
}

const CaseMaker* FindCaseMaker(const std::string& name) {
  for (const CaseMaker& maker : AllCaseMakers()) {
    if (name == maker.op->name) return &maker;
  }
  ADD_FAILURE() << "no conformance cases are registered for " << name;
  return nullptr;
}

std::unique_ptr<OpCase> MakeCase(const std::string& name, aclDataType dtype, uint64_t seed, int variant,
                                 CaseSize size) {
  const CaseMaker* maker = FindCaseMaker(name);
  return maker != nullptr ? maker->make(dtype, seed, variant, size) : nullptr;
}

Layout LayoutFor(int variant, int operand) { return optest::kAllLayouts[(variant + operand) % 3]; }

std::string CaseName(const opcall::OpInfo& op, aclDataType dtype, int variant) {
  return std::string(op.name) + "/" + optest::DTypeName(dtype) + "/v" + std::to_string(variant);
}

std::vector<double> Rounded(std::vector<double> values, aclDataType dtype) {
  return optest::RoundToDType(values, dtype);
}

OpCase::OpCase(std::string name, std::shared_ptr<const CaseInputs> inputs, std::vector<OutputSpec> output_specs,
               MakeCall make_call)
    : name_(std::move(name)),
      inputs_(std::move(inputs)),
      output_specs_(std::move(output_specs)),
      make_call_(std::move(make_call)) {
  for (const OutputSpec& spec : output_specs_)
    outputs_.push_back(DeviceTensor::Output(spec.shape, spec.dtype, spec.layout));
}

bool OpCase::Enqueue(aclrtStream stream, void** workspace) const {
  *workspace = nullptr;
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus status = GetWorkspaceSize(&workspace_size, &executor);
  if (status != ACLNN_SUCCESS) {
    ADD_FAILURE() << name_ << ": phase 1 returned " << status << ": " << optest::RecentErrorMessage();
    return false;
  }
  if (workspace_size > 0 && aclrtMalloc(workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    ADD_FAILURE() << name_ << ": aclrtMalloc of " << workspace_size << " bytes: " << optest::RecentErrorMessage();
    aclDestroyAclOpExecutor(executor);
    *workspace = nullptr;
    return false;
  }
  status = phase2()(*workspace, workspace_size, executor, stream);
  if (status != ACLNN_SUCCESS) {
    ADD_FAILURE() << name_ << ": phase 2 returned " << status << ": " << optest::RecentErrorMessage();
    aclDestroyAclOpExecutor(executor);  // a refused run leaves the executor alive
    return false;
  }
  return true;
}

bool OpCase::RunAndWait(aclrtStream stream) const {
  void* workspace = nullptr;
  bool ok = Enqueue(stream, &workspace);
  const aclError synced = aclrtSynchronizeStream(stream);
  if (synced != ACL_SUCCESS) {
    ADD_FAILURE() << name_ << ": aclrtSynchronizeStream returned " << synced << ": " << optest::RecentErrorMessage();
    ok = false;
  }
  if (workspace != nullptr) aclrtFree(workspace);
  return ok;
}

void OpCase::ResetOutputs() {
  for (DeviceTensor& out : outputs_) {
    const double fill = optest::IsFloatingDType(out.dtype()) ? kNaN : kIntegerFill;
    out.Write(std::vector<double>(static_cast<size_t>(out.size()), fill));
  }
}

std::vector<uint8_t> OpCase::OutputBytes() const {
  std::vector<const DeviceTensor*> tensors;
  for (const DeviceTensor& out : outputs_) tensors.push_back(&out);
  return optest::ConcatenatedBytes(tensors);
}

std::string OpCase::CheckGuards() const {
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const std::string damage = outputs_[i].CheckGuards();
    if (!damage.empty()) return name_ + ": output " + std::to_string(i) + ": " + damage;
  }
  return "";
}

std::string OpCase::CheckAgainstReference() const {
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const double error = optest::RelativeNormError(outputs_[i].Read(), inputs_->expected[i]);
    const double tolerance = Tolerance(outputs_[i].dtype());
    if (!(error <= tolerance)) {
      return name_ + ": output " + std::to_string(i) + " has relative 2-norm error " + std::to_string(error) +
             " against the float64 reference (allowed " + std::to_string(tolerance) + ")";
    }
  }
  return CheckGuards();
}

std::unique_ptr<OpCase> OpCase::Clone() const {
  return std::make_unique<OpCase>(name_, inputs_, output_specs_, make_call_);
}

std::vector<std::unique_ptr<OpCase>> MakeAllCases(uint64_t base_seed, CaseSize size) {
  std::vector<std::unique_ptr<OpCase>> cases;
  int index = 0;
  for (const CaseMaker& maker : AllCaseMakers()) {
    for (aclDataType dtype : maker.dtypes) {
      // The variant (layouts, modes) moves with base_seed too, so different threads run different variants.
      const int variant = static_cast<int>((base_seed + static_cast<uint64_t>(index)) % 6);
      cases.push_back(maker.make(dtype, base_seed * 1000 + static_cast<uint64_t>(index), variant, size));
      ++index;
    }
  }
  return cases;
}

std::vector<std::unique_ptr<OpCase>> MakeOneDTypePerOp(uint64_t base_seed, int rotation, CaseSize size) {
  std::vector<std::unique_ptr<OpCase>> cases;
  int index = 0;
  for (const CaseMaker& maker : AllCaseMakers()) {
    const aclDataType dtype = maker.dtypes[static_cast<size_t>(rotation) % maker.dtypes.size()];
    const int variant = static_cast<int>((base_seed + static_cast<uint64_t>(index)) % 6);
    cases.push_back(maker.make(dtype, base_seed * 1000 + static_cast<uint64_t>(index), variant, size));
    ++index;
  }
  return cases;
}

}  // namespace systest
