// Phase-1 validation of aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize and aclnnScaledMaskedSoftmaxGetWorkspaceSize:
// every rule has its own test, checking the status code and that the message names the function, the parameter,
// the offending value and the rule.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "aclnnop/aclnn_scaled_masked_softmax.h"
#include "aclnnop/aclnn_scaled_masked_softmax_backward.h"
#include "op_test_util.h"
#include "phase1_checks.h"
#include "scaled_masked_softmax/test/scaled_masked_softmax_calls.h"

namespace {

using optest::DeviceTensor;
using optest::Layout;

constexpr const char* kBackward = "aclnnScaledMaskedSoftmaxBackward";
constexpr const char* kForward = "aclnnScaledMaskedSoftmax";

DeviceTensor Tensor(std::vector<int64_t> shape, aclDataType dtype = ACL_FLOAT, aclFormat format = ACL_FORMAT_ND) {
  const std::vector<double> zeros(static_cast<size_t>(optest::NumElements(shape)), 0.0);
  return DeviceTensor(std::move(shape), dtype, Layout::kContiguous, zeros, format);
}
DeviceTensor Mask(std::vector<int64_t> shape) { return Tensor(std::move(shape), ACL_BOOL); }

// The operands of one backward call; tests replace one of them with something invalid.
struct BackwardArgs {
  const aclTensor* grad_output;
  const aclTensor* y;
  const aclTensor* mask;
  aclTensor* out;
  bool fix_triu_mask = false;
  uint64_t* workspace_size;
  aclOpExecutor** executor;
  double scale = 1.0;
};

// A rejected call leaves out (NaN-filled) untouched and hands out no executor.
class BackwardValidation : public testing::Test, protected optest::PhaseOneChecks<BackwardArgs> {
 protected:
  // A valid call: (B, N, S1, S2) = (2, 3, 4, 5), mask (2, 1, 4, 5).
  DeviceTensor dy_ = Tensor({2, 3, 4, 5});
  DeviceTensor y_ = Tensor({2, 3, 4, 5});
  DeviceTensor mask_ = Mask({2, 1, 4, 5});
  DeviceTensor out_ = DeviceTensor::Output({2, 3, 4, 5}, ACL_FLOAT, Layout::kContiguous);

  BackwardArgs Valid() override {
    return {dy_.get(), y_.get(), mask_.get(), out_.get(), false, &workspace_size_, &executor_};
  }
  aclnnStatus Call(const BackwardArgs& a) override {
    return opcall::GetWorkspaceSize(
        opcall::ScaledMaskedSoftmaxBackward{a.grad_output, a.y, a.mask, a.scale, a.fix_triu_mask, a.out},
        a.workspace_size, a.executor);
  }
  std::string OpName() const override { return kBackward; }
  std::vector<const DeviceTensor*> Outputs() override { return {&out_}; }
};

TEST_F(BackwardValidation, ValidCallSucceedsWithNoWorkspace) {
  ExpectAccepted(Valid());
  EXPECT_EQ(workspace_size_, 0u);
}

TEST_F(BackwardValidation, NullGradOutput) {
  BackwardArgs a = Valid();
  a.grad_output = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"gradOutput", "null"});
}

TEST_F(BackwardValidation, NullY) {
  BackwardArgs a = Valid();
  a.y = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"y must not be null"});
}

TEST_F(BackwardValidation, NullMask) {
  BackwardArgs a = Valid();
  a.mask = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"mask", "null"});
}

TEST_F(BackwardValidation, NullOut) {
  BackwardArgs a = Valid();
  a.out = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"out", "null"});
}

TEST_F(BackwardValidation, NullWorkspaceSize) {
  BackwardArgs a = Valid();
  a.workspace_size = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"workspaceSize", "null"});
}

TEST_F(BackwardValidation, NullExecutor) {
  BackwardArgs a = Valid();
  a.executor = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"executor", "null"});
}

