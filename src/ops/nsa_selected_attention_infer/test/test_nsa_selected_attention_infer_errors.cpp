// Phase-1 validation of aclnnNsaSelectedAttentionInferGetWorkspaceSize (CANN's document and
// docs/ops/nsa_selected_attention_infer.md): each rule of the error table, with its status code (161001 null, 161002
// invalid) and a message that names the function, the parameter and the offending value. A rejected call writes
// nothing and hands out no executor.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_nsa_select_attention_infer.h"
#include "op_test_util.h"
#include "phase1_checks.h"

namespace {

using optest::DeviceTensor;
using optest::HostIntArray;
using optest::Layout;

constexpr const char* kName = "aclnnNsaSelectedAttentionInfer";

DeviceTensor Tensor(std::vector<int64_t> shape, aclDataType dtype = ACL_FLOAT16) {
  return optest::ValidTensor(std::move(shape), dtype);
}

// One valid call, layout BSND: 2 entries of one query token, 64 and 100 positions; N1 4, N2 2, D 192 / 128; pages of
// 64 (3 in the cache, 2 per entry in the table); blocks of 32, 2 selected.
struct Operands {
  DeviceTensor query = Tensor({2, 1, 4, 192});
  DeviceTensor key = Tensor({3, 64, 2, 192});
  DeviceTensor value = Tensor({3, 64, 2, 128});
  DeviceTensor topk = Tensor({2, 1, 2, 2}, ACL_INT32);
  DeviceTensor table = Tensor({2, 2}, ACL_INT32);
  DeviceTensor out = DeviceTensor::Output({2, 1, 4, 128}, ACL_FLOAT16, Layout::kContiguous);
  HostIntArray kv_lengths{{64, 100}};
};

struct Args {
  const aclTensor *query, *key, *value, *topk, *mask, *table;
  const aclIntArray *q_lengths, *kv_lengths;
  const char* layout;
  int64_t num_heads, num_kv_heads, block_size, block_count, page_block_size;
  double scale;
  int64_t sparse_mode;
  aclTensor* out;
  uint64_t* workspace_size;
  aclOpExecutor** executor;
};

class NsaSelectedAttentionInferValidation : public testing::Test, protected optest::PhaseOneChecks<Args> {
 protected:
  Operands ops_;

  Args Valid() override {
    return {ops_.query.get(), ops_.key.get(),   ops_.value.get(), ops_.topk.get(), nullptr,          ops_.table.get(),
            nullptr,          ops_.kv_lengths.get(), "BSND",       4,                2,                32,
            2,                64,               0.072,            0,               ops_.out.get(),   &workspace_size_,
            &executor_};
  }
  aclnnStatus Call(const Args& a) override {
    return aclnnNsaSelectedAttentionInferGetWorkspaceSize(
        a.query, a.key, a.value, a.topk, a.mask, a.table, a.q_lengths, a.kv_lengths, const_cast<char*>(a.layout),
        a.num_heads, a.num_kv_heads, a.block_size, a.block_count, a.page_block_size, a.scale, a.sparse_mode, a.out,
        a.workspace_size, a.executor);
  }
  std::string OpName() const override { return kName; }
  std::vector<const DeviceTensor*> Outputs() override { return {&ops_.out}; }
};

TEST_F(NsaSelectedAttentionInferValidation, ValidCallsAreAccepted) {
  Args a = Valid();
  ExpectAccepted(a);
  a.layout = nullptr;  // BSND
  ExpectAccepted(a);
  DeviceTensor mask = Tensor({7, 3}, ACL_FLOAT);  // reserved: any tensor, never read
  a.mask = mask.get();
  a.sparse_mode = 5;  // reserved
  ExpectAccepted(a);
  // topkIndices (B, N2, count) when S is 1; key and value 3-D; BSH; TND with and without actualQSeqLenOptional.
  DeviceTensor topk3 = Tensor({2, 2, 2}, ACL_INT32);
  a = Valid();
  a.topk = topk3.get();
  ExpectAccepted(a);
  DeviceTensor key3 = Tensor({3, 64, 384}), value3 = Tensor({3, 64, 256});
  a = Valid();
  a.key = key3.get();
  a.value = value3.get();
  ExpectAccepted(a);
  DeviceTensor query_bsh = Tensor({2, 1, 768});
  DeviceTensor out_bsh = DeviceTensor::Output({2, 1, 512}, ACL_FLOAT16, Layout::kContiguous);
  a = Valid();
  a.layout = "BSH";
  a.query = query_bsh.get();
  a.out = out_bsh.get();
  ExpectAccepted(a);
  DeviceTensor query_tnd = Tensor({2, 4, 192}), topk_tnd = Tensor({2, 2, 2}, ACL_INT32);
  DeviceTensor out_tnd = DeviceTensor::Output({2, 4, 128}, ACL_FLOAT16, Layout::kContiguous);
  a = Valid();
  a.layout = "TND";
  a.query = query_tnd.get();
  a.topk = topk_tnd.get();
  a.out = out_tnd.get();
  ExpectAccepted(a);
  HostIntArray q_lengths({1, 1});
  a.q_lengths = q_lengths.get();
  ExpectAccepted(a);
}

TEST_F(NsaSelectedAttentionInferValidation, NullArguments) {
  const std::vector<std::pair<const aclTensor* Args::*, std::string>> tensors = {
      {&Args::query, "query"}, {&Args::key, "key"}, {&Args::value, "value"}, {&Args::topk, "topkIndices"},
      {&Args::table, "blockTableOptional"}};
  for (const auto& [member, name] : tensors) {
    SCOPED_TRACE(name);
    Args a = Valid();
    a.*member = nullptr;
    ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {name, "null"});
  }
  Args a = Valid();
  a.kv_lengths = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"actualKvSeqLenOptional", "null"});
  a = Valid();
  a.out = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"output", "null"});
  a = Valid();
  a.workspace_size = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"workspaceSize"});
  a = Valid();
  a.executor = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"executor"});
}

