// Phase-1 validation of aclnnNsaCompressWithCacheGetWorkspaceSize (CANN's document and
// docs/ops/nsa_compress_with_cache.md): each rule of the error table, with its status code (161001 null, 161002
// invalid) and a message that names the function, the parameter and the offending value. A rejected call writes
// nothing and hands out no executor.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_nsa_compress_with_cache.h"
#include "op_test_util.h"
#include "phase1_checks.h"

namespace {

using optest::DeviceTensor;
using optest::HostIntArray;
using optest::Layout;

constexpr const char* kName = "aclnnNsaCompressWithCache";

DeviceTensor Tensor(std::vector<int64_t> shape, aclDataType dtype = ACL_FLOAT16) {
  return optest::ValidTensor(std::move(shape), dtype);
}

// One valid paged call: 2 entries of 48 and 100 tokens, pages of 64 (4 in the cache, 2 per entry), N 4, D 64, blocks
// of 32, stride 16, a cache of 15 rows.
struct Operands {
  DeviceTensor input = Tensor({4, 64, 4, 64});
  DeviceTensor weight = Tensor({32, 4});
  DeviceTensor slots = Tensor({2}, ACL_INT32);
  DeviceTensor table = Tensor({2, 2}, ACL_INT32);
  // resultLen must exceed (blockNum * pageBlockSize - compressBlockSize) / compressStride = (256 - 32) / 16 = 14.
  DeviceTensor cache = DeviceTensor::Output({15, 4, 64}, ACL_FLOAT16, Layout::kContiguous);
  HostIntArray lengths{{48, 100}};
};

struct Args {
  const aclTensor *input, *weight, *slots;
  const aclIntArray* lengths;
  const aclTensor* table;
  const char* layout;
  int64_t block_size, stride, length_type, page_block_size;
  aclTensor* cache;
  uint64_t* workspace_size;
  aclOpExecutor** executor;
};

class NsaCompressWithCacheValidation : public testing::Test, protected optest::PhaseOneChecks<Args> {
 protected:
  Operands ops_;

  Args Valid() override {
    return {ops_.input.get(),
            ops_.weight.get(),
            ops_.slots.get(),
            ops_.lengths.get(),
            ops_.table.get(),
            nullptr,
            32,
            16,
            1,
            64,
            ops_.cache.get(),
            &workspace_size_,
            &executor_};
  }
  aclnnStatus Call(const Args& a) override {
    return aclnnNsaCompressWithCacheGetWorkspaceSize(a.input, a.weight, a.slots, a.lengths, a.table,
                                                     const_cast<char*>(a.layout), a.block_size, a.stride, a.length_type,
                                                     a.page_block_size, a.cache, a.workspace_size, a.executor);
  }
  std::string OpName() const override { return kName; }
  std::vector<const DeviceTensor*> Outputs() override { return {&ops_.cache}; }
};

TEST_F(NsaCompressWithCacheValidation, ValidCallsAreAccepted) {
  Args a = Valid();
  ExpectAccepted(a);
  a.layout = "BNSD";  // not read with a block table
  ExpectAccepted(a);
  // TND: (T, N, D) with T the sum of the lengths.
  DeviceTensor tnd = Tensor({148, 4, 64});
  a = Valid();
  a.input = tnd.get();
  a.table = nullptr;
  a.layout = "TND";
  ExpectAccepted(a);
  // BFLOAT16; pages of 128; the largest block and stride; N 64 and D 256.
  DeviceTensor input = Tensor({2, 128, 64, 256}, ACL_BF16), weight = Tensor({64, 64}, ACL_BF16);
  DeviceTensor cache = DeviceTensor::Output({13, 64, 256}, ACL_BF16, Layout::kContiguous);
  a = Valid();
  a.input = input.get();
  a.weight = weight.get();
  a.cache = cache.get();
  a.block_size = 64;
  a.stride = 64;
  a.page_block_size = 128;
  HostIntArray short_lengths{{64, 128}};
  DeviceTensor table1 = Tensor({2, 1}, ACL_INT32);
  a.table = table1.get();
  a.lengths = short_lengths.get();
  ExpectAccepted(a);
}

TEST_F(NsaCompressWithCacheValidation, NullArgumentsAreReported) {
  for (auto member : {&Args::input, &Args::weight, &Args::slots}) {
    Args a = Valid();
    a.*member = nullptr;
    ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"must not be null"});
  }
  Args a = Valid();
  a.lengths = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"actSeqLenOptional must not be null"});
  a = Valid();
  a.cache = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"outputCache must not be null"});
  a = Valid();
  a.workspace_size = nullptr;
  ExpectRejected(a, ACLNN_ERR_PARAM_NULLPTR, {"workspaceSize"});
}

