// aclnnNsaSelectedAttention (forward) and aclnnNsaSelectedAttentionGrad against the float64 reference
// (nsa_selected_attention_reference.h), the backward also against central differences of the float64 forward.
//
// Tolerances (spec section 3), per element: |actual - round(reference)| <= ulp + E, where E bounds the kernels' fp32
// error before the output's single rounding (ErrorBounds: the dot products' and sums' accumulation, the exponential,
// and how a score's error moves a probability), built from the magnitudes of the terms. A missing or extra key, a
// wrong block or a wrong scale move the results by far more.
//
// Problems mix sequence lengths: query sequences of 0, 1 and many tokens, key/value sequences of
// selectedBlockSize * selectedBlockCount tokens and more; topkIndices mostly distinct blocks, with the causal
// diagonal block often among them, and for the causal cases also later (fully masked) blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_nsa_selected_attention.h"
#include "aclnnop/aclnn_nsa_selected_attention_grad.h"
#include "nsa_selected_attention/test/nsa_selected_attention_calls.h"
#include "nsa_selected_attention/test/nsa_selected_attention_reference.h"
#include "op_test_util.h"

namespace {

using optest::DeviceTensor;
using optest::ExpectClose;
using optest::ExpectGuardsIntact;
using optest::Layout;

constexpr aclDataType kDTypes[] = {ACL_FLOAT16, ACL_BF16};
constexpr double kU = 0x1p-24;  // unit roundoff of the kernels' fp32 arithmetic
constexpr int64_t kStatLanes = 8;
constexpr double kInf = std::numeric_limits<double>::infinity();

// ------------------------------------------------------------------------------------------------------------
// Problems

struct Geometry {
  int64_t q_heads, kv_heads, dim_qk, dim_v, block_size, block_count;
};

std::string GeometryName(const Geometry& g) {
  return "N" + std::to_string(g.q_heads) + "_Nkv" + std::to_string(g.kv_heads) + "_D" + std::to_string(g.dim_qk) +
         "x" + std::to_string(g.dim_v) + "_bs" + std::to_string(g.block_size) + "_c" + std::to_string(g.block_count);
}

// The mask argument: none, or a 2-D BOOL tensor (its contents are never read: with sparseMode 2 it makes the
// attention causal, with sparseMode 0 it changes nothing).
struct Mode {
  int64_t sparse_mode = 0;
  bool mask = false;
  bool Causal() const { return sparse_mode == 2 && mask; }
};

struct Problem {
  ref::NsaSelectedAttentionShape s;
  Mode mode;
  aclDataType dtype = ACL_FLOAT16;
  std::vector<double> query, key, value, out_grad;
  std::vector<int64_t> topk;
  // The backward's other inputs, as the forward gives them: out rounded to dtype, max and sum to FLOAT (one per row;
  // the tensors hold each 8 times).
  std::vector<double> out, max, sum;

