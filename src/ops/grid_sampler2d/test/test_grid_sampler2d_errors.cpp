// Phase-1 validation of aclnnGridSampler2DBackwardGetWorkspaceSize and aclnnGridSampler2DGetWorkspaceSize: each rule
// of the seed's error table (seed 002: one 161001 rule, ten 161002 rules), the outputMask length, the null output
// pointers and the forward's rules has its own test, checking the status code and that the message names the
// function, the parameter, the offending value and the rule. A rejected call writes nothing.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "aclnnop/aclnn_grid_sampler2d.h"
#include "aclnnop/aclnn_grid_sampler2d_backward.h"
#include "grid_sampler2d/test/grid_sampler2d_calls.h"
#include "op_test_util.h"
#include "phase1_checks.h"

namespace {

using optest::DeviceTensor;
using optest::Layout;

constexpr const char* kBackward = "aclnnGridSampler2DBackward";
constexpr const char* kForward = "aclnnGridSampler2D";

DeviceTensor Tensor(std::vector<int64_t> shape, aclDataType dtype = ACL_FLOAT, aclFormat format = ACL_FORMAT_ND) {
  const std::vector<double> zeros(static_cast<size_t>(optest::NumElements(shape)), 0.0);
  return DeviceTensor(std::move(shape), dtype, Layout::kContiguous, zeros, format);
}
DeviceTensor Output(std::vector<int64_t> shape, aclDataType dtype = ACL_FLOAT) {
  return DeviceTensor::Output(std::move(shape), dtype, Layout::kContiguous);
}

class BoolArray {
 public:
  explicit BoolArray(std::vector<bool> values) {
    bool storage[8] = {};
    for (size_t i = 0; i < values.size(); ++i) storage[i] = values[i];
    array_ = aclCreateBoolArray(storage, values.size());
  }
  ~BoolArray() {
    if (array_ != nullptr) aclDestroyBoolArray(array_);
  }
  BoolArray(const BoolArray&) = delete;
  BoolArray& operator=(const BoolArray&) = delete;
  const aclBoolArray* get() const { return array_; }

 private:
  aclBoolArray* array_ = nullptr;
};

// The operands of one backward call; tests replace one of them with something invalid.
struct BackwardArgs {
  const aclTensor* grad_output;
  const aclTensor* input;
  const aclTensor* grid;
  int64_t interpolation_mode;
  int64_t padding_mode;
  const aclBoolArray* output_mask;
  aclTensor* input_grad;
  aclTensor* grid_grad;
  uint64_t* workspace_size;
  aclOpExecutor** executor;
};

// A rejected call leaves inputGrad and gridGrad (NaN-filled) untouched and hands out no executor.
class GridSamplerBackwardValidation : public testing::Test, protected optest::PhaseOneChecks<BackwardArgs> {
 protected:
  // A valid call: N = 2, C = 3, input 6x7, grid / gradOutput 4x5.
  DeviceTensor grad_output_ = Tensor({2, 3, 4, 5});
  DeviceTensor input_ = Tensor({2, 3, 6, 7});
  DeviceTensor grid_ = Tensor({2, 4, 5, 2});
  DeviceTensor input_grad_ = Output({2, 3, 6, 7});
  DeviceTensor grid_grad_ = Output({2, 4, 5, 2});
  BoolArray mask_{{true, true}};

  BackwardArgs Valid() override {
    return {grad_output_.get(), input_.get(),     grid_.get(),      0,         0, mask_.get(),
            input_grad_.get(),  grid_grad_.get(), &workspace_size_, &executor_};
  }
  aclnnStatus Call(const BackwardArgs& a) override {
    return opcall::GetWorkspaceSize(opcall::GridSampler2DBackward{a.grad_output, a.input, a.grid, a.interpolation_mode,
                                                                  a.padding_mode, false, a.output_mask, a.input_grad,
                                                                  a.grid_grad},
                                    a.workspace_size, a.executor);
  }
  std::string OpName() const override { return kBackward; }
  std::vector<const DeviceTensor*> Outputs() override { return {&input_grad_, &grid_grad_}; }
};

TEST_F(GridSamplerBackwardValidation, ValidCallSucceeds) {
  for (int64_t interpolation = 0; interpolation <= 2; ++interpolation) {
    for (int64_t padding = 0; padding <= 2; ++padding) {
      BackwardArgs a = Valid();
      a.interpolation_mode = interpolation;
      a.padding_mode = padding;
      ExpectAccepted(a);
    }
  }
}

// 161001: gradOutput, input, grid, inputGrad, gridGrad null; also the two out-pointers.
TEST_F(GridSamplerBackwardValidation, NullGradOutput) {
  BackwardArgs a = Valid();
  a.grad_output = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"gradOutput", "null"});
}

