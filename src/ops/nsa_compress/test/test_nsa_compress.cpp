// aclnnNsaCompress (forward) and aclnnNsaCompressGrad against the float64 reference
// (tests/reference/nsa_compress_reference.h, itself checked against PyTorch's unfold + einsum composite by
// tests/parity/nsa_compress_parity.py), and the backward against central differences of the float64 forward.
//
// Tolerances (spec section 3), per element: |actual - round(reference)| <= ulp + E, where ulp is one unit in the last
// place of the output dtype and E bounds the error of the kernel's fp32 accumulation before the output's single
// rounding (see AccumulationFactor and ErrorBounds). Products of two FLOAT16 or two BFLOAT16 values are exact in fp32,
// so E comes from the additions alone: E = k(n) * u * sum |terms| for a sum of n terms, u = 2^-24. With E = 0 this is
// "within 1 ulp of the rounded reference"; E only matters where cancellation makes a result small next to its terms.
//
// Sequences: every random problem mixes lengths of each kind that decides the block count (LengthKind): empty, too
// short for a block, one to stride - 1 tokens short of a block (where (L - blockSize) / stride truncates to 0 in C
// although floor gives -1), exactly one block, blocks that end exactly at the sequence end, and a tail no block
// covers; actSeqLen with and without a leading 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_nsa_compress.h"
#include "aclnnop/aclnn_nsa_compress_grad.h"
#include "nsa_compress/test/nsa_compress_calls.h"
#include "op_test_util.h"
#include "nsa_compress/test/nsa_compress_reference.h"

namespace {

using optest::DeviceTensor;
using optest::ExpectAllZero;
using optest::ExpectClose;
using optest::ExpectGuardsIntact;
using optest::Layout;

constexpr aclDataType kDTypes[] = {ACL_FLOAT16, ACL_BF16};
constexpr double kU = 0x1p-24;  // unit roundoff of the kernels' fp32 accumulation

// ------------------------------------------------------------------------------------------------------------
// Problems

struct Geometry {
  int64_t block_size, stride, heads, dim;  // compressBlockSize, compressStride, N, D
};

std::string GeometryName(const Geometry& g) {
  return "bs" + std::to_string(g.block_size) + "_st" + std::to_string(g.stride) + "_N" + std::to_string(g.heads) +
         "_D" + std::to_string(g.dim);
}

struct Problem {
  Geometry g{};
  std::vector<int64_t> act_seq_len;                // as passed to the operator
  std::vector<int64_t> block_starts;               // ref::NsaCompressBlockStarts
  int64_t tokens = 0;                              // T
  std::vector<double> input, weight, output_grad;  // exactly representable in the test dtype