TEST_F(NsaCompressWithCacheValidation, DTypesAreChecked) {
  ExpectInvalidWith(&Args::input, Tensor({4, 64, 4, 64}, ACL_FLOAT), {"input dtype", "FLOAT16, BFLOAT16", "FLOAT"});
  ExpectInvalidWith(&Args::weight, Tensor({32, 4}, ACL_BF16), {"weight", "BFLOAT16"});
  ExpectInvalidWith(&Args::slots, Tensor({2}, ACL_INT64), {"slotMapping dtype", "INT32", "INT64"});
  ExpectInvalidWith(&Args::table, Tensor({2, 2}, ACL_INT64), {"blockTableOptional dtype", "INT32", "INT64"});
  Args a = Valid();
  DeviceTensor cache = DeviceTensor::Output({15, 4, 64}, ACL_BF16, Layout::kContiguous);
  a.cache = cache.get();
  ExpectInvalid(a, {"outputCache", "BFLOAT16"});
}

TEST_F(NsaCompressWithCacheValidation, AttributesAreChecked) {
  Args a = Valid();
  a.length_type = 0;
  ExpectInvalid(a, {"actSeqLenType must be 1", "got 0"});
  a = Valid();
  a.table = nullptr;
  a.layout = "BSND";
  ExpectInvalid(a, {"layoutOptional must be \"TND\" when blockTableOptional is null", "got \"BSND\""});
  a.layout = nullptr;
  ExpectInvalid(a, {"layoutOptional must be \"TND\"", "got null"});
  for (int64_t block_size : {0, 8, 40, 80, -16}) {
    a = Valid();
    a.block_size = block_size;
    ExpectInvalid(a, {"compressBlockSize must be a multiple of 16 in [16, 64], got " + std::to_string(block_size)});
  }
  for (int64_t stride : {0, 8, 24, 80}) {
    a = Valid();
    a.stride = stride;
    ExpectInvalid(a, {"compressStride must be 16, 32, 48 or 64, got " + std::to_string(stride)});
  }
  a = Valid();
  a.stride = 48;
  ExpectInvalid(a, {"compressBlockSize (32) must be at least compressStride (48)"});
  a = Valid();
  a.page_block_size = 32;
  ExpectInvalid(a, {"pageBlockSize must be 64 or 128, got 32"});
}

