// Phase-1 validation of aclnnNsaCompressAttentionInferGetWorkspaceSize (CANN's document and
// docs/ops/nsa_compress_attention_infer.md): each rule, with its status code (161001 null, 161002 invalid) and a
// message that names the function, the parameter and the offending value. A rejected call writes nothing and hands
// out no executor.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_nsa_compress_attention_infer.h"
#include "op_test_util.h"
#include "phase1_checks.h"

namespace {

using optest::DeviceTensor;
using optest::HostIntArray;
using optest::Layout;

constexpr const char* kName = "aclnnNsaCompressAttentionInfer";

DeviceTensor Tensor(std::vector<int64_t> shape, aclDataType dtype = ACL_FLOAT16) {
  return optest::ValidTensor(std::move(shape), dtype);
}

// One valid call, layout TND: 2 entries of one query token over 64 and 100 compressed tokens; N1 4, N2 2, D 64 / 32;
// pages of 64 (3 in the cache, 2 per entry in the table); blocks of 32 every 16, select blocks of 64, 2 selected.
struct Operands {
  DeviceTensor query = Tensor({2, 4, 64});
  DeviceTensor key = Tensor({3, 64, 128});
  DeviceTensor value = Tensor({3, 64, 64});
  DeviceTensor table = Tensor({2, 2}, ACL_INT32);
  DeviceTensor out = DeviceTensor::Output({2, 4, 32}, ACL_FLOAT16, Layout::kContiguous);
  DeviceTensor topk = DeviceTensor::Output({2, 2, 2}, ACL_INT32, Layout::kContiguous);
  HostIntArray cmp_lengths{{64, 100}};
};

struct Args {
  const aclTensor *query, *key, *value, *mask, *table;
  const aclIntArray *q_lengths, *cmp_lengths, *sel_lengths;
  const aclTensor* topk_mask;
  int64_t num_heads, num_kv_heads, select_block_size, select_block_count, compress_block_size, compress_stride;
  double scale;
  const char* layout;
  int64_t page_block_size, sparse_mode;
  const aclTensor *out, *topk;
  uint64_t* workspace_size;
  aclOpExecutor** executor;
};

class NsaCompressAttentionInferValidation : public testing::Test, protected optest::PhaseOneChecks<Args> {
 protected:
  Operands ops_;

