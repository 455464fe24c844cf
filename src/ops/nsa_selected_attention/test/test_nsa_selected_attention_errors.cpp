// Phase-1 validation of aclnnNsaSelectedAttentionGetWorkspaceSize and aclnnNsaSelectedAttentionGradGetWorkspaceSize
// (CANN's documents and docs/ops/nsa_selected_attention.md): each rule has its own test, checking the status code
// (161001 null, 161002 invalid) and that the message names the function, the parameter and the offending value. The
// rules on what both operators take run for both. A rejected call writes nothing and hands out no executor. Phase 1
// must not read tensor data: a call whose tensors point at unmapped memory still succeeds.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_nsa_selected_attention.h"
#include "aclnnop/aclnn_nsa_selected_attention_grad.h"
#include "nsa_selected_attention/test/nsa_selected_attention_calls.h"
#include "op_test_util.h"
#include "phase1_checks.h"

namespace {

using optest::DeviceTensor;
using optest::HostIntArray;
using optest::Layout;
using optest::RawTensor;

constexpr const char* kForwardName = "aclnnNsaSelectedAttention";
constexpr const char* kGradName = "aclnnNsaSelectedAttentionGrad";

// One valid call: two sequences of 12 and 8 query tokens, 32 and 48 key tokens; N1 4, N2 2, D 192 / 128, bs 16,
// 2 blocks selected.
struct Dims {
  int64_t t1 = 20, t2 = 80, n1 = 4, n2 = 2, dqk = 192, dv = 128, bs = 16, count = 2;
  std::vector<int64_t> q_ends = {12, 20}, kv_ends = {32, 80};
  std::vector<int64_t> Query() const { return {t1, n1, dqk}; }
  std::vector<int64_t> Key() const { return {t2, n2, dqk}; }
  std::vector<int64_t> Value() const { return {t2, n2, dv}; }
  std::vector<int64_t> Topk() const { return {t1, n2, count}; }
  std::vector<int64_t> Out() const { return {t1, n1, dv}; }
  std::vector<int64_t> Stat() const { return {t1, n1, 8}; }
};

DeviceTensor Tensor(std::vector<int64_t> shape, aclDataType dtype = ACL_FLOAT16, aclFormat format = ACL_FORMAT_ND) {
  return optest::ValidTensor(std::move(shape), dtype, format);
}
DeviceTensor Output(std::vector<int64_t> shape, aclDataType dtype = ACL_FLOAT16) {
  return DeviceTensor::Output(std::move(shape), dtype, Layout::kContiguous);
}

// The arguments of either operator (the forward's outputs: attention_out_forward, max_out, sum_out).
struct Args {
  const aclTensor *query, *key, *value, *topk, *mask;
  const aclIntArray *q_ends, *kv_ends;
  double scale;
  int64_t head_num;
  char* layout;
  int64_t sparse_mode, block_size, block_count;
  const aclTensor *max_out, *sum_out, *out_forward;                       // forward outputs
  const aclTensor *out, *out_grad, *max, *sum, *dq, *dk, *dv;             // backward
  uint64_t* workspace_size;
  aclOpExecutor** executor;
};

enum class Op { kForward, kBackward };

const char* OpNameOf(Op op) { return op == Op::kForward ? kForwardName : kGradName; }

std::string OpTestName(const testing::TestParamInfo<Op>& param_info) {
  return param_info.param == Op::kForward ? "Forward" : "Backward";
}

aclnnStatus CallOp(Op op, const Args& a) {
  if (op == Op::kForward) {
    return aclnnNsaSelectedAttentionGetWorkspaceSize(a.query, a.key, a.value, a.topk, a.mask, a.q_ends, a.kv_ends,
                                                     a.scale, a.head_num, a.layout, a.sparse_mode, a.block_size,
                                                     a.block_count, a.max_out, a.sum_out, a.out_forward,
                                                     a.workspace_size, a.executor);
  }
  return aclnnNsaSelectedAttentionGradGetWorkspaceSize(
      a.query, a.key, a.value, a.out, a.out_grad, a.max, a.sum, a.topk, a.q_ends, a.kv_ends, a.mask, a.scale,
      a.block_size, a.block_count, a.head_num, a.layout, a.sparse_mode, a.dq, a.dk, a.dv, a.workspace_size,
      a.executor);
}

struct Operands {
  DeviceTensor query, key, value, topk, mask, out, out_grad, max, sum;
  DeviceTensor out_forward, max_out, sum_out, dq, dk, dv;
  HostIntArray q_ends, kv_ends;
  explicit Operands(const Dims& d, aclDataType dtype = ACL_FLOAT16)
      : query(Tensor(d.Query(), dtype)),
        key(Tensor(d.Key(), dtype)),
        value(Tensor(d.Value(), dtype)),
        topk(Tensor(d.Topk(), ACL_INT32)),
        mask(Tensor({64, 64}, ACL_BOOL)),
        out(Tensor(d.Out(), dtype)),
        out_grad(Tensor(d.Out(), dtype)),
        max(Tensor(d.Stat(), ACL_FLOAT)),
        sum(Tensor(d.Stat(), ACL_FLOAT)),
        out_forward(Output(d.Out(), dtype)),
        max_out(Output(d.Stat(), ACL_FLOAT)),
        sum_out(Output(d.Stat(), ACL_FLOAT)),
        dq(Output(d.Query(), dtype)),
        dk(Output(d.Key(), dtype)),
        dv(Output(d.Value(), dtype)),
        q_ends(d.q_ends),
        kv_ends(d.kv_ends) {}
};

class NsaSelectedAttentionValidation : public testing::TestWithParam<Op>, protected optest::PhaseOneChecks<Args> {
 protected:
  Dims dims_;
  Operands ops_{dims_};
  char layout_[4] = "TND";