TEST_F(NsaCompressWithCacheValidation, ShapesAreChecked) {
  ExpectInvalidWith(&Args::input, Tensor({4, 64, 256}), {"input", "4-D"});
  ExpectInvalidWith(&Args::input, Tensor({4, 128, 4, 64}),
                    {"dim 1 of input ([4, 128, 4, 64]) must equal pageBlockSize 64"});
  ExpectInvalidWith(&Args::input, Tensor({0, 64, 4, 64}), {"input ([0, 64, 4, 64]) must hold at least one page"});
  ExpectInvalidWith(&Args::input, Tensor({4, 64, 65, 64}), {"N of input", "must be in [1, 64]", "got 65"});
  ExpectInvalidWith(&Args::input, Tensor({4, 64, 51, 64}), {"even when above 50", "got 51"});
  ExpectInvalidWith(&Args::input, Tensor({4, 64, 4, 40}), {"D of input", "multiple of 16 in [16, 256]", "got 40"});
  ExpectInvalidWith(&Args::input, Tensor({4, 64, 4, 272}), {"D of input", "got 272"});
  ExpectInvalidWith(&Args::weight, Tensor({16, 4}),
                    {"weight must have shape [compressBlockSize, N of input] = [32, 4], got [16, 4]"});
  ExpectInvalidWith(&Args::slots, Tensor({2, 1}, ACL_INT32), {"slotMapping", "1-D"});
  ExpectInvalidWith(&Args::slots, Tensor({3}, ACL_INT32),
                    {"blockTableOptional ([2, 2]) must have a row per batch entry (B = 3"});
  ExpectInvalidWith(&Args::table, Tensor({2, 0}, ACL_INT32), {"at least one page per row"});
  Args a = Valid();
  DeviceTensor short_cache = DeviceTensor::Output({14, 4, 64}, ACL_FLOAT16, Layout::kContiguous);
  a.cache = short_cache.get();
  ExpectInvalid(a, {"resultLen (dim 0 of outputCache [14, 4, 64]) must exceed", "(4 * 64 - 32) / 16 = 14"});
  DeviceTensor wrong_cache = DeviceTensor::Output({15, 4, 32}, ACL_FLOAT16, Layout::kContiguous);
  a.cache = wrong_cache.get();
  ExpectInvalid(a, {"outputCache ([15, 4, 32]) must have input's N and D (4, 64)"});
  DeviceTensor cache2 = DeviceTensor::Output({15, 64}, ACL_FLOAT16, Layout::kContiguous);
  a.cache = cache2.get();
  ExpectInvalid(a, {"outputCache", "3-D"});
  // TND: an empty input.
  DeviceTensor empty = Tensor({0, 4, 64});
  HostIntArray zeros{{0, 0}};
  a = Valid();
  a.input = empty.get();
  a.table = nullptr;
  a.layout = "TND";
  a.lengths = zeros.get();
  ExpectInvalid(a, {"input ([0, 4, 64]) must not be empty"});
}

TEST_F(NsaCompressWithCacheValidation, LengthsAreChecked) {
  Args a = Valid();
  HostIntArray three{{48, 100, 5}};
  a.lengths = three.get();
  ExpectInvalid(a, {"actSeqLenOptional must have one entry per batch entry (2, slotMapping's), got 3"});
  HostIntArray long_entry{{48, 129}};
  a.lengths = long_entry.get();
  ExpectInvalid(a,
                {"actSeqLenOptional[1] = 129 must be in [0, 128] (blockTableOptional's 2 pages of pageBlockSize 64)"});
  HostIntArray negative{{-1, 100}};
  a.lengths = negative.get();
  ExpectInvalid(a, {"actSeqLenOptional[0] = -1 must be in [0, 128]"});
  // TND: the lengths add up to T.
  DeviceTensor tnd = Tensor({148, 4, 64});
  a = Valid();
  a.input = tnd.get();
  a.table = nullptr;
  a.layout = "TND";
  HostIntArray over{{48, 101}};
  a.lengths = over.get();
  ExpectInvalid(a, {"actSeqLenOptional[1] = 101 must be in [0, 100] (the tokens of T = 148 left"});
  HostIntArray under{{48, 99}};
  a.lengths = under.get();
  ExpectInvalid(a, {"the entries of actSeqLenOptional must add up to T of input (dim 0 of [148, 4, 64]), got 147"});
}

TEST_F(NsaCompressWithCacheValidation, OverlappingCacheElementsAreRefused) {
  // A cache whose rows share memory (a broadcast view) cannot be written row by row.
  DeviceTensor storage = DeviceTensor::Output({1, 4, 64}, ACL_FLOAT16, Layout::kContiguous);
  aclTensor* shared = optest::SelfOverlappingView(storage, {15, 4, 64}, 0);
  ASSERT_NE(shared, nullptr);
  Args a = Valid();
  a.cache = shared;
  ExpectInvalid(a, {"outputCache"});
  aclDestroyTensor(shared);
}

// Phase 1 reads no tensor data: slotMapping and blockTableOptional may hold anything.
TEST_F(NsaCompressWithCacheValidation, PhaseOneReadsNoTensorData) {
  optest::RawTensor slots({2}, ACL_INT32), table({2, 2}, ACL_INT32);
  Args a = Valid();
  a.slots = slots.get();
  a.table = table.get();
  ExpectAccepted(a);
}

}  // namespace
