// Phase-1 validation of aclnnNsaCompressAttentionGetWorkspaceSize (CANN's document and
// docs/ops/nsa_compress_attention.md): each rule is a row of a table - a change to one valid call - checked for the
// status code (161001 null, 161002 invalid) and for a message naming the function, the parameter and the offending
// value. A rejected call writes nothing and hands out no executor.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_nsa_compress_attention.h"
#include "op_test_util.h"
#include "phase1_checks.h"

namespace {

using optest::DeviceTensor;
using optest::HostIntArray;
using optest::Layout;
using optest::RawTensor;

constexpr const char* kName = "aclnnNsaCompressAttention";

DeviceTensor Input(std::vector<int64_t> shape, aclDataType dtype) {
  const std::vector<double> values(static_cast<size_t>(optest::NumElements(shape)), 0.0);
  return DeviceTensor(std::move(shape), dtype, Layout::kContiguous, values);
}

// One valid call: two sequences of 12 and 8 query tokens and 9 and 8 compressed keys; N1 4, N2 2, D 64 / 32, l 32,
// d 16, l' 64 (r = 4: 3 and 2 select blocks), 2 blocks selected, both masks.
struct Operands {
  DeviceTensor query = Input({20, 4, 64}, ACL_FLOAT16);
  DeviceTensor key = Input({17, 2, 64}, ACL_FLOAT16);
  DeviceTensor value = Input({17, 2, 32}, ACL_FLOAT16);
  DeviceTensor atten_mask = Input({12, 9}, ACL_BOOL);
  DeviceTensor topk_mask = Input({12, 3}, ACL_UINT8);
  DeviceTensor max = DeviceTensor::Output({20, 4, 8}, ACL_FLOAT, Layout::kContiguous);
  DeviceTensor sum = DeviceTensor::Output({20, 4, 8}, ACL_FLOAT, Layout::kContiguous);
  DeviceTensor out = DeviceTensor::Output({20, 4, 32}, ACL_FLOAT16, Layout::kContiguous);
  DeviceTensor topk = DeviceTensor::Output({20, 2, 2}, ACL_INT32, Layout::kContiguous);
  HostIntArray q_ends{{12, 20}};
  HostIntArray cmp_ends{{9, 17}};
  HostIntArray sel_ends{{3, 5}};
};

// The arguments, as the API takes them.
struct Args {
  const aclTensor *query, *key, *value, *atten_mask, *topk_mask;
  const aclIntArray *q_ends, *cmp_ends, *sel_ends;
  double scale;
  int64_t head_num;
  char* layout;
  int64_t sparse_mode, compress_block, compress_stride, select_block, select_count;
  const aclTensor *max, *sum, *out, *topk;
  uint64_t* workspace_size;
  aclOpExecutor** executor;
};

struct Row {
  std::string name;
  std::function<void(Args&)> change;
  aclnnStatus status;
  std::vector<std::string> fragments;  // in the message besides "aclnnNsaCompressAttention:"
};

// Tensors a row needs beyond the valid ones; kept alive for the call.
struct Extra {
  std::vector<std::unique_ptr<DeviceTensor>> tensors;
  std::vector<std::unique_ptr<RawTensor>> raw;
  std::vector<std::unique_ptr<HostIntArray>> arrays;
};
Extra* g_extra = nullptr;

const aclTensor* T(std::vector<int64_t> shape, aclDataType dtype) {
  g_extra->tensors.push_back(std::make_unique<DeviceTensor>(Input(std::move(shape), dtype)));
  return g_extra->tensors.back()->get();
}
const aclTensor* Raw(std::vector<int64_t> shape, aclDataType dtype) {
  g_extra->raw.push_back(std::make_unique<RawTensor>(shape, dtype));
  return g_extra->raw.back()->get();
}
const aclIntArray* A(std::vector<int64_t> values) {
  g_extra->arrays.push_back(std::make_unique<HostIntArray>(values));
  return g_extra->arrays.back()->get();
}

char g_tnd[] = "TND";
char g_bsnd[] = "BSND";

std::vector<Row> Rows() {
  const aclnnStatus kNull = ACLNN_ERR_PARAM_NULLPTR, kInvalid = ACLNN_ERR_PARAM_INVALID;
  return {
      {"QueryNull", [](Args& a) { a.query = nullptr; }, kNull, {"query"}},
      {"KeyNull", [](Args& a) { a.key = nullptr; }, kNull, {"key"}},
      {"ValueNull", [](Args& a) { a.value = nullptr; }, kNull, {"value"}},
      {"QEndsNull", [](Args& a) { a.q_ends = nullptr; }, kNull, {"actualSeqQLenOptional"}},
      {"CmpEndsNull", [](Args& a) { a.cmp_ends = nullptr; }, kNull, {"actualCmpSeqKvLenOptional"}},
      {"SelEndsNull", [](Args& a) { a.sel_ends = nullptr; }, kNull, {"actualSelSeqKvLenOptional"}},
      {"LayoutNull", [](Args& a) { a.layout = nullptr; }, kNull, {"inputLayout"}},
      {"MaxNull", [](Args& a) { a.max = nullptr; }, kNull, {"softmaxMaxOut"}},
      {"SumNull", [](Args& a) { a.sum = nullptr; }, kNull, {"softmaxSumOut"}},
      {"OutNull", [](Args& a) { a.out = nullptr; }, kNull, {"attentionOutOut"}},
      {"TopkNull", [](Args& a) { a.topk = nullptr; }, kNull, {"topkIndicesOut"}},
      {"WorkspaceSizeNull", [](Args& a) { a.workspace_size = nullptr; }, kNull, {"workspaceSize"}},
      {"ExecutorNull", [](Args& a) { a.executor = nullptr; }, kNull, {"executor"}},
      {"QueryFloat", [](Args& a) { a.query = T({20, 4, 64}, ACL_FLOAT); }, kInvalid, {"query", "FLOAT"}},
      {"KeyOtherDType", [](Args& a) { a.key = T({17, 2, 64}, ACL_BF16); }, kInvalid, {"key", "BFLOAT16"}},
      {"OutOtherDType", [](Args& a) { a.out = T({20, 4, 32}, ACL_BF16); }, kInvalid, {"attentionOutOut", "BFLOAT16"}},
      {"MaskFloat", [](Args& a) { a.atten_mask = T({12, 9}, ACL_FLOAT); }, kInvalid, {"attenMaskOptional", "FLOAT"}},
      {"TopkMaskRank3", [](Args& a) { a.topk_mask = T({1, 12, 3}, ACL_BOOL); }, kInvalid, {"topkMaskOptional"}},
      {"MaxHalf", [](Args& a) { a.max = T({20, 4, 8}, ACL_FLOAT16); }, kInvalid, {"softmaxMaxOut", "FLOAT16"}},
      {"TopkInt64", [](Args& a) { a.topk = T({20, 2, 2}, ACL_INT64); }, kInvalid, {"topkIndicesOut", "INT64"}},
      {"LayoutBsnd", [](Args& a) { a.layout = g_bsnd; }, kInvalid, {"inputLayout", "BSND"}},
      {"QueryRank4", [](Args& a) { a.query = T({20, 4, 8, 8}, ACL_FLOAT16); }, kInvalid, {"query must be 3-D"}},
      {"SparseMode2", [](Args& a) { a.sparse_mode = 2; }, kInvalid, {"sparseMode", "2"}},
      {"AllMaskWithoutMask", [](Args& a) { a.atten_mask = nullptr; }, kInvalid, {"sparseMode 1", "attenMaskOptional"}},
      {"CompressBlockNot16", [](Args& a) { a.compress_block = 24; }, kInvalid, {"compressBlockSize", "24"}},
      {"CompressBlockTooLarge", [](Args& a) { a.compress_block = 144; }, kInvalid, {"compressBlockSize", "144"}},
      {"StrideTooLarge", [](Args& a) { a.compress_stride = 80; }, kInvalid, {"compressStride", "80"}},
      {"SelectBlockTooLarge", [](Args& a) { a.select_block = 144; }, kInvalid, {"selectBlockSize", "144"}},
      {"BlockBelowStride",
       [](Args& a) {
         a.compress_block = 16;
         a.compress_stride = 32;
       },
       kInvalid,
       {"compressBlockSize (16)", "compressStride (32)"}},
      {"SelectBelowCompress", [](Args& a) { a.compress_block = 128; }, kInvalid, {"selectBlockSize (64)", "(128)"}},
      {"SelectNotMultipleOfStride",
       [](Args& a) {
         a.compress_stride = 32;
         a.select_block = 48;
       },
       kInvalid,
       {"selectBlockSize (48)", "compressStride (32)"}},
      {"CountZero", [](Args& a) { a.select_count = 0; }, kInvalid, {"selectBlockCount", "0"}},
      {"CountTooLarge", [](Args& a) { a.select_count = 33; }, kInvalid, {"selectBlockCount", "33"}},
      {"HeadNumOther", [](Args& a) { a.head_num = 2; }, kInvalid, {"headNum", "2"}},
      {"HeadsNotMultiple",
       [](Args& a) {
         a.key = T({17, 3, 64}, ACL_FLOAT16);
         a.value = T({17, 3, 32}, ACL_FLOAT16);
       },
       kInvalid,
       {"N of query (4)", "(3)"}},
      {"GroupNotDividing128",
       [](Args& a) {
         a.query = T({20, 6, 64}, ACL_FLOAT16);
         a.head_num = 6;
         a.key = T({17, 2, 64}, ACL_FLOAT16);
         a.max = T({20, 6, 8}, ACL_FLOAT);
       },
       kInvalid,
       {"group size", "= 3"}},
      {"ValueHeadsOther", [](Args& a) { a.value = T({17, 1, 32}, ACL_FLOAT16); }, kInvalid, {"value's N"}},
      {"ValueTokensOther", [](Args& a) { a.value = T({16, 2, 32}, ACL_FLOAT16); }, kInvalid, {"same T"}},
      {"KeyDimOther", [](Args& a) { a.key = T({17, 2, 48}, ACL_FLOAT16); }, kInvalid, {"same D"}},
      {"DimNot16",
       [](Args& a) {
         a.query = T({20, 4, 24}, ACL_FLOAT16);
         a.key = T({17, 2, 24}, ACL_FLOAT16);
         a.value = T({17, 2, 16}, ACL_FLOAT16);
       },
       kInvalid,
       {"multiple of 16", "24"}},
      {"ValueDimAboveKey", [](Args& a) { a.value = T({17, 2, 80}, ACL_FLOAT16); }, kInvalid, {"D of value (80)"}},
      {"ArraysOfOtherLengths", [](Args& a) { a.sel_ends = A({5}); }, kInvalid, {"same length", "2, 2 and 1"}},
      {"QEndsDecreasing", [](Args& a) { a.q_ends = A({12, 10}); }, kInvalid, {"actualSeqQLenOptional[1] = 10"}},
      {"QEndsLastNotT", [](Args& a) { a.q_ends = A({12, 19}); }, kInvalid, {"actualSeqQLenOptional", "= 20, got 19"}},
      {"CmpEndsLastNotT", [](Args& a) { a.cmp_ends = A({9, 16}); }, kInvalid, {"actualCmpSeqKvLenOptional", "17"}},
      {"SelectBlocksOther", [](Args& a) { a.sel_ends = A({3, 6}); }, kInvalid, {"CeilDiv(8, 4) = 2", "gives 3"}},
      {"CountAboveSelectBlocks", [](Args& a) { a.select_count = 3; }, kInvalid, {"sequence 1 has 2 select blocks"}},
      {"CmpSequenceTooLong",
       [](Args& a) {
         a.key = Raw({14010, 2, 64}, ACL_FLOAT16);
         a.value = Raw({14010, 2, 32}, ACL_FLOAT16);
         a.cmp_ends = A({9, 14010});
         a.sel_ends = A({3, 3504});
       },
       kInvalid,
       {"14001 tokens", "more than 14000"}},
      {"MaxShape", [](Args& a) { a.max = T({20, 4, 1}, ACL_FLOAT); }, kInvalid, {"softmaxMaxOut", "[20, 4, 8]"}},
      {"SumShape", [](Args& a) { a.sum = T({20, 4, 16}, ACL_FLOAT); }, kInvalid, {"softmaxSumOut", "[20, 4, 8]"}},
      {"OutShape", [](Args& a) { a.out = T({20, 4, 64}, ACL_FLOAT16); }, kInvalid, {"attentionOutOut", "[20, 4, 32]"}},
      {"TopkShape", [](Args& a) { a.topk = T({20, 4, 2}, ACL_INT32); }, kInvalid, {"topkIndicesOut", "[20, 2, 2]"}},
      {"AttenMaskShape", [](Args& a) { a.atten_mask = T({20, 17}, ACL_BOOL); }, kInvalid,
       {"attenMaskOptional", "[12, 9]", "[20, 17]"}},
      {"TopkMaskShape", [](Args& a) { a.topk_mask = T({12, 5}, ACL_BOOL); }, kInvalid,
       {"topkMaskOptional", "[12, 3]"}},
  };
}

class NsaCompressAttentionErrors : public testing::TestWithParam<Row>, protected optest::PhaseOneChecks<Args> {
 protected:
  Operands ops_;

