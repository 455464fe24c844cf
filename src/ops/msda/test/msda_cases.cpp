// msda's conformance cases (tests/system/op_cases.h): a ready-to-run call of the forward and of the backward in
// every dtype, six variants of layouts and modes, two sizes, with the float64 reference of the outputs.
#include <cmath>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "msda/test/msda_calls.h"
#include "msda/test/msda_reference.h"
#include "system/op_cases.h"

namespace systest {
namespace {

using optest::Layout;

std::unique_ptr<OpCase> MakeMsdaCase(bool backward, aclDataType dtype, uint64_t seed, int variant, CaseSize size) {
  std::mt19937_64 rng(seed);
  const bool small = size == CaseSize::kSmall;
  const std::vector<std::pair<int64_t, int64_t>> levels =
      small ? std::vector<std::pair<int64_t, int64_t>>{{4, 3}, {2, 2}}
            : std::vector<std::pair<int64_t, int64_t>>{{12, 10}, {6, 5}};
  ref::MsdaShape s{};
  s.bs = small ? 1 : 2;
  s.nh = 2;
  s.c = small ? 8 : 32;
  s.nq = small ? 6 : 300;
  s.np = small ? 2 : 4;
  s.nl = static_cast<int64_t>(levels.size());
  std::vector<int64_t> spatial_shape, level_start;
  s.nk = 0;
  for (const auto& [h, w] : levels) {
    spatial_shape.push_back(h);
    spatial_shape.push_back(w);
    level_start.push_back(s.nk);
    s.nk += h * w;
  }
  const aclDataType index_dtype = variant % 2 == 0 ? ACL_INT64 : ACL_INT32;
  const std::vector<int64_t> value_shape = {s.bs, s.nk, s.nh, s.c};
  const std::vector<int64_t> location_shape = {s.bs, s.nq, s.nh, s.nl, s.np, 2};
  const std::vector<int64_t> attn_shape = {s.bs, s.nq, s.nh, s.nl, s.np};
  const std::vector<int64_t> out_shape = {s.bs, s.nq, s.nh * s.c};
  const std::vector<double> value = optest::RandomValues(rng, optest::NumElements(value_shape), -2.0, 2.0, dtype);
  // Locations a little outside [0, 1] too: points off every level, and corners on the border.
  const std::vector<double> location = optest::RandomValues(rng, optest::NumElements(location_shape), -0.1, 1.1, dtype);
  const std::vector<double> attn = optest::RandomValues(rng, optest::NumElements(attn_shape), -0.5, 1.0, dtype);

  auto inputs = std::make_shared<CaseInputs>();
  inputs->tensors.emplace_back(value_shape, dtype, LayoutFor(variant, 0), value);
  inputs->tensors.emplace_back(std::vector<int64_t>{s.nl, 2}, index_dtype, Layout::kContiguous,
                               std::vector<double>(spatial_shape.begin(), spatial_shape.end()));
  inputs->tensors.emplace_back(std::vector<int64_t>{s.nl}, index_dtype, Layout::kContiguous,
                               std::vector<double>(level_start.begin(), level_start.end()));
  inputs->tensors.emplace_back(location_shape, dtype, LayoutFor(variant, 1), location);
  inputs->tensors.emplace_back(attn_shape, dtype, LayoutFor(variant, 2), attn);
  if (!backward) {
    std::vector<double> out(static_cast<size_t>(optest::NumElements(out_shape)));
    ref::MsdaForward(value.data(), spatial_shape.data(), level_start.data(), location.data(), attn.data(), s,
                     out.data());
    inputs->expected.push_back(out);
    return std::make_unique<OpCase>(
        CaseName(opcall::MultiScaleDeformableAttnFunction::Info(), dtype, variant), std::move(inputs),
        std::vector<OutputSpec>{{out_shape, dtype, LayoutFor(variant, 1)}},
        [](const OpCase& c) -> opcall::OpCall {
          return opcall::MultiScaleDeformableAttnFunction{c.input(0), c.input(1), c.input(2),
                                                          c.input(3), c.input(4), c.output(0)};
        });
  }
  // gradOutput 3-D (bs, nq, nh * c) or, in odd variants, the 4-D (bs, nq, nh, c) form.
  const std::vector<int64_t> grad_output_shape =
      variant % 2 == 0 ? out_shape : std::vector<int64_t>{s.bs, s.nq, s.nh, s.c};
  const std::vector<double> grad_output =
      optest::RandomValues(rng, optest::NumElements(grad_output_shape), -1.0, 1.0, dtype);
  std::vector<double> grad_value(value.size()), grad_location(location.size()), grad_attn(attn.size());
  ref::MsdaBackward(value.data(), spatial_shape.data(), level_start.data(), location.data(), attn.data(),
                    grad_output.data(), s, grad_value.data(), grad_location.data(), grad_attn.data());
  inputs->tensors.emplace_back(grad_output_shape, dtype, LayoutFor(variant, 0), grad_output);
  inputs->expected = {grad_value, grad_location, grad_attn};
  return std::make_unique<OpCase>(
      CaseName(opcall::MultiScaleDeformableAttentionGrad::Info(), dtype, variant), std::move(inputs),
      std::vector<OutputSpec>{{value_shape, dtype, LayoutFor(variant, 2)},
                              {location_shape, dtype, LayoutFor(variant, 0)},
                              {attn_shape, dtype, LayoutFor(variant, 1)}},
      [](const OpCase& c) -> opcall::OpCall {
        return opcall::MultiScaleDeformableAttentionGrad{c.input(0),  c.input(1),  c.input(2),
                                                         c.input(3),  c.input(4),  c.input(5),
                                                         c.output(0), c.output(1), c.output(2)};
      });
}

std::unique_ptr<OpCase> MakeForward(aclDataType dtype, uint64_t seed, int variant, CaseSize size) {
  return MakeMsdaCase(false, dtype, seed, variant, size);
}
std::unique_ptr<OpCase> MakeBackward(aclDataType dtype, uint64_t seed, int variant, CaseSize size) {
  return MakeMsdaCase(true, dtype, seed, variant, size);
}

const CaseRegistration kRegistration({
    {&opcall::MultiScaleDeformableAttnFunction::Info(), {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}, MakeForward},
    {&opcall::MultiScaleDeformableAttentionGrad::Info(), {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}, MakeBackward},
});

}  // namespace
}  // namespace systest
