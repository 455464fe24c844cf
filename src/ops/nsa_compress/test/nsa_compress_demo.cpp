// NsaCompress's step of aclnn_demo (examples/demo/demo_support.h): its forward and backward on a realistic shape.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "demo_support.h"
#include "nsa_compress/test/nsa_compress_calls.h"
#include "nsa_compress/test/nsa_compress_reference.h"

namespace demo {
namespace {

// NsaCompress forward and backward (Native Sparse Attention's key/value compression), one dtype: 4 sequences of
// 1024, 20, 1979 and 1093 tokens (the second shorter than a block: it has no block, and its inputGrad is all
// zeros), 4 heads of 128, compressBlockSize 32, compressStride 16, layout "TND".
void RunNsaCompress(aclrtStream stream, aclDataType dtype, std::vector<Row>* rows) {
  const std::vector<int64_t> act_seq_len = {1024, 1044, 3023, 4116};
  const int64_t block_size = 32, stride = 16;
  const ref::NsaCompressShape s{act_seq_len.back(), 4, 128, block_size};
  const std::vector<int64_t> block_starts = ref::NsaCompressBlockStarts(act_seq_len, block_size, stride);
  const std::vector<int64_t> input_shape = {s.tokens, s.heads, s.dim};
  const std::vector<int64_t> weight_shape = {block_size, s.heads};
  const std::vector<int64_t> output_shape = {static_cast<int64_t>(block_starts.size()), s.heads, s.dim};

  Row forward = MakeRow("NsaCompress", "", dtype, output_shape);
  Row input_grad_row = MakeRow("NsaCompressGrad", "inputGrad", dtype, input_shape);
  Row weight_grad_row = MakeRow("NsaCompressGrad", "weightGrad", dtype, weight_shape);

  std::vector<double> input = RandomValues(ElementCount(input_shape), -1.0, 1.0, 11);
  std::vector<double> weight = RandomValues(ElementCount(weight_shape), -0.25, 0.25, 12);
  std::vector<double> output_grad = RandomValues(ElementCount(output_shape), -1.0, 1.0, 13);
  RoundTo(dtype, &input);
  RoundTo(dtype, &weight);
  RoundTo(dtype, &output_grad);

  DeviceTensor input_dev, weight_dev, output_dev, output_grad_dev, input_grad_dev, weight_grad_dev;
  std::string setup_error = input_dev.Create(input_shape, dtype, Encode(input, dtype));
  if (setup_error.empty()) setup_error = weight_dev.Create(weight_shape, dtype, Encode(weight, dtype));
  if (setup_error.empty()) setup_error = output_dev.Create(output_shape, dtype, {});
  if (setup_error.empty()) setup_error = output_grad_dev.Create(output_shape, dtype, Encode(output_grad, dtype));
  if (setup_error.empty()) setup_error = input_grad_dev.Create(input_shape, dtype, {});
  if (setup_error.empty()) setup_error = weight_grad_dev.Create(weight_shape, dtype, {});
  aclIntArray* act_seq_len_array = aclCreateIntArray(act_seq_len.data(), act_seq_len.size());
  if (setup_error.empty() && act_seq_len_array == nullptr) setup_error = "aclCreateIntArray: " + RecentErrorMessage();

  double milliseconds = NAN;
  std::string error = setup_error;
  if (error.empty()) {
    error = TimedCall(stream,
                      opcall::NsaCompress{input_dev.tensor(), weight_dev.tensor(), act_seq_len_array, "TND",
                                          block_size, stride, 0, output_dev.tensor()},
                      &milliseconds);
  }
  CompleteCall(
      error, milliseconds, TotalBytes({&input_dev, &weight_dev, &output_dev}), {{&output_dev, &forward}},
      [&] {
        std::vector<double> expected(static_cast<size_t>(ElementCount(output_shape)));
        ref::NsaCompressForward(input.data(), weight.data(), block_starts, s, expected.data());
        return Expected{expected};
      },
      0, rows);

  // Backward: one call, two outputs, each checked against its own largest value.
  error = setup_error;
  if (error.empty()) {
    error = TimedCall(stream,
                      opcall::NsaCompressGrad{output_grad_dev.tensor(), input_dev.tensor(), weight_dev.tensor(),
                                              act_seq_len_array, block_size, stride, 0, "TND",
                                              input_grad_dev.tensor(), weight_grad_dev.tensor()},
                      &milliseconds);
  }
  if (act_seq_len_array != nullptr) aclDestroyIntArray(act_seq_len_array);
  CompleteCall(
      error, milliseconds, TotalBytes({&input_dev, &weight_dev, &output_grad_dev, &input_grad_dev, &weight_grad_dev}),
      {{&input_grad_dev, &input_grad_row}, {&weight_grad_dev, &weight_grad_row}},
      [&] {
        std::vector<double> input_grad(input.size()), weight_grad(weight.size());
        ref::NsaCompressBackward(input.data(), weight.data(), output_grad.data(), block_starts, s, input_grad.data(),
                                 weight_grad.data());
        return Expected{input_grad, weight_grad};
      },
      0, rows);
}

const StepRegistration kRegistration("NsaCompress", {ACL_FLOAT16, ACL_BF16}, RunNsaCompress);

}  // namespace
}  // namespace demo