TEST_F(GridSamplerBackwardValidation, NullInput) {
  BackwardArgs a = Valid();
  a.input = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"input must not be null"});
}

TEST_F(GridSamplerBackwardValidation, NullGrid) {
  BackwardArgs a = Valid();
  a.grid = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"grid must not be null"});
}

TEST_F(GridSamplerBackwardValidation, NullInputGrad) {
  BackwardArgs a = Valid();
  a.input_grad = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"inputGrad", "null"});
}

TEST_F(GridSamplerBackwardValidation, NullGridGrad) {
  BackwardArgs a = Valid();
  a.grid_grad = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"gridGrad", "null"});
}

// The outputs are required even when outputMask does not choose them (the seed's 161001 rule).
TEST_F(GridSamplerBackwardValidation, NullOutputNotChosenIsStillRejected) {
  const BoolArray only_grid({false, true});
  BackwardArgs a = Valid();
  a.output_mask = only_grid.get();
  a.input_grad = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"inputGrad", "null"});
  a = Valid();
  a.output_mask = nullptr;
  a.grid_grad = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"gridGrad", "null"});
}

TEST_F(GridSamplerBackwardValidation, NullWorkspaceSize) {
  BackwardArgs a = Valid();
  a.workspace_size = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"workspaceSize", "null"});
}

TEST_F(GridSamplerBackwardValidation, NullExecutor) {
  BackwardArgs a = Valid();
  a.executor = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"executor", "null"});
}

TEST_F(GridSamplerBackwardValidation, NullDataOfNonEmptyTensor) {
  const int64_t shape[4] = {2, 3, 6, 7};
  const int64_t strides[4] = {126, 42, 7, 1};
  const int64_t storage[1] = {252};
  aclTensor* no_data = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, nullptr);
  ASSERT_NE(no_data, nullptr) << optest::RecentErrorMessage();
  BackwardArgs a = Valid();
  a.input = no_data;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"input", "null", "[2, 3, 6, 7]"});
  aclDestroyTensor(no_data);
}

// 161002 rule 1: a dtype outside FLOAT16 / BFLOAT16 / FLOAT / DOUBLE, or not all equal.
TEST_F(GridSamplerBackwardValidation, UnsupportedDType) {
  for (aclDataType dtype : {ACL_INT32, ACL_INT64, ACL_BOOL}) {
    SCOPED_TRACE(optest::DTypeName(dtype));
    DeviceTensor grad_output = Tensor({2, 3, 4, 5}, dtype);
    DeviceTensor input = Tensor({2, 3, 6, 7}, dtype);
    DeviceTensor grid = Tensor({2, 4, 5, 2}, dtype);
    DeviceTensor input_grad = Output({2, 3, 6, 7}, dtype);
    DeviceTensor grid_grad = Output({2, 4, 5, 2}, dtype);
    BackwardArgs a = Valid();
    a.grad_output = grad_output.get();
    a.input = input.get();
    a.grid = grid.get();
    a.input_grad = input_grad.get();
    a.grid_grad = grid_grad.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"dtype", "FLOAT16", optest::DTypeName(dtype)});
  }
}

TEST_F(GridSamplerBackwardValidation, DTypesDiffer) {
  DeviceTensor grad_output = Tensor({2, 3, 4, 5}, ACL_FLOAT16);
  DeviceTensor grid = Tensor({2, 4, 5, 2}, ACL_DOUBLE);
  DeviceTensor input_grad = Output({2, 3, 6, 7}, ACL_BF16);
  DeviceTensor grid_grad = Output({2, 4, 5, 2}, ACL_FLOAT16);
  DeviceTensor int_grid = Tensor({2, 4, 5, 2}, ACL_INT32);
  struct Case {
    const char* param;
    const char* dtype;
  };
  for (const Case c : {Case{"gradOutput", "FLOAT16"}, Case{"grid", "DOUBLE"}, Case{"inputGrad", "BFLOAT16"},
                       Case{"gridGrad", "FLOAT16"}, Case{"grid", "INT32"}}) {
    SCOPED_TRACE(std::string(c.param) + " " + c.dtype);
    BackwardArgs a = Valid();
    if (std::string(c.param) == "gradOutput") a.grad_output = grad_output.get();
    if (std::string(c.param) == "grid") a.grid = std::string(c.dtype) == "INT32" ? int_grid.get() : grid.get();
    if (std::string(c.param) == "inputGrad") a.input_grad = input_grad.get();
    if (std::string(c.param) == "gridGrad") a.grid_grad = grid_grad.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {std::string(c.param) + " dtype", c.dtype});
  }
}