  Args ArgsOf(const Operands& o, const Dims& d) {
    return {o.query.get(),    o.key.get(),      o.value.get(),   o.topk.get(),       o.mask.get(),
            o.q_ends.get(),   o.kv_ends.get(),  0.0625,          d.n1,               layout_,
            2,                d.bs,             d.count,         o.max_out.get(),    o.sum_out.get(),
            o.out_forward.get(), o.out.get(),   o.out_grad.get(), o.max.get(),       o.sum.get(),
            o.dq.get(),       o.dk.get(),       o.dv.get(),      &workspace_size_,   &executor_};
  }
  Args Valid() override { return ArgsOf(ops_, dims_); }

  aclnnStatus Call(const Args& a) override { return CallOp(GetParam(), a); }
  std::string OpName() const override { return OpNameOf(GetParam()); }
  std::vector<const DeviceTensor*> Outputs() override {
    return {&ops_.out_forward, &ops_.max_out, &ops_.sum_out, &ops_.dq, &ops_.dk, &ops_.dv};
  }
  bool Forward() const { return GetParam() == Op::kForward; }
};

TEST_P(NsaSelectedAttentionValidation, ValidCallsAreAccepted) {
  Args a = Valid();
  ExpectAccepted(a);
  a.mask = nullptr;  // no mask: sparseMode has no effect
  ExpectAccepted(a);
  a.sparse_mode = 0;
  ExpectAccepted(a);
  // BFLOAT16, D 192 / 192 and 128 / 128, a UINT8 mask of any 2-D shape.
  Dims d;
  d.dv = 192;
  Operands bf16(d, ACL_BF16);
  ExpectAccepted(ArgsOf(bf16, d));
  d.dqk = d.dv = 128;
  Operands small(d);
  // (The test harness has no UINT8 tensors: a UINT8 view of a BOOL tensor's bytes.)
  DeviceTensor mask_bytes = Tensor({3, 5}, ACL_BOOL);
  const int64_t mask_shape[] = {3, 5}, mask_strides[] = {5, 1};
  aclTensor* mask = aclCreateTensor(mask_shape, 2, ACL_UINT8, mask_strides, 0, ACL_FORMAT_ND, mask_shape, 2,
                                    mask_bytes.data());
  ASSERT_NE(mask, nullptr);
  Args b = ArgsOf(small, d);
  b.mask = mask;
  ExpectAccepted(b);
  aclDestroyTensor(mask);
}

TEST_P(NsaSelectedAttentionValidation, NullArguments) {
  const bool forward = Forward();
  std::vector<std::pair<const aclTensor* Args::*, std::string>> tensors = {
      {&Args::query, "query"}, {&Args::key, "key"}, {&Args::value, "value"}, {&Args::topk, "topkIndices"}};
  if (forward) {
    tensors.insert(tensors.end(), {{&Args::max_out, "softmaxMaxOut"},
                                   {&Args::sum_out, "softmaxSumOut"},
                                   {&Args::out_forward, "attentionOut"}});
  } else {
    tensors.insert(tensors.end(), {{&Args::out, "attentionOut"},
                                   {&Args::out_grad, "attentionOutGrad"},
                                   {&Args::max, "softmaxMax"},
                                   {&Args::sum, "softmaxSum"},
                                   {&Args::dq, "dqOut"},
                                   {&Args::dk, "dkOut"},
                                   {&Args::dv, "dvOut"}});
  }
  for (const auto& [member, name] : tensors) {
    SCOPED_TRACE(name);
    Args a = Valid();
    a.*member = nullptr;
    ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {name, "null"});
  }
  Args a = Valid();
  a.q_ends = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"actualSeqQLenOptional", "null"});
  a = Valid();
  a.kv_ends = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"actualSeqKvLenOptional", "null"});
  a = Valid();
  a.layout = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"inputLayout", "null"});
  a = Valid();
  a.workspace_size = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"workspaceSize"});
  a = Valid();
  a.executor = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"executor"});
}