  int64_t T1() const { return s.QTokens(); }
  int64_t T2() const { return s.KvTokens(); }
  std::vector<int64_t> QueryShape() const { return {T1(), s.q_heads, s.dim_qk}; }
  std::vector<int64_t> KeyShape() const { return {T2(), s.kv_heads, s.dim_qk}; }
  std::vector<int64_t> ValueShape() const { return {T2(), s.kv_heads, s.dim_v}; }
  std::vector<int64_t> TopkShape() const { return {T1(), s.kv_heads, s.block_count}; }
  std::vector<int64_t> OutShape() const { return {T1(), s.q_heads, s.dim_v}; }
  std::vector<int64_t> StatShape() const { return {T1(), s.q_heads, kStatLanes}; }
};

std::string SequencesName(const Problem& p) {
  std::string name = "q ends [";
  for (size_t i = 0; i < p.s.q_ends.size() && i < 10; ++i) name += (i > 0 ? ", " : "") + std::to_string(p.s.q_ends[i]);
  name += "], kv ends [";
  for (size_t i = 0; i < p.s.kv_ends.size() && i < 10; ++i) {
    name += (i > 0 ? ", " : "") + std::to_string(p.s.kv_ends[i]);
  }
  return name + "], sparseMode " + std::to_string(p.mode.sparse_mode) + (p.mode.mask ? " with mask" : "");
}

// topkIndices of token t (position u in a sequence of nb key blocks) for one KV head: distinct blocks; causal ones
// first from the blocks up to the diagonal (the diagonal in slot 0 half the time), the rest (when those run out) any
// block, so later, fully masked blocks and repeats occur too.
std::vector<int64_t> RandomSelection(std::mt19937_64& rng, int64_t nb, int64_t count, int64_t block_size, int64_t u,
                                     bool causal) {
  const int64_t allowed = causal ? std::min(nb, u / block_size + 1) : nb;
  std::vector<int64_t> blocks(static_cast<size_t>(allowed));
  std::iota(blocks.begin(), blocks.end(), int64_t{0});
  for (int64_t i = allowed - 1; i > 0; --i) std::swap(blocks[static_cast<size_t>(i)], blocks[static_cast<size_t>(optest::UniformInt(rng, 0, i))]);
  if (causal && optest::UniformInt(rng, 0, 1) == 0) {
    auto diagonal = std::find(blocks.begin(), blocks.end(), allowed - 1);
    std::iter_swap(blocks.begin(), diagonal);
  }
  blocks.resize(static_cast<size_t>(std::min(count, allowed)));
  while (static_cast<int64_t>(blocks.size()) < count) blocks.push_back(optest::UniformInt(rng, 0, nb - 1));
  return blocks;
}

// Fills the backward's given inputs from the reference forward.
void SetForwardResults(Problem* p) {
  const size_t rows = static_cast<size_t>(p->T1() * p->s.q_heads);
  std::vector<double> out(static_cast<size_t>(optest::NumElements(p->OutShape()))), max(rows), sum(rows);
  ref::NsaSelectedAttentionForward(p->query.data(), p->key.data(), p->value.data(), p->topk, p->s, out.data(),
                                   max.data(), sum.data());
  p->out = optest::RoundToDType(out, p->dtype);
  p->max = optest::RoundToDType(max, ACL_FLOAT);
  p->sum = optest::RoundToDType(sum, ACL_FLOAT);
}

// Scales exactly representable in FLOAT (the operator rounds scaleValue to float once).
double FloatScale(double scale) { return static_cast<double>(static_cast<float>(scale)); }

Problem MakeProblem(const Geometry& g, const std::vector<int64_t>& q_lengths, const std::vector<int64_t>& kv_lengths,
                    Mode mode, aclDataType dtype, uint64_t seed, double value_range = 2.0) {
  std::mt19937_64 rng(seed);
  Problem p;
  p.s.q_heads = g.q_heads;
  p.s.kv_heads = g.kv_heads;
  p.s.dim_qk = g.dim_qk;
  p.s.dim_v = g.dim_v;
  p.s.block_size = g.block_size;
  p.s.block_count = g.block_count;
  p.s.causal = mode.Causal();
  p.s.scale = FloatScale(1.0 / std::sqrt(static_cast<double>(g.dim_qk)));
  p.s.q_ends = optest::CumulativeEnds(q_lengths);
  p.s.kv_ends = optest::CumulativeEnds(kv_lengths);
  p.mode = mode;
  p.dtype = dtype;
  p.query = optest::RandomValues(rng, optest::NumElements(p.QueryShape()), -value_range, value_range, dtype);
  p.key = optest::RandomValues(rng, optest::NumElements(p.KeyShape()), -value_range, value_range, dtype);
  p.value = optest::RandomValues(rng, optest::NumElements(p.ValueShape()), -1.0, 1.0, dtype);
  p.out_grad = optest::RandomValues(rng, optest::NumElements(p.OutShape()), -1.0, 1.0, dtype);
  for (size_t b = 0; b < q_lengths.size(); ++b) {
    const int64_t nb = kv_lengths[b] / g.block_size;
    for (int64_t u = 0; u < q_lengths[b]; ++u) {
      for (int64_t h = 0; h < g.kv_heads; ++h) {
        for (int64_t block : RandomSelection(rng, nb, g.block_count, g.block_size, u, mode.Causal())) {
          p.topk.push_back(block);
        }
      }
    }
  }
  SetForwardResults(&p);
  return p;
}

// Each row's statistic repeated over the 8 lanes of the tensors.
// Lane 0 of each row.
std::vector<double> LaneZero(const std::vector<double>& lanes) {
  std::vector<double> rows;
  for (size_t i = 0; i < lanes.size(); i += kStatLanes) rows.push_back(lanes[i]);
  return rows;
}

// ------------------------------------------------------------------------------------------------------------
// Error bounds of the kernels' fp32 arithmetic (see the top comment). A dot product of n terms in the canonical order
// errs by at most (n / 16 + 4) u sum |terms|; (n + 2) u is used. Sums of n terms in any order: (n + 1) u sum |terms|.

struct Bounds {
  std::vector<double> out, max, sum;  // forward (max and sum one per row)
  std::vector<double> dq, dk, dv;     // backward
};

// Per row (t, n): its key list and, per key, the exact score and the bound of the kernel's score error.
struct RowTerms {
  int64_t h = 0;
  std::vector<int64_t> keys;
  std::vector<double> score, score_error;
};

RowTerms TermsOf(const Problem& p, int64_t t, int64_t n) {
  const ref::NsaSelectedAttentionShape& s = p.s;
  RowTerms r;
  r.h = n / (s.q_heads / s.kv_heads);
  r.keys = ref::NsaSelectedKeyList(p.topk, s, t, r.h);
  const double* q = p.query.data() + (t * s.q_heads + n) * s.dim_qk;
  for (int64_t k : r.keys) {
    const double* key = p.key.data() + (k * s.kv_heads + r.h) * s.dim_qk;
    double dot = 0.0, magnitude = 0.0;
    for (int64_t d = 0; d < s.dim_qk; ++d) {
      dot += q[d] * key[d];
      magnitude += std::fabs(q[d] * key[d]);
    }
    r.score.push_back(s.scale * dot);
    r.score_error.push_back(std::fabs(s.scale) * (static_cast<double>(s.dim_qk) + 2.0) * kU * magnitude +
                            2.0 * kU * std::fabs(s.scale * dot));
  }
  return r;
}

Bounds ForwardBounds(const Problem& p) {
  const ref::NsaSelectedAttentionShape& s = p.s;
  Bounds b;
  b.out.assign(static_cast<size_t>(optest::NumElements(p.OutShape())), 0.0);
  for (int64_t t = 0; t < p.T1(); ++t) {
    for (int64_t n = 0; n < s.q_heads; ++n) {
      const RowTerms r = TermsOf(p, t, n);
      const size_t count = r.keys.size();
      if (count == 0) {
        b.max.push_back(0.0);
        b.sum.push_back(0.0);
        continue;
      }
      const double m = *std::max_element(r.score.begin(), r.score.end());
      const double max_error = *std::max_element(r.score_error.begin(), r.score_error.end());
      std::vector<double> delta(count);
      double delta_max = 0.0, l = 0.0;
      for (size_t i = 0; i < count; ++i) {
        delta[i] = r.score_error[i] + max_error + kU * std::fabs(r.score[i] - m) + 3.0 * kU;
        delta_max = std::max(delta_max, delta[i]);
        l += std::exp(r.score[i] - m);
      }
      const double L = static_cast<double>(count);
      b.max.push_back(max_error);
      b.sum.push_back(l * (delta_max + (L + 1.0) * kU));
      double* bound = b.out.data() + (t * s.q_heads + n) * s.dim_v;
      for (size_t i = 0; i < count; ++i) {
        const double weight = std::exp(r.score[i] - m) / l * (delta[i] + delta_max + (2.0 * L + 3.0) * kU);
        const double* v = p.value.data() + (r.keys[i] * s.kv_heads + r.h) * s.dim_v;
        for (int64_t d = 0; d < s.dim_v; ++d) bound[d] += weight * std::fabs(v[d]);
      }
    }
  }
  return b;
}

// The backward's bounds on the given inputs (out, max, sum as in p). With exact_out / exact_max / exact_sum (the
// finite-difference test), also what separates the operator's result on those rounded inputs from the exact
// gradient: delta's error from out's rounding, and the probabilities' from the statistics' rounding.
Bounds BackwardBounds(const Problem& p, const std::vector<double>* exact_out = nullptr,
                      const std::vector<double>* exact_max = nullptr, const std::vector<double>* exact_sum = nullptr) {
  const ref::NsaSelectedAttentionShape& s = p.s;
  Bounds b;
  b.dq.assign(p.query.size(), 0.0);
  b.dk.assign(p.key.size(), 0.0);
  b.dv.assign(p.value.size(), 0.0);
  // Terms per key row (for the accumulation factor of dk and dv).
  std::vector<double> terms(static_cast<size_t>(p.T2() * s.kv_heads), 0.0);
  std::vector<RowTerms> rows;
  for (int64_t t = 0; t < p.T1(); ++t) {
    for (int64_t n = 0; n < s.q_heads; ++n) {
      rows.push_back(TermsOf(p, t, n));
      if (p.max[static_cast<size_t>(t * s.q_heads + n)] == -kInf) continue;
      for (int64_t k : rows.back().keys) terms[static_cast<size_t>(k * s.kv_heads + rows.back().h)] += 1.0;
    }
  }
  for (int64_t t = 0; t < p.T1(); ++t) {
    for (int64_t n = 0; n < s.q_heads; ++n) {
      const size_t row = static_cast<size_t>(t * s.q_heads + n);
      if (p.max[row] == -kInf) continue;  // passes nothing back
      const RowTerms& r = rows[row];
      const double* q = p.query.data() + row * s.dim_qk;
      const double* dout = p.out_grad.data() + row * s.dim_v;
      const double* out = p.out.data() + row * s.dim_v;
      double delta = 0.0, delta_magnitude = 0.0, delta_extra = 0.0;
      for (int64_t d = 0; d < s.dim_v; ++d) {
        delta += dout[d] * out[d];
        delta_magnitude += std::fabs(dout[d] * out[d]);
        if (exact_out != nullptr) delta_extra += dout[d] * (out[d] - (*exact_out)[row * s.dim_v + d]);
      }
      const double delta_error = (static_cast<double>(s.dim_v) + 2.0) * kU * delta_magnitude + std::fabs(delta_extra);
      double stat_error = 0.0;
      if (exact_max != nullptr) {
        stat_error = std::fabs(p.max[row] - (*exact_max)[row]) + std::fabs(p.sum[row] / (*exact_sum)[row] - 1.0) * 1.01;
      }
      const double L = static_cast<double>(r.keys.size());
      double* dq_bound = b.dq.data() + row * s.dim_qk;
      for (size_t i = 0; i < r.keys.size(); ++i) {
        const size_t key_row = static_cast<size_t>(r.keys[i] * s.kv_heads + r.h);
        const double* key = p.key.data() + key_row * s.dim_qk;
        const double* value = p.value.data() + key_row * s.dim_v;
        double dp = 0.0, dp_magnitude = 0.0;
        for (int64_t d = 0; d < s.dim_v; ++d) {
          dp += dout[d] * value[d];
          dp_magnitude += std::fabs(dout[d] * value[d]);
        }
        const double prob = std::exp(r.score[i] - p.max[row]) / p.sum[row];
        const double prob_error =
            r.score_error[i] + kU * std::fabs(r.score[i] - p.max[row]) + 4.0 * kU + stat_error;
        const double ds = prob * (dp - delta);
        const double ds_error = prob * (std::fabs(dp - delta) * (prob_error + 2.0 * kU) +
                                        (static_cast<double>(s.dim_v) + 2.0) * kU * dp_magnitude + delta_error);
        const double accumulation = (terms[key_row] + 1.0) * kU;
        double* dk_bound = b.dk.data() + key_row * s.dim_qk;
        double* dv_bound = b.dv.data() + key_row * s.dim_v;
        for (int64_t d = 0; d < s.dim_qk; ++d) {
          dq_bound[d] += std::fabs(s.scale) * (ds_error + (L + 1.0) * kU * std::fabs(ds)) * std::fabs(key[d]);
          dk_bound[d] += std::fabs(s.scale) * (ds_error + accumulation * std::fabs(ds)) * std::fabs(q[d]);
        }
        for (int64_t d = 0; d < s.dim_v; ++d) dv_bound[d] += prob * (prob_error + accumulation) * std::fabs(dout[d]);
      }
    }
  }
  // The final multiplication by scale (dq, dk): one more rounding, relative.
  return b;
}

struct Gradients {
  std::vector<double> dq, dk, dv;
};

Gradients ReferenceBackward(const Problem& p) {
  Gradients g;
  g.dq.resize(p.query.size());
  g.dk.resize(p.key.size());
  g.dv.resize(p.value.size());
  ref::NsaSelectedAttentionBackward(p.query.data(), p.key.data(), p.value.data(), p.out.data(), p.out_grad.data(),
                                    p.max.data(), p.sum.data(), p.topk, p.s, g.dq.data(), g.dk.data(), g.dv.data());
  return g;
}

struct ForwardResult {
  std::vector<double> out, max, sum;
};

ForwardResult ReferenceForward(const Problem& p) {
  ForwardResult r;
  r.out.resize(static_cast<size_t>(optest::NumElements(p.OutShape())));
  r.max.resize(static_cast<size_t>(p.T1() * p.s.q_heads));
  r.sum.resize(r.max.size());
  ref::NsaSelectedAttentionForward(p.query.data(), p.key.data(), p.value.data(), p.topk, p.s, r.out.data(),
                                   r.max.data(), r.sum.data());
  return r;
}

// ------------------------------------------------------------------------------------------------------------
// Device tensors and running the operators

// The tensors of the two calls.
enum Operand {
  kQuery,
  kKey,
  kValue,
  kTopk,
  kOut,       // forward output, backward input
  kOutGrad,   // backward input
  kMax,       // forward output, backward input
  kSum,
  kDq,
  kDk,
  kDv,
  kOperandCount
};
using Layouts = std::array<Layout, kOperandCount>;

Layouts AllLayouts(Layout layout) {
  Layouts layouts;
  layouts.fill(layout);
  return layouts;
}

const char* OperandName(int operand) {
  constexpr const char* kNames[] = {"query",     "key",        "value",   "topkIndices", "attentionOut", "attentionOutGrad",
                                    "softmaxMax", "softmaxSum", "dqOut",   "dkOut",       "dvOut",        "all"};
  return kNames[operand];
}

struct DeviceInputs {
  DeviceTensor query, key, value, topk, out_grad, out, max, sum;
  DeviceTensor mask;
  optest::HostIntArray q_ends, kv_ends;
  DeviceInputs(const Problem& p, const Layouts& layouts)
      : query(p.QueryShape(), p.dtype, layouts[kQuery], p.query),
        key(p.KeyShape(), p.dtype, layouts[kKey], p.key),
        value(p.ValueShape(), p.dtype, layouts[kValue], p.value),
        topk(p.TopkShape(), ACL_INT32, layouts[kTopk], std::vector<double>(p.topk.begin(), p.topk.end())),
        out_grad(p.OutShape(), p.dtype, layouts[kOutGrad], p.out_grad),
        out(p.OutShape(), p.dtype, layouts[kOut], p.out),
        max(p.StatShape(), ACL_FLOAT, layouts[kMax], optest::RepeatEach(p.max, kStatLanes)),
        sum(p.StatShape(), ACL_FLOAT, layouts[kSum], optest::RepeatEach(p.sum, kStatLanes)),
        mask(std::vector<int64_t>{16, 16}, ACL_BOOL, Layout::kContiguous, std::vector<double>(256, 1.0)),
        q_ends(p.s.q_ends),
        kv_ends(p.s.kv_ends) {}

