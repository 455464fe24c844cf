// Phase-1 validation of aclnnMultiScaleDeformableAttentionGradGetWorkspaceSize and
// aclnnMultiScaleDeformableAttnFunctionGetWorkspaceSize (spec section 2, "MultiScaleDeformableAttention"): each rule
// has its own test, checking the status code (161001 null, 161002 invalid) and that the message names the function,
// the parameter and the offending value. The rules on the shared inputs run for both operators. A rejected call writes
// nothing. Phase 1 must not read tensor data: a call whose tensors point at unmapped memory still succeeds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_multi_scale_deformable_attention_grad.h"
#include "aclnnop/aclnn_multi_scale_deformable_attn_function.h"
#include "msda/test/msda_calls.h"
#include "op_test_util.h"
#include "phase1_checks.h"

namespace {

using optest::DeviceTensor;
using optest::Layout;
using optest::RawTensor;
using optest::SelfOverlappingView;

constexpr const char* kGradName = "aclnnMultiScaleDeformableAttentionGrad";
constexpr const char* kForwardName = "aclnnMultiScaleDeformableAttnFunction";

// The sizes of one call; the default is valid: two levels (3, 4) and (2, 2), nk = 16.
struct Dims {
  int64_t bs = 2, nk = 16, nh = 2, c = 8, nl = 2, nq = 3, np = 2;
  std::vector<int64_t> Value() const { return {bs, nk, nh, c}; }
  std::vector<int64_t> SpatialShape() const { return {nl, 2}; }
  std::vector<int64_t> LevelStart() const { return {nl}; }
  std::vector<int64_t> Location() const { return {bs, nq, nh, nl, np, 2}; }
  std::vector<int64_t> Attn() const { return {bs, nq, nh, nl, np}; }
  std::vector<int64_t> Out() const { return {bs, nq, nh * c}; }
  std::vector<int64_t> GradOutput(int rank) const { return rank == 4 ? std::vector<int64_t>{bs, nq, nh, c} : Out(); }
};

DeviceTensor Tensor(std::vector<int64_t> shape, aclDataType dtype = ACL_FLOAT) {
  const std::vector<double> values(static_cast<size_t>(optest::NumElements(shape)), 1.0);
  return DeviceTensor(std::move(shape), dtype, Layout::kContiguous, values);
}
DeviceTensor Output(std::vector<int64_t> shape, aclDataType dtype = ACL_FLOAT) {
  return DeviceTensor::Output(std::move(shape), dtype, Layout::kContiguous);
}

// Every tensor of both operators for the given sizes, inputs filled with ones, outputs with NaN.
struct Operands {
  DeviceTensor value, spatial_shape, level_start, location, attn, grad_output;
  DeviceTensor grad_value, grad_location, grad_attn, output;
  explicit Operands(const Dims& d, aclDataType dtype = ACL_FLOAT, aclDataType spatial_dtype = ACL_INT64,
                    aclDataType start_dtype = ACL_INT64, int grad_rank = 3)
      : value(Tensor(d.Value(), dtype)),
        spatial_shape(Tensor(d.SpatialShape(), spatial_dtype)),
        level_start(Tensor(d.LevelStart(), start_dtype)),
        location(Tensor(d.Location(), dtype)),
        attn(Tensor(d.Attn(), dtype)),
        grad_output(Tensor(d.GradOutput(grad_rank), dtype)),
        grad_value(Output(d.Value(), dtype)),
        grad_location(Output(d.Location(), dtype)),
        grad_attn(Output(d.Attn(), dtype)),
        output(Output(d.Out(), dtype)) {}
};

// The arguments of either operator (the forward uses value .. attn and output).
struct Args {
  const aclTensor* value;
  const aclTensor* spatial_shape;
  const aclTensor* level_start;
  const aclTensor* location;
  const aclTensor* attn;
  const aclTensor* grad_output;
  aclTensor* grad_value;
  aclTensor* grad_location;
  aclTensor* grad_attn;
  aclTensor* output;
  uint64_t* workspace_size;
  aclOpExecutor** executor;
};

// Dims{1, 4, 1, 8, 1, nq, 1} with nq queries, too many to fill cheaply: the tensors sized by nq are RawTensors,
// the others come from a one-query problem.
struct ManyQueries {
  Dims d;
  RawTensor location, attn, grad_output, grad_location, grad_attn, output;
  Operands small;
  ManyQueries(int64_t nq, aclDataType dtype)
      : d{1, 4, 1, 8, 1, nq, 1},
        location(d.Location(), dtype),
        attn(d.Attn(), dtype),
        grad_output(d.Out(), dtype),
        grad_location(d.Location(), dtype),
        grad_attn(d.Attn(), dtype),
        output(d.Out(), dtype),
        small(Dims{1, 4, 1, 8, 1, 1, 1}, dtype) {}