TEST_P(NsaSelectedAttentionValidation, DTypes) {
  // query FLOAT (not among FLOAT16 / BFLOAT16).
  DeviceTensor query32 = Tensor(dims_.Query(), ACL_FLOAT);
  Args a = Valid();
  a.query = query32.get();
  ExpectInvalid(a, {"query", "FLOAT"});
  // key, value, and the outputs / gradients of another dtype than query's.
  DeviceTensor key_bf16 = Tensor(dims_.Key(), ACL_BF16), value_bf16 = Tensor(dims_.Value(), ACL_BF16);
  a = Valid();
  a.key = key_bf16.get();
  ExpectInvalid(a, {"key", "BFLOAT16"});
  a = Valid();
  a.value = value_bf16.get();
  ExpectInvalid(a, {"value", "BFLOAT16"});
  DeviceTensor out_bf16 = Output(dims_.Out(), ACL_BF16);
  a = Valid();
  if (Forward()) {
    a.out_forward = out_bf16.get();
  } else {
    a.out = out_bf16.get();
  }
  ExpectInvalid(a, {"attentionOut", "BFLOAT16"});
  if (!Forward()) {
    DeviceTensor grad_bf16 = Tensor(dims_.Out(), ACL_BF16), dq_bf16 = Output(dims_.Query(), ACL_BF16);
    a = Valid();
    a.out_grad = grad_bf16.get();
    ExpectInvalid(a, {"attentionOutGrad", "BFLOAT16"});
    a = Valid();
    a.dq = dq_bf16.get();
    ExpectInvalid(a, {"dqOut", "BFLOAT16"});
  }
  // topkIndices INT64; the statistics FLOAT16; the mask FLOAT16.
  DeviceTensor topk64 = Tensor(dims_.Topk(), ACL_INT64);
  a = Valid();
  a.topk = topk64.get();
  ExpectInvalid(a, {"topkIndices", "INT64"});
  DeviceTensor stat16 = Forward() ? Output(dims_.Stat(), ACL_FLOAT16) : Tensor(dims_.Stat(), ACL_FLOAT16);
  a = Valid();
  (Forward() ? a.max_out : a.max) = stat16.get();
  ExpectInvalid(a, {Forward() ? "softmaxMaxOut" : "softmaxMax", "FLOAT16"});
  a = Valid();
  (Forward() ? a.sum_out : a.sum) = stat16.get();
  ExpectInvalid(a, {Forward() ? "softmaxSumOut" : "softmaxSum", "FLOAT16"});
  DeviceTensor mask16 = Tensor({4, 4}, ACL_FLOAT16);
  a = Valid();
  a.mask = mask16.get();
  ExpectInvalid(a, {"attenMaskOptional", "FLOAT16"});
  // A private format.
  DeviceTensor nz = Tensor(dims_.Query(), ACL_FLOAT16, ACL_FORMAT_FRACTAL_NZ);
  a = Valid();
  a.query = nz.get();
  ExpectInvalid(a, {"query", "format"});
}

