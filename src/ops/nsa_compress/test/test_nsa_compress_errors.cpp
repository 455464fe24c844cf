// Phase-1 validation of aclnnNsaCompressGetWorkspaceSize and aclnnNsaCompressGradGetWorkspaceSize (spec section 2,
// "NsaCompress"): each rule has its own test, checking the status code (161001 null, 161002 invalid) and that the
// message names the function, the parameter and the offending value. The rules on what both operators take (input,
// weight, actSeqLen, layout and the three integer attributes) run for both. A rejected call writes nothing. Phase 1
// must not read tensor data: a call whose tensors point at unmapped memory still succeeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_nsa_compress.h"
#include "aclnnop/aclnn_nsa_compress_grad.h"
#include "nsa_compress/test/nsa_compress_calls.h"
#include "nsa_compress/test/nsa_compress_reference.h"
#include "op_test_util.h"
#include "phase1_checks.h"

namespace {

using optest::DeviceTensor;
using optest::HostIntArray;
using optest::Layout;
using optest::RawTensor;

constexpr const char* kForwardName = "aclnnNsaCompress";
constexpr const char* kGradName = "aclnnNsaCompressGrad";

// One valid call: blockSize 32, stride 16, actSeqLen {0, 40, 104}: sequences of 0, 40 and 64 tokens holding 0, 1 and
// 3 blocks, T = 104, N = 2, D = 16.
struct Dims {
  int64_t tokens = 104, heads = 2, dim = 16, block_size = 32, stride = 16, blocks = 4;
  std::vector<int64_t> act_seq_len = {0, 40, 104};
  std::vector<int64_t> Input() const { return {tokens, heads, dim}; }
  std::vector<int64_t> Weight() const { return {block_size, heads}; }
  std::vector<int64_t> Output() const { return {blocks, heads, dim}; }
};

DeviceTensor Tensor(std::vector<int64_t> shape, aclDataType dtype = ACL_FLOAT16, aclFormat format = ACL_FORMAT_ND) {
  const std::vector<double> values(static_cast<size_t>(optest::NumElements(shape)), 0.5);
  return DeviceTensor(std::move(shape), dtype, Layout::kContiguous, values, format);
}
DeviceTensor Output(std::vector<int64_t> shape, aclDataType dtype = ACL_FLOAT16, aclFormat format = ACL_FORMAT_ND) {
  return DeviceTensor::Output(std::move(shape), dtype, Layout::kContiguous, format);
}

// The arguments of either operator (the forward uses input, weight, act_seq_len, layout, the attributes and output).
struct Args {
  const aclTensor* output_grad;
  const aclTensor* input;
  const aclTensor* weight;
  const aclIntArray* act_seq_len;
  char* layout;
  int64_t block_size, stride, seq_len_type;
  aclTensor* output;
  const aclTensor* input_grad;
  const aclTensor* weight_grad;
  uint64_t* workspace_size;
  aclOpExecutor** executor;
};

enum class Op { kForward, kBackward };

const char* OpNameOf(Op op) { return op == Op::kForward ? kForwardName : kGradName; }

std::string OpTestName(const testing::TestParamInfo<Op>& param_info) {
  return param_info.param == Op::kForward ? "Forward" : "Backward";
}

aclnnStatus CallOp(Op op, const Args& a) {
  if (op == Op::kForward) {
    return opcall::GetWorkspaceSize(opcall::NsaCompress{a.input, a.weight, a.act_seq_len, a.layout, a.block_size,
                                                        a.stride, a.seq_len_type, a.output},
                                    a.workspace_size, a.executor);
  }
  return opcall::GetWorkspaceSize(opcall::NsaCompressGrad{a.output_grad, a.input, a.weight, a.act_seq_len, a.block_size,
                                                          a.stride, a.seq_len_type, a.layout, a.input_grad,
                                                          a.weight_grad},
                                  a.workspace_size, a.executor);
}

// Every tensor of both operators for the given sizes (inputs filled with 0.5, outputs with NaN) and the actSeqLen
// array.
struct Operands {
  DeviceTensor input, weight, output_grad, output, input_grad, weight_grad;
  HostIntArray act_seq_len;
  explicit Operands(const Dims& d, aclDataType dtype = ACL_FLOAT16)
      : input(Tensor(d.Input(), dtype)),
        weight(Tensor(d.Weight(), dtype)),
        output_grad(Tensor(d.Output(), dtype)),
        output(Output(d.Output(), dtype)),
        input_grad(Output(d.Input(), dtype)),
        weight_grad(Output(d.Weight(), dtype)),
        act_seq_len(d.act_seq_len) {}
};

// The checks for one operator, Which(); a rejected call leaves the fixture's three outputs untouched.
class NsaCompressValidationBase : protected optest::PhaseOneChecks<Args> {
 protected:
  Dims dims_;
  Operands ops_{dims_};
  char layout_[4] = "TND";