TEST_F(BackwardValidation, NullDataOfNonEmptyTensor) {
  const int64_t shape[4] = {2, 3, 4, 5};
  const int64_t strides[4] = {60, 20, 5, 1};
  const int64_t storage[1] = {120};
  aclTensor* no_data = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, nullptr);
  ASSERT_NE(no_data, nullptr) << optest::RecentErrorMessage();
  BackwardArgs a = Valid();
  a.y = no_data;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"y", "null", "[2, 3, 4, 5]"});
  aclDestroyTensor(no_data);
}

TEST_F(BackwardValidation, GradOutputNot4D) {
  DeviceTensor bad = Tensor({2, 3, 5});
  BackwardArgs a = Valid();
  a.grad_output = bad.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"gradOutput", "4-D", "[2, 3, 5]"});
}

TEST_F(BackwardValidation, YNot4D) {
  DeviceTensor bad = Tensor({1, 2, 3, 4, 5});
  BackwardArgs a = Valid();
  a.y = bad.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"y", "4-D", "[1, 2, 3, 4, 5]"});
}

TEST_F(BackwardValidation, MaskNot4D) {
  DeviceTensor bad = Mask({4, 5});
  BackwardArgs a = Valid();
  a.mask = bad.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"mask", "4-D", "[4, 5]"});
}

TEST_F(BackwardValidation, OutNot4D) {
  DeviceTensor bad = DeviceTensor::Output({120}, ACL_FLOAT, Layout::kContiguous);
  BackwardArgs a = Valid();
  a.out = bad.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"out", "4-D", "[120]"});
}

TEST_F(BackwardValidation, YShapeDiffers) {
  DeviceTensor bad = Tensor({2, 3, 4, 6});
  BackwardArgs a = Valid();
  a.y = bad.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"y shape", "gradOutput", "[2, 3, 4, 5]", "[2, 3, 4, 6]"});
}

TEST_F(BackwardValidation, OutShapeDiffers) {
  DeviceTensor bad = DeviceTensor::Output({2, 1, 4, 5}, ACL_FLOAT, Layout::kContiguous);
  BackwardArgs a = Valid();
  a.out = bad.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"out shape", "gradOutput", "[2, 3, 4, 5]", "[2, 1, 4, 5]"});
}

TEST_F(BackwardValidation, YDTypeDiffers) {
  DeviceTensor bad = Tensor({2, 3, 4, 5}, ACL_FLOAT16);
  BackwardArgs a = Valid();
  a.y = bad.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"y dtype", "gradOutput", "FLOAT16"});
}

TEST_F(BackwardValidation, OutDTypeDiffers) {
  DeviceTensor bad = DeviceTensor::Output({2, 3, 4, 5}, ACL_BF16, Layout::kContiguous);
  BackwardArgs a = Valid();
  a.out = bad.get();
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"out dtype", "gradOutput", "BFLOAT16"});
}

TEST_F(BackwardValidation, MaskLastTwoDimsDiffer) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2, 1, 3, 5}, std::vector<int64_t>{2, 1, 4, 1}}) {
    DeviceTensor bad = Mask(shape);
    BackwardArgs a = Valid();
    a.mask = bad.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID,
                   {"last two dims of mask", "gradOutput", optest::ShapeString(shape), "[2, 3, 4, 5]"});
  }
}

TEST_F(BackwardValidation, MaskNotBroadcastable) {
  {
    DeviceTensor bad = Mask({3, 1, 4, 5});  // dim 0 neither 1 nor B = 2
    BackwardArgs a = Valid();
    a.mask = bad.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"mask must broadcast", "dim 0", "is 3", "1 or 2", "[3, 1, 4, 5]"});
  }
  {
    DeviceTensor bad = Mask({1, 2, 4, 5});  // dim 1 neither 1 nor N = 3
    BackwardArgs a = Valid();
    a.mask = bad.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"mask must broadcast", "dim 1", "is 2", "1 or 3", "[1, 2, 4, 5]"});
  }
}

