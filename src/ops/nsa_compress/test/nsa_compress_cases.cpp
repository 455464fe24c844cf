// nsa_compress's conformance cases (tests/system/op_cases.h): a ready-to-run call of the forward and of the backward in
// every dtype, six variants of layouts and modes, two sizes, with the float64 reference of the outputs.
#include <cmath>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "nsa_compress/test/nsa_compress_calls.h"
#include "nsa_compress/test/nsa_compress_reference.h"
#include "system/op_cases.h"

namespace systest {
namespace {

using optest::Layout;

constexpr int64_t kNsaBlockSize = 32, kNsaStride = 16;  // compressBlockSize, compressStride

std::unique_ptr<OpCase> MakeNsaCase(bool backward, aclDataType dtype, uint64_t seed, int variant, CaseSize size) {
  std::mt19937_64 rng(seed);
  const bool small = size == CaseSize::kSmall;
  const int64_t heads = small ? 1 : 2, dim = small ? 16 : 32;
  // Sequence lengths around these, so that there are empty sequences, ones too short for a block, and enough
  // blocks in all for several ParallelFor chunks (32 blocks each).
  const std::vector<int64_t> base_lengths =
      small ? std::vector<int64_t>{48, 10, 64} : std::vector<int64_t>{150, 0, 20, 300, 47, 600};
  std::vector<int64_t> act_seq_len;
  if (variant % 2 == 1) act_seq_len.push_back(0);  // a leading 0: an empty first sequence
  int64_t tokens = 0;
  for (int64_t length : base_lengths) {
    tokens += length == 0 ? 0 : length + optest::UniformInt(rng, 0, 15);
    act_seq_len.push_back(tokens);
  }
  const std::vector<int64_t> block_starts = ref::NsaCompressBlockStarts(act_seq_len, kNsaBlockSize, kNsaStride);
  const int64_t blocks = static_cast<int64_t>(block_starts.size());
  const ref::NsaCompressShape s{tokens, heads, dim, kNsaBlockSize};
  const std::vector<int64_t> input_shape = {tokens, heads, dim};
  const std::vector<int64_t> weight_shape = {kNsaBlockSize, heads};
  const std::vector<int64_t> output_shape = {blocks, heads, dim};
  const std::vector<double> input = optest::RandomValues(rng, optest::NumElements(input_shape), -2.0, 2.0, dtype);
  const std::vector<double> weight = optest::RandomValues(rng, optest::NumElements(weight_shape), -0.5, 1.0, dtype);

  auto inputs = std::make_shared<CaseInputs>();
  inputs->int_array.reset(aclCreateIntArray(act_seq_len.data(), act_seq_len.size()), aclDestroyIntArray);
  if (!backward) {
    std::vector<double> output(static_cast<size_t>(optest::NumElements(output_shape)));
    ref::NsaCompressForward(input.data(), weight.data(), block_starts, s, output.data());
    inputs->tensors.emplace_back(input_shape, dtype, LayoutFor(variant, 0), input);
    inputs->tensors.emplace_back(weight_shape, dtype, LayoutFor(variant, 1), weight);
    inputs->expected.push_back(output);
    return std::make_unique<OpCase>(
        CaseName(opcall::NsaCompress::Info(), dtype, variant), std::move(inputs),
        std::vector<OutputSpec>{{output_shape, dtype, LayoutFor(variant, 2)}},
        [](const OpCase& c) -> opcall::OpCall {
          return opcall::NsaCompress{c.input(0), c.input(1), c.inputs().int_array.get(), "TND", kNsaBlockSize,
                                     kNsaStride, 0,          c.output(0)};
        });
  }
  const std::vector<double> output_grad =
      optest::RandomValues(rng, optest::NumElements(output_shape), -1.0, 1.0, dtype);
  std::vector<double> input_grad(input.size()), weight_grad(weight.size());
  ref::NsaCompressBackward(input.data(), weight.data(), output_grad.data(), block_starts, s, input_grad.data(),
                           weight_grad.data());
  inputs->tensors.emplace_back(output_shape, dtype, LayoutFor(variant, 0), output_grad);
  inputs->tensors.emplace_back(input_shape, dtype, LayoutFor(variant, 1), input);
  inputs->tensors.emplace_back(weight_shape, dtype, LayoutFor(variant, 2), weight);
  inputs->expected = {input_grad, weight_grad};
  return std::make_unique<OpCase>(
      CaseName(opcall::NsaCompressGrad::Info(), dtype, variant), std::move(inputs),
      std::vector<OutputSpec>{{input_shape, dtype, LayoutFor(variant, 2)},
                              {weight_shape, dtype, LayoutFor(variant, 0)}},
      [](const OpCase& c) -> opcall::OpCall {
        return opcall::NsaCompressGrad{c.input(0), c.input(1), c.input(2),  c.inputs().int_array.get(),
                                       kNsaBlockSize, kNsaStride, 0, "TND", c.output(0), c.output(1)};
      });
}

std::unique_ptr<OpCase> MakeForward(aclDataType dtype, uint64_t seed, int variant, CaseSize size) {
  return MakeNsaCase(false, dtype, seed, variant, size);
}
std::unique_ptr<OpCase> MakeBackward(aclDataType dtype, uint64_t seed, int variant, CaseSize size) {
  return MakeNsaCase(true, dtype, seed, variant, size);
}

const CaseRegistration kRegistration({
    {&opcall::NsaCompress::Info(), {ACL_FLOAT16, ACL_BF16}, MakeForward},
    {&opcall::NsaCompressGrad::Info(), {ACL_FLOAT16, ACL_BF16}, MakeBackward},
});

}  // namespace
}  // namespace systest