  // small's arguments a with the tensors sized by nq put in.
  Args ArgsWith(Args a) const {
    a.location = location.get();
    a.attn = attn.get();
    a.grad_output = grad_output.get();
    a.grad_location = grad_location.get();
    a.grad_attn = grad_attn.get();
    a.output = output.get();
    return a;
  }
};

enum class Op { kForward, kBackward };

const char* OpNameOf(Op op) { return op == Op::kForward ? kForwardName : kGradName; }

std::string OpTestName(const testing::TestParamInfo<Op>& param_info) {
  return param_info.param == Op::kForward ? "Forward" : "Backward";
}

// The checks for one operator, Which(); a rejected call leaves the fixture's four outputs untouched.
class MsdaValidationBase : protected optest::PhaseOneChecks<Args> {
 protected:
  Operands ops_{Dims{}};

  virtual Op Which() const = 0;

  Args Valid() override { return ArgsOf(ops_); }

  Args ArgsOf(const Operands& o) {
    return {o.value.get(),     o.spatial_shape.get(), o.level_start.get(), o.location.get(),
            o.attn.get(),      o.grad_output.get(),   o.grad_value.get(),  o.grad_location.get(),
            o.grad_attn.get(), o.output.get(),        &workspace_size_,    &executor_};
  }

  aclnnStatus Call(const Args& a) override {
    if (Which() == Op::kForward) {
      return opcall::GetWorkspaceSize(opcall::MultiScaleDeformableAttnFunction{a.value, a.spatial_shape, a.level_start,
                                                                               a.location, a.attn, a.output},
                                      a.workspace_size, a.executor);
    }
    return opcall::GetWorkspaceSize(
        opcall::MultiScaleDeformableAttentionGrad{a.value, a.spatial_shape, a.level_start, a.location, a.attn,
                                                  a.grad_output, a.grad_value, a.grad_location, a.grad_attn},
        a.workspace_size, a.executor);
  }
  std::string OpName() const override { return OpNameOf(Which()); }
  std::vector<const DeviceTensor*> Outputs() override {
    return {&ops_.grad_value, &ops_.grad_location, &ops_.grad_attn, &ops_.output};
  }
};

// The checks for the operator the test's parameter names.
class MsdaBothValidation : public testing::TestWithParam<Op>, protected MsdaValidationBase {
 protected:
  Op Which() const override { return GetParam(); }
};

// ------------------------------------------------------------------------------------------------------------
// Rules on the shared inputs, for both operators.

class MsdaInputValidation : public MsdaBothValidation {};

TEST_P(MsdaInputValidation, ValidCallsSucceed) {
  for (aclDataType dtype : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
    for (aclDataType spatial : {ACL_INT32, ACL_INT64}) {
      for (aclDataType start : {ACL_INT32, ACL_INT64}) {
        for (int rank : {3, 4}) {
          SCOPED_TRACE(std::string(optest::DTypeName(dtype)) + " " + optest::DTypeName(spatial) + " " +
                       optest::DTypeName(start) + " gradOutput " + std::to_string(rank) + "-D");
          const Operands o(Dims{}, dtype, spatial, start, rank);
          ExpectAccepted(ArgsOf(o));
        }
      }
    }
  }
}

// The limits themselves are allowed: c = 8 and 256, nh = nl = np = 16, nq = 499999.
TEST_P(MsdaInputValidation, LimitsAreAccepted) {
  for (const Dims& d : {Dims{1, 4, 1, 256, 1, 2, 1}, Dims{1, 4, 16, 8, 16, 2, 16}}) {
    const Operands o(d);
    ExpectAccepted(ArgsOf(o));
  }
  const ManyQueries many(499999, ACL_BF16);
  ExpectAccepted(many.ArgsWith(ArgsOf(many.small)));
}

// 161001: each required input null; the out-pointers null.
TEST_P(MsdaInputValidation, NullValue) {
  Args a = Valid();
  a.value = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"value", "null"});
}

