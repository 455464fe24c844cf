// Regression tests for the crashes the libFuzzer harness found in NsaCompressWithCache
// (src/ops/nsa_compress_with_cache/fuzz/): each replays the failing call's structure through the public API and
// checks the result against the float64 reference. The crashing inputs are in the fuzzer's corpus
// (src/ops/nsa_compress_with_cache/fuzz/corpus/regress-*).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "acl/acl.h"
#include "nsa_compress_with_cache/test/nsa_compress_with_cache_calls.h"
#include "nsa_compress_with_cache/test/nsa_compress_with_cache_reference.h"
#include "op_test_util.h"

namespace {

using optest::DeviceTensor;
using optest::Layout;

// src/ops/nsa_compress_with_cache/fuzz/corpus/regress-cache-shares-storage-with-block-table: outputCache's storage
// began with blockTable's int32 elements (one allocation, both at offset 0). The kernel checked the page numbers
// before its first write and read them again while writing, so an entry processed after a write to cache row 0 read
// page numbers made of fp16 bits and gathered rows far outside input (a SEGV under ASan).
//
// Here: two entries of 64 tokens (block 32, stride 16: both complete window 2), one page of 64 each, the table
// (2, 1) = {1, 0} in the first 8 bytes of the cache; entry 1 writes cache row 0 (over the table), entry 0 row 3.
// Both windows must come out of the pages the table named when the call was made.
TEST(FuzzRegression, NsaCompressWithCacheOutputCacheOverBlockTable) {
  optest::TestStream stream;
  const aclDataType dtype = ACL_FLOAT16;
  constexpr int64_t kDim = 16, kBlock = 32, kStride = 16, kPageBlock = 64, kResultLen = 8;
  std::mt19937_64 rng(0x5eed0c4c);
  ref::NsaCompressWithCacheShape shape;
  shape.heads = 1;
  shape.dim = kDim;
  shape.block_size = kBlock;
  shape.stride = kStride;
  shape.result_len = kResultLen;  // the document's rule: > (2 * 64 - 32) / 16 = 6
  shape.lengths = {64, 64};
  const std::vector<double> sequences = optest::RandomValues(rng, 2 * 64 * kDim, -2.0, 2.0, dtype);
  const std::vector<double> weight_values = optest::RandomValues(rng, kBlock, -1.0, 1.0, dtype);
  const std::vector<int32_t> table_values = {1, 0};  // entry 0 on page 1, entry 1 on page 0
  const std::vector<int64_t> slots = {3, 0};

  // Pages: page 1 holds entry 0's positions, page 0 entry 1's.
  std::vector<double> pages(sequences.size());
  for (int64_t b = 0; b < 2; ++b) {
    const int64_t page = table_values[static_cast<size_t>(b)];
    std::copy_n(sequences.begin() + b * 64 * kDim, 64 * kDim, pages.begin() + page * 64 * kDim);
  }
  DeviceTensor input({2, kPageBlock, 1, kDim}, dtype, Layout::kContiguous, pages);
  DeviceTensor weight({kBlock, 1}, dtype, Layout::kContiguous, weight_values);
  DeviceTensor slot_mapping({2}, ACL_INT32, Layout::kContiguous, {3.0, 0.0});
  std::vector<double> cache_before = optest::RandomValues(rng, kResultLen * kDim, -4.0, 4.0, dtype);
  DeviceTensor cache({kResultLen, 1, kDim}, dtype, Layout::kContiguous, cache_before);
  ASSERT_EQ(aclrtMemcpy(cache.data(), table_values.size() * sizeof(int32_t), table_values.data(),
                        table_values.size() * sizeof(int32_t), ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_SUCCESS);
  const int64_t table_dims[] = {2, 1};
  const int64_t table_strides[] = {1, 1};
  const int64_t table_storage[] = {2};
  aclTensor* table =
      aclCreateTensor(table_dims, 2, ACL_INT32, table_strides, 0, ACL_FORMAT_ND, table_storage, 1, cache.data());
  ASSERT_NE(table, nullptr) << optest::RecentErrorMessage();
  optest::HostIntArray lengths(shape.lengths);

  opcall::NsaCompressWithCache call;
  call.input = input.get();
  call.weight = weight.get();
  call.slot_mapping = slot_mapping.get();
  call.act_seq_len = lengths.get();
  call.block_table = table;
  call.layout = nullptr;
  call.compress_block_size = kBlock;
  call.compress_stride = kStride;
  call.page_block_size = kPageBlock;
  call.output_cache = cache.get();
  ASSERT_EQ(opcall::Run(call, stream.get()), ACLNN_SUCCESS) << optest::RecentErrorMessage();
  aclDestroyTensor(table);

  std::vector<double> expected = cache_before;
  const std::vector<uint8_t> written =
      ref::NsaCompressWithCache(sequences.data(), weight_values.data(), slots, {}, shape, expected.data());
  ASSERT_EQ(written, (std::vector<uint8_t>{1, 0, 0, 1, 0, 0, 0, 0}));
  const std::vector<double> got = cache.Read();
  std::vector<double> got_rows, want_rows;
  for (int64_t row : {0, 3}) {
    got_rows.insert(got_rows.end(), got.begin() + row * kDim, got.begin() + (row + 1) * kDim);
    want_rows.insert(want_rows.end(), expected.begin() + row * kDim, expected.begin() + (row + 1) * kDim);
  }
  // |terms| <= 2 and 32 terms: fp32's error before the rounding stays below 32 * 2 * 32 * 2^-24.
  optest::ExpectClose("outputCache", got_rows, want_rows,
                      std::vector<double>(want_rows.size(), 32.0 * 2 * 32 * 0x1p-24), dtype);
  for (int64_t i = kDim; i < kResultLen * kDim; ++i) {
    if (i / kDim == 3) continue;
    ASSERT_EQ(got[static_cast<size_t>(i)], cache_before[static_cast<size_t>(i)]) << "element " << i << " was changed";
  }
  optest::ExpectGuardsIntact({&input, &weight, &slot_mapping, &cache});
}

}  // namespace