TEST_F(BackwardValidation, UnsupportedValueDType) {
  for (aclDataType dtype : {ACL_DOUBLE, ACL_INT32}) {
    DeviceTensor dy = Tensor({2, 3, 4, 5}, dtype);
    DeviceTensor y = Tensor({2, 3, 4, 5}, dtype);
    DeviceTensor out = DeviceTensor::Output({2, 3, 4, 5}, dtype, Layout::kContiguous);
    BackwardArgs a = Valid();
    a.grad_output = dy.get();
    a.y = y.get();
    a.out = out.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"gradOutput dtype", "FLOAT16", optest::DTypeName(dtype)});
  }
}

TEST_F(BackwardValidation, MaskNotBool) {
  for (aclDataType dtype : {ACL_FLOAT, ACL_INT32}) {
    DeviceTensor bad = Tensor({2, 1, 4, 5}, dtype);
    BackwardArgs a = Valid();
    a.mask = bad.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"mask dtype", "BOOL", optest::DTypeName(dtype)});
  }
}

TEST_F(BackwardValidation, PrivateFormat) {
  DeviceTensor dy = Tensor({2, 3, 4, 5}, ACL_FLOAT, ACL_FORMAT_FRACTAL_NZ);
  DeviceTensor y = Tensor({2, 3, 4, 5}, ACL_FLOAT, ACL_FORMAT_NC1HWC0);
  DeviceTensor mask =
      DeviceTensor({2, 1, 4, 5}, ACL_BOOL, Layout::kContiguous, std::vector<double>(40, 0.0), ACL_FORMAT_FRACTAL_Z);
  DeviceTensor out = DeviceTensor::Output({2, 3, 4, 5}, ACL_FLOAT, Layout::kContiguous, ACL_FORMAT_FRACTAL_NZ);
  struct Case {
    int which;
    const char* param;
  };
  for (const Case c : {Case{0, "gradOutput"}, Case{1, "y"}, Case{2, "mask"}, Case{3, "out"}}) {
    SCOPED_TRACE(c.param);
    BackwardArgs a = Valid();
    if (c.which == 0) a.grad_output = dy.get();
    if (c.which == 1) a.y = y.get();
    if (c.which == 2) a.mask = mask.get();
    if (c.which == 3) a.out = out.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {std::string(c.param) + " format", "ND"});
  }
}

TEST_F(BackwardValidation, PlainFormatsOtherThanNDAreAccepted) {
  DeviceTensor dy = Tensor({2, 3, 4, 5}, ACL_FLOAT, ACL_FORMAT_NCHW);
  BackwardArgs a = Valid();
  a.grad_output = dy.get();
  ExpectAccepted(a);
}

TEST_F(BackwardValidation, FixTriuMaskTrue) {
  BackwardArgs a = Valid();
  a.fix_triu_mask = true;
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"fixTriuMask must be false", "got true"});
}

TEST_F(BackwardValidation, ScaleWithoutAFloatValue) {
  for (double scale : {1e39, -1e300, std::nan(""), HUGE_VAL, -HUGE_VAL}) {
    BackwardArgs a = Valid();
    a.scale = scale;
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"scale must be finite and at most 3.40282e+38 in magnitude", "got"});
  }
  BackwardArgs a = Valid();
  a.scale = -3.4028234663852886e38;  // -FLT_MAX itself is a FLOAT value
  ExpectAccepted(a);
}

TEST_F(BackwardValidation, LastDimOutOfRange) {
  for (int64_t S2 : {0, 4097, 10000}) {
    SCOPED_TRACE(S2);
    const std::vector<int64_t> shape = {1, 2, 2, S2};
    DeviceTensor dy = Tensor(shape);
    DeviceTensor y = Tensor(shape);
    DeviceTensor mask = Mask({1, 1, 2, S2});
    DeviceTensor out = DeviceTensor::Output(shape, ACL_FLOAT, Layout::kContiguous);
    BackwardArgs a{dy.get(), y.get(), mask.get(), out.get(), false, &workspace_size_, &executor_};
    ExpectRejected(
        a, ACLNN_ERR_PARAM_INVALID,
        {"last dim (S2) of gradOutput", "[1, 4096]", "got " + std::to_string(S2), optest::ShapeString(shape)});
  }
}