  virtual Op Which() const = 0;

  Args ArgsOf(const Operands& o, const Dims& d) {
    return {o.output_grad.get(),
            o.input.get(),
            o.weight.get(),
            o.act_seq_len.get(),
            layout_,
            d.block_size,
            d.stride,
            0,
            o.output.get(),
            o.input_grad.get(),
            o.weight_grad.get(),
            &workspace_size_,
            &executor_};
  }
  Args Valid() override { return ArgsOf(ops_, dims_); }
  aclnnStatus Call(const Args& a) override { return CallOp(Which(), a); }
  std::string OpName() const override { return OpNameOf(Which()); }
  std::vector<const DeviceTensor*> Outputs() override { return {&ops_.output, &ops_.input_grad, &ops_.weight_grad}; }
};

// ------------------------------------------------------------------------------------------------------------
// Rules on what both operators take.

class NsaCompressValidation : public testing::TestWithParam<Op>, protected NsaCompressValidationBase {
 protected:
  Op Which() const override { return GetParam(); }
};

// Both dtypes, layout "TND" and null, actSeqLen with and without a leading 0, the four (blockSize, stride) pairs, and
// actSeqLen whose sequences hold no block at all (T = 0 included).
TEST_P(NsaCompressValidation, ValidCallsSucceed) {
  struct Valid {
    int64_t block_size, stride;
    std::vector<int64_t> act_seq_len;
  };
  const std::vector<Valid> cases = {
      {32, 16, {0, 40, 104}}, {32, 16, {40, 104}}, {64, 32, {64, 64, 160}}, {48, 16, {47, 95, 143}},
      {128, 64, {300}},       {32, 16, {0}},       {32, 16, {0, 0, 0}},     {48, 16, {47, 80, 127}},
  };
  for (aclDataType dtype : {ACL_FLOAT16, ACL_BF16}) {
    for (const Valid& v : cases) {
      Dims d;
      d.block_size = v.block_size;
      d.stride = v.stride;
      d.act_seq_len = v.act_seq_len;
      d.tokens = v.act_seq_len.back();
      d.blocks = static_cast<int64_t>(ref::NsaCompressBlockStarts(v.act_seq_len, v.block_size, v.stride).size());
      SCOPED_TRACE(std::string(optest::DTypeName(dtype)) + " blockSize " + std::to_string(v.block_size) + " T " +
                   std::to_string(d.tokens));
      const Operands o(d, dtype);
      Args a = ArgsOf(o, d);
      ExpectAccepted(a);
      a.layout = nullptr;
      ExpectAccepted(a);
    }
  }
}

// 161001: actSeqLen is required despite its name; the out-pointers.
TEST_P(NsaCompressValidation, NullActSeqLen) {
  Args a = Valid();
  a.act_seq_len = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"actSeqLen", "null"});
}

TEST_P(NsaCompressValidation, NullWorkspaceSize) {
  Args a = Valid();
  a.workspace_size = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"workspaceSize", "null"});
}

TEST_P(NsaCompressValidation, NullExecutor) {
  Args a = Valid();
  a.executor = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"executor", "null"});
}

// 161002: the attributes.
TEST_P(NsaCompressValidation, BlockSizeNotMultipleOf16) {
  for (int64_t block_size : {24, 40, 8, 33}) {
    SCOPED_TRACE(block_size);
    Args a = Valid();
    a.block_size = block_size;
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"compressBlockSize", "16", std::to_string(block_size)});
  }
}

TEST_P(NsaCompressValidation, BlockSizeNotPositive) {
  for (int64_t block_size : {0, -16, -32}) {
    SCOPED_TRACE(block_size);
    Args a = Valid();
    a.block_size = block_size;
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"compressBlockSize", std::to_string(block_size)});
  }
}