TEST_F(NsaSelectedAttentionInferValidation, DataTypes) {
  ExpectInvalidWith(&Args::query, Tensor({2, 1, 4, 192}, ACL_FLOAT), {"query", "FLOAT"});
  ExpectInvalidWith(&Args::key, Tensor({3, 64, 2, 192}, ACL_BF16), {"key", "BFLOAT16"});
  ExpectInvalidWith(&Args::value, Tensor({3, 64, 2, 128}, ACL_BF16), {"value", "BFLOAT16"});
  ExpectInvalidWith(&Args::topk, Tensor({2, 1, 2, 2}, ACL_INT64), {"topkIndices", "INT64"});
  ExpectInvalidWith(&Args::table, Tensor({2, 2}, ACL_INT64), {"blockTableOptional", "INT64"});
  DeviceTensor out = DeviceTensor::Output({2, 1, 4, 128}, ACL_BF16, Layout::kContiguous);
  Args a = Valid();
  a.out = out.get();
  ExpectInvalid(a, {"output", "BFLOAT16"});
}

TEST_F(NsaSelectedAttentionInferValidation, LayoutAndAttributes) {
  const std::vector<std::pair<std::function<void(Args*)>, std::vector<std::string>>> cases = {
      {[](Args* a) { a->layout = "BNSD"; }, {"layoutOptional", "\"BNSD\""}},
      {[](Args* a) { a->num_heads = 0; }, {"numHeads", "at least 1", "got 0"}},
      {[](Args* a) { a->num_kv_heads = 0; }, {"numKeyValueHeads", "[1, 256]", "got 0"}},
      {[](Args* a) { a->num_kv_heads = 257; }, {"numKeyValueHeads", "[1, 256]", "got 257"}},
      {[](Args* a) { a->num_heads = 3; }, {"numHeads (3)", "multiple of numKeyValueHeads (2)"}},
      {[](Args* a) { a->num_heads = 34; }, {"group size", "34 / 2 = 17", "at most 16"}},
      {[](Args* a) { a->block_size = 24; }, {"selectBlockSize", "multiple of 16", "got 24"}},
      {[](Args* a) { a->block_size = 144; }, {"selectBlockSize", "got 144"}},
      {[](Args* a) { a->block_count = 0; }, {"selectBlockCount", "[1, 32]", "got 0"}},
      {[](Args* a) { a->block_count = 33; }, {"selectBlockCount", "got 33"}},
      {[](Args* a) { a->page_block_size = 32; }, {"pageBlockSize", "64 or 128", "got 32"}},
  };
  for (const auto& [mutate, fragments] : cases) {
    SCOPED_TRACE(fragments.front());
    Args a = Valid();
    mutate(&a);
    ExpectInvalid(a, fragments);
  }
}

TEST_F(NsaSelectedAttentionInferValidation, QueryKeyValueShapes) {
  ExpectInvalidWith(&Args::query, Tensor({2, 4, 192}), {"query", "4-D"});
  ExpectInvalidWith(&Args::query, Tensor({2, 1, 8, 192}), {"numHeads", "N of query", "[2, 1, 8, 192]"});
  ExpectInvalidWith(&Args::query, Tensor({2, 1, 4, 128}), {"D of query", "192", "got 128"});
  ExpectInvalidWith(&Args::key, Tensor({3, 64}), {"key", "3-D", "4-D", "[3, 64]"});
  ExpectInvalidWith(&Args::value, Tensor({3, 64, 256}), {"value", "key's rank"});
  ExpectInvalidWith(&Args::key, Tensor({3, 128, 2, 192}), {"dim 1 of key", "pageBlockSize 64"});
  ExpectInvalidWith(&Args::value, Tensor({4, 64, 2, 128}), {"value", "key's pages"});
  ExpectInvalidWith(&Args::key, Tensor({3, 64, 1, 192}), {"key", "numKeyValueHeads = 2", "D = 192"});
  ExpectInvalidWith(&Args::value, Tensor({3, 64, 2, 192}), {"value", "D = 128"});
  DeviceTensor key3 = Tensor({3, 64, 300}), value3 = Tensor({3, 64, 256});
  Args a = Valid();
  a.key = key3.get();
  a.value = value3.get();
  ExpectInvalid(a, {"key", "[3, 64, 300]", "N * D = 384"});
}

