#include "system/op_cases.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <utility>

#include "reference/grid_sampler2d_reference.h"
#include "reference/msda_reference.h"
#include "reference/nsa_compress_reference.h"
#include "reference/scaled_masked_softmax_reference.h"

namespace systest {

using optest::DeviceTensor;
using optest::Layout;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Layout LayoutFor(int variant, int operand) { return optest::kAllLayouts[(variant + operand) % 3]; }

std::string CaseName(OpKind op, aclDataType dtype, int variant) {
  return std::string(OpName(op)) + "/" + optest::DTypeName(dtype) + "/v" + std::to_string(variant);
}

// Relative 2-norm error allowed against the float64 reference. These are sanity bounds (the operator tests check
// precision element by element): a few units of the dtype's epsilon, so an unwritten (NaN) or wrong output fails.
double Tolerance(aclDataType dtype) {
  switch (dtype) {
    case ACL_DOUBLE:
      return 1e-10;
    case ACL_FLOAT:
      return 1e-4;
    default:
      return 4.0 * optest::EpsilonOf(dtype);
  }
}

std::vector<double> Rounded(std::vector<double> values, aclDataType dtype) {
  return optest::RoundToDType(values, dtype);
}

// ---------------------------------------------------------------------------------------------------------------
// ScaledMaskedSoftmax (forward and backward)

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
  const OpKind op = backward ? OpKind::kScaledMaskedSoftmaxBackward : OpKind::kScaledMaskedSoftmax;
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

// ---------------------------------------------------------------------------------------------------------------
// GridSampler2D (forward and backward)

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
  const OpKind op = backward ? OpKind::kGridSampler2DBackward : OpKind::kGridSampler2D;
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

// ---------------------------------------------------------------------------------------------------------------
// MultiScaleDeformableAttention (forward and backward)

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
        CaseName(OpKind::kMultiScaleDeformableAttnFunction, dtype, variant), std::move(inputs),
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
      CaseName(OpKind::kMultiScaleDeformableAttentionGrad, dtype, variant), std::move(inputs),
      std::vector<OutputSpec>{{value_shape, dtype, LayoutFor(variant, 2)},
                              {location_shape, dtype, LayoutFor(variant, 0)},
                              {attn_shape, dtype, LayoutFor(variant, 1)}},
      [](const OpCase& c) -> opcall::OpCall {
        return opcall::MultiScaleDeformableAttentionGrad{c.input(0),  c.input(1),  c.input(2),
                                                         c.input(3),  c.input(4),  c.input(5),
                                                         c.output(0), c.output(1), c.output(2)};
      });
}

// ---------------------------------------------------------------------------------------------------------------
// NsaCompress (forward and backward)

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
        CaseName(OpKind::kNsaCompress, dtype, variant), std::move(inputs),
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
      CaseName(OpKind::kNsaCompressGrad, dtype, variant), std::move(inputs),
      std::vector<OutputSpec>{{input_shape, dtype, LayoutFor(variant, 2)},
                              {weight_shape, dtype, LayoutFor(variant, 0)}},
      [](const OpCase& c) -> opcall::OpCall {
        return opcall::NsaCompressGrad{c.input(0), c.input(1), c.input(2),  c.inputs().int_array.get(),
                                       kNsaBlockSize, kNsaStride, 0, "TND", c.output(0), c.output(1)};
      });
}

}  // namespace