TEST_P(MsdaInputValidation, NullSpatialShape) {
  Args a = Valid();
  a.spatial_shape = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"spatialShape", "null"});
}

TEST_P(MsdaInputValidation, NullLevelStartIndex) {
  Args a = Valid();
  a.level_start = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"levelStartIndex", "null"});
}

TEST_P(MsdaInputValidation, NullLocation) {
  Args a = Valid();
  a.location = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"location", "null"});
}

TEST_P(MsdaInputValidation, NullAttnWeight) {
  Args a = Valid();
  a.attn = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"attnWeight", "null"});
}

TEST_P(MsdaInputValidation, NullWorkspaceSize) {
  Args a = Valid();
  a.workspace_size = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"workspaceSize", "null"});
}

TEST_P(MsdaInputValidation, NullExecutor) {
  Args a = Valid();
  a.executor = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"executor", "null"});
}

TEST_P(MsdaInputValidation, NullDataOfNonEmptyTensor) {
  const Dims d;
  const std::vector<int64_t> shape = d.Location();
  const std::vector<int64_t> strides = optest::ContiguousStrides(shape);
  const int64_t storage[1] = {optest::NumElements(shape)};
  aclTensor* no_data =
      aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT, strides.data(), 0, ACL_FORMAT_ND, storage, 1, nullptr);
  ASSERT_NE(no_data, nullptr) << optest::RecentErrorMessage();
  Args a = Valid();
  a.location = no_data;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"location", "null"});
  aclDestroyTensor(no_data);
}

// 161002: dtypes. The float tensors must be FLOAT, FLOAT16, BFLOAT16 or DOUBLE (an extension) and all equal; the
// index tensors INT32 or INT64.
TEST_P(MsdaInputValidation, ValueDTypeUnsupported) {
  for (aclDataType dtype : {ACL_INT64, ACL_INT32, ACL_BOOL}) {
    SCOPED_TRACE(optest::DTypeName(dtype));
    const Operands o(Dims{}, dtype);
    ExpectRejected(ArgsOf(o), ACLNN_ERR_PARAM_INVALID, {"value", "dtype", optest::DTypeName(dtype)});
  }
}

TEST_P(MsdaInputValidation, LocationDTypeDiffers) {
  DeviceTensor location = Tensor(Dims{}.Location(), ACL_FLOAT16);
  Args a = Valid();
  a.location = location.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"location", "dtype", "FLOAT16"});
}

TEST_P(MsdaInputValidation, AttnWeightDTypeDiffers) {
  DeviceTensor attn = Tensor(Dims{}.Attn(), ACL_BF16);
  Args a = Valid();
  a.attn = attn.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"attnWeight", "dtype", "BFLOAT16"});
}

TEST_P(MsdaInputValidation, SpatialShapeDTypeUnsupported) {
  for (aclDataType dtype : {ACL_FLOAT, ACL_DOUBLE, ACL_BOOL}) {
    SCOPED_TRACE(optest::DTypeName(dtype));
    DeviceTensor spatial_shape = Tensor(Dims{}.SpatialShape(), dtype);
    Args a = Valid();
    a.spatial_shape = spatial_shape.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"spatialShape", "dtype", optest::DTypeName(dtype)});
  }
}

