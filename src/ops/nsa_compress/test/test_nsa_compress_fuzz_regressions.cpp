// Regression tests for the crashes the libFuzzer harnesses found in NsaCompress (src/ops/nsa_compress/fuzz/): each test replays the
// exact failing description through the public API and checks the result against the float64 reference (or the
// documented outcome). The crashing inputs themselves are in the fuzzer's corpus (src/ops/nsa_compress/fuzz/corpus/regress-*).
//
// The first was an offset of an empty vector's null data() (undefined behaviour that clang's UBSan reports and GCC's
// does not: under the GCC build the test checks the results only; the fuzz run replays the input under UBSan); the
// others a signed overflow (a size-1 dim's huge stride turned into a byte step), which both compilers' UBSan report.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "nsa_compress/test/nsa_compress_calls.h"
#include "nsa_compress/test/nsa_compress_reference.h"
#include "op_test_util.h"

namespace {

using optest::DeviceTensor;
using optest::Layout;

constexpr double kU = 0x1p-24;  // unit roundoff of the kernels' fp32 accumulation

std::vector<double> Absolute(std::vector<double> values) {
  for (double& v : values) v = std::fabs(v);
  return values;
}

// Error bounds of fp32 sums of at most max_terms terms: max_terms * u * sum |terms| per element, where abs_result
// is the reference evaluated on the absolute values of the inputs (so it is exactly sum |terms|).
std::vector<double> SumBounds(const std::vector<double>& abs_result, int64_t max_terms) {
  std::vector<double> bounds(abs_result.size());
  for (size_t i = 0; i < bounds.size(); ++i) bounds[i] = static_cast<double>(max_terms) * kU * abs_result[i];
  return bounds;
}

// src/ops/nsa_compress/fuzz/corpus/regress-nsa-forward-input-in-place: aclnnNsaCompress on a contiguous FLOAT16 input
// (35, 1, 1), weight (32, 1), actSeqLen [35], compressBlockSize 32, compressStride 16: one block. The rows read in
// place were given buffers.data() + r * D for an empty buffer vector (a null pointer offset).
TEST(FuzzRegression, NsaCompressForwardContiguousInputInPlace) {
  optest::TestStream stream;
  const aclDataType dtype = ACL_FLOAT16;
  std::mt19937_64 rng(0x0c729b6f);
  const std::vector<double> input_values = optest::RandomValues(rng, 35, -2.0, 2.0, dtype);
  const std::vector<double> weight_values = optest::RandomValues(rng, 32, -1.0, 1.0, dtype);
  DeviceTensor input({35, 1, 1}, dtype, Layout::kContiguous, input_values);
  DeviceTensor weight({32, 1}, dtype, Layout::kContiguous, weight_values);
  DeviceTensor output = DeviceTensor::Output({1, 1, 1}, dtype, Layout::kContiguous);
  optest::HostIntArray act_seq_len({35});
  ASSERT_EQ(opcall::Run(opcall::NsaCompress{input.get(), weight.get(), act_seq_len.get(), "TND", 32, 16, 0,
                                             output.get()},
                        stream.get()),
            ACLNN_SUCCESS)
      << optest::RecentErrorMessage();

  const std::vector<int64_t> starts = ref::NsaCompressBlockStarts({35}, 32, 16);
  ASSERT_EQ(starts, std::vector<int64_t>{0});
  const ref::NsaCompressShape shape{35, 1, 1, 32};
  std::vector<double> expected(1);
  std::vector<double> abs_expected(1);
  ref::NsaCompressForward(input_values.data(), weight_values.data(), starts, shape, expected.data());
  ref::NsaCompressForward(Absolute(input_values).data(), Absolute(weight_values).data(), starts, shape,
                          abs_expected.data());
  optest::ExpectClose("output", output.Read(), expected, SumBounds(abs_expected, 32), dtype);
  optest::ExpectGuardsIntact({&output});
}

// src/ops/nsa_compress/fuzz/corpus/regress-nsa-grad-output-grad-in-place: aclnnNsaCompressGrad on contiguous BFLOAT16
// tensors, outputGrad (2, 3, 1), input (85, 3, 1), weight (64, 3), actSeqLen [0, 85], compressBlockSize 64,
// compressStride 16: the inputGrad pass gave in-place outputGrad rows buffers.data() + r * D for an empty buffer
// vector (a null pointer offset).
TEST(FuzzRegression, NsaCompressGradContiguousOutputGradInPlace) {
  optest::TestStream stream;
  const aclDataType dtype = ACL_BF16;
  std::mt19937_64 rng(0xc7702e33);
  const std::vector<double> grad_values = optest::RandomValues(rng, 6, -2.0, 2.0, dtype);
  const std::vector<double> input_values = optest::RandomValues(rng, 85 * 3, -2.0, 2.0, dtype);
  const std::vector<double> weight_values = optest::RandomValues(rng, 64 * 3, -1.0, 1.0, dtype);
  DeviceTensor output_grad({2, 3, 1}, dtype, Layout::kContiguous, grad_values);
  DeviceTensor input({85, 3, 1}, dtype, Layout::kContiguous, input_values);
  DeviceTensor weight({64, 3}, dtype, Layout::kContiguous, weight_values);
  DeviceTensor input_grad = DeviceTensor::Output({85, 3, 1}, dtype, Layout::kContiguous);
  DeviceTensor weight_grad = DeviceTensor::Output({64, 3}, dtype, Layout::kContiguous);
  optest::HostIntArray act_seq_len({0, 85});
  ASSERT_EQ(opcall::Run(opcall::NsaCompressGrad{output_grad.get(), input.get(), weight.get(), act_seq_len.get(), 64, 16,
                                                 0, "TND", input_grad.get(), weight_grad.get()},
                        stream.get()),
            ACLNN_SUCCESS)
      << optest::RecentErrorMessage();

  const std::vector<int64_t> starts = ref::NsaCompressBlockStarts({0, 85}, 64, 16);
  ASSERT_EQ(starts, (std::vector<int64_t>{0, 16}));
  const ref::NsaCompressShape shape{85, 3, 1, 64};
  std::vector<double> expected_input(85 * 3);
  std::vector<double> expected_weight(64 * 3);
  std::vector<double> abs_input(85 * 3);
  std::vector<double> abs_weight(64 * 3);
  ref::NsaCompressBackward(input_values.data(), weight_values.data(), grad_values.data(), starts, shape,
                           expected_input.data(), expected_weight.data());
  ref::NsaCompressBackward(Absolute(input_values).data(), Absolute(weight_values).data(), Absolute(grad_values).data(),
                           starts, shape, abs_input.data(), abs_weight.data());
  optest::ExpectClose("inputGrad", input_grad.Read(), expected_input, SumBounds(abs_input, 4), dtype);
  optest::ExpectClose("weightGrad", weight_grad.Read(), expected_weight, SumBounds(abs_weight, 2), dtype);
  optest::ExpectGuardsIntact({&input_grad, &weight_grad});
}

// src/ops/nsa_compress/fuzz/corpus/regress-nsa-grad-size-one-token-dim-stride: aclnnNsaCompressGrad with an input of one
// token whose (size-1, so unused) token dim has stride INT64_MAX: dims (1, 3, 15), strides (INT64_MAX, 15, 1), FLOAT16,
// actSeqLen [1], compressBlockSize 64, compressStride 48: no block, outputGrad (0, 3, 15). The backward turned the
// token stride into a byte step (stride * 2: signed overflow). Both gradients are zero.
TEST(FuzzRegression, NsaCompressGradSizeOneTokenDimWithHugeStride) {
  optest::TestStream stream;
  const aclDataType dtype = ACL_FLOAT16;
  std::mt19937_64 rng(0x2b7884db);
  const std::vector<double> input_values = optest::RandomValues(rng, 45, -2.0, 2.0, dtype);
  DeviceTensor packed_input({1, 3, 15}, dtype, Layout::kContiguous, input_values);
  const int64_t input_dims[] = {1, 3, 15};
  const int64_t input_strides[] = {INT64_MAX, 15, 1};
  const int64_t input_storage[] = {45};
  aclTensor* input = aclCreateTensor(input_dims, 3, dtype, input_strides, 0, ACL_FORMAT_ND, input_storage, 1,
                                     packed_input.data());
  ASSERT_NE(input, nullptr) << optest::RecentErrorMessage();
  DeviceTensor output_grad({0, 3, 15}, dtype, Layout::kContiguous, {});
  DeviceTensor weight({64, 3}, dtype, Layout::kContiguous, optest::RandomValues(rng, 64 * 3, -1.0, 1.0, dtype));
  DeviceTensor input_grad = DeviceTensor::Output({1, 3, 15}, dtype, Layout::kContiguous);
  DeviceTensor weight_grad = DeviceTensor::Output({64, 3}, dtype, Layout::kContiguous);
  optest::HostIntArray act_seq_len({1});
  ASSERT_EQ(opcall::Run(opcall::NsaCompressGrad{output_grad.get(), input, weight.get(), act_seq_len.get(), 64, 48, 0,
                                                 "TND", input_grad.get(), weight_grad.get()},
                        stream.get()),
            ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  optest::ExpectAllZero("inputGrad", input_grad.Read());
  optest::ExpectAllZero("weightGrad", weight_grad.Read());
  optest::ExpectGuardsIntact({&input_grad, &weight_grad});
  aclDestroyTensor(input);
}

}  // namespace