TEST_P(NsaSelectedAttentionValidation, Layout) {
  for (const char* layout : {"BSND", "", "TNDX", "tnd"}) {
    SCOPED_TRACE(layout);
    std::string text = layout;
    Args a = Valid();
    a.layout = text.data();
    ExpectInvalid(a, {"inputLayout", "\"TND\"", "\"" + text + "\""});
  }
}

TEST_P(NsaSelectedAttentionValidation, Ranks) {
  DeviceTensor query4 = Tensor({dims_.t1, dims_.n1, 1, dims_.dqk}), key2 = Tensor({dims_.t2, dims_.dqk});
  DeviceTensor topk2 = Tensor({dims_.t1, dims_.count}, ACL_INT32), mask3 = Tensor({1, 4, 4}, ACL_BOOL);
  Args a = Valid();
  a.query = query4.get();
  ExpectInvalid(a, {"query", "3-D"});
  a = Valid();
  a.key = key2.get();
  ExpectInvalid(a, {"key", "3-D"});
  a = Valid();
  a.topk = topk2.get();
  ExpectInvalid(a, {"topkIndices", "3-D"});
  a = Valid();
  a.mask = mask3.get();
  ExpectInvalid(a, {"attenMaskOptional", "2-D"});
}

TEST_P(NsaSelectedAttentionValidation, SparseMode) {
  for (int64_t mode : {1, 3, 4, -1, 8}) {
    Args a = Valid();
    a.sparse_mode = mode;
    ExpectInvalid(a, {"sparseMode", std::to_string(mode), "0", "2"});
  }
}

TEST_P(NsaSelectedAttentionValidation, SelectedBlockSizeAndCount) {
  for (int64_t size : {0, 8, 24, 144, -16, 256}) {
    Args a = Valid();
    a.block_size = size;
    ExpectInvalid(a, {"selectedBlockSize", std::to_string(size), "multiple of 16", "128"});
  }
  for (int64_t count : {0, 33, -1}) {
    Args a = Valid();
    a.block_count = count;
    ExpectInvalid(a, {"selectedBlockCount", std::to_string(count), "[1, 32]"});
  }
}

TEST_P(NsaSelectedAttentionValidation, HeadNumAndHeads) {
  for (int64_t heads : {0, 129}) {
    Args a = Valid();
    a.head_num = heads;
    ExpectInvalid(a, {"headNum", std::to_string(heads), "[1, 128]"});
  }
  Args a = Valid();
  a.head_num = 2;
  ExpectInvalid(a, {"headNum", "N of query", "[20, 4, 192]", "got 2"});
  // N1 not a multiple of N2; G above 32; value's N not key's.
  Dims d;
  d.n2 = 3;
  Operands three(d);
  ExpectInvalid(ArgsOf(three, d), {"multiple", "(4)", "(3)"});
  d = Dims();
  d.n1 = 66;
  d.n2 = 2;
  Operands wide(d);
  ExpectInvalid(ArgsOf(wide, d), {"G", "33", "at most 32"});
  DeviceTensor value1 = Tensor({dims_.t2, 1, dims_.dv});
  a = Valid();
  a.value = value1.get();
  ExpectInvalid(a, {"value's N", "[80, 1, 128]", "[80, 2, 192]"});
  d = Dims();
  d.n1 = 130;
  d.n2 = 130;
  Operands many(d);
  Args b = ArgsOf(many, d);
  ExpectInvalid(b, {"headNum", "130"});
}

TEST_P(NsaSelectedAttentionValidation, HeadDims) {
  struct Case {
    int64_t dqk_query, dqk_key, dv;
    std::vector<std::string> fragments;
  };
  const Case cases[] = {
      {192, 128, 128, {"query", "key", "same D"}},
      {64, 64, 64, {"D of query and key", "128 or 192", "got 64"}},
      {192, 192, 256, {"D of value", "128 or 192", "got 256"}},
      {128, 128, 192, {"D of value (192)", "must not exceed", "(128)"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.dqk_query) + " " + std::to_string(c.dqk_key) + " " + std::to_string(c.dv));
    Dims d;
    d.dqk = c.dqk_query;
    d.dv = c.dv;
    Operands o(d);
    DeviceTensor key = Tensor({d.t2, d.n2, c.dqk_key});
    Args a = ArgsOf(o, d);
    a.key = key.get();
    ExpectInvalid(a, c.fragments);
  }
  // key and value with different T.
  DeviceTensor value = Tensor({dims_.t2 + 16, dims_.n2, dims_.dv});
  Args a = Valid();
  a.value = value.get();
  ExpectInvalid(a, {"key", "value", "same T"});
}

