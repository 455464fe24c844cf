// scaled_masked_softmax's conformance cases (tests/system/op_cases.h): a ready-to-run call of the forward and of the backward in
// every dtype, six variants of layouts and modes, two sizes, with the float64 reference of the outputs.
#include <cmath>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "scaled_masked_softmax/test/scaled_masked_softmax_calls.h"
#include "scaled_masked_softmax/test/scaled_masked_softmax_reference.h"
#include "system/op_cases.h"

namespace systest {
namespace {

using optest::Layout;

struct SoftmaxDims {
  int64_t B, N, S1, S2, maskB, maskN;
  std::vector<int64_t> Shape() const { return {B, N, S1, S2}; }
  std::vector<int64_t> MaskShape() const { return {maskB, maskN, S1, S2}; }
};

SoftmaxDims MakeSoftmaxDims(CaseSize size, int variant) {
  SoftmaxDims d = size == CaseSize::kSmall ? SoftmaxDims{1, 2, 8, 32, 1, 1} : SoftmaxDims{2, 4, 64, 160, 1, 1};
  if (variant % 2 == 0) d.maskN = d.N;  // per-head mask, else broadcast over heads
  if (variant % 3 == 0) d.maskB = d.B;
  return d;
}

// Mask byte values (any nonzero byte means "masked"); about a third masked.
std::vector<double> RandomMask(std::mt19937_64& rng, const SoftmaxDims& d) {
  std::vector<double> mask(static_cast<size_t>(optest::NumElements(d.MaskShape())));
  for (double& m : mask) {
    m = optest::UniformValue(rng, 0.0, 1.0) < 0.3 ? static_cast<double>(optest::UniformInt(rng, 1, 255)) : 0.0;
  }
  return mask;
}

std::vector<uint8_t> MaskBytes(const std::vector<double>& mask) {
  std::vector<uint8_t> bytes(mask.size());
  for (size_t i = 0; i < mask.size(); ++i) bytes[i] = static_cast<uint8_t>(mask[i]);
  return bytes;
}

std::unique_ptr<OpCase> MakeSoftmaxCase(bool backward, aclDataType dtype, uint64_t seed, int variant, CaseSize size) {
  std::mt19937_64 rng(seed);
  const SoftmaxDims d = MakeSoftmaxDims(size, variant);
  const double scale = backward ? 1.3 : 0.7;
  auto inputs = std::make_shared<CaseInputs>();
  const std::vector<double> mask = RandomMask(rng, d);
  const std::vector<uint8_t> mask_bytes = MaskBytes(mask);
  const std::vector<double> x = optest::RandomValues(rng, optest::NumElements(d.Shape()), -3.0, 3.0, dtype);
  std::vector<double> y(x.size());
  ref::ScaledMaskedSoftmaxForward(x.data(), mask_bytes.data(), d.B, d.N, d.S1, d.S2, d.maskB, d.maskN, scale, y.data());
  const opcall::OpInfo& op = backward ? opcall::ScaledMaskedSoftmaxBackward::Info() : opcall::ScaledMaskedSoftmax::Info();
  std::vector<OutputSpec> outputs = {{d.Shape(), dtype, LayoutFor(variant, 2)}};
  if (!backward) {
    inputs->tensors.emplace_back(d.Shape(), dtype, LayoutFor(variant, 0), x);
    inputs->tensors.emplace_back(d.MaskShape(), ACL_BOOL, Layout::kContiguous, mask);
    inputs->expected.push_back(y);
    return std::make_unique<OpCase>(
        CaseName(op, dtype, variant), std::move(inputs), std::move(outputs),
        [scale](const OpCase& c) -> opcall::OpCall {
          return opcall::ScaledMaskedSoftmax{c.input(0), c.input(1), scale, false, c.output(0)};
        });
  }
  // Backward: y a realistic softmax output (rounded to dtype), dy random.
  y = Rounded(std::move(y), dtype);
  const std::vector<double> dy = optest::RandomValues(rng, optest::NumElements(d.Shape()), -1.0, 1.0, dtype);
  std::vector<double> out(dy.size());
  ref::ScaledMaskedSoftmaxBackward(dy.data(), y.data(), mask_bytes.data(), d.B, d.N, d.S1, d.S2, d.maskB, d.maskN,
                                   scale, out.data());
  inputs->tensors.emplace_back(d.Shape(), dtype, LayoutFor(variant, 0), dy);
  inputs->tensors.emplace_back(d.Shape(), dtype, LayoutFor(variant, 1), y);
  inputs->tensors.emplace_back(d.MaskShape(), ACL_BOOL, Layout::kContiguous, mask);
  inputs->expected.push_back(out);
  return std::make_unique<OpCase>(
      CaseName(op, dtype, variant), std::move(inputs), std::move(outputs),
      [scale](const OpCase& c) -> opcall::OpCall {
        return opcall::ScaledMaskedSoftmaxBackward{c.input(0), c.input(1), c.input(2), scale, false, c.output(0)};
      });
}

std::unique_ptr<OpCase> MakeForward(aclDataType dtype, uint64_t seed, int variant, CaseSize size) {
  return MakeSoftmaxCase(false, dtype, seed, variant, size);
}
std::unique_ptr<OpCase> MakeBackward(aclDataType dtype, uint64_t seed, int variant, CaseSize size) {
  return MakeSoftmaxCase(true, dtype, seed, variant, size);
}

const CaseRegistration kRegistration({
    {&opcall::ScaledMaskedSoftmax::Info(), {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}, MakeForward},
    {&opcall::ScaledMaskedSoftmaxBackward::Info(), {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}, MakeBackward},
});

}  // namespace
}  // namespace systest