TEST_P(NsaCompressValidation, StrideNotMultipleOf16) {
  for (int64_t stride : {8, 24, 1}) {
    SCOPED_TRACE(stride);
    Args a = Valid();
    a.stride = stride;
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"compressStride", "16", std::to_string(stride)});
  }
}

TEST_P(NsaCompressValidation, StrideNotPositive) {
  for (int64_t stride : {0, -16}) {
    SCOPED_TRACE(stride);
    Args a = Valid();
    a.stride = stride;
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"compressStride", std::to_string(stride)});
  }
}

// A stride above blockSize is refused by both operators. blockSize == stride (blocks that do not overlap) is taken
// by the forward, as CANN's forward is documented and exemplified with it, and refused by the gradient (the seed's
// rule: blockSize > stride).
TEST_P(NsaCompressValidation, BlockSizeAgainstStride) {
  Args above = Valid();
  above.stride = 48;
  ExpectRejected(above, ACLNN_ERR_PARAM_INVALID, {"compressBlockSize", "compressStride", "48"});
  // blockSize = stride = 32: actSeqLen {0, 40, 104} holds 0, 1 and 2 blocks.
  Dims equal;
  equal.stride = 32;
  equal.blocks = 3;
  const Operands o(equal);
  const Args a = ArgsOf(o, equal);
  if (GetParam() == Op::kForward) {
    ExpectAccepted(a);
  } else {
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"compressBlockSize must be greater than compressStride", "32 and 32"});
    optest::ExpectOutputsUntouched({&o.output, &o.input_grad, &o.weight_grad});
  }
}

TEST_P(NsaCompressValidation, ActSeqLenTypeNotZero) {
  for (int64_t type : {1, -1, 2}) {
    SCOPED_TRACE(type);
    Args a = Valid();
    a.seq_len_type = type;
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"actSeqLenType", "0", std::to_string(type)});
  }
}

TEST_P(NsaCompressValidation, LayoutNotTND) {
  for (const char* text : {"BSND", "BSH", "tnd", "", "TND ", "TN"}) {
    SCOPED_TRACE(std::string("\"") + text + "\"");
    std::string layout = text;
    Args a = Valid();
    a.layout = layout.data();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, {"layout", "TND", "\"" + layout + "\""});
  }
}

// 161002: actSeqLen's values.
class NsaCompressSeqLenValidation : public NsaCompressValidation {
 protected:
  void ExpectSeqLenRejected(const std::vector<int64_t>& values, const std::vector<std::string>& fragments) {
    const HostIntArray array(values);
    Args a = Valid();
    a.act_seq_len = array.get();
    ExpectRejected(a, ACLNN_ERR_PARAM_INVALID, fragments);
  }
};

TEST_P(NsaCompressSeqLenValidation, Empty) { ExpectSeqLenRejected({}, {"actSeqLen"}); }

TEST_P(NsaCompressSeqLenValidation, NegativeEntry) {
  ExpectSeqLenRejected({-1, 104}, {"actSeqLen[0]", ">= 0", "got -1"});
  ExpectSeqLenRejected({-32, -16, 104}, {"actSeqLen", "-32"});
}

TEST_P(NsaCompressSeqLenValidation, Decreasing) {
  ExpectSeqLenRejected({64, 40, 104}, {"non-decreasing", "actSeqLen[1] = 40 after actSeqLen[0] = 64"});
  ExpectSeqLenRejected({0, 104, 50, 104}, {"actSeqLen", "50"});
}

TEST_P(NsaCompressSeqLenValidation, LastEntryNotT) {
  ExpectSeqLenRejected({0, 40, 103}, {"actSeqLen", "103", "104"});
  ExpectSeqLenRejected({0, 40, 105}, {"actSeqLen", "105", "104"});
  ExpectSeqLenRejected({40}, {"actSeqLen", "40", "104"});
}

// 161002: FLOAT16 or BFLOAT16 only (every tensor FLOAT, DOUBLE or INT32 here).
TEST_P(NsaCompressValidation, UnsupportedDTypeEverywhere) {
  for (aclDataType dtype : {ACL_FLOAT, ACL_DOUBLE, ACL_INT32}) {
    SCOPED_TRACE(optest::DTypeName(dtype));
    const Operands o(dims_, dtype);
    ExpectRejected(ArgsOf(o, dims_), ACLNN_ERR_PARAM_INVALID, {"dtype", optest::DTypeName(dtype)});
  }
}