TEST_P(NsaSelectedAttentionValidation, ActualLengthArrays) {
  struct Case {
    std::vector<int64_t> q_ends, kv_ends;
    std::vector<std::string> fragments;
  };
  const Case cases[] = {
      {{}, {}, {"actualSeqQLenOptional", "1 to", "got 0"}},
      {{12, 20}, {80}, {"same length", "got 2 and 1"}},
      {{12, 20}, {32, 16, 80}, {"same length", "got 2 and 3"}},
      {{12, 8, 20}, {32, 48, 80}, {"actualSeqQLenOptional", "non-decreasing", "actualSeqQLenOptional[1] = 8"}},
      {{-1, 20}, {32, 80}, {"actualSeqQLenOptional[0] = -1"}},
      {{12, 19}, {32, 80}, {"last entry of actualSeqQLenOptional", "T of query", "= 20", "got 19"}},
      {{12, 20}, {32, 96}, {"last entry of actualSeqKvLenOptional", "= 80", "got 96"}},
      {{12, 20}, {48, 32}, {"actualSeqKvLenOptional", "non-decreasing"}},
      {{12, 20}, {40, 80}, {"key/value sequence 0", "40 tokens", "multiple of selectedBlockSize 16"}},
      {{12, 20}, {16, 80}, {"key/value sequence 0", "16 tokens", "fewer than", "16 * 2 = 32"}},
      {{12, 20}, {80, 80}, {"key/value sequence 1", "0 tokens", "fewer than"}},
  };
  for (const Case& c : cases) {
    HostIntArray q(c.q_ends), kv(c.kv_ends);
    Args a = Valid();
    a.q_ends = q.get();
    a.kv_ends = kv.get();
    ExpectInvalid(a, c.fragments);
  }
}

// More than 128K tokens in one sequence, and (forward) more than 1024 sequences; (backward) T above 2M. Phase 1
// reads no data, so the large tensors point at unmapped memory.
TEST_P(NsaSelectedAttentionValidation, LengthLimits) {
  if (!optest::DeviceIsCpu()) GTEST_SKIP() << optest::CpuOnlyReason("the CPU device can address any pointer");
  if (optest::StrictMode()) GTEST_SKIP() << optest::StrictModeReason("it refuses data outside aclrtMalloc memory");
  void* unmapped = reinterpret_cast<void*>(static_cast<uintptr_t>(0x40));
  {
    const int64_t t1 = 131073;
    RawTensor query({t1, 4, 192}, ACL_FLOAT16, unmapped);
    HostIntArray q({t1}), kv({80});
    Args a = Valid();
    a.query = query.get();
    a.q_ends = q.get();
    a.kv_ends = kv.get();
    ExpectInvalid(a, {"actualSeqQLenOptional", "sequence 0 has 131073 tokens", "128K"});
  }
  if (Forward()) {
    std::vector<int64_t> q_ends(1025, 0), kv_ends;
    q_ends.back() = 20;
    for (int64_t b = 1; b <= 1025; ++b) kv_ends.push_back(b * 32);
    RawTensor key({1025 * 32, 2, 192}, ACL_FLOAT16, unmapped), value({1025 * 32, 2, 128}, ACL_FLOAT16, unmapped);
    HostIntArray q(q_ends), kv(kv_ends);
    Args a = Valid();
    a.key = key.get();
    a.value = value.get();
    a.q_ends = q.get();
    a.kv_ends = kv.get();
    ExpectInvalid(a, {"actualSeqQLenOptional", "1 to 1024", "got 1025"});
  } else {
    const int64_t t1 = (int64_t{2} << 20) + 1;
    RawTensor query({t1, 4, 192}, ACL_FLOAT16, unmapped);
    Args a = Valid();
    a.query = query.get();
    ExpectInvalid(a, {"T of query", "2M"});
  }
}