TEST_P(MsdaInputValidation, LevelStartIndexDTypeUnsupported) {
  for (aclDataType dtype : {ACL_FLOAT16, ACL_DOUBLE, ACL_BOOL}) {
    SCOPED_TRACE(optest::DTypeName(dtype));
    DeviceTensor level_start = Tensor(Dims{}.LevelStart(), dtype);
    Args a = Valid();
    a.level_start = level_start.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"levelStartIndex", "dtype", optest::DTypeName(dtype)});
  }
}

// 161002: ranks and fixed dims.
TEST_P(MsdaInputValidation, ValueNot4D) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2, 16, 16}, std::vector<int64_t>{2, 16, 2, 8, 1}}) {
    DeviceTensor value = Tensor(shape);
    Args a = Valid();
    a.value = value.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"value", "4-D", optest::ShapeString(shape)});
  }
}

TEST_P(MsdaInputValidation, SpatialShapeNot2D) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{4}, std::vector<int64_t>{2, 2, 1}}) {
    DeviceTensor spatial_shape = Tensor(shape, ACL_INT64);
    Args a = Valid();
    a.spatial_shape = spatial_shape.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"spatialShape", "2-D", optest::ShapeString(shape)});
  }
}

TEST_P(MsdaInputValidation, SpatialShapeLastDimNot2) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2, 3}, std::vector<int64_t>{2, 1}}) {
    DeviceTensor spatial_shape = Tensor(shape, ACL_INT64);
    Args a = Valid();
    a.spatial_shape = spatial_shape.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"spatialShape", optest::ShapeString(shape)});
  }
}

TEST_P(MsdaInputValidation, LevelStartIndexNot1D) {
  const std::vector<int64_t> shape = {2, 1};
  DeviceTensor level_start = Tensor(shape, ACL_INT64);
  Args a = Valid();
  a.level_start = level_start.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"levelStartIndex", "1-D", optest::ShapeString(shape)});
}

TEST_P(MsdaInputValidation, LocationNot6D) {
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{2, 3, 2, 2, 4}, std::vector<int64_t>{2, 3, 2, 2, 2, 2, 1}}) {
    DeviceTensor location = Tensor(shape);
    Args a = Valid();
    a.location = location.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"location", "6-D", optest::ShapeString(shape)});
  }
}

TEST_P(MsdaInputValidation, LocationLastDimNot2) {
  for (int64_t last : {1, 3}) {
    const std::vector<int64_t> shape = {2, 3, 2, 2, 2, last};
    DeviceTensor location = Tensor(shape);
    Args a = Valid();
    a.location = location.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"location", optest::ShapeString(shape)});
  }
}

TEST_P(MsdaInputValidation, AttnWeightNot5D) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2, 3, 2, 4}, std::vector<int64_t>{2, 3, 2, 2, 2, 1}}) {
    DeviceTensor attn = Tensor(shape);
    Args a = Valid();
    a.attn = attn.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"attnWeight", "5-D", optest::ShapeString(shape)});
  }
}

// 161002: consistency of the sizes. Each test changes one tensor, so the message must name it and its shape.
struct Replacement {
  const char* param;
  std::vector<int64_t> shape;
  aclDataType dtype;
};

void ReplaceInput(Args* a, const char* param, const DeviceTensor& t) {
  const std::string name = param;
  if (name == "value") a->value = t.get();
  if (name == "spatialShape") a->spatial_shape = t.get();
  if (name == "levelStartIndex") a->level_start = t.get();
  if (name == "location") a->location = t.get();
  if (name == "attnWeight") a->attn = t.get();
}

class MsdaInputConsistency : public MsdaBothValidation {
 protected:
  // The message must name the replaced tensor and its shape, or the given fragments instead.
  void ExpectReplacementRejected(const Replacement& r, std::vector<std::string> fragments = {}) {
    SCOPED_TRACE(std::string(r.param) + " " + optest::ShapeString(r.shape));
    DeviceTensor t = Tensor(r.shape, r.dtype);
    Args a = Valid();
    ReplaceInput(&a, r.param, t);
    if (fragments.empty()) fragments = {r.param, optest::ShapeString(r.shape)};
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, fragments);
  }
};