// Plain formats other than ND are accepted.
TEST_P(NsaCompressValidation, PlainFormatsAccepted) {
  const Operands o(dims_);
  DeviceTensor input = Tensor(dims_.Input(), ACL_FLOAT16, ACL_FORMAT_NCL);
  DeviceTensor weight = Tensor(dims_.Weight(), ACL_FLOAT16, ACL_FORMAT_NC);
  Args a = ArgsOf(o, dims_);
  a.input = input.get();
  a.weight = weight.get();
  ExpectAccepted(a);
}

// Phase 1 reads no tensor data: every tensor's data pointer leads to unmapped memory, and the call still succeeds
// (reading it would crash the test). The executor is released unrun.
TEST_P(NsaCompressValidation, Phase1ReadsNoTensorData) {
  // Elsewhere phase 1 refuses such pointers: they are not the device's memory.
  if (!optest::DeviceIsCpu()) GTEST_SKIP() << optest::CpuOnlyReason("the CPU device can address any pointer");
  if (optest::StrictMode()) GTEST_SKIP() << optest::StrictModeReason("it refuses data outside aclrtMalloc memory");
  void* unmapped = reinterpret_cast<void*>(static_cast<uintptr_t>(0x40));
  const Dims d;
  RawTensor input(d.Input(), ACL_BF16, unmapped), weight(d.Weight(), ACL_BF16, unmapped);
  RawTensor output_grad(d.Output(), ACL_BF16, unmapped), output(d.Output(), ACL_BF16, unmapped);
  RawTensor input_grad(d.Input(), ACL_BF16, unmapped), weight_grad(d.Weight(), ACL_BF16, unmapped);
  Args a = Valid();
  a.input = input.get();
  a.weight = weight.get();
  a.output_grad = output_grad.get();
  a.output = output.get();
  a.input_grad = input_grad.get();
  a.weight_grad = weight_grad.get();
  ExpectAccepted(a);
}

INSTANTIATE_TEST_SUITE_P(NsaCompress, NsaCompressValidation, testing::Values(Op::kForward, Op::kBackward), OpTestName);
INSTANTIATE_TEST_SUITE_P(NsaCompress, NsaCompressSeqLenValidation, testing::Values(Op::kForward, Op::kBackward),
                         OpTestName);

// ------------------------------------------------------------------------------------------------------------
// Rules on each tensor of each operator: one test per rule, instantiated for every (operator, tensor) pair.

// The tensors of both operators (SlotName lists their parameter names in this order).
enum class Slot { kOutputGrad, kInput, kWeight, kOutput, kInputGradOut, kWeightGradOut };

struct SlotCase {
  Op op;
  Slot slot;
};

const char* SlotName(Slot slot) {
  constexpr const char* kNames[] = {"outputGrad", "input", "weight", "output", "inputGradOut", "weightGradOut"};
  return kNames[static_cast<int>(slot)];
}

bool IsOutput(Slot slot) {
  return slot == Slot::kOutput || slot == Slot::kInputGradOut || slot == Slot::kWeightGradOut;
}

std::vector<int64_t> SlotShape(const Dims& d, Slot slot) {
  switch (slot) {
    case Slot::kInput:
    case Slot::kInputGradOut:
      return d.Input();
    case Slot::kWeight:
    case Slot::kWeightGradOut:
      return d.Weight();
    case Slot::kOutputGrad:
    case Slot::kOutput:
      return d.Output();
  }
  return {};
}

// Shapes of the slot's rank that break its rule for the default Dims (T 104, N 2, D 16, blockSize 32, 4 blocks): for
// input a head count weight does not have (its T must match actSeqLen, tested there; its D only sizes the others),
// for output and outputGrad a block count one off either way (what (L - blockSize) / stride truncated toward zero,
// or one block too few at a sequence end, would give) or another N or D.
std::vector<std::vector<int64_t>> WrongShapes(Slot slot) {
  switch (slot) {
    case Slot::kInput:
      return {{104, 3, 16}, {104, 1, 16}};
    case Slot::kWeight:
      return {{48, 2}, {16, 2}, {32, 3}, {32, 1}};
    case Slot::kOutputGrad:
    case Slot::kOutput:
      return {{5, 2, 16}, {3, 2, 16}, {4, 3, 16}, {4, 2, 32}};
    case Slot::kInputGradOut:
      return {{103, 2, 16}, {104, 2, 17}, {104, 3, 16}};
    case Slot::kWeightGradOut:
      return {{33, 2}, {32, 3}};
  }
  return {};
}