// 161002 rule 2: gradOutput, input, grid not 4-D.
TEST_F(GridSamplerBackwardValidation, GradOutputNot4D) {
  DeviceTensor bad = Tensor({2, 3, 20});
  BackwardArgs a = Valid();
  a.grad_output = bad.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"gradOutput", "4-D", "[2, 3, 20]"});
}

TEST_F(GridSamplerBackwardValidation, InputNot4D) {
  DeviceTensor bad = Tensor({1, 2, 3, 6, 7});
  BackwardArgs a = Valid();
  a.input = bad.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"input", "4-D", "[1, 2, 3, 6, 7]"});
}

TEST_F(GridSamplerBackwardValidation, GridNot4D) {
  DeviceTensor bad = Tensor({2, 20, 2});
  BackwardArgs a = Valid();
  a.grid = bad.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"grid", "4-D", "[2, 20, 2]"});
}

// 161002 rule 3: interpolationMode or paddingMode outside 0..2.
TEST_F(GridSamplerBackwardValidation, InterpolationModeOutOfRange) {
  for (int64_t mode : {-1, 3, 1000}) {
    BackwardArgs a = Valid();
    a.interpolation_mode = mode;
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"interpolationMode", "got " + std::to_string(mode)});
  }
}

TEST_F(GridSamplerBackwardValidation, PaddingModeOutOfRange) {
  for (int64_t mode : {-1, 3}) {
    BackwardArgs a = Valid();
    a.padding_mode = mode;
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"paddingMode", "got " + std::to_string(mode)});
  }
}

// 161002 rule 4: input dim 0 != grid dim 0 or gradOutput dim 0.
TEST_F(GridSamplerBackwardValidation, BatchDiffers) {
  {
    DeviceTensor grid = Tensor({3, 4, 5, 2});
    DeviceTensor grid_grad = Output({3, 4, 5, 2});
    BackwardArgs a = Valid();
    a.grid = grid.get();
    a.grid_grad = grid_grad.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"dim 0", "[2, 3, 6, 7]", "[3, 4, 5, 2]"});
  }
  {
    DeviceTensor grad_output = Tensor({1, 3, 4, 5});
    BackwardArgs a = Valid();
    a.grad_output = grad_output.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"dim 0", "gradOutput", "[1, 3, 4, 5]"});
  }
}

// 161002 rule 5: input dim 1 != gradOutput dim 1.
TEST_F(GridSamplerBackwardValidation, ChannelsDiffer) {
  DeviceTensor grad_output = Tensor({2, 4, 4, 5});
  BackwardArgs a = Valid();
  a.grad_output = grad_output.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"dim 1", "input", "gradOutput", "[2, 3, 6, 7]", "[2, 4, 4, 5]"});
}

// 161002 rules 6 and 7: grid dim 1 != gradOutput dim 2; grid dim 2 != gradOutput dim 3.
TEST_F(GridSamplerBackwardValidation, OutputHeightDiffers) {
  DeviceTensor grad_output = Tensor({2, 3, 5, 5});
  BackwardArgs a = Valid();
  a.grad_output = grad_output.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"dim 1 of grid", "dim 2 of gradOutput", "[2, 4, 5, 2]", "[2, 3, 5, 5]"});
}

TEST_F(GridSamplerBackwardValidation, OutputWidthDiffers) {
  DeviceTensor grad_output = Tensor({2, 3, 4, 6});
  BackwardArgs a = Valid();
  a.grad_output = grad_output.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"dim 2 of grid", "dim 3 of gradOutput", "[2, 4, 5, 2]", "[2, 3, 4, 6]"});
}

// 161002 rule 8: input's last two dims 0 (even when everything else is empty too).
TEST_F(GridSamplerBackwardValidation, InputSpatialDimZero) {
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{2, 3, 0, 7}, std::vector<int64_t>{2, 3, 6, 0}, std::vector<int64_t>{2, 3, 0, 0}}) {
    SCOPED_TRACE(optest::ShapeString(shape));
    DeviceTensor input = Tensor(shape);
    DeviceTensor input_grad = Output(shape);
    BackwardArgs a = Valid();
    a.input = input.get();
    a.input_grad = input_grad.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"input", "0", optest::ShapeString(shape)});
  }
}