TEST_P(NsaSelectedAttentionValidation, TopkAndStatisticShapes) {
  DeviceTensor topk = Tensor({dims_.t1, dims_.n2, 3}, ACL_INT32), topk_heads = Tensor({dims_.t1, 4, 2}, ACL_INT32);
  Args a = Valid();
  a.topk = topk.get();
  ExpectInvalid(a, {"topkIndices", "[T of query, N of key, selectedBlockCount] = [20, 2, 2]", "[20, 2, 3]"});
  a = Valid();
  a.topk = topk_heads.get();
  ExpectInvalid(a, {"topkIndices", "[20, 4, 2]"});
  const char* max_name = Forward() ? "softmaxMaxOut" : "softmaxMax";
  const char* sum_name = Forward() ? "softmaxSumOut" : "softmaxSum";
  DeviceTensor stat16 = Forward() ? Output({dims_.t1, dims_.n1, 16}, ACL_FLOAT) : Tensor({dims_.t1, dims_.n1, 16}, ACL_FLOAT);
  DeviceTensor stat_rows = Forward() ? Output({dims_.t1, 2, 8}, ACL_FLOAT) : Tensor({dims_.t1, 2, 8}, ACL_FLOAT);
  a = Valid();
  (Forward() ? a.max_out : a.max) = stat16.get();
  ExpectInvalid(a, {max_name, "[T of query, N of query, 8] = [20, 4, 8]", "[20, 4, 16]"});
  a = Valid();
  (Forward() ? a.sum_out : a.sum) = stat_rows.get();
  ExpectInvalid(a, {sum_name, "[20, 2, 8]"});
}

TEST_P(NsaSelectedAttentionValidation, OutputShapes) {
  DeviceTensor out = Forward() ? Output({dims_.t1, dims_.n1, 192}) : Tensor({dims_.t1, dims_.n1, 192});
  Args a = Valid();
  (Forward() ? a.out_forward : a.out) = out.get();
  ExpectInvalid(a, {"attentionOut", "[T of query, N of query, D of value] = [20, 4, 128]", "[20, 4, 192]"});
  if (Forward()) return;
  DeviceTensor grad = Tensor({dims_.t1 - 1, dims_.n1, dims_.dv});
  a = Valid();
  a.out_grad = grad.get();
  ExpectInvalid(a, {"attentionOutGrad", "[19, 4, 128]"});
  DeviceTensor dq = Output({dims_.t1, dims_.n1, 128}), dk = Output({dims_.t2, 1, 192}), dv = Output({dims_.t2, 2, 192});
  a = Valid();
  a.dq = dq.get();
  ExpectInvalid(a, {"dqOut", "query"});
  a = Valid();
  a.dk = dk.get();
  ExpectInvalid(a, {"dkOut", "key"});
  a = Valid();
  a.dv = dv.get();
  ExpectInvalid(a, {"dvOut", "value"});
}

// Outputs whose elements share memory (a zero stride) are refused: parallel writers would race.
TEST_P(NsaSelectedAttentionValidation, SelfOverlappingOutputs) {
  struct Case {
    std::vector<int64_t> shape;
    aclDataType dtype;
    const aclTensor* Args::*member;
    const char* name;
  };
  std::vector<Case> cases;
  if (Forward()) {
    cases = {{dims_.Out(), ACL_FLOAT16, &Args::out_forward, "attentionOut"},
             {dims_.Stat(), ACL_FLOAT, &Args::max_out, "softmaxMaxOut"},
             {dims_.Stat(), ACL_FLOAT, &Args::sum_out, "softmaxSumOut"}};
  } else {
    cases = {{dims_.Query(), ACL_FLOAT16, &Args::dq, "dqOut"},
             {dims_.Key(), ACL_FLOAT16, &Args::dk, "dkOut"},
             {dims_.Value(), ACL_FLOAT16, &Args::dv, "dvOut"}};
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    DeviceTensor storage = Output(c.shape, c.dtype);
    aclTensor* overlapping = optest::SelfOverlappingView(storage, c.shape, 0);
    Args a = Valid();
    a.*c.member = overlapping;
    ExpectInvalid(a, {c.name});
    aclDestroyTensor(overlapping);
  }
}