// a with tensor t in the slot.
Args WithTensor(Args a, Slot slot, aclTensor* t) {
  switch (slot) {
    case Slot::kOutputGrad:
      a.output_grad = t;
      break;
    case Slot::kInput:
      a.input = t;
      break;
    case Slot::kWeight:
      a.weight = t;
      break;
    case Slot::kOutput:
      a.output = t;
      break;
    case Slot::kInputGradOut:
      a.input_grad = t;
      break;
    case Slot::kWeightGradOut:
      a.weight_grad = t;
      break;
  }
  return a;
}

std::vector<SlotCase> SlotCases(bool outputs_only) {
  std::vector<SlotCase> cases;
  for (Slot slot : {Slot::kInput, Slot::kWeight, Slot::kOutput}) cases.push_back({Op::kForward, slot});
  for (Slot slot : {Slot::kOutputGrad, Slot::kInput, Slot::kWeight, Slot::kInputGradOut, Slot::kWeightGradOut}) {
    cases.push_back({Op::kBackward, slot});
  }
  if (outputs_only)
    cases.erase(std::remove_if(cases.begin(), cases.end(), [](const SlotCase& c) { return !IsOutput(c.slot); }),
                cases.end());
  return cases;
}

std::string SlotCaseName(const testing::TestParamInfo<SlotCase>& param_info) {
  return std::string(param_info.param.op == Op::kForward ? "Forward_" : "Backward_") + SlotName(param_info.param.slot);
}

class NsaCompressTensorValidation : public testing::TestWithParam<SlotCase>, protected NsaCompressValidationBase {
 protected:
  Op Which() const override { return GetParam().op; }
  Slot slot() const { return GetParam().slot; }
  const char* name() const { return SlotName(GetParam().slot); }

  // A replacement for the slot's tensor: filled with 0.5 for an input, NaN for an output.
  DeviceTensor Replacement(std::vector<int64_t> shape, aclDataType dtype = ACL_FLOAT16,
                           aclFormat format = ACL_FORMAT_ND) const {
    return IsOutput(slot()) ? Output(std::move(shape), dtype, format) : Tensor(std::move(shape), dtype, format);
  }

  void ExpectRejectedWith(aclTensor* t, aclnnStatus status, const std::vector<std::string>& fragments) {
    ExpectRejected(WithTensor(Valid(), slot(), t), status, fragments);
  }
  // The same with a Replacement, which must stay untouched too when it is an output.
  void ExpectRejectedWith(const DeviceTensor& t, const std::vector<std::string>& fragments) {
    ExpectRejectedWith(t.get(), ACLNN_ERR_PARAM_INVALID, fragments);
    if (IsOutput(slot())) optest::ExpectOutputsUntouched({&t});
  }
};

TEST_P(NsaCompressTensorValidation, Null) { ExpectRejectedWith(nullptr, ACLNN_ERR_PARAM_NULLPTR, {name(), "null"}); }

TEST_P(NsaCompressTensorValidation, NullDataOfNonEmptyTensor) {
  const std::vector<int64_t> shape = SlotShape(dims_, slot());
  const std::vector<int64_t> strides = optest::ContiguousStrides(shape);
  const int64_t storage[1] = {optest::NumElements(shape)};
  aclTensor* no_data =
      aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT16, strides.data(), 0, ACL_FORMAT_ND, storage, 1, nullptr);
  ASSERT_NE(no_data, nullptr) << optest::RecentErrorMessage();
  ExpectRejectedWith(no_data, ACLNN_ERR_PARAM_NULLPTR, {name(), "null"});
  aclDestroyTensor(no_data);
}

// 161002: one dtype for all tensors.
TEST_P(NsaCompressTensorValidation, DTypeDiffers) {
  DeviceTensor t = Replacement(SlotShape(dims_, slot()), ACL_BF16);
  ExpectRejectedWith(t, {name(), "dtype", "BFLOAT16"});
}

// 161002: FLOAT16 or BFLOAT16 only.
TEST_P(NsaCompressTensorValidation, DTypeUnsupported) {
  for (aclDataType dtype : {ACL_DOUBLE, ACL_FLOAT}) {
    SCOPED_TRACE(optest::DTypeName(dtype));
    DeviceTensor t = Replacement(SlotShape(dims_, slot()), dtype);
    ExpectRejectedWith(t, {name(), "dtype", optest::DTypeName(dtype)});
  }
}