TEST_F(BackwardValidation, LastDimLimitsAreAccepted) {
  for (int64_t S2 : {1, 4096}) {
    const std::vector<int64_t> shape = {1, 1, 2, S2};
    DeviceTensor dy = Tensor(shape);
    DeviceTensor y = Tensor(shape);
    DeviceTensor mask = Mask({1, 1, 2, S2});
    DeviceTensor out = DeviceTensor::Output(shape, ACL_FLOAT, Layout::kContiguous);
    BackwardArgs a{dy.get(), y.get(), mask.get(), out.get(), false, &workspace_size_, &executor_};
    ExpectAccepted(a);
  }
}

TEST_F(BackwardValidation, SelfOverlappingOut) {
  // A view whose dim 1 has stride 0: three heads would write the same memory.
  std::vector<double> fill(40, 0.0);
  DeviceTensor storage({2, 4, 5}, ACL_FLOAT, Layout::kContiguous, fill);
  const int64_t shape[4] = {2, 3, 4, 5};
  const int64_t strides[4] = {20, 0, 5, 1};
  const int64_t storage_dims[1] = {40};
  aclTensor* overlapping =
      aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage_dims, 1, storage.data());
  ASSERT_NE(overlapping, nullptr) << optest::RecentErrorMessage();
  BackwardArgs a = Valid();
  a.out = overlapping;
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"out must not have elements that share memory", "[20, 0, 5, 1]"});
  aclDestroyTensor(overlapping);
  EXPECT_EQ(storage.CheckGuards(), "");
}

// ------------------------------------------------------------------------------------------------------------
// The forward: the same rules on x, mask, y and fixedTriuMask.

struct ForwardArgs {
  const aclTensor* x;
  const aclTensor* mask;
  aclTensor* y;
  bool fixed_triu_mask = false;
  uint64_t* workspace_size;
  aclOpExecutor** executor;
  double scale = 0.5;
};

class ForwardValidation : public testing::Test, protected optest::PhaseOneChecks<ForwardArgs> {
 protected:
  DeviceTensor x_ = Tensor({2, 3, 4, 5}, ACL_FLOAT16);
  DeviceTensor mask_ = Mask({1, 3, 4, 5});
  DeviceTensor y_ = DeviceTensor::Output({2, 3, 4, 5}, ACL_FLOAT16, Layout::kContiguous);

  ForwardArgs Valid() override { return {x_.get(), mask_.get(), y_.get(), false, &workspace_size_, &executor_}; }
  aclnnStatus Call(const ForwardArgs& a) override {
    return opcall::GetWorkspaceSize(opcall::ScaledMaskedSoftmax{a.x, a.mask, a.scale, a.fixed_triu_mask, a.y},
                                    a.workspace_size, a.executor);
  }
  std::string OpName() const override { return kForward; }
  std::vector<const DeviceTensor*> Outputs() override { return {&y_}; }
};

TEST_F(ForwardValidation, ValidCallSucceedsWithNoWorkspace) {
  ExpectAccepted(Valid());
  EXPECT_EQ(workspace_size_, 0u);
}

TEST_F(ForwardValidation, NullArguments) {
  {
    ForwardArgs a = Valid();
    a.x = nullptr;
    ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"x must not be null"});
  }
  {
    ForwardArgs a = Valid();
    a.mask = nullptr;
    ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"mask must not be null"});
  }
  {
    ForwardArgs a = Valid();
    a.y = nullptr;
    ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"y must not be null"});
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

TEST_F(ForwardValidation, NullDataOfNonEmptyTensor) {
  const int64_t shape[4] = {1, 3, 4, 5};
  const int64_t strides[4] = {60, 20, 5, 1};
  const int64_t storage[1] = {60};
  aclTensor* no_data = aclCreateTensor(shape, 4, ACL_BOOL, strides, 0, ACL_FORMAT_ND, storage, 1, nullptr);
  ASSERT_NE(no_data, nullptr) << optest::RecentErrorMessage();
  ForwardArgs a = Valid();
  a.mask = no_data;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"mask", "null", "[1, 3, 4, 5]"});
  aclDestroyTensor(no_data);
}