  std::vector<const DeviceTensor*> Inputs() const {
    return {&query, &key, &value, &topk, &out_grad, &out, &max, &sum, &mask};
  }
};

struct ForwardOutputs {
  DeviceTensor out, max, sum;
  ForwardOutputs(const Problem& p, const Layouts& layouts)
      : out(DeviceTensor::Output(p.OutShape(), p.dtype, layouts[kOut])),
        max(DeviceTensor::Output(p.StatShape(), ACL_FLOAT, layouts[kMax])),
        sum(DeviceTensor::Output(p.StatShape(), ACL_FLOAT, layouts[kSum])) {}
};

struct BackwardOutputs {
  DeviceTensor dq, dk, dv;
  BackwardOutputs(const Problem& p, const Layouts& layouts)
      : dq(DeviceTensor::Output(p.QueryShape(), p.dtype, layouts[kDq])),
        dk(DeviceTensor::Output(p.KeyShape(), p.dtype, layouts[kDk])),
        dv(DeviceTensor::Output(p.ValueShape(), p.dtype, layouts[kDv])) {}
};

opcall::NsaSelectedAttention ForwardCall(const Problem& p, const DeviceInputs& d, const ForwardOutputs& o) {
  opcall::NsaSelectedAttention call;
  call.query = d.query.get();
  call.key = d.key.get();
  call.value = d.value.get();
  call.topk_indices = d.topk.get();
  call.atten_mask = p.mode.mask ? d.mask.get() : nullptr;
  call.actual_seq_q_len = d.q_ends.get();
  call.actual_seq_kv_len = d.kv_ends.get();
  call.scale_value = p.s.scale;
  call.head_num = p.s.q_heads;
  call.sparse_mode = p.mode.sparse_mode;
  call.selected_block_size = p.s.block_size;
  call.selected_block_count = p.s.block_count;
  call.softmax_max = o.max.get();
  call.softmax_sum = o.sum.get();
  call.attention_out = o.out.get();
  return call;
}

opcall::NsaSelectedAttentionGrad BackwardCall(const Problem& p, const DeviceInputs& d, const BackwardOutputs& o) {
  opcall::NsaSelectedAttentionGrad call;
  call.query = d.query.get();
  call.key = d.key.get();
  call.value = d.value.get();
  call.attention_out = d.out.get();
  call.attention_out_grad = d.out_grad.get();
  call.softmax_max = d.max.get();
  call.softmax_sum = d.sum.get();
  call.topk_indices = d.topk.get();
  call.actual_seq_q_len = d.q_ends.get();
  call.actual_seq_kv_len = d.kv_ends.get();
  call.atten_mask = p.mode.mask ? d.mask.get() : nullptr;
  call.scale_value = p.s.scale;
  call.selected_block_size = p.s.block_size;
  call.selected_block_count = p.s.block_count;
  call.head_num = p.s.q_heads;
  call.sparse_mode = p.mode.sparse_mode;
  call.dq = o.dq.get();
  call.dk = o.dk.get();
  call.dv = o.dv.get();
  return call;
}

std::vector<std::vector<uint8_t>> InputBytes(const DeviceInputs& d) {
  std::vector<std::vector<uint8_t>> bytes;
  for (const DeviceTensor* t : d.Inputs()) bytes.push_back(t->ReadBytes());
  return bytes;
}

void ExpectInputsIntact(const DeviceInputs& d, const std::vector<std::vector<uint8_t>>& before) {
  ExpectGuardsIntact(d.Inputs());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(d.Inputs()[i]->ReadBytes(), before[i]) << "input " << i;
}

// The forward's outputs against the reference: out within its bounds, the statistics within theirs in every lane.
void ExpectForwardMatches(const Problem& p, const std::vector<double>& out, const std::vector<double>& max_lanes,
                          const std::vector<double>& sum_lanes) {
  const ForwardResult expected = ReferenceForward(p);
  const Bounds bounds = ForwardBounds(p);
  ExpectClose("attentionOut", out, expected.out, bounds.out, p.dtype);
  ExpectClose("softmaxMax", max_lanes, optest::RepeatEach(expected.max, kStatLanes),
              optest::RepeatEach(bounds.max, kStatLanes), ACL_FLOAT);
  ExpectClose("softmaxSum", sum_lanes, optest::RepeatEach(expected.sum, kStatLanes),
              optest::RepeatEach(bounds.sum, kStatLanes), ACL_FLOAT);
}

void ExpectBackwardMatches(const Problem& p, const std::vector<double>& dq, const std::vector<double>& dk,
                           const std::vector<double>& dv) {
  const Gradients expected = ReferenceBackward(p);
  const Bounds bounds = BackwardBounds(p);
  ExpectClose("dqOut", dq, expected.dq, bounds.dq, p.dtype);
  ExpectClose("dkOut", dk, expected.dk, bounds.dk, p.dtype);
  ExpectClose("dvOut", dv, expected.dv, bounds.dv, p.dtype);
}

// Runs the forward on p (inputs stored in `layouts`) and checks it.
void CheckForward(const Problem& p, const Layouts& layouts = AllLayouts(Layout::kContiguous),
                  aclrtStream stream = nullptr) {
  SCOPED_TRACE(SequencesName(p));
  DeviceInputs d(p, layouts);
  const auto before = InputBytes(d);
  ForwardOutputs o(p, layouts);
  ASSERT_EQ(opcall::Run(ForwardCall(p, d, o), stream), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  ExpectForwardMatches(p, o.out.Read(), o.max.Read(), o.sum.Read());
  ExpectGuardsIntact({&o.out, &o.max, &o.sum});
  ExpectInputsIntact(d, before);
}

void CheckBackward(const Problem& p, const Layouts& layouts = AllLayouts(Layout::kContiguous),
                   aclrtStream stream = nullptr) {
  SCOPED_TRACE(SequencesName(p));
  DeviceInputs d(p, layouts);
  const auto before = InputBytes(d);
  BackwardOutputs o(p, layouts);
  ASSERT_EQ(opcall::Run(BackwardCall(p, d, o), stream), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  ExpectBackwardMatches(p, o.dq.Read(), o.dk.Read(), o.dv.Read());
  ExpectGuardsIntact({&o.dq, &o.dk, &o.dv});
  ExpectInputsIntact(d, before);
}

// ------------------------------------------------------------------------------------------------------------
// Sweep: both dtypes x geometries (GQA groups 1 to 8, both head dims, block sizes 16 to 128, counts 1 to 32) x both
// sparse modes with a mask (0: the mask changes nothing; 2: causal), variable sequence lengths.

struct SweepCase {
  aclDataType dtype;
  Geometry g;
};

std::string SweepCaseName(const SweepCase& c) { return std::string(optest::DTypeName(c.dtype)) + "_" + GeometryName(c.g); }

void PrintTo(const SweepCase& c, std::ostream* os) { *os << SweepCaseName(c); }

const Geometry kSweepGeometries[] = {
    {1, 1, 192, 128, 16, 4},  {4, 1, 192, 128, 16, 2},  {4, 2, 128, 128, 32, 2}, {8, 2, 192, 192, 16, 3},
    {3, 3, 192, 128, 64, 1},  {6, 2, 128, 128, 16, 1},  {2, 1, 192, 128, 128, 1}, {5, 5, 128, 128, 16, 32},
    {32, 1, 192, 128, 16, 2},
};

std::vector<SweepCase> SweepCases() {
  std::vector<SweepCase> cases;
  for (aclDataType dtype : kDTypes) {
    for (const Geometry& g : kSweepGeometries) cases.push_back({dtype, g});
  }
  return cases;
}

class NsaSelectedAttentionSweep : public testing::TestWithParam<SweepCase> {};

TEST_P(NsaSelectedAttentionSweep, ForwardAndBackwardMatchReference) {
  const SweepCase c = GetParam();
  const Geometry& g = c.g;
  const int64_t selected = g.block_size * g.block_count;
  uint64_t seed = 1000 + static_cast<uint64_t>(c.dtype) * 100 + static_cast<uint64_t>(g.q_heads * 7 + g.block_size);
  optest::TestStream stream;
  for (int64_t sparse_mode : {0, 2}) {
    // Query sequences of 0, 1 and several tokens; key/value sequences of the minimum length and longer.
    const std::vector<int64_t> q_lengths = {3 * g.block_size / 2 + 3, 0, 1, 2 * g.block_size + 5};
    const std::vector<int64_t> kv_lengths = {selected + g.block_size, selected, selected + 3 * g.block_size,
                                             std::max(selected, 3 * g.block_size)};
    const Problem p = MakeProblem(g, q_lengths, kv_lengths, Mode{sparse_mode, true}, c.dtype, seed++);
    CheckForward(p, AllLayouts(Layout::kContiguous), stream.get());
    CheckBackward(p, AllLayouts(Layout::kContiguous), stream.get());
  }
}

std::string SweepParamName(const testing::TestParamInfo<SweepCase>& param_info) {
  return SweepCaseName(param_info.param);
}

INSTANTIATE_TEST_SUITE_P(NsaSelectedAttention, NsaSelectedAttentionSweep, testing::ValuesIn(SweepCases()),
                         SweepParamName);

// ------------------------------------------------------------------------------------------------------------
// Layouts: each tensor (and all at once) transposed (the last two dims swapped in storage: rows without unit stride
// are gathered), padded (an offset and gaps; topkIndices' gaps hold -1, an index that must not be read), channels-last
// or, for inputs, broadcast (a zero stride along dim 0: every token the same query, key, indices, ...).

const Geometry kLayoutGeometry = {4, 2, 128, 128, 16, 3};

void CheckLayouts(aclDataType dtype, bool forward) {
  uint64_t seed = 3000 + static_cast<uint64_t>(dtype) * 100 + (forward ? 0 : 50);
  const std::vector<int> inputs = forward ? std::vector<int>{kQuery, kKey, kValue, kTopk}
                                          : std::vector<int>{kQuery, kKey, kValue, kTopk, kOut, kOutGrad, kMax, kSum};
  const std::vector<int> outputs = forward ? std::vector<int>{kOut, kMax, kSum} : std::vector<int>{kDq, kDk, kDv};
  std::vector<int> operands = inputs;
  operands.insert(operands.end(), outputs.begin(), outputs.end());
  operands.push_back(kOperandCount);
  for (int operand : operands) {
    const bool is_input = std::find(inputs.begin(), inputs.end(), operand) != inputs.end();
    for (Layout layout : optest::kInputLayouts) {
      if (layout == Layout::kBroadcast && !is_input) continue;
      SCOPED_TRACE(std::string(OperandName(operand)) + " " + optest::LayoutName(layout));
      Layouts layouts = AllLayouts(Layout::kContiguous);
      if (operand == kOperandCount) {
        for (int i : outputs) layouts[static_cast<size_t>(i)] = layout == Layout::kBroadcast ? Layout::kPadded : layout;
        for (int i : inputs) layouts[static_cast<size_t>(i)] = layout;
      } else {
        layouts[static_cast<size_t>(operand)] = layout;
      }
      Problem p = MakeProblem(kLayoutGeometry, {20, 0, 37}, {48, 64, 80}, Mode{2, (seed % 2) == 0}, dtype, ++seed);
      p.query = optest::AsStored(p.query, p.QueryShape(), layouts[kQuery]);
      p.key = optest::AsStored(p.key, p.KeyShape(), layouts[kKey]);
      p.value = optest::AsStored(p.value, p.ValueShape(), layouts[kValue]);
      const std::vector<double> topk =
          optest::AsStored(std::vector<double>(p.topk.begin(), p.topk.end()), p.TopkShape(), layouts[kTopk]);
      p.topk.assign(topk.begin(), topk.end());
      SetForwardResults(&p);
      p.out = optest::AsStored(p.out, p.OutShape(), layouts[kOut]);
      p.out_grad = optest::AsStored(p.out_grad, p.OutShape(), layouts[kOutGrad]);
      p.max = LaneZero(optest::AsStored(optest::RepeatEach(p.max, kStatLanes), p.StatShape(), layouts[kMax]));
      p.sum = LaneZero(optest::AsStored(optest::RepeatEach(p.sum, kStatLanes), p.StatShape(), layouts[kSum]));
      if (forward) {
        CheckForward(p, layouts);
      } else {
        CheckBackward(p, layouts);
      }
    }
  }
}

class NsaSelectedAttentionLayouts : public testing::TestWithParam<aclDataType> {};

TEST_P(NsaSelectedAttentionLayouts, ForwardMatchesReference) { CheckLayouts(GetParam(), true); }

TEST_P(NsaSelectedAttentionLayouts, BackwardMatchesReference) { CheckLayouts(GetParam(), false); }

std::string DTypeParamName(const testing::TestParamInfo<aclDataType>& param_info) {
  return optest::DTypeName(param_info.param);
}

INSTANTIATE_TEST_SUITE_P(NsaSelectedAttention, NsaSelectedAttentionLayouts, testing::ValuesIn(kDTypes),
                         DTypeParamName);

// ------------------------------------------------------------------------------------------------------------
// The backward against central differences of the float64 forward: L(q, k, v) = sum(attentionOutGrad * out). The
// operator gets the forward's results rounded as the forward writes them (out to the dtype, the statistics to FLOAT);
// the bounds add what that rounding moves (BackwardBounds' exact_* arguments). h = 2^-12: the differences' own error,
// O(h^2) of third derivatives of order 1, is below 1e-7.

double Loss(const Problem& p, const std::vector<double>& query, const std::vector<double>& key,
            const std::vector<double>& value) {
  std::vector<double> out(p.out.size()), max(p.max.size()), sum(p.sum.size());
  ref::NsaSelectedAttentionForward(query.data(), key.data(), value.data(), p.topk, p.s, out.data(), max.data(),
                                   sum.data());
  double loss = 0.0;
  for (size_t i = 0; i < out.size(); ++i) loss += p.out_grad[i] * out[i];
  return loss;
}

constexpr double kStep = 0x1p-12;

// The directional difference along `direction` of the argument `which` (0 query, 1 key, 2 value).
double CentralDifference(const Problem& p, int which, const std::vector<double>& direction) {
  std::vector<double> args[3] = {p.query, p.key, p.value};
  std::vector<double> plus = args[which], minus = args[which];
  for (size_t i = 0; i < plus.size(); ++i) {
    plus[i] += kStep * direction[i];
    minus[i] -= kStep * direction[i];
  }
  args[which] = plus;
  const double up = Loss(p, args[0], args[1], args[2]);
  args[which] = minus;
  const double down = Loss(p, args[0], args[1], args[2]);
  return (up - down) / (2.0 * kStep);
}

class NsaSelectedAttentionGradient : public testing::TestWithParam<aclDataType> {};

TEST_P(NsaSelectedAttentionGradient, BackwardMatchesDifferencesOfForward) {
  const aclDataType dtype = GetParam();
  for (int64_t sparse_mode : {0, 2}) {
    SCOPED_TRACE("sparseMode " + std::to_string(sparse_mode));
    const Geometry g = {4, 2, 128, 128, 16, 3};
    const Problem p = MakeProblem(g, {21, 2, 17}, {48, 64, 64}, Mode{sparse_mode, true}, dtype,
                                  5000 + static_cast<uint64_t>(dtype) + static_cast<uint64_t>(sparse_mode), 1.0);
    DeviceInputs d(p, AllLayouts(Layout::kContiguous));
    BackwardOutputs o(p, AllLayouts(Layout::kContiguous));
    ASSERT_EQ(opcall::Run(BackwardCall(p, d, o), nullptr), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    const Gradients actual{o.dq.Read(), o.dk.Read(), o.dv.Read()};
    const ForwardResult exact = ReferenceForward(p);
    const Bounds bounds = BackwardBounds(p, &exact.out, &exact.max, &exact.sum);
    auto allowance = [dtype](double gradient, double bound) {
      return optest::UlpOf(gradient, dtype) + bound + 1e-7 * (1.0 + std::fabs(gradient));
    };
    const std::vector<double>* gradients[3] = {&actual.dq, &actual.dk, &actual.dv};
    const std::vector<double>* element_bounds[3] = {&bounds.dq, &bounds.dk, &bounds.dv};
    const char* names[3] = {"dq", "dk", "dv"};
    std::mt19937_64 rng(5100 + static_cast<uint64_t>(sparse_mode));
    for (int which = 0; which < 3; ++which) {
      const std::vector<double>& gradient = *gradients[which];
      const std::vector<double>& bound = *element_bounds[which];
      // Single elements: random ones, and the largest gradients (the selected keys).
      std::vector<size_t> probes;
      for (int i = 0; i < 12; ++i) probes.push_back(static_cast<size_t>(optest::UniformInt(rng, 0, static_cast<int64_t>(gradient.size()) - 1)));
      std::vector<size_t> order(gradient.size());
      std::iota(order.begin(), order.end(), size_t{0});
      std::partial_sort(order.begin(), order.begin() + 6, order.end(),
                        [&](size_t a, size_t b) { return std::fabs(gradient[a]) > std::fabs(gradient[b]); });
      probes.insert(probes.end(), order.begin(), order.begin() + 6);
      for (size_t k : probes) {
        std::vector<double> unit(gradient.size(), 0.0);
        unit[k] = 1.0;
        EXPECT_NEAR(gradient[k], CentralDifference(p, which, unit), allowance(gradient[k], bound[k]))
            << names[which] << " element " << k;
      }
      // Random directions over every element.
      for (int trial = 0; trial < 2; ++trial) {
        std::vector<double> direction(gradient.size());
        double predicted = 0.0, tolerance = 0.0;
        for (size_t i = 0; i < direction.size(); ++i) {
          direction[i] = optest::UniformValue(rng, -1.0, 1.0);
          predicted += gradient[i] * direction[i];
          tolerance += std::fabs(direction[i]) * allowance(gradient[i], bound[i]);
        }
        EXPECT_NEAR(predicted, CentralDifference(p, which, direction), tolerance)
            << names[which] << " along random direction " << trial;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(NsaSelectedAttention, NsaSelectedAttentionGradient, testing::ValuesIn(kDTypes),
                         DTypeParamName);

// ------------------------------------------------------------------------------------------------------------
// A hand-computed example, independent of the reference. query = 0: every visible key scores 0, so max = 0, sum = the
// number of keys in the list and out = the mean of their value rows; value[t, h, d] = (t mod 16) / 16 + h / 4, exact in
// both dtypes. One sequence of 32 query and 64 key tokens, bs 16, 4 slots, N1 = 2, N2 = 2. Head 0 selects blocks {3,
// 1, 1, -1} (a repeat and a negative index), head 1 {0, 4, 2, 2147483647} (past the sequence's 4 blocks, INT32_MAX):
// - sparseMode 0: head 0's list is block 3, then block 1 twice (48 keys), head 1's blocks 0, 2, 2 (48 keys);
// - sparseMode 2 with a mask, token u: blocks beyond u / 16 drop out, the diagonal block keeps u mod 16 + 1 keys.
// The backward with attentionOutGrad = 1 and attentionOut = 0 (so delta = 0): ds = p * dp with dp = sum_d value, and
// p = 1 / sum; the statistics' lanes 1 to 7 hold 1e30, which the backward must not read (it reads lane 0).

TEST(NsaSelectedAttentionSample, HandComputedValues) {
  const int64_t T = 32, bs = 16, D = 128;
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "sparseMode 0");
    Problem p;
    p.s.q_heads = 2;
    p.s.kv_heads = 2;
    p.s.dim_qk = D;
    p.s.dim_v = D;
    p.s.block_size = bs;
    p.s.block_count = 4;
    p.s.causal = causal;
    p.s.scale = 0.125;
    p.s.q_ends = {T};
    p.s.kv_ends = {64};
    p.mode = Mode{causal ? 2 : 0, causal};
    p.dtype = ACL_BF16;
    p.query.assign(static_cast<size_t>(optest::NumElements(p.QueryShape())), 0.0);
    std::mt19937_64 rng(77);
    p.key = optest::RandomValues(rng, optest::NumElements(p.KeyShape()), -1.0, 1.0, p.dtype);
    for (int64_t t = 0; t < 64; ++t) {
      for (int64_t h = 0; h < 2; ++h) {
        for (int64_t d = 0; d < D; ++d) p.value.push_back(static_cast<double>(t % 16) / 16.0 + static_cast<double>(h) / 4.0);
      }
    }
    const int64_t selection[2][4] = {{3, 1, 1, -1}, {0, 4, 2, 2147483647}};
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t h = 0; h < 2; ++h) p.topk.insert(p.topk.end(), selection[h], selection[h] + 4);
    }
    p.out_grad.assign(static_cast<size_t>(optest::NumElements(p.OutShape())), 1.0);
    // Expected forward, by hand: the list's blocks and how many keys of each are visible.
    std::vector<double> out, max, sum;
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t h = 0; h < 2; ++h) {
        double keys = 0.0, total = 0.0;
        for (int64_t block : selection[h]) {
          if (block < 0 || block >= 4) continue;
          int64_t visible = bs;
          if (causal) visible = block * bs > t ? 0 : std::min(bs, t - block * bs + 1);
          keys += static_cast<double>(visible);
          for (int64_t j = 0; j < visible; ++j) total += static_cast<double>(j) / 16.0 + static_cast<double>(h) / 4.0;
        }
        max.push_back(keys > 0 ? 0.0 : -kInf);
        sum.push_back(keys);
        for (int64_t d = 0; d < D; ++d) out.push_back(keys > 0 ? total / keys : 0.0);
      }
    }
    const ForwardResult reference = ReferenceForward(p);
    EXPECT_EQ(reference.max, max) << "the reference disagrees with the hand computation";
    EXPECT_EQ(reference.sum, sum) << "the reference disagrees with the hand computation";
    for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(reference.out[i], out[i], 1e-12) << i;
    p.out.assign(out.size(), 0.0);
    p.max = max;
    p.sum = sum;

    DeviceInputs d(p, AllLayouts(Layout::kContiguous));
    ForwardOutputs f(p, AllLayouts(Layout::kContiguous));
    ASSERT_EQ(opcall::Run(ForwardCall(p, d, f), nullptr), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    EXPECT_EQ(f.max.Read(), optest::RepeatEach(max, kStatLanes));
    EXPECT_EQ(f.sum.Read(), optest::RepeatEach(sum, kStatLanes));
    const std::vector<double> actual_out = f.out.Read();
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_NEAR(actual_out[i], out[i], optest::UlpOf(out[i], p.dtype) + 1e-6) << "attentionOut element " << i;
    }

    std::vector<double> junk_lanes_max = optest::RepeatEach(max, kStatLanes),
                        junk_lanes_sum = optest::RepeatEach(sum, kStatLanes);
    for (size_t i = 0; i < junk_lanes_max.size(); ++i) {
      if (i % kStatLanes != 0) junk_lanes_max[i] = junk_lanes_sum[i] = 1e30;
    }
    d.max.Write(junk_lanes_max);
    d.sum.Write(junk_lanes_sum);
    BackwardOutputs b(p, AllLayouts(Layout::kContiguous));
    ASSERT_EQ(opcall::Run(BackwardCall(p, d, b), nullptr), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    // dv of key k: sum over the rows listing it of p = 1 / keys (per occurrence); dq = scale * sum ds key.
    const Gradients expected = ReferenceBackward(p);
    const Bounds bounds = BackwardBounds(p);
    ExpectClose("dqOut", b.dq.Read(), expected.dq, bounds.dq, p.dtype);
    ExpectClose("dkOut", b.dk.Read(), expected.dk, bounds.dk, p.dtype);
    ExpectClose("dvOut", b.dv.Read(), expected.dv, bounds.dv, p.dtype);
    // Key rows of head 0's block 0 and 2 and head 1's blocks 1 and 3: nobody selects them.
    const std::vector<double> dv = b.dv.Read();
    for (int64_t token = 0; token < 64; ++token) {
      const int64_t block = token / bs;
      for (int64_t h = 0; h < 2; ++h) {
        const bool selected = h == 0 ? (block == 1 || block == 3) : (block == 0 || block == 2);
        const double first = dv[static_cast<size_t>((token * 2 + h) * D)];
        if (!selected) {
          EXPECT_EQ(first, 0.0) << "dv of unselected key " << token << " head " << h;
        }
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------------------
// Hostile topkIndices (device data, never trusted): out of range (the block count, far past it, INT32_MAX),
// negative (-1, INT32_MIN), repeated, and rows whose every slot is invalid (out = 0, max = -inf, sum = 0, dq = 0).
// Nothing outside the tensors is read (the guards are NaN: a stray read would show) or written, and the results are
// the reference's, which gives invalid slots no keys and repeated ones their keys again.

TEST(NsaSelectedAttentionHostile, InvalidAndRepeatedIndices) {
  const Geometry g = {4, 2, 192, 128, 16, 4};
  for (aclDataType dtype : kDTypes) {
    for (int64_t sparse_mode : {0, 2}) {
      SCOPED_TRACE(std::string(optest::DTypeName(dtype)) + " sparseMode " + std::to_string(sparse_mode));
      Problem p = MakeProblem(g, {30, 25}, {64, 96}, Mode{sparse_mode, true}, dtype, 6000 + static_cast<uint64_t>(dtype));
      std::mt19937_64 rng(6100);
      const int64_t hostile[] = {4, 6, 100, 2147483647, -1, -2147483648LL, 1 << 20};
      for (size_t i = 0; i < p.topk.size(); ++i) {
        const int64_t kind = optest::UniformInt(rng, 0, 9);
        if (kind < 3) p.topk[i] = hostile[static_cast<size_t>(optest::UniformInt(rng, 0, 6))];
        if (kind == 3 && i > 0) p.topk[i] = p.topk[i - 1];  // a repeat of the previous slot (when it is valid)
      }
      // Token 3, KV head 1 and token 40, KV head 0: every slot invalid.
      for (int64_t c = 0; c < g.block_count; ++c) {
        p.topk[static_cast<size_t>((3 * g.kv_heads + 1) * g.block_count + c)] = -7;
        p.topk[static_cast<size_t>((40 * g.kv_heads + 0) * g.block_count + c)] = 1000000;
      }
      SetForwardResults(&p);
      EXPECT_EQ(p.max[static_cast<size_t>(3 * g.q_heads + 2)], -kInf);
      CheckForward(p);
      CheckBackward(p);
    }
  }
}

// ------------------------------------------------------------------------------------------------------------
// A row whose softmaxMax is -inf (the forward gave it no weight: an empty key list, or every score -inf) passes
// nothing back, even when its key list is not empty: dq = 0 there, and dk / dv get nothing from it.

TEST(NsaSelectedAttentionHostile, RowsWithoutWeightPassNothingBack) {
  const Geometry g = {4, 2, 128, 128, 16, 2};
  for (aclDataType dtype : kDTypes) {
    SCOPED_TRACE(optest::DTypeName(dtype));
    Problem p = MakeProblem(g, {12, 9}, {32, 48}, Mode{0, false}, dtype, 6600);
    for (size_t row : {size_t{0}, size_t{5}, size_t{17}, size_t{50}}) p.max[row] = -kInf;
    CheckBackward(p);
    DeviceInputs d(p, AllLayouts(Layout::kContiguous));
    BackwardOutputs b(p, AllLayouts(Layout::kContiguous));
    ASSERT_EQ(opcall::Run(BackwardCall(p, d, b), nullptr), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    const std::vector<double> dq = b.dq.Read();
    for (int64_t row : {0, 5, 17, 50}) {
      for (int64_t i = 0; i < g.dim_qk; ++i) EXPECT_EQ(dq[static_cast<size_t>(row * g.dim_qk + i)], 0.0) << row;
    }
  }
}

// ------------------------------------------------------------------------------------------------------------
// Keys nobody may see hold NaN: with one query sequence of 15 tokens (positions 0 to 14) and one key sequence of 64,
// causal, every query selects block 0 twice (its diagonal block, a repeat); key and value rows 15 to 63 hold NaN -
// key 15 masked for every query, blocks 1 to 3 selected by none. The outputs are finite and the reference's; dk and
// dv of those rows are 0.

TEST(NsaSelectedAttentionHostile, UnselectedAndMaskedKeysAreNeverRead) {
  const Geometry g = {2, 1, 128, 128, 16, 2};
  for (aclDataType dtype : kDTypes) {
    SCOPED_TRACE(optest::DTypeName(dtype));
    Problem p = MakeProblem(g, {15}, {64}, Mode{2, true}, dtype, 6500);
    std::fill(p.topk.begin(), p.topk.end(), 0);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (int64_t token = 15; token < 64; ++token) {
      for (int64_t d = 0; d < g.dim_qk; ++d) p.key[static_cast<size_t>(token * g.dim_qk + d)] = nan;
      for (int64_t d = 0; d < g.dim_v; ++d) p.value[static_cast<size_t>(token * g.dim_v + d)] = nan;
    }
    SetForwardResults(&p);
    CheckForward(p);
    CheckBackward(p);
  }
}

// ------------------------------------------------------------------------------------------------------------
// Sparse modes and the mask: sparseMode 2 without a mask computes everything (the documents: "when attenMaskOptional
// is null, sparseMode has no effect"), the same bits as sparseMode 0 with or without a mask (whose contents are never
// read); sparseMode 2 with a mask differs (causal) and matches the causal reference.

TEST(NsaSelectedAttentionModes, MaskAndSparseModeCombinations) {
  const Geometry g = {4, 1, 192, 128, 16, 4};
  const Problem full = MakeProblem(g, {40}, {64}, Mode{0, false}, ACL_FLOAT16, 7000);
  std::vector<std::vector<uint8_t>> outputs;
  for (Mode mode : {Mode{0, false}, Mode{0, true}, Mode{2, false}, Mode{2, true}}) {
    SCOPED_TRACE("sparseMode " + std::to_string(mode.sparse_mode) + (mode.mask ? " with mask" : ""));
    Problem p = full;
    p.mode = mode;
    p.s.causal = mode.Causal();
    SetForwardResults(&p);
    DeviceInputs d(p, AllLayouts(Layout::kContiguous));
    ForwardOutputs o(p, AllLayouts(Layout::kContiguous));
    ASSERT_EQ(opcall::Run(ForwardCall(p, d, o), nullptr), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    ExpectForwardMatches(p, o.out.Read(), o.max.Read(), o.sum.Read());
    BackwardOutputs b(p, AllLayouts(Layout::kContiguous));
    ASSERT_EQ(opcall::Run(BackwardCall(p, d, b), nullptr), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    ExpectBackwardMatches(p, b.dq.Read(), b.dk.Read(), b.dv.Read());
    outputs.push_back(optest::ConcatenatedBytes({&o.out, &o.max, &o.sum, &b.dq, &b.dk, &b.dv}));
  }
  EXPECT_TRUE(outputs[0] == outputs[1]);
  EXPECT_TRUE(outputs[0] == outputs[2]);
  EXPECT_FALSE(outputs[0] == outputs[3]);
}

// ------------------------------------------------------------------------------------------------------------
// Empty: no query tokens at all (T1 = 0: every query sequence empty). The forward's outputs have no elements; the
// backward's dk and dv are exactly 0.

TEST(NsaSelectedAttentionEmpty, NoQueryTokens) {
  const Geometry g = {4, 2, 192, 128, 16, 2};
  for (aclDataType dtype : kDTypes) {
    for (Layout layout : {Layout::kContiguous, Layout::kPadded}) {
      SCOPED_TRACE(std::string(optest::DTypeName(dtype)) + " " + optest::LayoutName(layout));
      const Problem p = MakeProblem(g, {0, 0}, {32, 64}, Mode{2, true}, dtype, 7100);
      ASSERT_EQ(p.T1(), 0);
      DeviceInputs d(p, AllLayouts(layout));
      ForwardOutputs f(p, AllLayouts(layout));
      ASSERT_EQ(opcall::Run(ForwardCall(p, d, f), nullptr), ACLNN_SUCCESS) << optest::RecentErrorMessage();
      BackwardOutputs b(p, AllLayouts(layout));
      ASSERT_EQ(opcall::Run(BackwardCall(p, d, b), nullptr), ACLNN_SUCCESS) << optest::RecentErrorMessage();
      optest::ExpectAllZero("dkOut", b.dk.Read());
      optest::ExpectAllZero("dvOut", b.dv.Read());
      ExpectGuardsIntact({&f.out, &f.max, &f.sum, &b.dq, &b.dk, &b.dv});
    }
  }
}

// ------------------------------------------------------------------------------------------------------------
// Determinism: bit-identical run to run, for any thread count (a child process per ACLNN_NUM_THREADS) and on every
// SIMD target. Enough items for many chunks, blocks selected by many tokens (the key pass's batches), both modes.

std::vector<uint8_t> DeterminismBytes() {
  std::vector<uint8_t> bytes;
  for (aclDataType dtype : kDTypes) {
    for (int64_t sparse_mode : {0, 2}) {
      const Geometry g = {8, 2, 192, 128, 16, 4};
      const Problem p = MakeProblem(g, {90, 0, 47}, {128, 64, 96}, Mode{sparse_mode, true}, dtype,
                                    9500 + static_cast<uint64_t>(sparse_mode));
      Layouts layouts = AllLayouts(Layout::kContiguous);
      layouts[kKey] = Layout::kPadded;
      DeviceInputs d(p, layouts);
      ForwardOutputs f(p, layouts);
      EXPECT_EQ(opcall::Run(ForwardCall(p, d, f), nullptr), ACLNN_SUCCESS) << optest::RecentErrorMessage();
      BackwardOutputs b(p, layouts);
      EXPECT_EQ(opcall::Run(BackwardCall(p, d, b), nullptr), ACLNN_SUCCESS) << optest::RecentErrorMessage();
      const std::vector<uint8_t> part = optest::ConcatenatedBytes({&f.out, &f.max, &f.sum, &b.dq, &b.dk, &b.dv});
      bytes.insert(bytes.end(), part.begin(), part.end());
    }
  }
  return bytes;
}

TEST(NsaSelectedAttentionDeterminism, BitIdenticalRunToRun) { optest::ExpectBitIdenticalRunToRun(DeterminismBytes); }

TEST(NsaSelectedAttentionDeterminism, OutputForComparison) { optest::WriteOutputForParent(DeterminismBytes()); }

TEST(NsaSelectedAttentionDeterminism, BitIdenticalForAnyThreadCount) {
  optest::ExpectBitIdenticalForThreadCounts("NsaSelectedAttentionDeterminism.OutputForComparison", {2, 3, 8},
                                            DeterminismBytes);
}

TEST(NsaSelectedAttentionDeterminism, BitIdenticalOnEverySimdTarget) {
  optest::ExpectBitIdenticalOnEverySimdTarget("NsaSelectedAttentionDeterminism.OutputForComparison");
}

// Rows read in place and rows gathered (a transposed view) give the same bits.
TEST(NsaSelectedAttentionDeterminism, GatheredRowsGiveTheSameBits) {
  const Geometry g = {4, 2, 192, 128, 16, 3};
  const Problem p = MakeProblem(g, {33, 20}, {64, 48}, Mode{2, true}, ACL_BF16, 9700);
  std::vector<std::vector<uint8_t>> outputs;
  for (Layout layout : {Layout::kContiguous, Layout::kTransposed}) {
    Layouts layouts = AllLayouts(Layout::kContiguous);
    layouts[kKey] = layouts[kValue] = layouts[kQuery] = layout;
    DeviceInputs d(p, layouts);
    ForwardOutputs f(p, AllLayouts(Layout::kContiguous));
    ASSERT_EQ(opcall::Run(ForwardCall(p, d, f), nullptr), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    BackwardOutputs b(p, AllLayouts(Layout::kContiguous));
    ASSERT_EQ(opcall::Run(BackwardCall(p, d, b), nullptr), ACLNN_SUCCESS) << optest::RecentErrorMessage();
    outputs.push_back(optest::ConcatenatedBytes({&f.out, &f.max, &f.sum, &b.dq, &b.dk, &b.dv}));
  }
  EXPECT_TRUE(outputs[0] == outputs[1]);
}

// ------------------------------------------------------------------------------------------------------------
// A repeatable executor runs again on new tensor data (the same shapes and arrays).

TEST(NsaSelectedAttentionExecutor, RepeatableExecutorsRunAgainOnNewData) {
  const Geometry g = {2, 1, 128, 128, 16, 2};
  const Problem first = MakeProblem(g, {10, 7}, {32, 48}, Mode{2, true}, ACL_FLOAT16, 9800);
  const Problem second = MakeProblem(g, {10, 7}, {32, 48}, Mode{2, true}, ACL_FLOAT16, 9801);
  DeviceInputs d(first, AllLayouts(Layout::kContiguous));
  ForwardOutputs f(first, AllLayouts(Layout::kContiguous));
  BackwardOutputs b(first, AllLayouts(Layout::kContiguous));
  uint64_t forward_size = 0, backward_size = 0;
  aclOpExecutor* forward = nullptr;
  aclOpExecutor* backward = nullptr;
  ASSERT_EQ(opcall::GetWorkspaceSize(ForwardCall(first, d, f), &forward_size, &forward), ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  ASSERT_EQ(opcall::GetWorkspaceSize(BackwardCall(first, d, b), &backward_size, &backward), ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  if (optest::DeviceIsCpu()) {
    EXPECT_EQ(forward_size, 0u);  // (the CUDA forward keeps the sequences in its workspace)
  }
  EXPECT_GT(backward_size, 0u);
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(forward), ACLNN_SUCCESS);
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(backward), ACLNN_SUCCESS);
  optest::TestStream stream;
  for (const Problem* p : {&first, &second}) {
    d.query.Write(p->query);
    d.key.Write(p->key);
    d.value.Write(p->value);
    d.topk.Write(std::vector<double>(p->topk.begin(), p->topk.end()));
    d.out.Write(p->out);
    d.out_grad.Write(p->out_grad);
    d.max.Write(optest::RepeatEach(p->max, kStatLanes));
    d.sum.Write(optest::RepeatEach(p->sum, kStatLanes));
    ASSERT_EQ(opcall::RunPhase2(aclnnNsaSelectedAttention, forward_size, forward, stream.get()), ACLNN_SUCCESS)
        << optest::RecentErrorMessage();
    ASSERT_EQ(opcall::RunPhase2(aclnnNsaSelectedAttentionGrad, backward_size, backward, stream.get()), ACLNN_SUCCESS)
        << optest::RecentErrorMessage();
    ExpectForwardMatches(*p, f.out.Read(), f.max.Read(), f.sum.Read());
    ExpectBackwardMatches(*p, b.dq.Read(), b.dk.Read(), b.dv.Read());
  }
  EXPECT_EQ(aclDestroyAclOpExecutor(forward), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyAclOpExecutor(backward), ACLNN_SUCCESS);
}

}  // namespace