// 161002: plain formats only.
TEST_P(NsaCompressTensorValidation, PrivateFormat) {
  for (aclFormat format : {ACL_FORMAT_FRACTAL_NZ, ACL_FORMAT_NC1HWC0}) {
    SCOPED_TRACE(format);
    DeviceTensor t = Replacement(SlotShape(dims_, slot()), ACL_FLOAT16, format);
    ExpectRejectedWith(t, {name(), "format"});
  }
}

// 161002: input, output, outputGrad and inputGradOut are 3-D; weight and weightGradOut 2-D.
TEST_P(NsaCompressTensorValidation, WrongRank) {
  std::vector<int64_t> fewer = SlotShape(dims_, slot()), more = fewer;
  fewer.back() *= fewer[fewer.size() - 2];
  fewer.erase(fewer.end() - 2);
  more.push_back(1);
  for (const std::vector<int64_t>& shape : {fewer, more}) {
    SCOPED_TRACE(optest::ShapeString(shape));
    DeviceTensor t = Replacement(shape);
    ExpectRejectedWith(t, {name(), optest::ShapeString(shape)});
  }
}

// 161002: weight (blockSize, N) with N = input's dim 1; output and outputGrad (blocks, N, D); inputGradOut shaped like
// input, weightGradOut like weight.
TEST_P(NsaCompressTensorValidation, ShapeDiffers) {
  for (const std::vector<int64_t>& shape : WrongShapes(slot())) {
    SCOPED_TRACE(optest::ShapeString(shape));
    DeviceTensor t = Replacement(shape);
    ExpectRejectedWith(t, {name(), optest::ShapeString(shape)});
  }
}

INSTANTIATE_TEST_SUITE_P(NsaCompress, NsaCompressTensorValidation, testing::ValuesIn(SlotCases(false)), SlotCaseName);

// 161002: an output whose elements share memory (a zero stride) would have several threads write one element.
class NsaCompressOutputValidation : public NsaCompressTensorValidation {};

TEST_P(NsaCompressOutputValidation, SelfOverlapping) {
  const std::vector<int64_t> shape = SlotShape(dims_, slot());
  for (int zero_dim = 0; zero_dim < static_cast<int>(shape.size()); ++zero_dim) {
    SCOPED_TRACE(zero_dim);
    DeviceTensor storage = Output(shape);
    aclTensor* overlapping = optest::SelfOverlappingView(storage, shape, zero_dim);
    ASSERT_NE(overlapping, nullptr) << optest::RecentErrorMessage();
    ExpectRejectedWith(overlapping, ACLNN_ERR_PARAM_INVALID, {name(), "memory"});
    aclDestroyTensor(overlapping);
    EXPECT_EQ(storage.CheckGuards(), "");
  }
}

INSTANTIATE_TEST_SUITE_P(NsaCompress, NsaCompressOutputValidation, testing::ValuesIn(SlotCases(true)), SlotCaseName);

// Phase 2 refuses a null executor, naming the function.
TEST(NsaCompressRun, NullExecutor) {
  EXPECT_EQ(aclnnNsaCompress(nullptr, 0, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  optest::ExpectErrorMessage(kForwardName, {"executor"});
  EXPECT_EQ(aclnnNsaCompressGrad(nullptr, 0, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  optest::ExpectErrorMessage(kGradName, {"executor"});
}

// An executor of one operator is refused by the other's phase 2 (161002), and runs nothing.
TEST(NsaCompressRun, ExecutorOfTheOtherOperator) {
  const Dims d;
  const Operands o(d);
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(opcall::GetWorkspaceSize(opcall::NsaCompress{o.input.get(), o.weight.get(), o.act_seq_len.get(), "TND",
                                                         d.block_size, d.stride, 0, o.output.get()},
                                     &workspace_size, &executor),
            ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(executor), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  EXPECT_EQ(opcall::RunPhase2(aclnnNsaCompressGrad, workspace_size, executor, nullptr), ACLNN_ERR_PARAM_INVALID);
  optest::ExpectErrorMessage(kGradName, {"executor"});
  optest::ExpectOutputsUntouched({&o.output, &o.input_grad, &o.weight_grad});
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
}

}  // namespace
