// ScaledMaskedSoftmax's step of aclnn_demo (examples/demo/demo_support.h): its forward and backward on a realistic
// shape.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "demo_support.h"
#include "scaled_masked_softmax/test/scaled_masked_softmax_calls.h"
#include "scaled_masked_softmax/test/scaled_masked_softmax_reference.h"

namespace demo {
namespace {

// ScaledMaskedSoftmax forward then backward (on the forward's own output, as in training), one dtype.
void RunScaledMaskedSoftmax(aclrtStream stream, aclDataType dtype, std::vector<Row>* rows) {
  // Attention scores of 2 sequences, 16 heads, 512 tokens; one mask per sequence: causal, and sequence 1 is
  // padded (its last 64 keys masked).
  const std::vector<int64_t> shape = {2, 16, 512, 512};
  const std::vector<int64_t> mask_shape = {2, 1, 512, 512};
  const int64_t B = shape[0], N = shape[1], S1 = shape[2], S2 = shape[3];
  const double scale = 0.125;
  const int64_t count = ElementCount(shape);

  Row forward = MakeRow("ScaledMaskedSoftmax", "", dtype, shape);
  Row backward = MakeRow("ScaledMaskedSoftmaxBackward", "", dtype, shape);

  std::vector<uint8_t> mask(static_cast<size_t>(ElementCount(mask_shape)));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t q = 0; q < S1; ++q) {
      for (int64_t k = 0; k < S2; ++k) mask[(b * S1 + q) * S2 + k] = (k > q || (b == 1 && k >= S2 - 64)) ? 1 : 0;
    }
  }
  std::vector<double> x = RandomValues(count, -16.0, 16.0, 1);
  std::vector<double> grad_output = RandomValues(count, -1.0, 1.0, 2);
  RoundTo(dtype, &x);
  RoundTo(dtype, &grad_output);

  DeviceTensor x_dev, mask_dev, y_dev, grad_output_dev, out_dev;
  std::string error = x_dev.Create(shape, dtype, Encode(x, dtype));
  if (error.empty())
    error = mask_dev.Create(mask_shape, ACL_BOOL, std::vector<unsigned char>(mask.begin(), mask.end()));
  if (error.empty()) error = y_dev.Create(shape, dtype, {});
  if (error.empty()) error = grad_output_dev.Create(shape, dtype, Encode(grad_output, dtype));
  if (error.empty()) error = out_dev.Create(shape, dtype, {});

  double milliseconds = NAN;
  if (error.empty()) {
    error = TimedCall(
        stream, opcall::ScaledMaskedSoftmax{x_dev.tensor(), mask_dev.tensor(), scale, false, y_dev.tensor()},
        &milliseconds);
  }
  std::vector<std::vector<double>> y;  // the forward's output: the backward's input
  error = CompleteCall(
      error, milliseconds, TotalBytes({&x_dev, &mask_dev, &y_dev}), {{&y_dev, &forward}},
      [&] {
        std::vector<double> expected(static_cast<size_t>(count));
        ref::ScaledMaskedSoftmaxForward(x.data(), mask.data(), B, N, S1, S2, mask_shape[0], mask_shape[1], scale,
                                        expected.data());
        return Expected{expected};
      },
      0, rows, &y);

  if (error.empty()) {
    error = TimedCall(stream,
                      opcall::ScaledMaskedSoftmaxBackward{grad_output_dev.tensor(), y_dev.tensor(), mask_dev.tensor(),
                                                          scale, false, out_dev.tensor()},
                      &milliseconds);
  }
  CompleteCall(
      error, milliseconds, TotalBytes({&grad_output_dev, &y_dev, &mask_dev, &out_dev}), {{&out_dev, &backward}},
      [&] {
        std::vector<double> expected(static_cast<size_t>(count));
        ref::ScaledMaskedSoftmaxBackward(grad_output.data(), y[0].data(), mask.data(), B, N, S1, S2, mask_shape[0],
                                         mask_shape[1], scale, expected.data());
        return Expected{expected};
      },
      0, rows);
}

const StepRegistration kRegistration("ScaledMaskedSoftmax", {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}, RunScaledMaskedSoftmax);

}  // namespace
}  // namespace demo