TEST_P(MsdaInputConsistency, LocationBatchDiffers) {
  ExpectReplacementRejected({"location", {3, 3, 2, 2, 2, 2}, ACL_FLOAT});
}

TEST_P(MsdaInputConsistency, AttnWeightBatchDiffers) {
  ExpectReplacementRejected({"attnWeight", {1, 3, 2, 2, 2}, ACL_FLOAT});
}

TEST_P(MsdaInputConsistency, LocationHeadsDiffer) {
  ExpectReplacementRejected({"location", {2, 3, 1, 2, 2, 2}, ACL_FLOAT});
}

TEST_P(MsdaInputConsistency, AttnWeightHeadsDiffer) {
  ExpectReplacementRejected({"attnWeight", {2, 3, 4, 2, 2}, ACL_FLOAT});
}

TEST_P(MsdaInputConsistency, ValueHeadsDiffer) { ExpectReplacementRejected({"value", {2, 16, 1, 16}, ACL_FLOAT}); }

TEST_P(MsdaInputConsistency, LocationLevelsDiffer) {
  ExpectReplacementRejected({"location", {2, 3, 2, 3, 2, 2}, ACL_FLOAT});
}

TEST_P(MsdaInputConsistency, AttnWeightLevelsDiffer) {
  ExpectReplacementRejected({"attnWeight", {2, 3, 2, 1, 2}, ACL_FLOAT});
}

TEST_P(MsdaInputConsistency, SpatialShapeLevelsDiffer) {
  // Compared with levelStartIndex's length first: the message names both and spatialShape's nl.
  ExpectReplacementRejected({"spatialShape", {3, 2}, ACL_INT64}, {"spatialShape", "levelStartIndex", "3", "[2]"});
}

TEST_P(MsdaInputConsistency, LevelStartIndexLevelsDiffer) {
  ExpectReplacementRejected({"levelStartIndex", {3}, ACL_INT32});
}

TEST_P(MsdaInputConsistency, AttnWeightQueriesDiffer) {
  ExpectReplacementRejected({"attnWeight", {2, 4, 2, 2, 2}, ACL_FLOAT});
}

TEST_P(MsdaInputConsistency, AttnWeightPointsDiffer) {
  ExpectReplacementRejected({"attnWeight", {2, 3, 2, 2, 3}, ACL_FLOAT});
}

TEST_P(MsdaInputConsistency, LocationPointsDiffer) {
  ExpectReplacementRejected({"location", {2, 3, 2, 2, 1, 2}, ACL_FLOAT});
}

// 161002: the size constraints. Each problem is consistent except for the rule under test.
class MsdaConstraints : public MsdaBothValidation {
 protected:
  void ExpectDimsRejected(const Dims& d, const std::vector<std::string>& fragments) {
    const Operands o(d);
    ExpectRejected(ArgsOf(o), ACLNN_ERR_PARAM_INVALID, fragments);
  }
};

// CANN's channel rule (a multiple of 8 in [8, 256]) is extended: any other count binds the CPU's generic kernels.
// The CUDA kernels take any count up to 256 (more get 161002: no implementation).
TEST_P(MsdaConstraints, ChannelsBeyondCannsRuleAreAccepted) {
  for (int64_t c : {12, 4, 1, 255, 264, 1025}) {
    if (c > 256 && !optest::DeviceIsCpu()) continue;
    SCOPED_TRACE(c);
    Dims d;
    d.c = c;
    const Operands o(d);
    ExpectAccepted(ArgsOf(o));
  }
}

TEST_P(MsdaConstraints, ChannelsZero) {
  Dims d;
  d.c = 0;
  ExpectDimsRejected(d, {"value", "0", optest::ShapeString(d.Value())});
}