std::vector<aclDataType> OpDTypes(OpKind op) {
  switch (op) {
    case OpKind::kGridSampler2D:
    case OpKind::kGridSampler2DBackward:
      return {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE};
    case OpKind::kNsaCompress:
    case OpKind::kNsaCompressGrad:
      return {ACL_FLOAT16, ACL_BF16};
    default:
      return {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
  }
}

OpCase::OpCase(std::string name, std::shared_ptr<const CaseInputs> inputs, std::vector<OutputSpec> output_specs,
               MakeCall make_call)
    : name_(std::move(name)),
      inputs_(std::move(inputs)),
      output_specs_(std::move(output_specs)),
      make_call_(std::move(make_call)) {
  for (const OutputSpec& spec : output_specs_)
    outputs_.push_back(DeviceTensor::Output(spec.shape, spec.dtype, spec.layout));
}

bool OpCase::Enqueue(aclrtStream stream, void** workspace) const {
  *workspace = nullptr;
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus status = GetWorkspaceSize(&workspace_size, &executor);
  if (status != ACLNN_SUCCESS) {
    ADD_FAILURE() << name_ << ": phase 1 returned " << status << ": " << optest::RecentErrorMessage();
    return false;
  }
  if (workspace_size > 0 && aclrtMalloc(workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    ADD_FAILURE() << name_ << ": aclrtMalloc of " << workspace_size << " bytes: " << optest::RecentErrorMessage();
    aclDestroyAclOpExecutor(executor);
    *workspace = nullptr;
    return false;
  }
  status = phase2()(*workspace, workspace_size, executor, stream);
  if (status != ACLNN_SUCCESS) {
    ADD_FAILURE() << name_ << ": phase 2 returned " << status << ": " << optest::RecentErrorMessage();
    aclDestroyAclOpExecutor(executor);  // a refused run leaves the executor alive
    return false;
  }
  return true;
}

bool OpCase::RunAndWait(aclrtStream stream) const {
  void* workspace = nullptr;
  bool ok = Enqueue(stream, &workspace);
  const aclError synced = aclrtSynchronizeStream(stream);
  if (synced != ACL_SUCCESS) {
    ADD_FAILURE() << name_ << ": aclrtSynchronizeStream returned " << synced << ": " << optest::RecentErrorMessage();
    ok = false;
  }
  if (workspace != nullptr) aclrtFree(workspace);
  return ok;
}

void OpCase::ResetOutputs() {
  for (DeviceTensor& out : outputs_) out.Write(std::vector<double>(static_cast<size_t>(out.size()), kNaN));
}

std::vector<uint8_t> OpCase::OutputBytes() const {
  std::vector<const DeviceTensor*> tensors;
  for (const DeviceTensor& out : outputs_) tensors.push_back(&out);
  return optest::ConcatenatedBytes(tensors);
}

std::string OpCase::CheckGuards() const {
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const std::string damage = outputs_[i].CheckGuards();
    if (!damage.empty()) return name_ + ": output " + std::to_string(i) + ": " + damage;
  }
  return "";
}

std::string OpCase::CheckAgainstReference() const {
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const double error = optest::RelativeNormError(outputs_[i].Read(), inputs_->expected[i]);
    const double tolerance = Tolerance(outputs_[i].dtype());
    if (!(error <= tolerance)) {
      return name_ + ": output " + std::to_string(i) + " has relative 2-norm error " + std::to_string(error) +
             " against the float64 reference (allowed " + std::to_string(tolerance) + ")";
    }
  }
  return CheckGuards();
}

std::unique_ptr<OpCase> OpCase::Clone() const {
  return std::make_unique<OpCase>(name_, inputs_, output_specs_, make_call_);
}

std::unique_ptr<OpCase> MakeCase(OpKind op, aclDataType dtype, uint64_t seed, int variant, CaseSize size) {
  switch (op) {
    case OpKind::kScaledMaskedSoftmax:
      return MakeSoftmaxCase(false, dtype, seed, variant, size);
    case OpKind::kScaledMaskedSoftmaxBackward:
      return MakeSoftmaxCase(true, dtype, seed, variant, size);
    case OpKind::kGridSampler2D:
      return MakeGridSamplerCase(false, dtype, seed, variant, size);
    case OpKind::kGridSampler2DBackward:
      return MakeGridSamplerCase(true, dtype, seed, variant, size);
    case OpKind::kMultiScaleDeformableAttnFunction:
      return MakeMsdaCase(false, dtype, seed, variant, size);
    case OpKind::kMultiScaleDeformableAttentionGrad:
      return MakeMsdaCase(true, dtype, seed, variant, size);
    case OpKind::kNsaCompress:
      return MakeNsaCase(false, dtype, seed, variant, size);
    case OpKind::kNsaCompressGrad:
      return MakeNsaCase(true, dtype, seed, variant, size);
  }
  return nullptr;
}

std::vector<std::unique_ptr<OpCase>> MakeAllCases(uint64_t base_seed, CaseSize size) {
  std::vector<std::unique_ptr<OpCase>> cases;
  int index = 0;
  for (OpKind op : kAllOps) {
    for (aclDataType dtype : OpDTypes(op)) {
      // The variant (layouts, modes) moves with base_seed too, so different threads run different variants.
      const int variant = static_cast<int>((base_seed + static_cast<uint64_t>(index)) % 6);
      cases.push_back(MakeCase(op, dtype, base_seed * 1000 + static_cast<uint64_t>(index), variant, size));
      ++index;
    }
  }
  return cases;
}

std::vector<std::unique_ptr<OpCase>> MakeOneDTypePerOp(uint64_t base_seed, int rotation, CaseSize size) {
  std::vector<std::unique_ptr<OpCase>> cases;
  int index = 0;
  for (OpKind op : kAllOps) {
    const std::vector<aclDataType> dtypes = OpDTypes(op);
    const aclDataType dtype = dtypes[static_cast<size_t>(rotation) % dtypes.size()];
    const int variant = static_cast<int>((base_seed + static_cast<uint64_t>(index)) % 6);
    cases.push_back(MakeCase(op, dtype, base_seed * 1000 + static_cast<uint64_t>(index), variant, size));
    ++index;
  }
  return cases;
}

}  // namespace systest