// Phase 1 reads no tensor data: every tensor's data pointer leads to unmapped memory, and the call still succeeds.
TEST_P(NsaSelectedAttentionValidation, Phase1ReadsNoTensorData) {
  if (!optest::DeviceIsCpu()) GTEST_SKIP() << optest::CpuOnlyReason("the CPU device can address any pointer");
  if (optest::StrictMode()) GTEST_SKIP() << optest::StrictModeReason("it refuses data outside aclrtMalloc memory");
  void* unmapped = reinterpret_cast<void*>(static_cast<uintptr_t>(0x40));
  const Dims d;
  RawTensor query(d.Query(), ACL_BF16, unmapped), key(d.Key(), ACL_BF16, unmapped), value(d.Value(), ACL_BF16, unmapped);
  RawTensor topk(d.Topk(), ACL_INT32, unmapped), mask({2048, 2048}, ACL_BOOL, unmapped);
  RawTensor out(d.Out(), ACL_BF16, unmapped), grad(d.Out(), ACL_BF16, unmapped);
  RawTensor max(d.Stat(), ACL_FLOAT, unmapped), sum(d.Stat(), ACL_FLOAT, unmapped);
  RawTensor dq(d.Query(), ACL_BF16, unmapped), dk(d.Key(), ACL_BF16, unmapped), dv(d.Value(), ACL_BF16, unmapped);
  Args a = Valid();
  a.query = query.get();
  a.key = key.get();
  a.value = value.get();
  a.topk = topk.get();
  a.mask = mask.get();
  a.out = a.out_forward = out.get();
  a.out_grad = grad.get();
  a.max = a.max_out = max.get();
  a.sum = a.sum_out = sum.get();
  a.dq = dq.get();
  a.dk = dk.get();
  a.dv = dv.get();
  ExpectAccepted(a);
}

INSTANTIATE_TEST_SUITE_P(NsaSelectedAttention, NsaSelectedAttentionValidation,
                         testing::Values(Op::kForward, Op::kBackward), OpTestName);

// The workspace: none for the forward; for the backward, delta (T1 x N1 floats), the index's offsets (N2 x (T2 / bs +
// 1) int64) and entries (N2 x T1 x selectedBlockCount uint32), each 64-byte aligned, plus 64 bytes of slack.
TEST(NsaSelectedAttentionWorkspace, SizesAreTheDocumentedOnes) {
  if (!optest::DeviceIsCpu()) GTEST_SKIP() << optest::CpuOnlyReason("these are the CPU implementation's sizes");
  const Dims d;
  Operands o(d);
  char layout[4] = "TND";
  uint64_t size = 1;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(aclnnNsaSelectedAttentionGetWorkspaceSize(o.query.get(), o.key.get(), o.value.get(), o.topk.get(), nullptr,
                                                      o.q_ends.get(), o.kv_ends.get(), 0.1, d.n1, layout, 0, d.bs,
                                                      d.count, o.max_out.get(), o.sum_out.get(), o.out_forward.get(),
                                                      &size, &executor),
            ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  EXPECT_EQ(size, 0u);
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
  ASSERT_EQ(aclnnNsaSelectedAttentionGradGetWorkspaceSize(
                o.query.get(), o.key.get(), o.value.get(), o.out.get(), o.out_grad.get(), o.max.get(), o.sum.get(),
                o.topk.get(), o.q_ends.get(), o.kv_ends.get(), nullptr, 0.1, d.bs, d.count, d.n1, layout, 0,
                o.dq.get(), o.dk.get(), o.dv.get(), &size, &executor),
            ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  auto aligned = [](uint64_t bytes) { return (bytes + 63) / 64 * 64; };
  const uint64_t delta = static_cast<uint64_t>(d.t1 * d.n1) * 4;
  const uint64_t offsets = static_cast<uint64_t>(d.n2 * (d.t2 / d.bs + 1)) * 8;
  const uint64_t entries = static_cast<uint64_t>(d.n2 * d.t1 * d.count) * 4;
  EXPECT_EQ(size, aligned(delta) + aligned(offsets) + entries + 64);
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
}

}  // namespace