TEST_F(ForwardValidation, Not4D) {
  DeviceTensor x = Tensor({3, 4, 5}, ACL_FLOAT16);
  DeviceTensor mask = Mask({1, 1, 3, 4, 5});
  DeviceTensor y = DeviceTensor::Output({60}, ACL_FLOAT16, Layout::kContiguous);
  {
    ForwardArgs a = Valid();
    a.x = x.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"x must be 4-D", "[3, 4, 5]"});
  }
  {
    ForwardArgs a = Valid();
    a.mask = mask.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"mask must be 4-D", "[1, 1, 3, 4, 5]"});
  }
  {
    ForwardArgs a = Valid();
    a.y = y.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"y must be 4-D", "[60]"});
  }
}

TEST_F(ForwardValidation, YShapeOrDTypeDiffers) {
  DeviceTensor wrong_shape = DeviceTensor::Output({2, 3, 5, 5}, ACL_FLOAT16, Layout::kContiguous);
  DeviceTensor wrong_dtype = DeviceTensor::Output({2, 3, 4, 5}, ACL_FLOAT, Layout::kContiguous);
  {
    ForwardArgs a = Valid();
    a.y = wrong_shape.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"y shape", "x", "[2, 3, 4, 5]", "[2, 3, 5, 5]"});
  }
  {
    ForwardArgs a = Valid();
    a.y = wrong_dtype.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"y dtype", "x", "FLOAT16", "FLOAT"});
  }
}

TEST_F(ForwardValidation, MaskShapeRules) {
  DeviceTensor wrong_rows = Mask({1, 3, 5, 5});
  DeviceTensor wrong_batch = Mask({4, 3, 4, 5});
  DeviceTensor wrong_heads = Mask({2, 2, 4, 5});
  {
    ForwardArgs a = Valid();
    a.mask = wrong_rows.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"last two dims of mask", "x", "[1, 3, 5, 5]"});
  }
  {
    ForwardArgs a = Valid();
    a.mask = wrong_batch.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"mask must broadcast to x", "dim 0", "is 4", "1 or 2"});
  }
  {
    ForwardArgs a = Valid();
    a.mask = wrong_heads.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"mask must broadcast to x", "dim 1", "is 2", "1 or 3"});
  }
}

TEST_F(ForwardValidation, DTypes) {
  DeviceTensor x = Tensor({2, 3, 4, 5}, ACL_INT64);
  DeviceTensor y = DeviceTensor::Output({2, 3, 4, 5}, ACL_INT64, Layout::kContiguous);
  DeviceTensor mask = Tensor({1, 3, 4, 5}, ACL_FLOAT16);
  {
    ForwardArgs a = Valid();
    a.x = x.get();
    a.y = y.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"x dtype", "INT64"});
  }
  {
    ForwardArgs a = Valid();
    a.mask = mask.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"mask dtype", "BOOL", "FLOAT16"});
  }
}

TEST_F(ForwardValidation, PrivateFormat) {
  DeviceTensor x = Tensor({2, 3, 4, 5}, ACL_FLOAT16, ACL_FORMAT_NC1HWC0);
  DeviceTensor y = DeviceTensor::Output({2, 3, 4, 5}, ACL_FLOAT16, Layout::kContiguous, ACL_FORMAT_FRACTAL_NZ);
  {
    ForwardArgs a = Valid();
    a.x = x.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"x format", "ND"});
  }
  {
    ForwardArgs a = Valid();
    a.y = y.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"y format", "ND"});
  }
}

TEST_F(ForwardValidation, FixedTriuMaskTrue) {
  ForwardArgs a = Valid();
  a.fixed_triu_mask = true;
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"fixedTriuMask must be false", "got true"});
}

TEST_F(ForwardValidation, ScaleWithoutAFloatValue) {
  for (double scale : {1e39, -1e300, std::nan(""), HUGE_VAL}) {
    ForwardArgs a = Valid();
    a.scale = scale;
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"scale must be finite", "got"});
  }
}