  int64_t Blocks() const { return static_cast<int64_t>(block_starts.size()); }
  std::vector<int64_t> InputShape() const { return {tokens, g.heads, g.dim}; }
  std::vector<int64_t> WeightShape() const { return {g.block_size, g.heads}; }
  std::vector<int64_t> OutputShape() const { return {Blocks(), g.heads, g.dim}; }
  ref::NsaCompressShape Shape() const { return {tokens, g.heads, g.dim, g.block_size}; }
};

std::string SequencesName(const Problem& p) {
  std::string name = "actSeqLen (" + std::to_string(p.act_seq_len.size()) + " entries) [";
  for (size_t i = 0; i < p.act_seq_len.size() && i < 12; ++i) {
    name += (i > 0 ? ", " : "") + std::to_string(p.act_seq_len[i]);
  }
  return name + (p.act_seq_len.size() > 12 ? ", ...]" : "]") + ", " + std::to_string(p.Blocks()) + " blocks";
}

// The lengths that decide a sequence's block count (see the top comment).
enum class LengthKind { kEmpty, kShort, kAlmostBlock, kOneBlock, kExactFit, kWithTail };
constexpr LengthKind kAllLengthKinds[] = {LengthKind::kEmpty,    LengthKind::kShort,    LengthKind::kAlmostBlock,
                                          LengthKind::kOneBlock, LengthKind::kExactFit, LengthKind::kWithTail};

// A sequence length of the kind: kExactFit has 1 to max_extra_blocks blocks after the first, kWithTail 0 to
// max_extra_blocks.
int64_t RandomLength(std::mt19937_64& rng, const Geometry& g, LengthKind kind, int64_t max_extra_blocks) {
  auto uniform = [&rng](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  switch (kind) {
    case LengthKind::kEmpty:
      return 0;
    case LengthKind::kShort:
      return uniform(1, g.block_size - g.stride);
    case LengthKind::kAlmostBlock:
      return uniform(g.block_size - g.stride + 1, g.block_size - 1);
    case LengthKind::kOneBlock:
      return g.block_size;
    case LengthKind::kExactFit:
      return g.block_size + uniform(1, max_extra_blocks) * g.stride;
    case LengthKind::kWithTail:
      return g.block_size + uniform(0, max_extra_blocks) * g.stride + uniform(1, g.stride - 1);
  }
  return 0;
}

// `count` sequence lengths in random order: one of every kind first (when count allows), then random kinds.
std::vector<int64_t> RandomLengths(std::mt19937_64& rng, const Geometry& g, int64_t count, int64_t max_extra_blocks) {
  std::uniform_int_distribution<size_t> any_kind(0, std::size(kAllLengthKinds) - 1);
  std::vector<int64_t> lengths;
  for (int64_t i = 0; i < count; ++i) {
    const size_t kind = i < static_cast<int64_t>(std::size(kAllLengthKinds)) ? static_cast<size_t>(i) : any_kind(rng);
    lengths.push_back(RandomLength(rng, g, kAllLengthKinds[kind], max_extra_blocks));
  }
  std::shuffle(lengths.begin(), lengths.end(), rng);
  return lengths;
}

// actSeqLen for the lengths: cumulative ends, after a 0 (an empty first sequence) if leading_zero.
std::vector<int64_t> CumulativeEnds(const std::vector<int64_t>& lengths, bool leading_zero) {
  std::vector<int64_t> ends;
  if (leading_zero) ends.push_back(0);
  int64_t end = 0;
  for (int64_t length : lengths) ends.push_back(end += length);
  return ends;
}

Problem MakeProblem(const Geometry& g, std::vector<int64_t> act_seq_len, aclDataType dtype, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Problem p;
  p.g = g;
  p.act_seq_len = std::move(act_seq_len);
  p.tokens = p.act_seq_len.back();
  p.block_starts = ref::NsaCompressBlockStarts(p.act_seq_len, g.block_size, g.stride);
  p.input = optest::RandomValues(rng, optest::NumElements(p.InputShape()), -2.0, 2.0, dtype);
  p.weight = optest::RandomValues(rng, optest::NumElements(p.WeightShape()), -0.5, 1.0, dtype);
  p.output_grad = optest::RandomValues(rng, optest::NumElements(p.OutputShape()), -1.0, 1.0, dtype);
  return p;
}

Problem MakeRandomProblem(const Geometry& g, int64_t sequences, bool leading_zero, aclDataType dtype, uint64_t seed,
                          int64_t max_extra_blocks = 3) {
  std::mt19937_64 rng(seed ^ 0x5eedULL);
  return MakeProblem(g, CumulativeEnds(RandomLengths(rng, g, sequences, max_extra_blocks), leading_zero), dtype, seed);
}

std::vector<double> ReferenceForward(const Problem& p) {
  std::vector<double> output(static_cast<size_t>(optest::NumElements(p.OutputShape())));
  ref::NsaCompressForward(p.input.data(), p.weight.data(), p.block_starts, p.Shape(), output.data());
  return output;
}

struct Gradients {
  std::vector<double> input, weight;
};

Gradients ReferenceBackward(const Problem& p) {
  Gradients g;
  g.input.resize(p.input.size());
  g.weight.resize(p.weight.size());
  ref::NsaCompressBackward(p.input.data(), p.weight.data(), p.output_grad.data(), p.block_starts, p.Shape(),
                           g.input.data(), g.weight.data());
  return g;
}

// ------------------------------------------------------------------------------------------------------------
// Error bounds of the kernels' fp32 accumulation.
//
// A sum of n exact products accumulated in fp32, in any order and grouping, errs by at most (n - 1) u sum |terms|
// (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., section 4.2); k(n) = n + 1 up to 256 terms, which
// covers the forward (blockSize terms) and inputGrad (at most ceil(blockSize / stride) terms). weightGrad sums
// blocks * D terms, up to ~10^6, where that worst case is meaningless: the rounding errors then add up like a random
// walk, about sqrt(n) / 3 u sum |terms| in the worst realistic arrangement (terms of one sign added one after
// another). k(n) = 4 sqrt(n) there, never less than the bound at 256 terms.
double AccumulationFactor(int64_t terms) {
  const double n = static_cast<double>(terms);
  return n <= 256 ? n + 1.0 : std::max(257.0, 4.0 * std::sqrt(n));
}

std::vector<double> Absolute(std::vector<double> values) {
  for (double& v : values) v = std::fabs(v);
  return values;
}

// How many blocks cover each token.
std::vector<int64_t> Coverage(const Problem& p) {
  std::vector<int64_t> coverage(static_cast<size_t>(p.tokens), 0);
  for (int64_t start : p.block_starts) {
    for (int64_t j = 0; j < p.g.block_size; ++j) ++coverage[static_cast<size_t>(start + j)];
  }
  return coverage;
}

struct Bounds {
  std::vector<double> output, input_grad, weight_grad;
};

// The sums of |terms| are the reference run on the inputs' magnitudes.
Bounds ErrorBounds(const Problem& p) {
  Problem magnitudes = p;
  magnitudes.input = Absolute(p.input);
  magnitudes.weight = Absolute(p.weight);
  magnitudes.output_grad = Absolute(p.output_grad);
  Bounds b;
  b.output = ReferenceForward(magnitudes);
  const double output_factor = AccumulationFactor(p.g.block_size) * kU;
  for (double& v : b.output) v *= output_factor;
  const Gradients sums = ReferenceBackward(magnitudes);
  b.input_grad = sums.input;
  const std::vector<int64_t> coverage = Coverage(p);
  const size_t token_elements = static_cast<size_t>(p.g.heads * p.g.dim);
  for (size_t i = 0; i < b.input_grad.size(); ++i) {
    b.input_grad[i] *= AccumulationFactor(coverage[i / token_elements]) * kU;
  }
  b.weight_grad = sums.weight;
  const double weight_factor = AccumulationFactor(p.Blocks() * p.g.dim) * kU;
  for (double& v : b.weight_grad) v *= weight_factor;
  return b;
}

void ExpectForwardMatches(const std::vector<double>& output, const Problem& p, aclDataType dtype) {
  ExpectClose("output", output, ReferenceForward(p), ErrorBounds(p).output, dtype);
}

// The gradients against the reference; tokens no block covers must get exactly 0.
void ExpectBackwardMatches(const std::vector<double>& input_grad, const std::vector<double>& weight_grad,
                           const Problem& p, aclDataType dtype) {
  const Gradients expected = ReferenceBackward(p);
  const Bounds bounds = ErrorBounds(p);
  ExpectClose("inputGrad", input_grad, expected.input, bounds.input_grad, dtype);
  ExpectClose("weightGrad", weight_grad, expected.weight, bounds.weight_grad, dtype);
  if (input_grad.size() != p.input.size()) return;
  const std::vector<int64_t> coverage = Coverage(p);
  const size_t token_elements = static_cast<size_t>(p.g.heads * p.g.dim);
  for (size_t t = 0; t < coverage.size(); ++t) {
    if (coverage[t] > 0) continue;
    const std::vector<double> token(input_grad.begin() + static_cast<std::ptrdiff_t>(t * token_elements),
                                    input_grad.begin() + static_cast<std::ptrdiff_t>((t + 1) * token_elements));
    ExpectAllZero(("inputGrad of uncovered token " + std::to_string(t)).c_str(), token);
  }
}

// ------------------------------------------------------------------------------------------------------------
// Device tensors and running the operators

// The tensors of the two calls (OperandName lists their parameter names in this order).
enum Operand { kInput, kWeight, kOutputOrOutputGrad, kInputGrad, kWeightGrad, kOperandCount };
using Layouts = std::array<Layout, kOperandCount>;

Layouts AllLayouts(Layout layout) {
  Layouts layouts;
  layouts.fill(layout);
  return layouts;
}

// How one call is made: the dtype, and whether the layout string is null (meaning "TND") or "TND".
struct CallConfig {
  aclDataType dtype = ACL_FLOAT16;
  bool null_layout = false;
};

struct DeviceProblem {
  DeviceTensor input, weight, output_grad;
  optest::HostIntArray act_seq_len;
  DeviceProblem(const Problem& p, aclDataType dtype, const Layouts& layouts)
      : input(p.InputShape(), dtype, layouts[kInput], p.input),
        weight(p.WeightShape(), dtype, layouts[kWeight], p.weight),
        output_grad(p.OutputShape(), dtype, layouts[kOutputOrOutputGrad], p.output_grad),
        act_seq_len(p.act_seq_len) {}

  std::vector<const DeviceTensor*> Inputs() const { return {&input, &weight, &output_grad}; }
};

aclnnStatus RunForward(const Problem& p, const DeviceProblem& d, const CallConfig& setup, aclTensor* output,
                       aclrtStream stream = nullptr) {
  return opcall::Run(opcall::NsaCompress{d.input.get(), d.weight.get(), d.act_seq_len.get(),
                                         setup.null_layout ? nullptr : "TND", p.g.block_size, p.g.stride, 0, output},
                     stream);
}

aclnnStatus RunBackward(const Problem& p, const DeviceProblem& d, const CallConfig& setup, aclTensor* input_grad,
                        aclTensor* weight_grad, aclrtStream stream = nullptr) {
  return opcall::Run(opcall::NsaCompressGrad{d.output_grad.get(), d.input.get(), d.weight.get(), d.act_seq_len.get(),
                                             p.g.block_size, p.g.stride, 0, setup.null_layout ? nullptr : "TND",
                                             input_grad, weight_grad},
                     stream);
}

struct DeviceGradients {
  DeviceTensor input, weight;
  DeviceGradients(const Problem& p, aclDataType dtype, const Layouts& layouts = AllLayouts(Layout::kContiguous))
      : input(DeviceTensor::Output(p.InputShape(), dtype, layouts[kInputGrad])),
        weight(DeviceTensor::Output(p.WeightShape(), dtype, layouts[kWeightGrad])) {}
};

std::vector<std::vector<uint8_t>> InputBytes(const DeviceProblem& d) {
  std::vector<std::vector<uint8_t>> bytes;
  for (const DeviceTensor* t : d.Inputs()) bytes.push_back(t->ReadBytes());
  return bytes;
}

// The inputs hold what they held before the call, and nothing around them was written.
void ExpectInputsIntact(const DeviceProblem& d, const std::vector<std::vector<uint8_t>>& before) {
  ExpectGuardsIntact(d.Inputs());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(d.Inputs()[i]->ReadBytes(), before[i]) << "input " << i;
}

void CheckForward(const Problem& p, const CallConfig& setup, const Layouts& layouts = AllLayouts(Layout::kContiguous),
                  aclrtStream stream = nullptr) {
  SCOPED_TRACE(SequencesName(p));
  DeviceProblem d(p, setup.dtype, layouts);
  const std::vector<std::vector<uint8_t>> before = InputBytes(d);
  DeviceTensor output = DeviceTensor::Output(p.OutputShape(), setup.dtype, layouts[kOutputOrOutputGrad]);
  ASSERT_EQ(RunForward(p, d, setup, output.get(), stream), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  ExpectForwardMatches(output.Read(), p, setup.dtype);
  ExpectGuardsIntact({&output});
  ExpectInputsIntact(d, before);
}

void CheckBackward(const Problem& p, const CallConfig& setup, const Layouts& layouts = AllLayouts(Layout::kContiguous),
                   aclrtStream stream = nullptr) {
  SCOPED_TRACE(SequencesName(p));
  DeviceProblem d(p, setup.dtype, layouts);
  const std::vector<std::vector<uint8_t>> before = InputBytes(d);
  DeviceGradients grads(p, setup.dtype, layouts);
  ASSERT_EQ(RunBackward(p, d, setup, grads.input.get(), grads.weight.get(), stream), ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  ExpectBackwardMatches(grads.input.Read(), grads.weight.Read(), p, setup.dtype);
  ExpectGuardsIntact({&grads.input, &grads.weight});
  ExpectInputsIntact(d, before);
}

// ------------------------------------------------------------------------------------------------------------
// Sweep: both dtypes x geometries (the four (blockSize, stride) pairs, N in {1, 4, 64}, D in {16, 128, 192}), each
// on two random problems of mixed sequence lengths, actSeqLen with and without a leading 0, layout "TND" and null.

struct SweepCase {
  aclDataType dtype;
  Geometry g;
};

std::string SweepCaseName(const SweepCase& c) {
  return std::string(optest::DTypeName(c.dtype)) + "_" + GeometryName(c.g);
}

// How gtest shows a failing case's parameter.
void PrintTo(const SweepCase& c, std::ostream* os) { *os << SweepCaseName(c); }

// The brief's sizes, plus D = 1 and 33 (not a multiple of any vector width: the kernels' tails), 96 and 400 (rows
// the forward walks in several channel groups), 4 and 6 blocks covering a token (the forward keeps up to 4 blocks'
// sums in registers and takes another path beyond), and block sizes that are not a multiple of the stride (48 / 32,
// 80 / 48: a token is covered by 1 or 2 blocks depending on where it lies).
const Geometry kSweepGeometries[] = {
    {32, 16, 1, 16},  {32, 16, 4, 128},  {64, 32, 64, 16}, {64, 32, 1, 128}, {48, 16, 4, 192},
    {48, 16, 64, 16}, {128, 64, 1, 192}, {128, 64, 4, 16}, {32, 16, 3, 1},   {48, 16, 2, 33},
    {32, 16, 2, 400}, {64, 16, 3, 96},   {96, 16, 2, 40},  {48, 32, 4, 40},  {80, 48, 2, 33},
    {80, 48, 3, 128}, {32, 16, 5, 8},    {32, 16, 2, 256},
};

std::vector<SweepCase> SweepCases() {
  std::vector<SweepCase> cases;
  for (aclDataType dtype : kDTypes) {
    for (const Geometry& g : kSweepGeometries) cases.push_back({dtype, g});
  }
  return cases;
}

class NsaCompressSweep : public testing::TestWithParam<SweepCase> {};

TEST_P(NsaCompressSweep, ForwardAndBackwardMatchReference) {
  const SweepCase c = GetParam();
  const uint64_t seed = 1000 + static_cast<uint64_t>(c.dtype) * 100 + static_cast<uint64_t>(c.g.block_size + c.g.heads);
  optest::TestStream stream;
  for (bool leading_zero : {true, false}) {
    const Problem p = MakeRandomProblem(c.g, 8, leading_zero, c.dtype, seed + (leading_zero ? 1 : 0));
    CallConfig setup;
    setup.dtype = c.dtype;
    setup.null_layout = leading_zero;
    CheckForward(p, setup, AllLayouts(Layout::kContiguous), stream.get());
    CheckBackward(p, setup, AllLayouts(Layout::kContiguous), stream.get());
  }
}

std::string SweepParamName(const testing::TestParamInfo<SweepCase>& param_info) {
  return SweepCaseName(param_info.param);
}

INSTANTIATE_TEST_SUITE_P(NsaCompress, NsaCompressSweep, testing::ValuesIn(SweepCases()), SweepParamName);

// ------------------------------------------------------------------------------------------------------------
// Layouts: each tensor (and all at once) transposed (input stored as (T, D, N), weight column-major, ...), padded
// (an offset and gaps after every dim), channels-last (input stored as (T, D, N) too, by the other rule) or, for
// inputs, broadcast (a zero stride along dim 0: every token, block position or block the same), inputs and outputs.

// The operand's parameter name; "all" for kOperandCount.
const char* OperandName(int operand, bool forward) {
  constexpr const char* kNames[] = {"input", "weight", "outputGrad", "inputGradOut", "weightGradOut", "all"};
  return forward && operand == kOutputOrOutputGrad ? "output" : kNames[operand];
}

const Geometry kLayoutGeometry = {32, 16, 4, 16};

void CheckLayouts(aclDataType dtype, bool forward) {
  uint64_t seed = 3000 + static_cast<uint64_t>(dtype) * 100;
  for (int operand = 0; operand <= kOperandCount; ++operand) {
    if (forward && (operand == kInputGrad || operand == kWeightGrad)) continue;
    // Outputs (and "all") cannot be broadcast: their elements would overlap.
    const bool may_broadcast = operand == kInput || operand == kWeight || (!forward && operand == kOutputOrOutputGrad);
    for (Layout layout : optest::kInputLayouts) {
      if (layout == Layout::kBroadcast && !may_broadcast) continue;
      if (layout == Layout::kChannelsLast && operand == kWeight) continue;  // rank 2: the same as contiguous
      SCOPED_TRACE(std::string(OperandName(operand, forward)) + " " + optest::LayoutName(layout));
      Layouts layouts = AllLayouts(Layout::kContiguous);
      if (operand == kOperandCount) {
        layouts.fill(layout);
      } else {
        layouts[static_cast<size_t>(operand)] = layout;
      }
      ++seed;
      Problem p = MakeRandomProblem(kLayoutGeometry, 7, seed % 2 == 0, dtype, seed);
      p.input = optest::AsStored(p.input, p.InputShape(), layouts[kInput]);
      p.weight = optest::AsStored(p.weight, p.WeightShape(), layouts[kWeight]);
      p.output_grad = optest::AsStored(p.output_grad, p.OutputShape(), layouts[kOutputOrOutputGrad]);
      CallConfig setup;
      setup.dtype = dtype;
      if (forward) {
        CheckForward(p, setup, layouts);
      } else {
        CheckBackward(p, setup, layouts);
      }
    }
  }
}

class NsaCompressLayouts : public testing::TestWithParam<aclDataType> {};

TEST_P(NsaCompressLayouts, ForwardMatchesReference) { CheckLayouts(GetParam(), true); }

TEST_P(NsaCompressLayouts, BackwardMatchesReference) { CheckLayouts(GetParam(), false); }

std::string DTypeParamName(const testing::TestParamInfo<aclDataType>& param_info) {
  return optest::DTypeName(param_info.param);
}

INSTANTIATE_TEST_SUITE_P(NsaCompress, NsaCompressLayouts, testing::ValuesIn(kDTypes), DTypeParamName);

// ------------------------------------------------------------------------------------------------------------
// The operator's backward against central differences of the forward, L(input, weight) = sum(outputGrad * forward),
// the forward being the float64 reference on the exactly widened inputs (independent of the reference backward). L is
// linear in each argument, so a central difference is exact up to float64 rounding (~1e-16 of L's terms, far below
// the tolerance); what remains is the operator's own error: at most ulp + E per gradient element (the bounds above).
// Checked per element for every weight element and for inputs on the tokens that matter (sequence edges, block
// edges, uncovered tokens, random ones), and along random directions over all elements.

double Loss(const Problem& p, const std::vector<double>& input, const std::vector<double>& weight) {
  std::vector<double> output(p.output_grad.size());
  ref::NsaCompressForward(input.data(), weight.data(), p.block_starts, p.Shape(), output.data());
  double loss = 0.0;
  for (size_t i = 0; i < output.size(); ++i) loss += p.output_grad[i] * output[i];
  return loss;
}

constexpr double kStep = 1.0 / 64;

// (L(arg + h v) - L(arg - h v)) / (2 h), arg being the input (of_input) or the weight.
double CentralDifference(const Problem& p, bool of_input, const std::vector<double>& direction) {
  std::vector<double> plus = of_input ? p.input : p.weight, minus = plus;
  for (size_t i = 0; i < plus.size(); ++i) {
    plus[i] += kStep * direction[i];
    minus[i] -= kStep * direction[i];
  }
  const double up = of_input ? Loss(p, plus, p.weight) : Loss(p, p.input, plus);
  const double down = of_input ? Loss(p, minus, p.weight) : Loss(p, p.input, minus);
  return (up - down) / (2.0 * kStep);
}

// The tokens whose input gradients are checked one element at a time.
std::vector<int64_t> TokensToProbe(const Problem& p, std::mt19937_64& rng) {
  std::vector<int64_t> tokens;
  int64_t start = 0;
  for (int64_t end : p.act_seq_len) {
    if (end > start) tokens.insert(tokens.end(), {start, end - 1});
    start = end;
  }
  for (int64_t block : p.block_starts)
    tokens.insert(tokens.end(), {block, block + p.g.stride, block + p.g.block_size - 1});
  std::uniform_int_distribution<int64_t> any_token(0, p.tokens - 1);
  for (int i = 0; i < 16; ++i) tokens.push_back(any_token(rng));
  std::sort(tokens.begin(), tokens.end());
  tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
  return tokens;
}

class NsaCompressGradient : public testing::TestWithParam<aclDataType> {};

TEST_P(NsaCompressGradient, BackwardMatchesDifferencesOfForward) {
  const aclDataType dtype = GetParam();
  const Geometry g = {32, 16, 3, 16};
  const Problem p = MakeRandomProblem(g, 7, true, dtype, 5000 + static_cast<uint64_t>(dtype));
  DeviceProblem d(p, dtype, AllLayouts(Layout::kContiguous));
  DeviceGradients grads(p, dtype);
  ASSERT_EQ(RunBackward(p, d, CallConfig{dtype, false}, grads.input.get(), grads.weight.get()), ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  const std::vector<double> input_grad = grads.input.Read(), weight_grad = grads.weight.Read();
  const Bounds bounds = ErrorBounds(p);
  // The operator's error allowance for one gradient element: its rounding, its fp32 error and the difference's.
  auto allowance = [dtype](double gradient, double bound) {
    return optest::UlpOf(gradient, dtype) + bound + 1e-9 * (1.0 + std::fabs(gradient));
  };

  for (size_t k = 0; k < p.weight.size(); ++k) {
    std::vector<double> unit(p.weight.size(), 0.0);
    unit[k] = 1.0;
    const double difference = CentralDifference(p, false, unit);
    EXPECT_NEAR(weight_grad[k], difference, allowance(weight_grad[k], bounds.weight_grad[k]))
        << "weightGrad element " << k << " (j = " << k / static_cast<size_t>(g.heads)
        << ", n = " << k % static_cast<size_t>(g.heads) << ")";
  }

  std::mt19937_64 rng(5100);
  std::uniform_int_distribution<int64_t> any_element(0, g.heads * g.dim - 1);
  int probed_covered = 0, probed_uncovered = 0;
  const std::vector<int64_t> coverage = Coverage(p);
  for (int64_t token : TokensToProbe(p, rng)) {
    const size_t k = static_cast<size_t>(token * g.heads * g.dim + any_element(rng));
    std::vector<double> unit(p.input.size(), 0.0);
    unit[k] = 1.0;
    const double difference = CentralDifference(p, true, unit);
    EXPECT_NEAR(input_grad[k], difference, allowance(input_grad[k], bounds.input_grad[k]))
        << "inputGrad element " << k << " (token " << token << ")";
    (coverage[static_cast<size_t>(token)] > 0 ? probed_covered : probed_uncovered) += 1;
  }
  EXPECT_GT(probed_covered, 10);
  EXPECT_GT(probed_uncovered, 2);

  // Random directions over every element: sum(gradient * v) against the directional difference.
  std::uniform_real_distribution<double> component(-1.0, 1.0);
  for (bool of_input : {true, false}) {
    const std::vector<double>& gradient = of_input ? input_grad : weight_grad;
    const std::vector<double>& bound = of_input ? bounds.input_grad : bounds.weight_grad;
    for (int trial = 0; trial < 3; ++trial) {
      std::vector<double> direction(gradient.size());
      double predicted = 0.0, tolerance = 0.0;
      for (size_t i = 0; i < direction.size(); ++i) {
        direction[i] = component(rng);
        predicted += gradient[i] * direction[i];
        tolerance += std::fabs(direction[i]) * allowance(gradient[i], bound[i]);
      }
      EXPECT_NEAR(predicted, CentralDifference(p, of_input, direction), tolerance)
          << (of_input ? "inputGrad" : "weightGrad") << " along random direction " << trial;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(NsaCompress, NsaCompressGradient, testing::ValuesIn(kDTypes), DTypeParamName);

// ------------------------------------------------------------------------------------------------------------
// A hand-computed example, independent of the reference: it pins the block enumeration and which weight row meets
// which token. blockSize 32, stride 16, actSeqLen {0, 40, 104}: an empty sequence, one of 40 tokens (one block, at 0;
// 8 tokens left over) and one of 64 tokens from 40 (blocks at 40, 56 and 72, the last ending at the sequence end).
// input[t, n, d] = t + d / 16 (exact in FLOAT16); head 0 weights only row 0 (the block's first token), head 1 rows 0
// and 31 (its first and last tokens).

TEST(NsaCompressSample, HandComputedValues) {
  const Geometry g = {32, 16, 2, 16};
  Problem p;
  p.g = g;
  p.act_seq_len = {0, 40, 104};
  p.tokens = 104;
  p.block_starts = {0, 40, 56, 72};
  EXPECT_EQ(ref::NsaCompressBlockStarts(p.act_seq_len, g.block_size, g.stride), p.block_starts);
  for (int64_t t = 0; t < p.tokens; ++t) {
    for (int64_t n = 0; n < g.heads; ++n) {
      for (int64_t d = 0; d < g.dim; ++d) p.input.push_back(static_cast<double>(t) + static_cast<double>(d) / 16.0);
    }
  }
  p.weight.assign(static_cast<size_t>(g.block_size * g.heads), 0.0);
  p.weight[0] = 1.0;                                                      // (j 0, head 0)
  p.weight[1] = 1.0;                                                      // (j 0, head 1)
  p.weight[static_cast<size_t>((g.block_size - 1) * g.heads + 1)] = 1.0;  // (j 31, head 1)
  p.output_grad.assign(static_cast<size_t>(p.Blocks() * g.heads * g.dim), 1.0);

  std::vector<double> expected_output;
  for (int64_t start : p.block_starts) {
    for (int64_t d = 0; d < g.dim; ++d) expected_output.push_back(static_cast<double>(start) + d / 16.0);
    for (int64_t d = 0; d < g.dim; ++d) expected_output.push_back(static_cast<double>(2 * start + 31) + d / 8.0);
  }
  // inputGrad with outputGrad = 1: head 0 gets 1 on each block's first token, head 1 on its first and last tokens.
  std::vector<double> expected_input_grad(p.input.size(), 0.0);
  for (int64_t start : p.block_starts) {
    for (int64_t d = 0; d < g.dim; ++d) {
      expected_input_grad[static_cast<size_t>((start * g.heads + 0) * g.dim + d)] += 1.0;
      expected_input_grad[static_cast<size_t>((start * g.heads + 1) * g.dim + d)] += 1.0;
      expected_input_grad[static_cast<size_t>(((start + 31) * g.heads + 1) * g.dim + d)] += 1.0;
    }
  }
  // weightGrad[j, n] = sum over blocks and d of (start + j + d / 16) = 16 * (168 + 4 j) + 4 * 7.5, exact in fp32 in
  // any order, rounded once to FLOAT16: from j = 22 on it exceeds 4096, where the spacing is 4, and lies exactly
  // halfway (16 k + 30): it must round to even.
  std::vector<double> expected_weight_grad;
  for (int64_t j = 0; j < g.block_size; ++j) {
    const double exact = 16.0 * static_cast<double>(168 + 4 * j) + 30.0;
    expected_weight_grad.insert(expected_weight_grad.end(), 2, optest::RoundToDType(exact, ACL_FLOAT16));
  }
  EXPECT_EQ(expected_weight_grad[2 * 31], 4704.0) << "4702 lies halfway between 4700 and 4704: to even";

  EXPECT_EQ(ReferenceForward(p), expected_output) << "the reference disagrees with the hand computation";
  const Gradients reference = ReferenceBackward(p);
  EXPECT_EQ(reference.input, expected_input_grad) << "the reference disagrees with the hand computation";

  const CallConfig setup;
  DeviceProblem d(p, ACL_FLOAT16, AllLayouts(Layout::kContiguous));
  DeviceTensor output = DeviceTensor::Output(p.OutputShape(), ACL_FLOAT16, Layout::kContiguous);
  ASSERT_EQ(RunForward(p, d, setup, output.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  EXPECT_EQ(output.Read(), expected_output);
  DeviceGradients grads(p, ACL_FLOAT16);
  ASSERT_EQ(RunBackward(p, d, setup, grads.input.get(), grads.weight.get()), ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  EXPECT_EQ(grads.input.Read(), expected_input_grad);
  EXPECT_EQ(grads.weight.Read(), expected_weight_grad);
}

// ------------------------------------------------------------------------------------------------------------
// The single rounding of each result, to nearest even, with overflow to infinity: with weight rows 0 and 16 set to 1
// (the rest 0) and one sequence of 48 tokens (blocks at 0 and 16), output[0] = x[0] + x[16], output[1] = x[16] + x[32]
// and inputGrad[16] = outputGrad[0] + outputGrad[1] (token 16 is row 16 of block 0 and row 0 of block 1). Each channel
// d takes a triple (a, b, c): x[16] = a, x[0] = b, x[32] = c, outputGrad[0] = a, outputGrad[1] = b. Those sums are
// exact in fp32 and lie exactly halfway between two neighbours of the output dtype, just off halfway, past the largest
// finite value, or in the subnormal range: the results must equal the correctly rounded sums exactly (every other
// output and inputGrad element is a single exact product, so exact as well). Named a sweep so that the SIMD-target
// runs include it.

struct SumTriple {
  double a, b, c;
};

std::vector<SumTriple> RoundingTriples(aclDataType dtype) {
  if (dtype == ACL_FLOAT16) {
    const double max = 65504.0;
    return {
        {1.0, 0x1p-11, 0x3p-11},             // 1 + half an ulp: to even (1); 1 + 3/2 ulp: to even (1 + 2 ulp)
        {1.0, 0x1p-11 + 0x1p-20, -0x1p-12},  // just past halfway: up; below 1 (half the spacing there): exact
        {1024.0, 0.5, 1.5},                  // 1024.5 to 1024, 1025.5 to 1026
        {max, 15.0, 16.0},                   // below the overflow threshold: max; at it (halfway, max odd): +inf
        {-max, -16.0, 16.0},                 // -inf; -65488 exact
        {0x1p-14, -0x1p-24, 0x1p-24},        // subnormal and normal neighbours of the smallest normal, exact
    };
  }
  const double max = 0x1.fep127;  // the largest finite BFLOAT16
  return {
      {1.0, 0x1p-8, 0x3p-8},             // halfway: to even, both ways
      {1.0, 0x1p-8 + 0x1p-15, -0x1p-9},  // just past halfway: up; 1 - 2^-9, halfway below 1: to even (1)
      {256.0, 1.0, 3.0},                 // 257 to 256, 259 to 260
      {max, 0x1p119, 0x1p118},           // halfway past max (odd): +inf; below halfway: max
      {-max, -0x1p119, 0x1p119},         // -inf; -(max - 2^119), halfway: to even, -(max - 2^120)
      {0x1p-126, -0x1p-133, 0x1p-133},   // subnormal and normal neighbours of the smallest normal, exact
  };
}

TEST(NsaCompressRoundingSweep, TiesToEvenAndOverflow) {
  const Geometry g = {32, 16, 1, 64};
  for (aclDataType dtype : kDTypes) {
    SCOPED_TRACE(optest::DTypeName(dtype));
    Problem p = MakeProblem(g, {48}, dtype, 8000);
    ASSERT_EQ(p.Blocks(), 2);
    std::fill(p.weight.begin(), p.weight.end(), 0.0);
    p.weight[0] = p.weight[16] = 1.0;
    const std::vector<SumTriple> triples = RoundingTriples(dtype);
    for (int64_t d = 0; d < g.dim; ++d) {
      const SumTriple& t = triples[static_cast<size_t>(d) % triples.size()];
      for (double v : {t.a, t.b, t.c}) ASSERT_EQ(optest::RoundToDType(v, dtype), v) << v << " is not exact";
      p.input[static_cast<size_t>(16 * g.dim + d)] = t.a;
      p.input[static_cast<size_t>(d)] = t.b;
      p.input[static_cast<size_t>(32 * g.dim + d)] = t.c;
      p.output_grad[static_cast<size_t>(d)] = t.a;
      p.output_grad[static_cast<size_t>(g.dim + d)] = t.b;
    }
    const CallConfig setup{dtype, false};
    DeviceProblem d(p, dtype, AllLayouts(Layout::kContiguous));
    DeviceTensor output = DeviceTensor::Output(p.OutputShape(), dtype, Layout::kContiguous);
    ASSERT_EQ(RunForward(p, d, setup, output.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    EXPECT_EQ(output.Read(), optest::RoundToDType(ReferenceForward(p), dtype));
    DeviceGradients grads(p, dtype);
    ASSERT_EQ(RunBackward(p, d, setup, grads.input.get(), grads.weight.get()), ACLNN_SUCCESS)
        << optest::RecentErrorMessage();
    EXPECT_EQ(grads.input.Read(), optest::RoundToDType(ReferenceBackward(p).input, dtype));
  }
}

// ------------------------------------------------------------------------------------------------------------
// Many sequences: thousands of short ones (mostly 0 to 3 blocks each, many empty or too short), both dtypes.

TEST(NsaCompressLongSeqLen, ThousandsOfSequences) {
  const Geometry g = {32, 16, 1, 16};
  for (aclDataType dtype : kDTypes) {
    SCOPED_TRACE(optest::DTypeName(dtype));
    const bool leading_zero = dtype == ACL_FLOAT16;
    const Problem p = MakeRandomProblem(g, 2500, leading_zero, dtype, 6000 + static_cast<uint64_t>(dtype), 2);
    ASSERT_GT(p.Blocks(), 2000);
    CallConfig setup;
    setup.dtype = dtype;
    CheckForward(p, setup);
    CheckBackward(p, setup);
  }
}

// ------------------------------------------------------------------------------------------------------------
// No blocks: T = 0 (actSeqLen {0} or {0, 0, 0}), and tokens in sequences all shorter than a block. The output has no
// elements; inputGrad and weightGrad are exactly 0.

void CheckWithoutBlocks(const std::vector<int64_t>& act_seq_len) {
  const Geometry g = {48, 16, 4, 16};
  for (aclDataType dtype : kDTypes) {
    for (Layout layout : {Layout::kContiguous, Layout::kPadded}) {
      SCOPED_TRACE(std::string(optest::DTypeName(dtype)) + " " + optest::LayoutName(layout));
      const Problem p = MakeProblem(g, act_seq_len, dtype, 7000);
      ASSERT_EQ(p.Blocks(), 0);
      CallConfig setup;
      setup.dtype = dtype;
      const Layouts layouts = AllLayouts(layout);
      DeviceProblem d(p, dtype, layouts);
      DeviceTensor output = DeviceTensor::Output(p.OutputShape(), dtype, layout);
      ASSERT_EQ(RunForward(p, d, setup, output.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
      DeviceGradients grads(p, dtype, layouts);
      ASSERT_EQ(RunBackward(p, d, setup, grads.input.get(), grads.weight.get()), ACLNN_SUCCESS)
          << optest::RecentErrorMessage();
      ExpectAllZero("inputGrad", grads.input.Read());
      ExpectAllZero("weightGrad", grads.weight.Read());
      ExpectGuardsIntact({&output, &grads.input, &grads.weight});
      ExpectGuardsIntact(d.Inputs());
    }
  }
}

TEST(NsaCompressEmpty, ZeroTokens) {
  CheckWithoutBlocks({0});
  CheckWithoutBlocks({0, 0, 0});
}

TEST(NsaCompressEmpty, NoSequenceHoldsABlock) { CheckWithoutBlocks({0, 47, 47, 79, 80, 127}); }

// ------------------------------------------------------------------------------------------------------------
// Determinism: bit-identical run to run, and for any thread count (a child process per ACLNN_NUM_THREADS, which is
// read once per process). Long sequences give many blocks, so that weightGrad's sum over blocks and D is split.

std::vector<uint8_t> DeterminismBytes() {
  const Geometry g = {32, 16, 4, 64};
  std::vector<uint8_t> bytes;
  for (aclDataType dtype : kDTypes) {
    const Problem p = MakeProblem(g, CumulativeEnds({600, 33, 0, 700, 47, 300}, dtype == ACL_BF16), dtype, 9500);
    CallConfig setup;
    setup.dtype = dtype;
    Layouts layouts = AllLayouts(Layout::kContiguous);
    layouts[kInput] = Layout::kPadded;
    DeviceProblem d(p, dtype, layouts);
    DeviceTensor output = DeviceTensor::Output(p.OutputShape(), dtype, Layout::kContiguous);
    EXPECT_EQ(RunForward(p, d, setup, output.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    DeviceGradients grads(p, dtype);
    EXPECT_EQ(RunBackward(p, d, setup, grads.input.get(), grads.weight.get()), ACLNN_SUCCESS)
        << optest::RecentErrorMessage();
    const std::vector<uint8_t> part = optest::ConcatenatedBytes({&output, &grads.input, &grads.weight});
    bytes.insert(bytes.end(), part.begin(), part.end());
  }
  return bytes;
}

TEST(NsaCompressDeterminism, BitIdenticalRunToRun) { optest::ExpectBitIdenticalRunToRun(DeterminismBytes); }

// Computes the determinism bytes and, when PACL_TEST_OUTPUT_FILE is set (by BitIdenticalForAnyThreadCount and
// BitIdenticalOnEverySimdTarget, in a child process), writes them there.
TEST(NsaCompressDeterminism, OutputForComparison) { optest::WriteOutputForParent(DeterminismBytes()); }

TEST(NsaCompressDeterminism, BitIdenticalForAnyThreadCount) {
  optest::ExpectBitIdenticalForThreadCounts("NsaCompressDeterminism.OutputForComparison", {2, 3, 8},
                                            DeterminismBytes);
}

// The same bits whatever instruction set the kernels run on (pacl/canonical_math-inl.h): every SIMD target this CPU
// has, each in a child process pinned with ACLNN_SIMD_TARGET.
TEST(NsaCompressDeterminism, BitIdenticalOnEverySimdTarget) {
  optest::ExpectBitIdenticalOnEverySimdTarget("NsaCompressDeterminism.OutputForComparison");
}

// The forward walks tokens in order when input rows have unit stride along D and gathers rows otherwise (see the
// kernel's NOTE); both sum each block from zero in ascending j, so a transposed input view gives the same bits,
// and both match the reference.
TEST(NsaCompressDeterminism, ForwardPathsGiveTheSameBits) {
  for (aclDataType dtype : kDTypes) {
    // D = 128 and 64: on CUDA the contiguous input takes the 16-byte row-chunk kernel, the transposed one the
    // element kernel.
    for (const Geometry& g : {Geometry{32, 16, 4, 192}, Geometry{48, 16, 3, 40}, Geometry{64, 16, 2, 33},
                              Geometry{32, 16, 4, 128}, Geometry{48, 16, 3, 64}}) {
      SCOPED_TRACE(std::string(optest::DTypeName(dtype)) + " " + GeometryName(g));
      const Problem p = MakeProblem(g, CumulativeEnds({300, 20, 170}, false), dtype, 9700);
      CallConfig setup;
      setup.dtype = dtype;
      std::vector<std::vector<uint8_t>> outputs;
      for (Layout input_layout : {Layout::kContiguous, Layout::kTransposed}) {
        Layouts layouts = AllLayouts(Layout::kContiguous);
        layouts[kInput] = input_layout;
        DeviceProblem d(p, dtype, layouts);
        DeviceTensor output = DeviceTensor::Output(p.OutputShape(), dtype, Layout::kContiguous);
        ASSERT_EQ(RunForward(p, d, setup, output.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
        ExpectForwardMatches(output.Read(), p, dtype);
        outputs.push_back(output.ReadBytes());
      }
      EXPECT_TRUE(outputs[0] == outputs[1]);
    }
  }
}

// ------------------------------------------------------------------------------------------------------------
// Outputs of 8 MiB and more are written with non-temporal stores where a row is vector-aligned (the rest with
// ordinary ones): the same values either way. inputGrad (as large as input) in the backward, output in the
// forward (1/stride of input: 128 MiB of FLOAT16 input), each contiguous (aligned rows) and padded (an element
// offset and gaps: misaligned rows). The backward with D = 136, so that rows end in a partial vector (the
// token-by-token walk), and D = 128 (a multiple of 16: pairs of tokens go through one pass on 8- and 16-lane
// targets, whose stores are streamed too).

TEST(NsaCompressLarge, StreamedInputGradMatchesReference) {
  for (int64_t dim : {136, 128}) {
    SCOPED_TRACE("D = " + std::to_string(dim));
    const Geometry g = {32, 16, 8, dim};
    // inputGrad 8.6 MiB (D 136) or 8.04 MiB (D 128).
    const Problem p = MakeProblem(g, CumulativeEnds({2200, 1917}, false), ACL_FLOAT16, 9800);
    for (Layout layout : {Layout::kContiguous, Layout::kPadded}) {
      SCOPED_TRACE(optest::LayoutName(layout));
      Layouts layouts = AllLayouts(Layout::kContiguous);
      layouts[kInputGrad] = layout;
      CheckBackward(p, CallConfig{}, layouts);
    }
  }
}

// input multiples of 1/8 in [-2, 2] and weights multiples of 1/64 in [-1, 1]: every product and every sum of 32 of
// them is exact in fp32 (multiples of 2^-9 below 2^6), so the output must be the exact sum rounded once, i.e. the
// rounded reference bit for bit; no error bound (nor its second reference pass over 64M elements) is needed.
TEST(NsaCompressLarge, StreamedOutputMatchesReference) {
  const Geometry g = {32, 16, 16, 128};
  Problem p;
  p.g = g;
  p.act_seq_len = CumulativeEnds({16400, 16400}, false);
  p.tokens = p.act_seq_len.back();
  p.block_starts = ref::NsaCompressBlockStarts(p.act_seq_len, g.block_size, g.stride);
  std::mt19937_64 rng(9801);
  p.input.resize(static_cast<size_t>(optest::NumElements(p.InputShape())));
  for (double& v : p.input) v = static_cast<double>(static_cast<int>(rng() % 33) - 16) / 8.0;
  p.weight.resize(static_cast<size_t>(optest::NumElements(p.WeightShape())));
  for (double& v : p.weight) v = static_cast<double>(static_cast<int>(rng() % 129) - 64) / 64.0;
  p.output_grad.assign(static_cast<size_t>(optest::NumElements(p.OutputShape())), 0.0);
  ASSERT_GE(optest::NumElements(p.OutputShape()) * 2, int64_t{8} << 20);  // output: 8.0 MiB of BFLOAT16
  const std::vector<double> expected = optest::RoundToDType(ReferenceForward(p), ACL_BF16);
  DeviceProblem d(p, ACL_BF16, AllLayouts(Layout::kContiguous));
  CallConfig setup;
  setup.dtype = ACL_BF16;
  for (Layout layout : {Layout::kContiguous, Layout::kPadded}) {
    SCOPED_TRACE(optest::LayoutName(layout));
    DeviceTensor output = DeviceTensor::Output(p.OutputShape(), ACL_BF16, layout);
    ASSERT_EQ(RunForward(p, d, setup, output.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    const std::vector<double> actual = output.Read();
    size_t mismatches = 0;
    for (size_t i = 0; i < actual.size(); ++i) {
      if (actual[i] != expected[i] && mismatches++ < 5) {
        ADD_FAILURE() << "output element " << i << ": " << actual[i] << ", expected " << expected[i];
      }
    }
    EXPECT_EQ(mismatches, 0u);
    ExpectGuardsIntact({&output});
  }
}

// ------------------------------------------------------------------------------------------------------------
// The forward also takes compressBlockSize == compressStride (blocks that do not overlap), as CANN's forward does.

TEST(NsaCompressForward, BlockSizeEqualToStride) {
  for (aclDataType dtype : kDTypes) {
    SCOPED_TRACE(optest::DTypeName(dtype));
    const Geometry g = {32, 32, 2, 64};
    const Problem p = MakeProblem(g, {40, 100, 164}, dtype, 4242);
    DeviceProblem d(p, dtype, AllLayouts(Layout::kContiguous));
    DeviceTensor output = DeviceTensor::Output(p.OutputShape(), dtype, Layout::kContiguous);
    ASSERT_EQ(RunForward(p, d, CallConfig{dtype, false}, output.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    ExpectForwardMatches(output.Read(), p, dtype);
    optest::ExpectGuardsIntact({&output});
  }
}

// ------------------------------------------------------------------------------------------------------------
// A repeatable executor runs again on new tensor data (the same shapes and actSeqLen).

TEST(NsaCompressExecutor, RepeatableExecutorsRunAgainOnNewData) {
  const Geometry g = {32, 16, 2, 16};
  const std::vector<int64_t> act_seq_len = {40, 40, 104};
  const Problem first = MakeProblem(g, act_seq_len, ACL_BF16, 9700);
  const Problem second = MakeProblem(g, act_seq_len, ACL_BF16, 9701);
  const CallConfig setup{ACL_BF16, true};
  DeviceProblem d(first, ACL_BF16, AllLayouts(Layout::kContiguous));
  DeviceTensor output = DeviceTensor::Output(first.OutputShape(), ACL_BF16, Layout::kContiguous);
  DeviceGradients grads(first, ACL_BF16);
  uint64_t forward_size = 0, backward_size = 0;
  aclOpExecutor* forward = nullptr;
  aclOpExecutor* backward = nullptr;
  const opcall::NsaCompress forward_call{d.input.get(), d.weight.get(), d.act_seq_len.get(), nullptr,
                                        g.block_size,  g.stride,      0,                    output.get()};
  const opcall::NsaCompressGrad backward_call{
      d.output_grad.get(), d.input.get(), d.weight.get(), d.act_seq_len.get(), g.block_size, g.stride, 0, nullptr,
      grads.input.get(),   grads.weight.get()};
  ASSERT_EQ(opcall::GetWorkspaceSize(forward_call, &forward_size, &forward), ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  ASSERT_EQ(opcall::GetWorkspaceSize(backward_call, &backward_size, &backward), ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(forward), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(backward), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  optest::TestStream stream;
  for (const Problem* p : {&first, &second}) {
    d.input.Write(p->input);
    d.weight.Write(p->weight);
    d.output_grad.Write(p->output_grad);
    ASSERT_EQ(opcall::RunPhase2(aclnnNsaCompress, forward_size, forward, stream.get()), ACLNN_SUCCESS)
        << optest::RecentErrorMessage();
    ASSERT_EQ(opcall::RunPhase2(aclnnNsaCompressGrad, backward_size, backward, stream.get()), ACLNN_SUCCESS)
        << optest::RecentErrorMessage();
    ExpectForwardMatches(output.Read(), *p, setup.dtype);
    ExpectBackwardMatches(grads.input.Read(), grads.weight.Read(), *p, setup.dtype);
  }
  EXPECT_EQ(aclDestroyAclOpExecutor(forward), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyAclOpExecutor(backward), ACLNN_SUCCESS);
}

}  // namespace