TEST_P(MsdaConstraints, QueriesAtOrAbove500000) {
  for (int64_t nq : {500000, 500001}) {
    SCOPED_TRACE(nq);
    const ManyQueries many(nq, ACL_FLOAT16);
    ExpectRejected(many.ArgsWith(ArgsOf(many.small)), ACLNN_ERR_PARAM_INVALID, {"500000", std::to_string(nq)});
  }
}

TEST_P(MsdaConstraints, LevelsAbove16) {
  Dims d;
  d.nl = 17;
  ExpectDimsRejected(d, {"num_levels", "16", "got 17"});
}

TEST_P(MsdaConstraints, HeadsAbove16) {
  Dims d;
  d.nh = 17;
  ExpectDimsRejected(d, {"num_heads", "16", "got 17"});
}

TEST_P(MsdaConstraints, PointsAbove16) {
  Dims d;
  d.np = 17;
  ExpectDimsRejected(d, {"num_points", "16", "got 17"});
}

TEST_P(MsdaConstraints, LevelsZero) {
  Dims d;
  d.nl = 0;
  ExpectDimsRejected(d, {"num_levels", "[1, 16]", "got 0"});
}

TEST_P(MsdaConstraints, HeadsZero) {
  Dims d;
  d.nh = 0;
  ExpectDimsRejected(d, {"num_heads", "[1, 16]", "got 0"});
}

TEST_P(MsdaConstraints, PointsZero) {
  Dims d;
  d.np = 0;
  ExpectDimsRejected(d, {"num_points", "[1, 16]", "got 0"});
}

// Phase 1 reads no tensor data: every tensor's data pointer leads to unmapped memory, and the call still succeeds
// (reading it would crash the test). The executor is released unrun.
TEST_P(MsdaInputValidation, Phase1ReadsNoTensorData) {
  // Elsewhere phase 1 refuses such pointers: they are not the device's memory.
  if (!optest::DeviceIsCpu()) GTEST_SKIP() << optest::CpuOnlyReason("the CPU device can address any pointer");
  if (optest::StrictMode()) GTEST_SKIP() << optest::StrictModeReason("it refuses data outside aclrtMalloc memory");
  void* unmapped = reinterpret_cast<void*>(static_cast<uintptr_t>(0x40));
  const Dims d;
  RawTensor value(d.Value(), ACL_FLOAT, unmapped), spatial_shape(d.SpatialShape(), ACL_INT64, unmapped);
  RawTensor level_start(d.LevelStart(), ACL_INT32, unmapped), location(d.Location(), ACL_FLOAT, unmapped);
  RawTensor attn(d.Attn(), ACL_FLOAT, unmapped), grad_output(d.GradOutput(4), ACL_FLOAT, unmapped);
  RawTensor grad_value(d.Value(), ACL_FLOAT, unmapped), grad_location(d.Location(), ACL_FLOAT, unmapped);
  RawTensor grad_attn(d.Attn(), ACL_FLOAT, unmapped), output(d.Out(), ACL_FLOAT, unmapped);
  const Args a{value.get(),     spatial_shape.get(), level_start.get(), location.get(),
               attn.get(),      grad_output.get(),   grad_value.get(),  grad_location.get(),
               grad_attn.get(), output.get(),        &workspace_size_,  &executor_};
  ExpectAccepted(a);
}

INSTANTIATE_TEST_SUITE_P(MultiScaleDeformableAttention, MsdaInputValidation,
                         testing::Values(Op::kForward, Op::kBackward), OpTestName);
INSTANTIATE_TEST_SUITE_P(MultiScaleDeformableAttention, MsdaInputConsistency,
                         testing::Values(Op::kForward, Op::kBackward), OpTestName);
INSTANTIATE_TEST_SUITE_P(MultiScaleDeformableAttention, MsdaConstraints, testing::Values(Op::kForward, Op::kBackward),
                         OpTestName);

// ------------------------------------------------------------------------------------------------------------
// The backward's own tensors: gradOutput and the three outputs.

class MsdaGradValidation : public testing::Test, protected MsdaValidationBase {
 protected:
  Op Which() const override { return Op::kBackward; }
};