  Args Valid() override {
    return {ops_.query.get(),
            ops_.key.get(),
            ops_.value.get(),
            nullptr,
            ops_.table.get(),
            nullptr,
            ops_.cmp_lengths.get(),
            nullptr,
            nullptr,
            4,
            2,
            64,
            2,
            32,
            16,
            0.125,
            "TND",
            64,
            0,
            ops_.out.get(),
            ops_.topk.get(),
            &workspace_size_,
            &executor_};
  }
  aclnnStatus Call(const Args& a) override {
    return aclnnNsaCompressAttentionInferGetWorkspaceSize(
        a.query, a.key, a.value, a.mask, a.table, a.q_lengths, a.cmp_lengths, a.sel_lengths, a.topk_mask, a.num_heads,
        a.num_kv_heads, a.select_block_size, a.select_block_count, a.compress_block_size, a.compress_stride, a.scale,
        const_cast<char*>(a.layout), a.page_block_size, a.sparse_mode, a.out, a.topk, a.workspace_size, a.executor);
  }
  std::string OpName() const override { return kName; }
  std::vector<const DeviceTensor*> Outputs() override { return {&ops_.out}; }
  // topKOutput: every byte still the guard pattern (an INT32 of -1).
  void ExpectNothingElseWritten() override {
    EXPECT_EQ(ops_.topk.CheckGuards(), "");
    for (double v : ops_.topk.Read()) ASSERT_EQ(v, -1.0) << "a rejected call wrote topKOutput";
  }
};

TEST_F(NsaCompressAttentionInferValidation, ValidCallsAreAccepted) {
  Args a = Valid();
  ExpectAccepted(a);
  DeviceTensor mask = Tensor({7, 3}, ACL_FLOAT);  // not read: any tensor
  a.mask = mask.get();
  a.topk_mask = mask.get();
  a.sparse_mode = 5;  // not read
  ExpectAccepted(a);
  // key and value 4-D; the multi-token form (query and raw lengths); BSND (null layout) with topKOutput (B, N2, count).
  DeviceTensor key4 = Tensor({3, 64, 2, 64}), value4 = Tensor({3, 64, 2, 32});
  a = Valid();
  a.key = key4.get();
  a.value = value4.get();
  ExpectAccepted(a);
  HostIntArray q_lengths({1, 1}), sel_lengths({1040, 1616});
  a = Valid();
  a.q_lengths = q_lengths.get();
  a.sel_lengths = sel_lengths.get();
  ExpectAccepted(a);
  DeviceTensor query_bsnd = Tensor({2, 1, 4, 64});
  DeviceTensor out_bsnd = DeviceTensor::Output({2, 1, 4, 32}, ACL_FLOAT16, Layout::kContiguous);
  a = Valid();
  a.layout = nullptr;
  a.query = query_bsnd.get();
  a.out = out_bsnd.get();
  ExpectAccepted(a);
  DeviceTensor topk4 = DeviceTensor::Output({2, 1, 2, 2}, ACL_INT32, Layout::kContiguous);
  a.topk = topk4.get();
  ExpectAccepted(a);
}

// src/ops/nsa_compress_attention_infer/fuzz/corpus/regress-table-columns-times-page-overflow: a table of 2^60 columns
// (a broadcast view: strides 0) holds more positions than int64 counts; its capacity once overflowed (columns *
// pageBlockSize) and now saturates: the call is valid (every entry's length is at most 8192).
TEST_F(NsaCompressAttentionInferValidation, HugeTablesDoNotOverflow) {
  const int64_t dims[] = {2, int64_t{1} << 60}, strides[] = {0, 0}, storage[] = {1};
  aclTensor* table = aclCreateTensor(dims, 2, ACL_INT32, strides, 0, ACL_FORMAT_ND, storage, 1, ops_.table.data());
  ASSERT_NE(table, nullptr) << optest::RecentErrorMessage();
  Args a = Valid();
  a.table = table;
  ExpectAccepted(a);
  aclDestroyTensor(table);
}

TEST_F(NsaCompressAttentionInferValidation, RequiredArgumentsMustNotBeNull) {
  const std::pair<const aclTensor * Args::*, const char*> tensors[] = {
      {&Args::query, "query"}, {&Args::key, "key"},
      {&Args::value, "value"}, {&Args::table, "blockTableOptional"},
      {&Args::out, "output"},  {&Args::topk, "topKOutput"}};
  for (const auto& [member, name] : tensors) {
    SCOPED_TRACE(name);
    Args a = Valid();
    a.*member = nullptr;
    ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {name});
  }
  Args a = Valid();
  a.cmp_lengths = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"actualCmpKvSeqLenOptional"});
  a = Valid();
  a.executor = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"executor"});
}

TEST_F(NsaCompressAttentionInferValidation, DTypes) {
  ExpectInvalidWith(&Args::query, Tensor({2, 4, 64}, ACL_FLOAT), {"query", "FLOAT"});
  ExpectInvalidWith(&Args::key, Tensor({3, 64, 128}, ACL_BF16), {"key", "BFLOAT16"});
  ExpectInvalidWith(&Args::table, Tensor({2, 2}, ACL_INT64), {"blockTableOptional", "INT64"});
  ExpectInvalidWith(&Args::topk, Tensor({2, 2, 2}, ACL_INT64), {"topKOutput", "INT64"});
}

TEST_F(NsaCompressAttentionInferValidation, Attributes) {
  const auto invalid = [&](auto change, const std::vector<std::string>& fragments) {
    Args a = Valid();
    change(a);
    ExpectInvalid(a, fragments);
  };
  invalid([](Args& a) { a.layout = "BSH"; }, {"layoutOptional", "BSH"});
  invalid([](Args& a) { a.num_kv_heads = 3; }, {"numHeads (4)", "numKeyValueHeads (3)"});
  invalid([](Args& a) { a.num_heads = 0; }, {"numHeads", "0"});
  invalid([](Args& a) { a.compress_block_size = 24; }, {"compressBlockSize", "24"});
  invalid([](Args& a) { a.compress_stride = 80; }, {"compressBlockStride", "80"});
  invalid([](Args& a) { a.select_block_size = 16; }, {"selectBlockSize (16)", "compressBlockSize (32)"});
  invalid(
      [](Args& a) {
        a.compress_stride = 32;
        a.select_block_size = 48;
      },
      {"selectBlockSize (48)", "compressBlockStride (32)"});
  invalid([](Args& a) { a.select_block_count = 0; }, {"selectBlockCount", "0"});
  invalid([](Args& a) { a.page_block_size = 8; }, {"pageBlockSize", "8"});
}