TEST_F(ForwardValidation, LastDimOutOfRange) {
  for (int64_t S2 : {0, 4097}) {
    DeviceTensor x = Tensor({1, 1, 3, S2}, ACL_FLOAT16);
    DeviceTensor mask = Mask({1, 1, 3, S2});
    DeviceTensor y = DeviceTensor::Output({1, 1, 3, S2}, ACL_FLOAT16, Layout::kContiguous);
    ForwardArgs a{x.get(), mask.get(), y.get(), false, &workspace_size_, &executor_};
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"last dim (S2) of x", "[1, 4096]", "got " + std::to_string(S2)});
  }
}

TEST_F(ForwardValidation, SelfOverlappingY) {
  std::vector<double> fill(20, 0.0);
  DeviceTensor storage({4, 5}, ACL_FLOAT16, Layout::kContiguous, fill);
  const int64_t shape[4] = {2, 3, 4, 5};
  const int64_t strides[4] = {0, 0, 5, 1};
  const int64_t storage_dims[1] = {20};
  aclTensor* overlapping =
      aclCreateTensor(shape, 4, ACL_FLOAT16, strides, 0, ACL_FORMAT_ND, storage_dims, 1, storage.data());
  ASSERT_NE(overlapping, nullptr) << optest::RecentErrorMessage();
  ForwardArgs a = Valid();
  a.y = overlapping;
  ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"y must not have elements that share memory", "[0, 0, 5, 1]"});
  aclDestroyTensor(overlapping);
}

// Phase 2 refuses a null executor with its own name in the message.
TEST(ScaledMaskedSoftmaxRun, NullExecutor) {
  EXPECT_EQ(aclnnScaledMaskedSoftmaxBackward(nullptr, 0, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  std::string message = optest::RecentErrorMessage();
  EXPECT_NE(message.find(kBackward), std::string::npos) << message;
  EXPECT_NE(message.find("executor"), std::string::npos) << message;
  EXPECT_EQ(aclnnScaledMaskedSoftmax(nullptr, 0, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  message = optest::RecentErrorMessage();
  EXPECT_NE(message.find(kForward), std::string::npos) << message;
}

// As a new user might write it: x declared as 32 FLOAT elements over an aclrtMalloc of 16. Phase 1 refuses it
// (161002, naming x, its bytes and the allocation's) instead of reading past the allocation.
TEST(ScaledMaskedSoftmaxStorage, TensorLargerThanItsAllocationIsRefused) {
  const int64_t shape[4] = {1, 1, 2, 16};
  const int64_t strides[4] = {32, 32, 16, 1};
  // x gets 16 floats, y 32, the mask 32 bytes.
  const struct {
    aclDataType dtype;
    size_t bytes;
  } operands[3] = {{ACL_FLOAT, 16 * sizeof(float)}, {ACL_FLOAT, 32 * sizeof(float)}, {ACL_BOOL, 32}};
  void* data[3] = {};
  aclTensor* tensors[3] = {};
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(aclrtMalloc(&data[i], operands[i].bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    tensors[i] = aclCreateTensor(shape, 4, operands[i].dtype, strides, 0, ACL_FORMAT_ND, shape, 4, data[i]);
  }
  uint64_t workspace = 0;
  aclOpExecutor* executor = nullptr;
  EXPECT_EQ(aclnnScaledMaskedSoftmaxGetWorkspaceSize(tensors[0], tensors[2], 1.0, false, tensors[1], &workspace,
                                                     &executor),
            ACLNN_ERR_PARAM_INVALID);
  const std::string message = optest::RecentErrorMessage();
  for (const char* part : {kForward, "x storage (32 elements of 4 bytes: 128 bytes", "(64 bytes at"}) {
    EXPECT_NE(message.find(part), std::string::npos) << part << " in: " << message;
  }
  for (int i = 0; i < 3; ++i) {
    aclDestroyTensor(tensors[i]);
    EXPECT_EQ(aclrtFree(data[i]), ACL_SUCCESS);
  }
}

}  // namespace
