// aclCreateTensor's validation (every rule on its own), views over storage at the exact bounds, the getters and
// TensorDesc's methods.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn/opdev/op_errno.h"
#include "pacl/tensor.h"

namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// Takes (and so clears) the calling thread's recorded messages.
std::string TakeMessages() {
  const char* text = aclGetRecentErrMsg();
  return text != nullptr ? std::string(text) : std::string();
}

struct TensorArgs {
  std::vector<int64_t> view{2, 3};
  std::vector<int64_t> strides{3, 1};
  int64_t offset = 0;
  std::vector<int64_t> storage{6};
  aclDataType dtype = ACL_FLOAT;
  aclFormat format = ACL_FORMAT_ND;
  void* data = reinterpret_cast<void*>(0x1000);
};

aclTensor* Create(const TensorArgs& a) {
  return aclCreateTensor(a.view.data(), a.view.size(), a.dtype, a.strides.data(), a.offset, a.format, a.storage.data(),
                         a.storage.size(), a.data);
}

class CreateTensorTest : public ::testing::Test {
 protected:
  void SetUp() override { TakeMessages(); }

  // Expects creation to succeed, then destroys the tensor.
  void ExpectAccepted(const TensorArgs& a) {
    aclTensor* tensor = Create(a);
    EXPECT_NE(tensor, nullptr) << TakeMessages();
    EXPECT_EQ(aclDestroyTensor(tensor), ACLNN_SUCCESS);
  }
  // Expects creation to fail with a message that contains every one of parts.
  void ExpectRefused(const TensorArgs& a, std::initializer_list<const char*> parts) {
    aclTensor* tensor = Create(a);
    EXPECT_EQ(tensor, nullptr);
    aclDestroyTensor(tensor);
    const std::string message = TakeMessages();
    EXPECT_NE(message.find("aclCreateTensor: "), std::string::npos) << message;
    for (const char* part : parts) EXPECT_NE(message.find(part), std::string::npos) << part << " in: " << message;
  }
};