// 161002 rule 9: grid's last dim != 2.
TEST_F(GridSamplerBackwardValidation, GridLastDimNot2) {
  for (int64_t last : {1, 3}) {
    DeviceTensor grid = Tensor({2, 4, 5, last});
    DeviceTensor grid_grad = Output({2, 4, 5, last});
    BackwardArgs a = Valid();
    a.grid = grid.get();
    a.grid_grad = grid_grad.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"last dim of grid", "2", optest::ShapeString({2, 4, 5, last})});
  }
}

// 161002 rule 10: inputGrad shape != input shape, gridGrad shape != grid shape (also other ranks).
TEST_F(GridSamplerBackwardValidation, InputGradShapeDiffers) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2, 3, 7, 6}, std::vector<int64_t>{2, 3, 42}}) {
    DeviceTensor input_grad = Output(shape);
    BackwardArgs a = Valid();
    a.input_grad = input_grad.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID,
                   {"inputGrad shape", "input", "[2, 3, 6, 7]", optest::ShapeString(shape)});
  }
}

TEST_F(GridSamplerBackwardValidation, GridGradShapeDiffers) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2, 5, 4, 2}, std::vector<int64_t>{2, 4, 5, 2, 1}}) {
    DeviceTensor grid_grad = Output(shape);
    BackwardArgs a = Valid();
    a.grid_grad = grid_grad.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"gridGrad shape", "grid", "[2, 4, 5, 2]", optest::ShapeString(shape)});
  }
}

// outputMask of a length other than 2.
TEST_F(GridSamplerBackwardValidation, OutputMaskLength) {
  for (const std::vector<bool>& values :
       {std::vector<bool>{true, true, true}, std::vector<bool>{true}, std::vector<bool>{}}) {
    SCOPED_TRACE(values.size());
    const BoolArray mask(values);
    BackwardArgs a = Valid();
    a.output_mask = mask.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"outputMask", "2", "got " + std::to_string(values.size())});
  }
}

TEST_F(GridSamplerBackwardValidation, PrivateFormat) {
  DeviceTensor grad_output = Tensor({2, 3, 4, 5}, ACL_FLOAT, ACL_FORMAT_NC1HWC0);
  DeviceTensor grid = Tensor({2, 4, 5, 2}, ACL_FLOAT, ACL_FORMAT_FRACTAL_NZ);
  {
    BackwardArgs a = Valid();
    a.grad_output = grad_output.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"gradOutput format", "ND"});
  }
  {
    BackwardArgs a = Valid();
    a.grid = grid.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"grid format", "ND"});
  }
}

// Phase 2 refuses a null executor, naming the function.
TEST(GridSampler2DRun, NullExecutor) {
  EXPECT_EQ(aclnnGridSampler2DBackward(nullptr, 0, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  std::string message = optest::RecentErrorMessage();
  EXPECT_NE(message.find(kBackward), std::string::npos) << message;
  EXPECT_NE(message.find("executor"), std::string::npos) << message;
  EXPECT_EQ(aclnnGridSampler2D(nullptr, 0, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  message = optest::RecentErrorMessage();
  EXPECT_NE(message.find(kForward), std::string::npos) << message;
}

// ------------------------------------------------------------------------------------------------------------
// The forward: input (N, C, Hin, Win), grid (N, Hout, Wout, 2), out (N, C, Hout, Wout); the same kinds of rules.

struct ForwardArgs {
  const aclTensor* input;
  const aclTensor* grid;
  int64_t interpolation_mode;
  int64_t padding_mode;
  aclTensor* out;
  uint64_t* workspace_size;
  aclOpExecutor** executor;
};

class GridSamplerForwardValidation : public testing::Test, protected optest::PhaseOneChecks<ForwardArgs> {
 protected:
  DeviceTensor input_ = Tensor({2, 3, 6, 7}, ACL_FLOAT16);
  DeviceTensor grid_ = Tensor({2, 4, 5, 2}, ACL_FLOAT16);
  DeviceTensor out_ = Output({2, 3, 4, 5}, ACL_FLOAT16);

  ForwardArgs Valid() override { return {input_.get(), grid_.get(), 2, 1, out_.get(), &workspace_size_, &executor_}; }
  aclnnStatus Call(const ForwardArgs& a) override {
    return opcall::GetWorkspaceSize(
        opcall::GridSampler2D{a.input, a.grid, a.interpolation_mode, a.padding_mode, true, a.out}, a.workspace_size,
        a.executor);
  }
  std::string OpName() const override { return kForward; }
  std::vector<const DeviceTensor*> Outputs() override { return {&out_}; }
};

TEST_F(GridSamplerForwardValidation, ValidCallSucceeds) { ExpectAccepted(Valid()); }

TEST_F(GridSamplerForwardValidation, NullArguments) {
  {
    ForwardArgs a = Valid();
    a.input = nullptr;
    ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"input must not be null"});
  }
  {
    ForwardArgs a = Valid();
    a.grid = nullptr;
    ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"grid must not be null"});
  }
  {
    ForwardArgs a = Valid();
    a.out = nullptr;
    ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"out must not be null"});
  }
  {
    ForwardArgs a = Valid();
    a.workspace_size = nullptr;
    ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"workspaceSize must not be null"});
  }
  {
    ForwardArgs a = Valid();
    a.executor = nullptr;
    ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"executor must not be null"});
  }
}