TEST_F(NsaSelectedAttentionInferValidation, TableAndLengths) {
  ExpectInvalidWith(&Args::table, Tensor({2, 2, 1}, ACL_INT32), {"blockTableOptional", "2-D"});
  ExpectInvalidWith(&Args::table, Tensor({3, 2}, ACL_INT32), {"B of query", "blockTableOptional", "[3, 2]"});
  ExpectInvalidWith(&Args::query, Tensor({2, 5, 4, 192}), {"S of query", "[1, 4]"});
  HostIntArray three({64, 100, 5}), too_long({64, 129}), negative({-1, 100});
  Args a = Valid();
  a.kv_lengths = three.get();
  ExpectInvalid(a, {"actualKvSeqLenOptional", "one entry per batch entry (2", "got 3"});
  a.kv_lengths = too_long.get();
  ExpectInvalid(a, {"actualKvSeqLenOptional[1] = 129", "[0, 128]"});
  a.kv_lengths = negative.get();
  ExpectInvalid(a, {"actualKvSeqLenOptional[0] = -1"});
  HostIntArray q_three({1, 1, 1}), q_two({1, 2}), q_kv({1, 1});
  a = Valid();
  a.q_lengths = q_three.get();
  ExpectInvalid(a, {"actualQSeqLenOptional", "one entry per batch entry (2)", "got 3"});
  a.q_lengths = q_two.get();
  ExpectInvalid(a, {"actualQSeqLenOptional[1] = 2", "[0, 1]", "S of query"});
  HostIntArray kv_zero({0, 100});
  a.q_lengths = q_kv.get();
  a.kv_lengths = kv_zero.get();
  ExpectInvalid(a, {"actualQSeqLenOptional[0] = 1", "must not exceed actualKvSeqLenOptional[0] = 0"});
  // TND: the lengths add up to T; without them, T equals B.
  DeviceTensor query_tnd = Tensor({3, 4, 192}), topk_tnd = Tensor({3, 2, 2}, ACL_INT32);
  DeviceTensor out_tnd = DeviceTensor::Output({3, 4, 128}, ACL_FLOAT16, Layout::kContiguous);
  a = Valid();
  a.layout = "TND";
  a.query = query_tnd.get();
  a.topk = topk_tnd.get();
  a.out = out_tnd.get();
  ExpectInvalid(a, {"TND", "one query token per batch entry", "[3, 4, 192]", "(2)"});
  HostIntArray q_sum({1, 1});
  a.q_lengths = q_sum.get();
  ExpectInvalid(a, {"actualQSeqLenOptional", "add up to T of query", "got 2"});
  HostIntArray q_five({5, 0});
  a.q_lengths = q_five.get();
  ExpectInvalid(a, {"actualQSeqLenOptional[0] = 5", "[0, 4]"});
}

TEST_F(NsaSelectedAttentionInferValidation, TopkAndOutputShapes) {
  ExpectInvalidWith(&Args::topk, Tensor({2, 1, 2, 3}, ACL_INT32), {"topkIndices", "[B, S, numKeyValueHeads"});
  ExpectInvalidWith(&Args::topk, Tensor({2, 1, 2}, ACL_INT32), {"topkIndices", "(S of query 1)"});
  DeviceTensor out = DeviceTensor::Output({2, 1, 4, 192}, ACL_FLOAT16, Layout::kContiguous);
  Args a = Valid();
  a.out = out.get();
  ExpectInvalid(a, {"output", "[B, S, numHeads, D of value]"});
  // An output whose elements share memory (a broadcast view).
  DeviceTensor storage = DeviceTensor::Output({1, 1, 4, 128}, ACL_FLOAT16, Layout::kContiguous);
  aclTensor* shared = optest::SelfOverlappingView(storage, {2, 1, 4, 128}, 0);
  ASSERT_NE(shared, nullptr);
  a.out = shared;
  ExpectInvalid(a, {"output"});
  aclDestroyTensor(shared);
}

// Phase 1 reads no tensor data: topkIndices and blockTableOptional may hold anything.
TEST_F(NsaSelectedAttentionInferValidation, PhaseOneReadsNoTensorData) {
  optest::RawTensor topk({2, 1, 2, 2}, ACL_INT32), table({2, 2}, ACL_INT32);
  Args a = Valid();
  a.topk = topk.get();
  a.table = table.get();
  ExpectAccepted(a);
}

}  // namespace