  Args Valid() override {
    return {ops_.query.get(),
            ops_.key.get(),
            ops_.value.get(),
            ops_.atten_mask.get(),
            ops_.topk_mask.get(),
            ops_.q_ends.get(),
            ops_.cmp_ends.get(),
            ops_.sel_ends.get(),
            0.125,  // scale
            4,      // headNum
            g_tnd,
            1,   // sparseMode
            32,  // compressBlockSize
            16,  // compressStride
            64,  // selectBlockSize
            2,   // selectBlockCount
            ops_.max.get(),
            ops_.sum.get(),
            ops_.out.get(),
            ops_.topk.get(),
            &workspace_size_,
            &executor_};
  }
  aclnnStatus Call(const Args& a) override {
    return aclnnNsaCompressAttentionGetWorkspaceSize(
        a.query, a.key, a.value, a.atten_mask, a.topk_mask, a.q_ends, a.cmp_ends, a.sel_ends, a.scale, a.head_num,
        a.layout, a.sparse_mode, a.compress_block, a.compress_stride, a.select_block, a.select_count, a.max, a.sum,
        a.out, a.topk, a.workspace_size, a.executor);
  }
  std::string OpName() const override { return kName; }
  std::vector<const DeviceTensor*> Outputs() override { return {&ops_.max, &ops_.sum, &ops_.out}; }
  // topkIndicesOut (INT32, pre-filled with the guard pattern): guards intact and every element still -1.
  void ExpectNothingElseWritten() override {
    EXPECT_EQ(ops_.topk.CheckGuards(), "");
    for (double v : ops_.topk.Read()) ASSERT_EQ(v, -1.0) << "a rejected call wrote topkIndicesOut";
  }
};

TEST_P(NsaCompressAttentionErrors, RejectedWithItsCodeAndMessage) {
  const Row& row = GetParam();
  Extra extra;
  g_extra = &extra;
  // The valid call is accepted (and its executor released), so the row's change is what is rejected.
  ASSERT_NO_FATAL_FAILURE(ExpectAccepted(Valid()));
  Args a = Valid();
  row.change(a);
  ExpectRejected(a, row.status, row.fragments);
  g_extra = nullptr;
}

INSTANTIATE_TEST_SUITE_P(Rules, NsaCompressAttentionErrors, testing::ValuesIn(Rows()),
                         [](const testing::TestParamInfo<Row>& param_info) { return param_info.param.name; });

// Every rule the document lists is accepted at its edges: G 64 (N1 64, N2 1), l = d = l' = 16 and the largest sizes,
// selectBlockCount 32, D 16, a compressed sequence of exactly 14000 tokens, an empty query sequence.
TEST(NsaCompressAttentionErrors, EdgesOfTheRulesAreAccepted) {
  struct Edge {
    std::vector<int64_t> q, k, v;
    int64_t head_num, l, d, l_select, count;
    std::vector<int64_t> q_ends, cmp_ends, sel_ends;
  };
  const Edge edges[] = {
      {{3, 64, 16}, {72, 1, 16}, {72, 1, 16}, 64, 16, 16, 16, 32, {0, 3}, {32, 72}, {32, 72}},
      {{3, 2, 32}, {14000, 2, 32}, {14000, 2, 16}, 2, 128, 64, 128, 32, {3}, {14000}, {7000}},
  };
  for (const Edge& e : edges) {
    RawTensor query(e.q, ACL_BF16), key(e.k, ACL_BF16), value(e.v, ACL_BF16);
    RawTensor max({e.q[0], e.q[1], 8}, ACL_FLOAT), sum({e.q[0], e.q[1], 8}, ACL_FLOAT);
    RawTensor out({e.q[0], e.q[1], e.v[2]}, ACL_BF16), topk({e.q[0], e.k[1], e.count}, ACL_INT32);
    HostIntArray q_ends(e.q_ends), cmp_ends(e.cmp_ends), sel_ends(e.sel_ends);
    uint64_t workspace_size = 0;
    aclOpExecutor* executor = nullptr;
    ASSERT_EQ(aclnnNsaCompressAttentionGetWorkspaceSize(
                  query.get(), key.get(), value.get(), nullptr, nullptr, q_ends.get(), cmp_ends.get(), sel_ends.get(),
                  0.1, e.head_num, g_tnd, 0, e.l, e.d, e.l_select, e.count, max.get(), sum.get(), out.get(),
                  topk.get(), &workspace_size, &executor),
              ACLNN_SUCCESS)
        << optest::RecentErrorMessage();
    EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
  }
}

}  // namespace