TEST_F(NsaCompressAttentionInferValidation, GroupMustDivide128) {
  DeviceTensor query = Tensor({2, 6, 64});
  DeviceTensor out = DeviceTensor::Output({2, 6, 32}, ACL_FLOAT16, Layout::kContiguous);
  Args a = Valid();
  a.query = query.get();
  a.out = out.get();
  a.num_heads = 6;
  ExpectInvalid(a, {"group size", "6 / 2 = 3", "divide 128"});
}

TEST_F(NsaCompressAttentionInferValidation, Shapes) {
  ExpectInvalidWith(&Args::query, Tensor({2, 4, 1, 64}), {"query", "3-D", "[2, 4, 1, 64]"});
  ExpectInvalidWith(&Args::query, Tensor({2, 5, 64}), {"numHeads", "[2, 5, 64]"});
  ExpectInvalidWith(&Args::key, Tensor({3, 32, 128}), {"key", "pageBlockSize 64"});
  ExpectInvalidWith(&Args::key, Tensor({3, 64, 96}), {"key", "[3, 64, 96]", "D = 64"});
  ExpectInvalidWith(&Args::value, Tensor({4, 64, 64}), {"value", "[4, 64, 64]", "pages"});
  ExpectInvalidWith(&Args::value, Tensor({3, 64, 160}), {"D of value", "80"});
  ExpectInvalidWith(&Args::value, Tensor({3, 64, 48}), {"D of value", "24", "multiple of 16"});
  ExpectInvalidWith(&Args::table, Tensor({2}, ACL_INT32), {"blockTableOptional", "2-D", "[2]"});
  ExpectInvalidWith(&Args::out, DeviceTensor::Output({2, 4, 64}, ACL_FLOAT16, Layout::kContiguous),
                    {"output", "[2, 4, 64]"});
  ExpectInvalidWith(&Args::topk, DeviceTensor::Output({2, 4, 2}, ACL_INT32, Layout::kContiguous),
                    {"topKOutput", "[2, 4, 2]"});
  DeviceTensor query = Tensor({2, 4, 208}), key = Tensor({3, 64, 416});
  Args a = Valid();
  a.query = query.get();
  a.key = key.get();
  ExpectInvalid(a, {"D of query", "multiple of 16 in [16, 192]", "208"});
  DeviceTensor query24 = Tensor({2, 4, 24}), key24 = Tensor({3, 64, 48});
  a.query = query24.get();
  a.key = key24.get();
  ExpectInvalid(a, {"D of query", "multiple of 16", "24"});
}

TEST_F(NsaCompressAttentionInferValidation, LengthArrays) {
  const auto invalid = [&](std::vector<int64_t> cmp, std::vector<int64_t> q,
                           const std::vector<std::string>& fragments) {
    HostIntArray cmp_lengths(std::move(cmp)), q_lengths(q.empty() ? std::vector<int64_t>{0} : q);
    Args a = Valid();
    a.cmp_lengths = cmp_lengths.get();
    if (!q.empty()) a.q_lengths = q_lengths.get();
    ExpectInvalid(a, fragments);
  };
  invalid({64}, {}, {"actualCmpKvSeqLenOptional", "one entry per batch entry", "got 1"});
  invalid({64, 129}, {}, {"actualCmpKvSeqLenOptional[1] = 129", "[0, 128]"});
  invalid({64, -1}, {}, {"actualCmpKvSeqLenOptional[1] = -1"});
  // (2 - 1) * 16 + 32 = 48 raw positions: no whole select block of 64 for selectBlockCount 2.
  invalid({64, 2}, {}, {"selectBlockCount (2)", "0 select blocks of entry 1"});
  invalid({64, 100}, {1, 2}, {"actualQSeqLenOptional", "T of query", "3"});
  invalid({64, 100}, {5, 0}, {"actualQSeqLenOptional[0] = 5", "[0, 4]"});
  HostIntArray sel_lengths({1040});
  Args a = Valid();
  a.sel_lengths = sel_lengths.get();
  ExpectInvalid(a, {"actualSelKvSeqLenOptional", "got 1"});
}

}  // namespace
