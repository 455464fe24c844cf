// Regression tests for the crashes the libFuzzer harnesses found in MultiScaleDeformableAttention (src/ops/msda/fuzz/): each test replays the
// exact failing description through the public API and checks the result against the float64 reference (or the
// documented outcome). The crashing inputs themselves are in the fuzzer's corpus (src/ops/msda/fuzz/corpus/regress-*).
//
// Both were the undefined behaviour that clang's UBSan reports as "applying non-zero offset to null pointer" (or a
// pointer overflow) and GCC's does not detect: a kernel offset a null pointer (the null data of a tensor without
// elements) or turned an empty view's huge strides into row addresses, although it never dereferenced the result.
// Under the GCC build these tests therefore check the results only; the fuzz run (clang) replays the inputs under
// UBSan.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "msda/test/msda_calls.h"
#include "op_test_util.h"

namespace {

using optest::DeviceTensor;
using optest::Layout;

// Runs aclnnMultiScaleDeformableAttnFunction on value (FLOAT, 0 keys, 2 heads of 16 channels) with batch x queries
// queries of 3 levels and 1 point, and expects every output element to be 0: no key is in range. (H, W) and level
// starts are as the fuzzer wrote them for a non-empty value: inconsistent with nk = 0.
void ExpectEmptyValueGivesZeroOutput(aclTensor* value, int64_t batch, int64_t queries, uint64_t seed) {
  optest::TestStream stream;
  DeviceTensor spatial_shape({3, 2}, ACL_INT64, Layout::kContiguous, {2, 3, 1, 4, 3, 1});
  DeviceTensor level_start({3}, ACL_INT64, Layout::kContiguous, {0, 6, 10});
  std::mt19937_64 rng(seed);
  const auto points = static_cast<size_t>(batch * queries * 2 * 3);
  DeviceTensor location({batch, queries, 2, 3, 1, 2}, ACL_FLOAT, Layout::kContiguous,
                        optest::RandomValues(rng, 2 * points, -0.1, 1.1, ACL_FLOAT));
  DeviceTensor attn_weight({batch, queries, 2, 3, 1}, ACL_FLOAT, Layout::kContiguous,
                           optest::RandomValues(rng, points, 0.0, 1.0, ACL_FLOAT));
  DeviceTensor output = DeviceTensor::Output({batch, queries, 32}, ACL_FLOAT, Layout::kContiguous);

  ASSERT_EQ(opcall::Run(opcall::MultiScaleDeformableAttnFunction{value, spatial_shape.get(), level_start.get(),
                                                                  location.get(), attn_weight.get(), output.get()},
                        stream.get()),
            ACLNN_SUCCESS)
      << optest::RecentErrorMessage();
  optest::ExpectAllZero("output", output.Read());
  optest::ExpectGuardsIntact({&output});
}

// src/ops/msda/fuzz/corpus/regress-msda-forward-value-without-keys: aclnnMultiScaleDeformableAttnFunction with a value
// of 0 keys (dims [1, 0, 2, 16], FLOAT, null data, strides [0, 32, 16, 1]) read in place: the kernel offset value's
// null data pointer by the head's row offset. No key is in range, so every output element is 0.
TEST(FuzzRegression, MsdaForwardValueWithoutKeysAndNullData) {
  const int64_t value_dims[] = {1, 0, 2, 16};
  const int64_t value_strides[] = {0, 32, 16, 1};
  aclTensor* value = aclCreateTensor(value_dims, 4, ACL_FLOAT, value_strides, 0, ACL_FORMAT_ND, value_dims, 4, nullptr);
  ASSERT_NE(value, nullptr) << optest::RecentErrorMessage();
  ExpectEmptyValueGivesZeroOutput(value, 1, 8, 7193);
  aclDestroyTensor(value);
}

// src/ops/msda/fuzz/corpus/regress-msda-forward-empty-value-huge-strides: aclnnMultiScaleDeformableAttnFunction with a
// value of 0 keys (dims [2, 0, 2, 16], FLOAT, strides [4990906807096201311, 4294967297, 235, 1], storage [0], data
// not null) read in place: an empty view may have any strides, and the kernel formed each (image, head) row address
// from them (a pointer overflow). aclCreateTensor now gives an empty view's dims packed strides in the description
// the kernels see. No key is in range, so every output element is 0.
TEST(FuzzRegression, MsdaForwardEmptyValueWithHugeStrides) {
  DeviceTensor storage({1}, ACL_FLOAT, Layout::kContiguous, {0.0});
  const int64_t value_dims[] = {2, 0, 2, 16};
  const int64_t value_strides[] = {4990906807096201311, 4294967297, 235, 1};
  const int64_t value_storage[] = {0};
  aclTensor* value =
      aclCreateTensor(value_dims, 4, ACL_FLOAT, value_strides, 0, ACL_FORMAT_ND, value_storage, 1, storage.data());
  ASSERT_NE(value, nullptr) << optest::RecentErrorMessage();
  ExpectEmptyValueGivesZeroOutput(value, 2, 5, 0x5f50c50);
  aclDestroyTensor(value);
}

}  // namespace