TEST_F(CreateTensorTest, ContiguousTensorRoundTripsThroughGetters) {
  float storage[2 * 3 * 4];
  const int64_t view[] = {2, 3, 4};
  const int64_t strides[] = {12, 4, 1};
  const int64_t storage_dims[] = {24};
  aclTensor* tensor = aclCreateTensor(view, 3, ACL_BF16, strides, 0, ACL_FORMAT_NCL, storage_dims, 1, storage);
  ASSERT_NE(tensor, nullptr) << TakeMessages();

  int64_t* dims = nullptr;
  uint64_t count = 0;
  ASSERT_EQ(aclGetViewShape(tensor, &dims, &count), ACLNN_SUCCESS);
  ASSERT_EQ(count, 3u);
  EXPECT_EQ(std::vector<int64_t>(dims, dims + count), std::vector<int64_t>({2, 3, 4}));
  delete[] dims;

  ASSERT_EQ(aclGetViewStrides(tensor, &dims, &count), ACLNN_SUCCESS);
  ASSERT_EQ(count, 3u);
  EXPECT_EQ(std::vector<int64_t>(dims, dims + count), std::vector<int64_t>({12, 4, 1}));
  delete[] dims;

  ASSERT_EQ(aclGetStorageShape(tensor, &dims, &count), ACLNN_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(dims[0], 24);
  delete[] dims;

  int64_t offset = -1;
  EXPECT_EQ(aclGetViewOffset(tensor, &offset), ACLNN_SUCCESS);
  EXPECT_EQ(offset, 0);
  aclFormat format = ACL_FORMAT_UNDEFINED;
  EXPECT_EQ(aclGetFormat(tensor, &format), ACLNN_SUCCESS);
  EXPECT_EQ(format, ACL_FORMAT_NCL);
  aclDataType dtype = ACL_DT_UNDEFINED;
  EXPECT_EQ(aclGetDataType(tensor, &dtype), ACLNN_SUCCESS);
  EXPECT_EQ(dtype, ACL_BF16);

  const pacl::TensorDesc& desc = tensor->desc;
  EXPECT_EQ(desc.data, static_cast<void*>(storage));
  EXPECT_EQ(desc.rank, 3);
  EXPECT_EQ(desc.storage_rank, 1);
  EXPECT_TRUE(desc.IsContiguous());
  EXPECT_EQ(desc.NumElements(), 24);
  EXPECT_EQ(aclDestroyTensor(tensor), ACLNN_SUCCESS);
}

TEST_F(CreateTensorTest, OffsetAndMultiDimStorageRoundTrip) {
  TensorArgs a;
  a.view = {2, 2};
  a.strides = {4, 2};
  a.offset = 3;
  a.storage = {3, 4};
  aclTensor* tensor = Create(a);
  ASSERT_NE(tensor, nullptr) << TakeMessages();
  int64_t offset = 0;
  EXPECT_EQ(aclGetViewOffset(tensor, &offset), ACLNN_SUCCESS);
  EXPECT_EQ(offset, 3);
  int64_t* dims = nullptr;
  uint64_t count = 0;
  ASSERT_EQ(aclGetStorageShape(tensor, &dims, &count), ACLNN_SUCCESS);
  EXPECT_EQ(std::vector<int64_t>(dims, dims + count), std::vector<int64_t>({3, 4}));
  delete[] dims;
  EXPECT_FALSE(tensor->desc.IsContiguous());
  aclDestroyTensor(tensor);
}

TEST_F(CreateTensorTest, RefusesViewRankAboveEight) {
  TensorArgs a;
  a.view.assign(9, 1);
  a.strides.assign(9, 1);
  ExpectRefused(a, {"viewDimsNum", "at most 8", "got 9"});
}

TEST_F(CreateTensorTest, AcceptsRankEight) {
  TensorArgs a;
  a.view.assign(8, 1);
  a.view[0] = 6;
  a.strides.assign(8, 0);
  a.strides[0] = 1;
  a.storage.assign(8, 1);
  a.storage[7] = 6;
  ExpectAccepted(a);
}

TEST_F(CreateTensorTest, RefusesStorageRankAboveEight) {
  TensorArgs a;
  a.storage.assign(9, 1);
  a.storage[0] = 6;
  ExpectRefused(a, {"storageDimsNum", "at most 8", "got 9"});
}

TEST_F(CreateTensorTest, RefusesNullViewDims) {
  const int64_t strides[] = {1};
  const int64_t storage[] = {4};
  EXPECT_EQ(aclCreateTensor(nullptr, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, nullptr), nullptr);
  const std::string message = TakeMessages();
  EXPECT_NE(message.find("aclCreateTensor: viewDims must not be null"), std::string::npos) << message;
}

// A null stride array is a contiguous view, as in CANN (its samples pass null strides), size-1 and size-0 dims
// counting as 1.
TEST_F(CreateTensorTest, NullStrideMeansContiguous) {
  const int64_t view[] = {2, 1, 3, 4};
  const int64_t storage[] = {24};
  aclTensor* tensor = aclCreateTensor(view, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, storage, 1, nullptr);
  ASSERT_NE(tensor, nullptr) << TakeMessages();
  int64_t* strides = nullptr;
  uint64_t count = 0;
  ASSERT_EQ(aclGetViewStrides(tensor, &strides, &count), ACLNN_SUCCESS);
  ASSERT_EQ(count, 4u);
  EXPECT_EQ(std::vector<int64_t>(strides, strides + count), (std::vector<int64_t>{12, 12, 4, 1}));
  delete[] strides;
  aclDestroyTensor(tensor);
  // The contiguous view must still fit its storage.
  const int64_t small_storage[] = {23};
  EXPECT_EQ(aclCreateTensor(view, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, small_storage, 1, nullptr), nullptr);
  EXPECT_NE(TakeMessages().find("outside storageDims"), std::string::npos);
  // Strides that overflow int64 are refused, not wrapped.
  const int64_t huge[] = {0, int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_EQ(aclCreateTensor(huge, 3, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, storage, 1, nullptr), nullptr);
  EXPECT_NE(TakeMessages().find("contiguous strides"), std::string::npos);
}

TEST_F(CreateTensorTest, RefusesNullStorageDims) {
  const int64_t view[] = {4};
  const int64_t strides[] = {1};
  EXPECT_EQ(aclCreateTensor(view, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, nullptr, 1, nullptr), nullptr);
  const std::string message = TakeMessages();
  EXPECT_NE(message.find("aclCreateTensor: storageDims must not be null"), std::string::npos) << message;
}

TEST_F(CreateTensorTest, RefusesNegativeViewDim) {
  TensorArgs a;
  a.view = {2, -3};
  ExpectRefused(a, {"viewDims[1]", "-3"});
}

TEST_F(CreateTensorTest, RefusesNegativeStorageDim) {
  TensorArgs a;
  a.storage = {-6};
  ExpectRefused(a, {"storageDims[0]", "-6"});
}

TEST_F(CreateTensorTest, RefusesUndefinedDataType) {
  TensorArgs a;
  a.dtype = ACL_DT_UNDEFINED;
  ExpectRefused(a, {"dataType -1", "not a valid aclDataType"});
}

TEST_F(CreateTensorTest, RefusesValuesOutsideTheDataTypeEnum) {
  // Values a C caller could pass; C++ code cannot even form an aclDataType outside [-32, 31] without undefined
  // behaviour, so wider ones are covered through pacl::IsKnownDataType(int) in test_tensor_objects.cpp.
  for (int value : {5, 14, 15, 18, 26, 28, 31, -2, -32}) {
    TensorArgs a;
    a.dtype = static_cast<aclDataType>(value);
    ExpectRefused(a, {"not a valid aclDataType", std::to_string(value).c_str()});
  }
}

TEST_F(CreateTensorTest, RefusesStringDataType) {
  TensorArgs a;
  a.dtype = ACL_STRING;
  ExpectRefused(a, {"STRING"});
}

TEST_F(CreateTensorTest, AcceptsEveryNumericDataType) {
  for (aclDataType dtype : {ACL_FLOAT, ACL_FLOAT16, ACL_INT8, ACL_INT32, ACL_UINT8, ACL_INT16, ACL_UINT16, ACL_UINT32,
                            ACL_INT64, ACL_UINT64, ACL_DOUBLE, ACL_BOOL, ACL_COMPLEX64, ACL_COMPLEX128, ACL_BF16}) {
    TensorArgs a;
    a.dtype = dtype;
    ExpectAccepted(a);
  }
}

TEST_F(CreateTensorTest, RefusesUndefinedFormat) {
  TensorArgs a;
  a.format = ACL_FORMAT_UNDEFINED;
  ExpectRefused(a, {"format -1", "not a valid aclFormat"});
}

TEST_F(CreateTensorTest, RefusesValuesOutsideTheFormatEnum) {
  for (int value : {5, 13, 28, 31, 48, 63, -7, -64}) {  // the enum's range is [-64, 63]
    TensorArgs a;
    a.format = static_cast<aclFormat>(value);
    ExpectRefused(a, {"not a valid aclFormat", std::to_string(value).c_str()});
  }
}

TEST_F(CreateTensorTest, AcceptsEveryFormat) {
  for (aclFormat format : {ACL_FORMAT_NCHW, ACL_FORMAT_NHWC, ACL_FORMAT_ND, ACL_FORMAT_NC1HWC0, ACL_FORMAT_FRACTAL_Z,
                           ACL_FORMAT_NC1HWC0_C04, ACL_FORMAT_HWCN, ACL_FORMAT_NDHWC, ACL_FORMAT_FRACTAL_NZ,
                           ACL_FORMAT_NCDHW, ACL_FORMAT_NDC1HWC0, ACL_FRACTAL_Z_3D, ACL_FORMAT_NC, ACL_FORMAT_NCL}) {
    TensorArgs a;
    a.format = format;
    ExpectAccepted(a);
  }
}

TEST_F(CreateTensorTest, RefusesNegativeOffset) {
  TensorArgs a;
  a.offset = -1;
  ExpectRefused(a, {"offset", "-1"});
}

TEST_F(CreateTensorTest, RefusesViewElementCountOverflow) {
  TensorArgs a;
  a.view = {int64_t{1} << 32, int64_t{1} << 32};
  a.strides = {0, 0};
  a.storage = {1};
  ExpectRefused(a, {"overflows int64", "viewDims"});
}

TEST_F(CreateTensorTest, RefusesStorageElementCountOverflow) {
  TensorArgs a;
  a.storage = {int64_t{1} << 32, int64_t{1} << 32};
  ExpectRefused(a, {"overflows int64", "storageDims"});
}

TEST_F(CreateTensorTest, RefusesStorageByteSizeOverflow) {
  TensorArgs a;
  a.storage = {int64_t{1} << 31, int64_t{1} << 31};  // 2^62 elements fit, 2^64 bytes of FLOAT do not
  ExpectRefused(a, {"overflows int64", "storageDims"});
  a.dtype = ACL_INT8;  // 2^62 bytes fit
  ExpectAccepted(a);
}

TEST_F(CreateTensorTest, RefusesStrideSpanOverflow) {
  TensorArgs a;
  a.view = {3};
  a.strides = {kInt64Max};
  a.storage = {8};
  ExpectRefused(a, {"overflow"});
  a.strides = {std::numeric_limits<int64_t>::min()};
  ExpectRefused(a, {"must not be negative"});
  // Each span fits but their sum does not.
  a.view = {2, 2};
  a.strides = {kInt64Max / 2 + 1, kInt64Max / 2 + 1};
  ExpectRefused(a, {"overflow"});
}

TEST_F(CreateTensorTest, ContiguousViewAtTheStorageEdge) {
  TensorArgs a;  // [2, 3] contiguous: elements offset .. offset + 5
  a.storage = {7};
  a.offset = 1;  // last element at index 6: the last valid one
  ExpectAccepted(a);
  a.offset = 2;  // last element at index 7: one past the end
  ExpectRefused(a, {"7", "outside storageDims [7]"});
}

TEST_F(CreateTensorTest, TransposedStrides) {
  TensorArgs a;  // a [3, 2] view of a row-major [2, 3] storage
  a.view = {3, 2};
  a.strides = {1, 3};
  a.storage = {2, 3};
  aclTensor* tensor = Create(a);
  ASSERT_NE(tensor, nullptr) << TakeMessages();
  EXPECT_FALSE(tensor->desc.IsContiguous());
  const int64_t index[] = {2, 1};
  EXPECT_EQ(tensor->desc.ElementAddress(index), static_cast<char*>(a.data) + 5 * 4);
  aclDestroyTensor(tensor);

  a.strides = {1, 4};  // reaches index 2 + 4 = 6 of 6 elements
  ExpectRefused(a, {"addresses storage elements 0 to 6", "outside storageDims [2, 3]"});
}

// CANN's aclCreateTensor takes no negative strides ("stride ... cannot be a negative number"): refused with the
// dim and the value, whatever the view's extent would be.
TEST_F(CreateTensorTest, NegativeStridesAreRefused) {
  TensorArgs a;  // what would be a reversed [3] view of storage [3]
  a.view = {3};
  a.strides = {-1};
  a.offset = 2;
  a.storage = {3};
  ExpectRefused(a, {"stride[0] must not be negative, got -1 in [-1]", "no negative strides"});

  // Mixed signs: rows reversed, columns forward, over a [2, 3] storage.
  a.view = {2, 3};
  a.strides = {-3, 1};
  a.offset = 3;
  a.storage = {2, 3};
  ExpectRefused(a, {"stride[0] must not be negative, got -3 in [-3, 1]"});
  a.strides = {3, -1};
  a.offset = 2;
  ExpectRefused(a, {"stride[1] must not be negative, got -1 in [3, -1]"});

  // Even where the dim has one element or none (the stride is never used, but CANN's rule has no exception).
  a.view = {1, 3};
  a.strides = {-5, 1};
  a.offset = 0;
  a.storage = {3};
  ExpectRefused(a, {"stride[0] must not be negative, got -5"});
  a.view = {0, 3};
  ExpectRefused(a, {"stride[0] must not be negative, got -5"});
}

TEST_F(CreateTensorTest, ZeroStrides) {
  TensorArgs a;  // a [4, 5] broadcast of one row of 5
  a.view = {4, 5};
  a.strides = {0, 1};
  a.storage = {5};
  ExpectAccepted(a);
  a.offset = 1;
  ExpectRefused(a, {"addresses storage elements 1 to 5"});
  // Every element the same storage element, the last one.
  a.strides = {0, 0};
  a.offset = 4;
  ExpectAccepted(a);
  a.offset = 5;
  ExpectRefused(a, {"addresses storage elements 5 to 5"});
}

// A size-1 dim's stride addresses nothing, so any value is valid; the kernels see the packed stride (product of the
// dims after it) so that none of them can overflow turning it into a byte step, and the getter returns the caller's.
TEST_F(CreateTensorTest, SizeOneDimsCarryThePackedStrideAndTheGetterTheCallersValue) {
  TensorArgs a;
  a.view = {1, 3, 1, 2, 1};
  a.strides = {kInt64Max, 2, 5, 1, kInt64Max - 1};
  a.storage = {6};
  aclTensor* tensor = Create(a);
  ASSERT_NE(tensor, nullptr) << TakeMessages();
  EXPECT_EQ(std::vector<int64_t>(tensor->desc.strides, tensor->desc.strides + 5),
            std::vector<int64_t>({6, 2, 2, 1, 1}));
  EXPECT_TRUE(tensor->desc.IsContiguous());
  int64_t* strides = nullptr;
  uint64_t count = 0;
  ASSERT_EQ(aclGetViewStrides(tensor, &strides, &count), ACLNN_SUCCESS);
  EXPECT_EQ(std::vector<int64_t>(strides, strides + count), a.strides);
  delete[] strides;
  aclDestroyTensor(tensor);

  // In an empty view the product of the dims after a size-1 dim may overflow: then every stride becomes 0.
  a.view = {0, 1, kInt64Max, 4};
  a.strides = {1, kInt64Max, 1, 1};
  tensor = Create(a);
  ASSERT_NE(tensor, nullptr) << TakeMessages();
  EXPECT_EQ(std::vector<int64_t>(tensor->desc.strides, tensor->desc.strides + 4), std::vector<int64_t>({0, 0, 0, 0}));
  aclDestroyTensor(tensor);
}

// An empty view addresses nothing, so any strides are accepted (CANN's rule); the kernels see packed ones (a dim of
// size 0 counting as 1), so that no row address formed from them overflows (the fifth fuzz crash: an MSDA value of
// 0 keys with a batch stride near 2^62 read in place), and aclGetViewStrides returns the caller's.
TEST_F(CreateTensorTest, EmptyViewsCarryPackedStridesAndTheGetterTheCallersValue) {
  TensorArgs a;
  a.view = {2, 0, 2, 16};
  a.strides = {4990906807096201311, 4294967297, 235, 1};
  a.storage = {0};
  aclTensor* tensor = Create(a);
  ASSERT_NE(tensor, nullptr) << TakeMessages();
  EXPECT_EQ(std::vector<int64_t>(tensor->desc.strides, tensor->desc.strides + 4),
            std::vector<int64_t>({32, 32, 16, 1}));
  int64_t* strides = nullptr;
  uint64_t count = 0;
  ASSERT_EQ(aclGetViewStrides(tensor, &strides, &count), ACLNN_SUCCESS);
  EXPECT_EQ(std::vector<int64_t>(strides, strides + count), a.strides);
  delete[] strides;
  aclDestroyTensor(tensor);
}

TEST_F(CreateTensorTest, EmptyViewAcceptsAnyNonNegativeStridesWithOffsetUpToStorageSize) {
  TensorArgs a;
  a.view = {0, 3};
  a.strides = {kInt64Max, 7};
  a.storage = {6};
  a.offset = 6;
  ExpectAccepted(a);
  a.offset = 7;
  ExpectRefused(a, {"offset 7", "empty view"});

  a.view = {0};
  a.strides = {1};
  a.storage = {0};
  a.offset = 0;
  a.data = nullptr;
  aclTensor* tensor = Create(a);
  ASSERT_NE(tensor, nullptr) << TakeMessages();
  EXPECT_EQ(tensor->desc.NumElements(), 0);
  EXPECT_TRUE(tensor->desc.IsContiguous());
  aclDestroyTensor(tensor);
}

TEST_F(CreateTensorTest, NonEmptyViewOverEmptyStorageIsRefused) {
  TensorArgs a;
  a.storage = {0};
  ExpectRefused(a, {"outside storageDims [0]"});
}

TEST_F(CreateTensorTest, RankZeroScalarTensor) {
  double value = 2.5;
  aclTensor* tensor = aclCreateTensor(nullptr, 0, ACL_DOUBLE, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, &value);
  ASSERT_NE(tensor, nullptr) << TakeMessages();
  int64_t* dims = reinterpret_cast<int64_t*>(0x1);
  uint64_t count = 99;
  EXPECT_EQ(aclGetViewShape(tensor, &dims, &count), ACLNN_SUCCESS);
  EXPECT_EQ(dims, nullptr);
  EXPECT_EQ(count, 0u);
  dims = reinterpret_cast<int64_t*>(0x1);
  count = 99;
  EXPECT_EQ(aclGetViewStrides(tensor, &dims, &count), ACLNN_SUCCESS);
  EXPECT_EQ(dims, nullptr);
  EXPECT_EQ(count, 0u);
  dims = reinterpret_cast<int64_t*>(0x1);
  count = 99;
  EXPECT_EQ(aclGetStorageShape(tensor, &dims, &count), ACLNN_SUCCESS);
  EXPECT_EQ(dims, nullptr);
  EXPECT_EQ(count, 0u);
  EXPECT_EQ(tensor->desc.NumElements(), 1);
  EXPECT_EQ(tensor->desc.ShapeString(), "[]");
  EXPECT_EQ(*reinterpret_cast<double*>(tensor->desc.ElementAddress(nullptr)), 2.5);
  aclDestroyTensor(tensor);

  // A rank-0 view over storage [1] at offset 0 is fine, at offset 1 it is outside.
  const int64_t storage[] = {1};
  tensor = aclCreateTensor(nullptr, 0, ACL_DOUBLE, nullptr, 0, ACL_FORMAT_ND, storage, 1, &value);
  EXPECT_NE(tensor, nullptr) << TakeMessages();
  aclDestroyTensor(tensor);
  EXPECT_EQ(aclCreateTensor(nullptr, 0, ACL_DOUBLE, nullptr, 1, ACL_FORMAT_ND, storage, 1, &value), nullptr);
  EXPECT_NE(TakeMessages().find("addresses storage elements 1 to 1"), std::string::npos);
  const int64_t empty_storage[] = {0};
  EXPECT_EQ(aclCreateTensor(nullptr, 0, ACL_DOUBLE, nullptr, 0, ACL_FORMAT_ND, empty_storage, 1, &value), nullptr);
  EXPECT_NE(TakeMessages().find("outside storageDims [0]"), std::string::npos);
}

TEST_F(CreateTensorTest, NullDataIsAllowed) {
  TensorArgs a;
  a.data = nullptr;
  aclTensor* tensor = Create(a);
  ASSERT_NE(tensor, nullptr) << TakeMessages();
  EXPECT_EQ(tensor->desc.data, nullptr);
  aclDestroyTensor(tensor);
}

TEST_F(CreateTensorTest, TheTensorKeepsCopiesOfTheArrays) {
  TensorArgs a;
  aclTensor* tensor = Create(a);
  ASSERT_NE(tensor, nullptr);
  a.view[0] = 100;
  a.strides[0] = 100;
  a.storage[0] = 100;
  EXPECT_EQ(tensor->desc.shape[0], 2);
  EXPECT_EQ(tensor->desc.strides[0], 3);
  EXPECT_EQ(tensor->desc.storage_shape[0], 6);
  aclDestroyTensor(tensor);
}

TEST_F(CreateTensorTest, GettersRefuseNullArguments) {
  TensorArgs a;
  aclTensor* tensor = Create(a);
  ASSERT_NE(tensor, nullptr);
  int64_t* dims = nullptr;
  uint64_t count = 0;
  TakeMessages();

  auto expect = [](aclnnStatus status, const char* expected) {
    EXPECT_EQ(status, ACLNN_ERR_PARAM_NULLPTR) << expected;
    const std::string message = TakeMessages();
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  };
  expect(aclGetViewShape(nullptr, &dims, &count), "aclGetViewShape: tensor must not be null");
  expect(aclGetViewShape(tensor, nullptr, &count), "aclGetViewShape: viewDims must not be null");
  expect(aclGetViewShape(tensor, &dims, nullptr), "aclGetViewShape: viewDimsNum must not be null");
  expect(aclGetStorageShape(nullptr, &dims, &count), "aclGetStorageShape: tensor must not be null");
  expect(aclGetStorageShape(tensor, nullptr, &count), "aclGetStorageShape: storageDims must not be null");
  expect(aclGetStorageShape(tensor, &dims, nullptr), "aclGetStorageShape: storageDimsNum must not be null");
  expect(aclGetViewStrides(nullptr, &dims, &count), "aclGetViewStrides: tensor must not be null");
  expect(aclGetViewStrides(tensor, nullptr, &count), "aclGetViewStrides: stridesValue must not be null");
  expect(aclGetViewStrides(tensor, &dims, nullptr), "aclGetViewStrides: stridesNum must not be null");
  int64_t offset = 0;
  expect(aclGetViewOffset(nullptr, &offset), "aclGetViewOffset: tensor must not be null");
  expect(aclGetViewOffset(tensor, nullptr), "aclGetViewOffset: offset must not be null");
  aclFormat format = ACL_FORMAT_ND;
  expect(aclGetFormat(nullptr, &format), "aclGetFormat: tensor must not be null");
  expect(aclGetFormat(tensor, nullptr), "aclGetFormat: format must not be null");
  aclDataType dtype = ACL_FLOAT;
  expect(aclGetDataType(nullptr, &dtype), "aclGetDataType: tensor must not be null");
  expect(aclGetDataType(tensor, nullptr), "aclGetDataType: dataType must not be null");
  EXPECT_EQ(dims, nullptr);  // no failing call wrote through its out-pointers
  EXPECT_EQ(count, 0u);
  aclDestroyTensor(tensor);
}

TEST_F(CreateTensorTest, DestroyNullIsANoOp) { EXPECT_EQ(aclDestroyTensor(nullptr), ACLNN_SUCCESS); }

// TensorDesc's methods on hand-built descriptions.
pacl::TensorDesc Desc(std::vector<int64_t> shape, std::vector<int64_t> strides, aclDataType dtype = ACL_FLOAT) {
  pacl::TensorDesc desc;
  desc.dtype = dtype;
  desc.format = ACL_FORMAT_ND;
  desc.rank = static_cast<int>(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    desc.shape[d] = shape[d];
    desc.strides[d] = strides[d];
  }
  return desc;
}

TEST(TensorDescTest, NumElements) {
  EXPECT_EQ(Desc({2, 3, 5}, {15, 5, 1}).NumElements(), 30);
  EXPECT_EQ(Desc({}, {}).NumElements(), 1);
  EXPECT_EQ(Desc({4, 0, 7}, {0, 7, 1}).NumElements(), 0);
}

TEST(TensorDescTest, IsContiguous) {
  EXPECT_TRUE(Desc({2, 3, 5}, {15, 5, 1}).IsContiguous());
  EXPECT_FALSE(Desc({2, 3, 5}, {16, 5, 1}).IsContiguous());
  EXPECT_FALSE(Desc({2, 3}, {1, 2}).IsContiguous());
  EXPECT_FALSE(Desc({3}, {2}).IsContiguous());
  EXPECT_FALSE(Desc({3}, {-1}).IsContiguous());
  EXPECT_FALSE(Desc({3, 4}, {0, 1}).IsContiguous());
  // Size-1 dims may have any stride.
  EXPECT_TRUE(Desc({1, 3, 1, 5}, {999, 5, -4, 1}).IsContiguous());
  EXPECT_TRUE(Desc({1}, {0}).IsContiguous());
  // Empty tensors and rank 0.
  EXPECT_TRUE(Desc({4, 0, 7}, {-3, 99, 5}).IsContiguous());
  EXPECT_TRUE(Desc({}, {}).IsContiguous());
}

TEST(TensorDescTest, ShapeString) {
  EXPECT_EQ(Desc({2, 3, 5}, {15, 5, 1}).ShapeString(), "[2, 3, 5]");
  EXPECT_EQ(Desc({7}, {1}).ShapeString(), "[7]");
  EXPECT_EQ(Desc({}, {}).ShapeString(), "[]");
  EXPECT_EQ(Desc({0, 4}, {4, 1}).ShapeString(), "[0, 4]");
}

TEST(TensorDescTest, ElementSize) {
  EXPECT_EQ(Desc({1}, {1}, ACL_FLOAT).ElementSize(), 4u);
  EXPECT_EQ(Desc({1}, {1}, ACL_FLOAT16).ElementSize(), 2u);
  EXPECT_EQ(Desc({1}, {1}, ACL_BF16).ElementSize(), 2u);
  EXPECT_EQ(Desc({1}, {1}, ACL_DOUBLE).ElementSize(), 8u);
  EXPECT_EQ(Desc({1}, {1}, ACL_BOOL).ElementSize(), 1u);
  EXPECT_EQ(Desc({1}, {1}, ACL_INT64).ElementSize(), 8u);
  EXPECT_EQ(Desc({1}, {1}, ACL_COMPLEX128).ElementSize(), 16u);
}

TEST(TensorDescTest, ElementAddressFollowsStridesAndOffset) {
  pacl::TensorDesc desc = Desc({2, 3}, {-3, 1}, ACL_FLOAT16);
  desc.offset = 3;
  char storage[12];
  desc.data = storage;
  const int64_t first[] = {0, 0};
  const int64_t last[] = {1, 2};
  EXPECT_EQ(desc.ElementAddress(first), storage + 3 * 2);
  EXPECT_EQ(desc.ElementAddress(last), storage + 2 * 2);
}

}  // namespace

namespace {

pacl::TensorDesc ViewOf(std::vector<int64_t> shape, std::vector<int64_t> strides) {
  pacl::TensorDesc desc;
  desc.dtype = ACL_FLOAT;
  desc.rank = static_cast<int>(shape.size());
  for (int d = 0; d < desc.rank; ++d) {
    desc.shape[d] = shape[d];
    desc.strides[d] = strides[d];
  }
  return desc;
}

TEST(TensorDescTest, StridesStringListsTheStrides) {
  EXPECT_EQ(ViewOf({2, 3}, {1, -2}).StridesString(), "[1, -2]");
  EXPECT_EQ(ViewOf({}, {}).StridesString(), "[]");
}

TEST(TensorDescTest, DistinctElementsForPackedTransposedAndPaddedViews) {
  EXPECT_TRUE(ViewOf({2, 3, 4}, {12, 4, 1}).ElementsAreDistinct());
  EXPECT_TRUE(ViewOf({2, 3, 4}, {12, 1, 3}).ElementsAreDistinct());   // last two dims transposed
  EXPECT_TRUE(ViewOf({2, 3, 4}, {40, 10, 2}).ElementsAreDistinct());  // padded
  EXPECT_TRUE(ViewOf({3, 4}, {-4, 1}).ElementsAreDistinct());         // negative stride
  EXPECT_TRUE(ViewOf({1, 5}, {0, 1}).ElementsAreDistinct());          // stride 0 on a size-1 dim
  EXPECT_TRUE(ViewOf({0, 5}, {0, 0}).ElementsAreDistinct());          // no elements
}

// Views over one float buffer of 64 elements (offsets and strides in elements).
pacl::TensorDesc ViewAt(float* data, std::vector<int64_t> shape, std::vector<int64_t> strides, int64_t offset) {
  pacl::TensorDesc desc = ViewOf(std::move(shape), std::move(strides));
  desc.data = data;
  desc.offset = offset;
  return desc;
}

TEST(TensorDescTest, SharedMemoryIsTheIntersectionOfTheViewsByteRanges) {
  float buffer[64];
  const pacl::TensorDesc rows_0_to_3 = ViewAt(buffer, {4, 8}, {8, 1}, 0);
  const pacl::TensorDesc rows_4_to_7 = ViewAt(buffer, {4, 8}, {8, 1}, 32);
  EXPECT_FALSE(rows_0_to_3.MayShareMemoryWith(rows_4_to_7));  // adjacent, not overlapping
  EXPECT_FALSE(rows_4_to_7.MayShareMemoryWith(rows_0_to_3));
  EXPECT_TRUE(rows_0_to_3.MayShareMemoryWith(ViewAt(buffer, {1}, {1}, 31)));  // its last element
  EXPECT_TRUE(rows_0_to_3.MayShareMemoryWith(rows_0_to_3));
  // A transposed view reaches from its offset to offset + 31; one with a negative stride starts below its offset.
  EXPECT_TRUE(rows_4_to_7.MayShareMemoryWith(ViewAt(buffer, {8, 4}, {1, 8}, 1)));
  EXPECT_TRUE(rows_0_to_3.MayShareMemoryWith(ViewAt(buffer, {2}, {-8}, 33)));  // elements 33 and 25
  EXPECT_FALSE(rows_0_to_3.MayShareMemoryWith(ViewAt(buffer, {2}, {-8}, 48)));
  // Interleaved views share no element but are reported (a sufficient test).
  EXPECT_TRUE(ViewAt(buffer, {32}, {2}, 0).MayShareMemoryWith(ViewAt(buffer, {32}, {2}, 1)));
  // No elements, or no data: nothing shared.
  EXPECT_FALSE(rows_0_to_3.MayShareMemoryWith(ViewAt(buffer, {0, 8}, {8, 1}, 0)));
  EXPECT_FALSE(rows_0_to_3.MayShareMemoryWith(ViewAt(nullptr, {4, 8}, {8, 1}, 0)));
}

TEST(TensorDescTest, ElementRangeSpansTheLowestToTheHighestElement) {
  float buffer[64];
  int64_t lowest = -1;
  int64_t highest = -1;
  ASSERT_TRUE(ViewAt(buffer, {4, 8}, {8, 1}, 32).ElementRange(&lowest, &highest));
  EXPECT_EQ(lowest, 32);
  EXPECT_EQ(highest, 63);
  ASSERT_TRUE(ViewAt(buffer, {3, 2}, {-8, 3}, 20).ElementRange(&lowest, &highest));  // 4, 7, ..., 20, 23
  EXPECT_EQ(lowest, 4);
  EXPECT_EQ(highest, 23);
  ASSERT_TRUE(ViewAt(buffer, {5, 1}, {0, 9}, 7).ElementRange(&lowest, &highest));  // broadcast: one element
  EXPECT_EQ(lowest, 7);
  EXPECT_EQ(highest, 7);
  EXPECT_FALSE(ViewAt(buffer, {0, 8}, {8, 1}, 0).ElementRange(&lowest, &highest));  // no elements
}

TEST(TensorDescTest, OverlappingElementsAreDetected) {
  EXPECT_FALSE(ViewOf({2, 5}, {0, 1}).ElementsAreDistinct());  // broadcast row
  EXPECT_FALSE(ViewOf({3, 4}, {2, 1}).ElementsAreDistinct());  // rows overlap by two elements
  EXPECT_FALSE(ViewOf({4, 4}, {1, 1}).ElementsAreDistinct());  // sliding window
  EXPECT_FALSE(ViewOf({2, 3}, {3, 0}).ElementsAreDistinct());
}

}  // namespace