TEST_F(GridSamplerForwardValidation, DTypes) {
  DeviceTensor int_input = Tensor({2, 3, 6, 7}, ACL_INT32);
  DeviceTensor int_grid = Tensor({2, 4, 5, 2}, ACL_INT32);
  DeviceTensor int_out = Output({2, 3, 4, 5}, ACL_INT32);
  DeviceTensor float_grid = Tensor({2, 4, 5, 2}, ACL_FLOAT);
  DeviceTensor bf16_out = Output({2, 3, 4, 5}, ACL_BF16);
  {
    ForwardArgs a{int_input.get(), int_grid.get(), 0, 0, int_out.get(), &workspace_size_, &executor_};
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"input dtype", "INT32"});
  }
  {
    ForwardArgs a = Valid();
    a.grid = float_grid.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"grid dtype", "FLOAT16", "FLOAT"});
  }
  {
    ForwardArgs a = Valid();
    a.out = bf16_out.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"out dtype", "FLOAT16", "BFLOAT16"});
  }
}

TEST_F(GridSamplerForwardValidation, Not4D) {
  DeviceTensor input = Tensor({3, 6, 7}, ACL_FLOAT16);
  DeviceTensor grid = Tensor({2, 4, 5, 2, 1}, ACL_FLOAT16);
  DeviceTensor out = Output({2, 3, 20}, ACL_FLOAT16);
  {
    ForwardArgs a = Valid();
    a.input = input.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"input must be 4-D", "[3, 6, 7]"});
  }
  {
    ForwardArgs a = Valid();
    a.grid = grid.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"grid must be 4-D", "[2, 4, 5, 2, 1]"});
  }
  {
    ForwardArgs a = Valid();
    a.out = out.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"out", "4-D", "[2, 3, 20]"});
  }
}

TEST_F(GridSamplerForwardValidation, ModesOutOfRange) {
  {
    ForwardArgs a = Valid();
    a.interpolation_mode = 3;
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"interpolationMode", "got 3"});
  }
  {
    ForwardArgs a = Valid();
    a.padding_mode = -2;
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"paddingMode", "got -2"});
  }
}

TEST_F(GridSamplerForwardValidation, BatchDiffers) {
  DeviceTensor grid = Tensor({1, 4, 5, 2}, ACL_FLOAT16);
  ForwardArgs a = Valid();
  a.grid = grid.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"dim 0", "[2, 3, 6, 7]", "[1, 4, 5, 2]"});
}

TEST_F(GridSamplerForwardValidation, InputSpatialDimZero) {
  DeviceTensor input = Tensor({2, 3, 6, 0}, ACL_FLOAT16);
  ForwardArgs a = Valid();
  a.input = input.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"input", "[2, 3, 6, 0]"});
}

TEST_F(GridSamplerForwardValidation, GridLastDimNot2) {
  DeviceTensor grid = Tensor({2, 4, 5, 3}, ACL_FLOAT16);
  ForwardArgs a = Valid();
  a.grid = grid.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"last dim of grid", "[2, 4, 5, 3]"});
}

TEST_F(GridSamplerForwardValidation, OutShapeDiffers) {
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{2, 3, 5, 4}, std::vector<int64_t>{2, 1, 4, 5}, std::vector<int64_t>{1, 3, 4, 5}}) {
    DeviceTensor out = Output(shape, ACL_FLOAT16);
    ForwardArgs a = Valid();
    a.out = out.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"out shape", "[2, 3, 4, 5]", optest::ShapeString(shape)});
  }
}

}  // namespace