TEST_F(MsdaGradValidation, NullGradOutput) {
  Args a = Valid();
  a.grad_output = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"gradOutput", "null"});
}

TEST_F(MsdaGradValidation, NullGradValue) {
  Args a = Valid();
  a.grad_value = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"gradValue", "null"});
}

TEST_F(MsdaGradValidation, NullGradLocation) {
  Args a = Valid();
  a.grad_location = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"gradLocation", "null"});
}

TEST_F(MsdaGradValidation, NullGradAttnWeight) {
  Args a = Valid();
  a.grad_attn = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"gradAttnWeight", "null"});
}

TEST_F(MsdaGradValidation, GradOutputDTypeDiffers) {
  DeviceTensor grad_output = Tensor(Dims{}.Out(), ACL_FLOAT16);
  Args a = Valid();
  a.grad_output = grad_output.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"gradOutput", "dtype", "FLOAT16"});
}

TEST_F(MsdaGradValidation, GradValueDTypeDiffers) {
  DeviceTensor grad_value = Output(Dims{}.Value(), ACL_BF16);
  Args a = Valid();
  a.grad_value = grad_value.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"gradValue", "dtype", "BFLOAT16"});
}

TEST_F(MsdaGradValidation, GradLocationDTypeDiffers) {
  DeviceTensor grad_location = Output(Dims{}.Location(), ACL_FLOAT16);
  Args a = Valid();
  a.grad_location = grad_location.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"gradLocation", "dtype", "FLOAT16"});
}

TEST_F(MsdaGradValidation, GradAttnWeightDTypeDiffers) {
  DeviceTensor grad_attn = Output(Dims{}.Attn(), ACL_DOUBLE);
  Args a = Valid();
  a.grad_attn = grad_attn.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"gradAttnWeight", "dtype", "DOUBLE"});
}

TEST_F(MsdaGradValidation, GradOutputNot3Or4D) {
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{6, 16}, std::vector<int64_t>{2, 3, 2, 8, 1}, std::vector<int64_t>{96}}) {
    DeviceTensor grad_output = Tensor(shape);
    Args a = Valid();
    a.grad_output = grad_output.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"gradOutput", optest::ShapeString(shape)});
  }
}

// 3-D: (bs, nq, nh * c); 4-D: (bs, nq, nh, c), also when nh * c matches but the split does not.
TEST_F(MsdaGradValidation, GradOutputShapeDiffers) {
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{2, 3, 15}, std::vector<int64_t>{2, 3, 8}, std::vector<int64_t>{3, 3, 16},
        std::vector<int64_t>{2, 4, 16}, std::vector<int64_t>{2, 3, 4, 4}, std::vector<int64_t>{2, 3, 2, 16},
        std::vector<int64_t>{2, 3, 1, 16}, std::vector<int64_t>{1, 3, 2, 8}, std::vector<int64_t>{2, 2, 2, 8}}) {
    SCOPED_TRACE(optest::ShapeString(shape));
    DeviceTensor grad_output = Tensor(shape);
    Args a = Valid();
    a.grad_output = grad_output.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID,
                   {"gradOutput must have shape [2, 3, 16] (bs, num_queries, num_heads * channels) or [2, 3, 2, 8]",
                    "got " + optest::ShapeString(shape)});
  }
}

TEST_F(MsdaGradValidation, GradValueShapeDiffers) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2, 16, 2, 16}, std::vector<int64_t>{2, 16, 16}}) {
    DeviceTensor grad_value = Output(shape);
    Args a = Valid();
    a.grad_value = grad_value.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"gradValue", optest::ShapeString(shape)});
  }
}

TEST_F(MsdaGradValidation, GradLocationShapeDiffers) {
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{2, 3, 2, 2, 2, 1}, std::vector<int64_t>{2, 3, 2, 2, 4}}) {
    DeviceTensor grad_location = Output(shape);
    Args a = Valid();
    a.grad_location = grad_location.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"gradLocation", optest::ShapeString(shape)});
  }
}

