// grid_sampler2d's conformance cases (tests/system/op_cases.h): a ready-to-run call of the forward and of the backward in
// every dtype, six variants of layouts and modes, two sizes, with the float64 reference of the outputs.
#include <cmath>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "grid_sampler2d/test/grid_sampler2d_calls.h"
#include "grid_sampler2d/test/grid_sampler2d_reference.h"
#include "system/op_cases.h"

namespace systest {
namespace {

using optest::Layout;

struct SamplerModes {
  int interpolation, padding;  // 0 bilinear / 1 nearest / 2 bicubic; 0 zeros / 1 border / 2 reflection
  bool align_corners;
};
constexpr SamplerModes kSamplerModes[] = {{0, 0, false}, {1, 1, true}, {2, 2, false},
                                          {0, 2, true},  {2, 1, true}, {1, 0, false}};

double Unnormalize(double c, int64_t size, bool align_corners) {
  const double s = static_cast<double>(size);
  return align_corners ? (c + 1.0) / 2.0 * (s - 1.0) : ((c + 1.0) * s - 1.0) / 2.0;
}

// Grid values whose source coordinates stay 1e-3 pixels away from every multiple of 0.5, where the pixels an
// interpolation reads change: there the kernel's fp32 rounding could legitimately pick other pixels than the
// float64 reference, and the reference check would fail for no fault of the kernel.
std::vector<double> RandomGrid(std::mt19937_64& rng, const ref::GridSamplerShape& s, aclDataType dtype,
                               bool align_corners) {
  std::vector<double> grid(static_cast<size_t>(s.N * s.Hout * s.Wout * 2));
  for (size_t i = 0; i < grid.size(); ++i) {
    const int64_t size = i % 2 == 0 ? s.Win : s.Hin;
    double v = 0.0, twice = 0.0;
    do {
      v = optest::RoundToDType(optest::UniformValue(rng, -1.2, 1.2), dtype);
      twice = 2.0 * Unnormalize(v, size, align_corners);
    } while (std::fabs(twice - std::nearbyint(twice)) < 2e-3);
    grid[i] = v;
  }
  return grid;
}

std::unique_ptr<OpCase> MakeGridSamplerCase(bool backward, aclDataType dtype, uint64_t seed, int variant,
                                            CaseSize size) {
  std::mt19937_64 rng(seed);
  const ref::GridSamplerShape s =
      size == CaseSize::kSmall ? ref::GridSamplerShape{1, 2, 5, 6, 4, 5} : ref::GridSamplerShape{2, 4, 20, 24, 48, 48};
  const SamplerModes m = kSamplerModes[static_cast<size_t>(variant) % std::size(kSamplerModes)];
  const std::vector<int64_t> input_shape = {s.N, s.C, s.Hin, s.Win};
  const std::vector<int64_t> grid_shape = {s.N, s.Hout, s.Wout, 2};
  const std::vector<int64_t> out_shape = {s.N, s.C, s.Hout, s.Wout};
  const std::vector<double> input = optest::RandomValues(rng, optest::NumElements(input_shape), -2.0, 2.0, dtype);
  const std::vector<double> grid = RandomGrid(rng, s, dtype, m.align_corners);
  auto inputs = std::make_shared<CaseInputs>();
  const opcall::OpInfo& op = backward ? opcall::GridSampler2DBackward::Info() : opcall::GridSampler2D::Info();
  if (!backward) {
    std::vector<double> out(static_cast<size_t>(optest::NumElements(out_shape)));
    ref::GridSampler2DForward(input.data(), grid.data(), s, m.interpolation, m.padding, m.align_corners, out.data());
    inputs->tensors.emplace_back(input_shape, dtype, LayoutFor(variant, 0), input);
    inputs->tensors.emplace_back(grid_shape, dtype, LayoutFor(variant, 1), grid);
    inputs->expected.push_back(out);
    return std::make_unique<OpCase>(
        CaseName(op, dtype, variant), std::move(inputs),
        std::vector<OutputSpec>{{out_shape, dtype, LayoutFor(variant, 2)}},
        [m](const OpCase& c) -> opcall::OpCall {
          return opcall::GridSampler2D{c.input(0), c.input(1), m.interpolation, m.padding, m.align_corners,
                                       c.output(0)};
        });
  }
  const std::vector<double> grad_output = optest::RandomValues(rng, optest::NumElements(out_shape), -1.0, 1.0, dtype);
  std::vector<double> input_grad(input.size()), grid_grad(grid.size());
  ref::GridSampler2DBackward(grad_output.data(), input.data(), grid.data(), s, m.interpolation, m.padding,
                             m.align_corners, input_grad.data(), grid_grad.data());
  inputs->tensors.emplace_back(out_shape, dtype, LayoutFor(variant, 0), grad_output);
  inputs->tensors.emplace_back(input_shape, dtype, LayoutFor(variant, 1), input);
  inputs->tensors.emplace_back(grid_shape, dtype, LayoutFor(variant, 2), grid);
  const bool mask[2] = {true, true};
  inputs->bool_array.reset(aclCreateBoolArray(mask, 2), aclDestroyBoolArray);
  inputs->expected.push_back(input_grad);
  inputs->expected.push_back(grid_grad);
  return std::make_unique<OpCase>(
      CaseName(op, dtype, variant), std::move(inputs),
      std::vector<OutputSpec>{{input_shape, dtype, LayoutFor(variant, 1)}, {grid_shape, dtype, LayoutFor(variant, 0)}},
      [m](const OpCase& c) -> opcall::OpCall {
        return opcall::GridSampler2DBackward{c.input(0),      c.input(1),      c.input(2), m.interpolation,
                                             m.padding,       m.align_corners, c.inputs().bool_array.get(),
                                             c.output(0),     c.output(1)};
      });
}

std::unique_ptr<OpCase> MakeForward(aclDataType dtype, uint64_t seed, int variant, CaseSize size) {
  return MakeGridSamplerCase(false, dtype, seed, variant, size);
}
std::unique_ptr<OpCase> MakeBackward(aclDataType dtype, uint64_t seed, int variant, CaseSize size) {
  return MakeGridSamplerCase(true, dtype, seed, variant, size);
}

const CaseRegistration kRegistration({
    {&opcall::GridSampler2D::Info(), {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE}, MakeForward},
    {&opcall::GridSampler2DBackward::Info(), {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE}, MakeBackward},
});

}  // namespace
}  // namespace systest