TEST_F(MsdaGradValidation, GradAttnWeightShapeDiffers) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2, 3, 2, 2, 3}, std::vector<int64_t>{2, 3, 2, 4}}) {
    DeviceTensor grad_attn = Output(shape);
    Args a = Valid();
    a.grad_attn = grad_attn.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"gradAttnWeight", optest::ShapeString(shape)});
  }
}

TEST_F(MsdaGradValidation, SelfOverlappingOutputs) {
  const Dims d;
  struct Case {
    const char* param;
    std::vector<int64_t> shape;
    int zero_dim;
  };
  for (const Case& c :
       {Case{"gradValue", d.Value(), 1}, Case{"gradLocation", d.Location(), 3}, Case{"gradAttnWeight", d.Attn(), 0}}) {
    SCOPED_TRACE(c.param);
    DeviceTensor storage = Output(c.shape);
    aclTensor* overlapping = SelfOverlappingView(storage, c.shape, c.zero_dim);
    ASSERT_NE(overlapping, nullptr) << optest::RecentErrorMessage();
    Args a = Valid();
    if (std::string(c.param) == "gradValue") a.grad_value = overlapping;
    if (std::string(c.param) == "gradLocation") a.grad_location = overlapping;
    if (std::string(c.param) == "gradAttnWeight") a.grad_attn = overlapping;
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {c.param, "share memory"});
    aclDestroyTensor(overlapping);
    EXPECT_EQ(storage.CheckGuards(), "");
  }
}

// ------------------------------------------------------------------------------------------------------------
// The forward's own output.

class MsdaForwardValidation : public testing::Test, protected MsdaValidationBase {
 protected:
  Op Which() const override { return Op::kForward; }
};

TEST_F(MsdaForwardValidation, NullOutput) {
  Args a = Valid();
  a.output = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"output", "null"});
}

TEST_F(MsdaForwardValidation, OutputDTypeDiffers) {
  DeviceTensor output = Output(Dims{}.Out(), ACL_FLOAT16);
  Args a = Valid();
  a.output = output.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"output", "dtype", "FLOAT16"});
}

TEST_F(MsdaForwardValidation, OutputShapeDiffers) {
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{2, 3, 8}, std::vector<int64_t>{2, 3, 4, 4}, std::vector<int64_t>{3, 3, 16},
        std::vector<int64_t>{2, 4, 16}, std::vector<int64_t>{2, 3, 17}, std::vector<int64_t>{2, 3, 2, 16},
        std::vector<int64_t>{2, 3, 16, 1}}) {
    SCOPED_TRACE(optest::ShapeString(shape));
    DeviceTensor output = Output(shape);
    Args a = Valid();
    a.output = output.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID,
                   {"output must have shape [2, 3, 16] (bs, num_queries, num_heads * channels) or [2, 3, 2, 8]",
                    "got " + optest::ShapeString(shape)});
  }
}

TEST_F(MsdaForwardValidation, SelfOverlappingOutput) {
  const Dims d;
  DeviceTensor storage = Output(d.Out());
  aclTensor* overlapping = SelfOverlappingView(storage, d.Out(), 1);
  ASSERT_NE(overlapping, nullptr) << optest::RecentErrorMessage();
  Args a = Valid();
  a.output = overlapping;
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"output", "share memory"});
  aclDestroyTensor(overlapping);
  EXPECT_EQ(storage.CheckGuards(), "");
}

// Phase 2 refuses a null executor, naming the function.
TEST(MsdaRun, NullExecutor) {
  EXPECT_EQ(aclnnMultiScaleDeformableAttentionGrad(nullptr, 0, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  std::string message = optest::RecentErrorMessage();
  EXPECT_NE(message.find(kGradName), std::string::npos) << message;
  EXPECT_NE(message.find("executor"), std::string::npos) << message;
  EXPECT_EQ(aclnnMultiScaleDeformableAttnFunction(nullptr, 0, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  message = optest::RecentErrorMessage();
  EXPECT_NE(message.find(kForwardName), std::string::npos) << message;
}

}  // namespace
