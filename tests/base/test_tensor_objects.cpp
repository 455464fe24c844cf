// Scalars, int/float/bool arrays, tensor lists and scalar lists, and the format helpers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn/opdev/op_errno.h"
#include "pacl/tensor_objects.h"

namespace {

std::string TakeMessages() {
  const char* text = aclGetRecentErrMsg();
  return text != nullptr ? std::string(text) : std::string();
}

void ExpectMessage(const char* expected) {
  const std::string message = TakeMessages();
  EXPECT_NE(message.find(expected), std::string::npos) << "expected \"" << expected << "\" in: " << message;
}

class TensorObjectsTest : public ::testing::Test {
 protected:
  void SetUp() override { TakeMessages(); }
};

template <class T>
double ScalarValue(T value, aclDataType dtype) {
  aclScalar* scalar = aclCreateScalar(&value, dtype);
  EXPECT_NE(scalar, nullptr) << TakeMessages();
  if (scalar == nullptr) return std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(scalar->dtype, dtype);
  const double result = pacl::ScalarToDouble(*scalar);
  EXPECT_EQ(aclDestroyScalar(scalar), ACLNN_SUCCESS);
  return result;
}

TEST_F(TensorObjectsTest, ScalarsCopyTheirValueInItsOwnType) {
  EXPECT_EQ(ScalarValue(-1.75f, ACL_FLOAT), -1.75);
  EXPECT_EQ(ScalarValue(0.1, ACL_DOUBLE), 0.1);
  EXPECT_EQ(ScalarValue(uint16_t{0xC100}, ACL_FLOAT16), -2.5);                  // fp16 bits of -2.5
  EXPECT_EQ(ScalarValue(uint16_t{0x0001}, ACL_FLOAT16), std::ldexp(1.0, -24));  // smallest subnormal
  EXPECT_EQ(ScalarValue(uint16_t{0x4049}, ACL_BF16), 3.140625);
  EXPECT_EQ(ScalarValue(int8_t{-5}, ACL_INT8), -5.0);
  EXPECT_EQ(ScalarValue(uint8_t{200}, ACL_UINT8), 200.0);
  EXPECT_EQ(ScalarValue(int16_t{-30000}, ACL_INT16), -30000.0);
  EXPECT_EQ(ScalarValue(uint16_t{60000}, ACL_UINT16), 60000.0);
  EXPECT_EQ(ScalarValue(int32_t{-123456789}, ACL_INT32), -123456789.0);
  EXPECT_EQ(ScalarValue(uint32_t{4000000000u}, ACL_UINT32), 4000000000.0);
  EXPECT_EQ(ScalarValue(int64_t{-(int64_t{1} << 50)}, ACL_INT64), -std::ldexp(1.0, 50));
  EXPECT_EQ(ScalarValue(uint64_t{1} << 63, ACL_UINT64), std::ldexp(1.0, 63));
  EXPECT_EQ(ScalarValue(uint8_t{1}, ACL_BOOL), 1.0);
  EXPECT_EQ(ScalarValue(uint8_t{0}, ACL_BOOL), 0.0);
  const float complex64[2] = {6.5f, -1.0f};
  aclScalar* scalar = aclCreateScalar(const_cast<float*>(complex64), ACL_COMPLEX64);
  ASSERT_NE(scalar, nullptr);
  EXPECT_EQ(pacl::ScalarToDouble(*scalar), 6.5);
  EXPECT_EQ(std::memcmp(scalar->bytes, complex64, sizeof complex64), 0);
  aclDestroyScalar(scalar);
  const double complex128[2] = {-0.25, 9.0};
  scalar = aclCreateScalar(const_cast<double*>(complex128), ACL_COMPLEX128);
  ASSERT_NE(scalar, nullptr);
  EXPECT_EQ(pacl::ScalarToDouble(*scalar), -0.25);
  EXPECT_EQ(std::memcmp(scalar->bytes, complex128, sizeof complex128), 0);
  aclDestroyScalar(scalar);
}

TEST_F(TensorObjectsTest, ScalarIsACopy) {
  float value = 3.0f;
  aclScalar* scalar = aclCreateScalar(&value, ACL_FLOAT);
  ASSERT_NE(scalar, nullptr);
  value = 4.0f;
  EXPECT_EQ(pacl::ScalarToDouble(*scalar), 3.0);
  aclDestroyScalar(scalar);
}

TEST_F(TensorObjectsTest, ScalarRefusesNullValueAndUnsupportedTypes) {
  EXPECT_EQ(aclCreateScalar(nullptr, ACL_FLOAT), nullptr);
  ExpectMessage("aclCreateScalar: value must not be null");
  double value = 1.0;
  EXPECT_EQ(aclCreateScalar(&value, ACL_STRING), nullptr);
  ExpectMessage("aclCreateScalar: dataType 13");
  EXPECT_EQ(aclCreateScalar(&value, ACL_DT_UNDEFINED), nullptr);
  ExpectMessage("aclCreateScalar: dataType -1");
  EXPECT_EQ(aclCreateScalar(&value, static_cast<aclDataType>(5)), nullptr);
  ExpectMessage("aclCreateScalar: dataType 5");
  EXPECT_EQ(aclDestroyScalar(nullptr), ACLNN_SUCCESS);
}

TEST_F(TensorObjectsTest, IntArray) {
  std::vector<int64_t> values = {3, -1, std::numeric_limits<int64_t>::max(), 0};
  aclIntArray* array = aclCreateIntArray(values.data(), values.size());
  ASSERT_NE(array, nullptr);
  values[0] = 77;
  EXPECT_EQ(array->values, std::vector<int64_t>({3, -1, std::numeric_limits<int64_t>::max(), 0}));
  uint64_t size = 0;
  EXPECT_EQ(aclGetIntArraySize(array, &size), ACLNN_SUCCESS);
  EXPECT_EQ(size, 4u);
  EXPECT_EQ(aclGetIntArraySize(array, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  ExpectMessage("aclGetIntArraySize: size must not be null");
  EXPECT_EQ(aclGetIntArraySize(nullptr, &size), ACLNN_ERR_PARAM_NULLPTR);
  ExpectMessage("aclGetIntArraySize: array must not be null");
  EXPECT_EQ(aclDestroyIntArray(array), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyIntArray(nullptr), ACLNN_SUCCESS);
}

TEST_F(TensorObjectsTest, FloatArray) {
  const float values[] = {0.5f, -2.0f, std::numeric_limits<float>::infinity()};
  aclFloatArray* array = aclCreateFloatArray(values, 3);
  ASSERT_NE(array, nullptr);
  EXPECT_EQ(array->values, std::vector<float>(values, values + 3));
  uint64_t size = 0;
  EXPECT_EQ(aclGetFloatArraySize(array, &size), ACLNN_SUCCESS);
  EXPECT_EQ(size, 3u);
  EXPECT_EQ(aclGetFloatArraySize(nullptr, &size), ACLNN_ERR_PARAM_NULLPTR);
  ExpectMessage("aclGetFloatArraySize: array must not be null");
  EXPECT_EQ(aclDestroyFloatArray(array), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyFloatArray(nullptr), ACLNN_SUCCESS);
}

TEST_F(TensorObjectsTest, BoolArray) {
  const bool values[] = {true, false, true};
  aclBoolArray* array = aclCreateBoolArray(values, 3);
  ASSERT_NE(array, nullptr);
  EXPECT_EQ(array->values, std::vector<bool>({true, false, true}));
  uint64_t size = 0;
  EXPECT_EQ(aclGetBoolArraySize(array, &size), ACLNN_SUCCESS);
  EXPECT_EQ(size, 3u);
  EXPECT_EQ(aclGetBoolArraySize(array, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  ExpectMessage("aclGetBoolArraySize: size must not be null");
  EXPECT_EQ(aclDestroyBoolArray(array), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyBoolArray(nullptr), ACLNN_SUCCESS);

  // A C caller may pass bytes other than 0 and 1; any non-zero byte is true.
  const unsigned char bytes[] = {0, 2, 255};
  array = aclCreateBoolArray(reinterpret_cast<const bool*>(bytes), 3);
  ASSERT_NE(array, nullptr);
  EXPECT_EQ(array->values, std::vector<bool>({false, true, true}));
  aclDestroyBoolArray(array);
}

TEST_F(TensorObjectsTest, EmptyArraysMayHaveANullPointer) {
  aclIntArray* ints = aclCreateIntArray(nullptr, 0);
  aclFloatArray* floats = aclCreateFloatArray(nullptr, 0);
  aclBoolArray* bools = aclCreateBoolArray(nullptr, 0);
  aclTensorList* tensors = aclCreateTensorList(nullptr, 0);
  aclScalarList* scalars = aclCreateScalarList(nullptr, 0);
  ASSERT_NE(ints, nullptr);
  ASSERT_NE(floats, nullptr);
  ASSERT_NE(bools, nullptr);
  ASSERT_NE(tensors, nullptr);
  ASSERT_NE(scalars, nullptr);
  uint64_t size = 99;
  EXPECT_EQ(aclGetIntArraySize(ints, &size), ACLNN_SUCCESS);
  EXPECT_EQ(size, 0u);
  size = 99;
  EXPECT_EQ(aclGetFloatArraySize(floats, &size), ACLNN_SUCCESS);
  EXPECT_EQ(size, 0u);
  size = 99;
  EXPECT_EQ(aclGetBoolArraySize(bools, &size), ACLNN_SUCCESS);
  EXPECT_EQ(size, 0u);
  size = 99;
  EXPECT_EQ(aclGetTensorListSize(tensors, &size), ACLNN_SUCCESS);
  EXPECT_EQ(size, 0u);
  size = 99;
  EXPECT_EQ(aclGetScalarListSize(scalars, &size), ACLNN_SUCCESS);
  EXPECT_EQ(size, 0u);
  aclDestroyIntArray(ints);
  aclDestroyFloatArray(floats);
  aclDestroyBoolArray(bools);
  aclDestroyTensorList(tensors);
  aclDestroyScalarList(scalars);
}

TEST_F(TensorObjectsTest, NonEmptyArraysRefuseANullPointer) {
  EXPECT_EQ(aclCreateIntArray(nullptr, 2), nullptr);
  ExpectMessage("aclCreateIntArray: value must not be null when size is 2");
  EXPECT_EQ(aclCreateFloatArray(nullptr, 1), nullptr);
  ExpectMessage("aclCreateFloatArray: value must not be null when size is 1");
  EXPECT_EQ(aclCreateBoolArray(nullptr, 3), nullptr);
  ExpectMessage("aclCreateBoolArray: value must not be null when size is 3");
  EXPECT_EQ(aclCreateTensorList(nullptr, 4), nullptr);
  ExpectMessage("aclCreateTensorList: value must not be null when size is 4");
  EXPECT_EQ(aclCreateScalarList(nullptr, 5), nullptr);
  ExpectMessage("aclCreateScalarList: value must not be null when size is 5");
}

aclTensor* SmallTensor(float* data) {
  const int64_t dims[] = {2};
  const int64_t strides[] = {1};
  return aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 1, data);
}

TEST_F(TensorObjectsTest, TensorListKeepsTheCallersPointers) {
  float data[4] = {};
  aclTensor* first = SmallTensor(data);
  aclTensor* second = SmallTensor(data + 2);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  const aclTensor* elements[] = {first, second, first};
  aclTensorList* list = aclCreateTensorList(elements, 3);
  ASSERT_NE(list, nullptr);
  EXPECT_EQ(list->tensors, std::vector<const aclTensor*>({first, second, first}));
  uint64_t size = 0;
  EXPECT_EQ(aclGetTensorListSize(list, &size), ACLNN_SUCCESS);
  EXPECT_EQ(size, 3u);
  EXPECT_EQ(aclGetTensorListSize(nullptr, &size), ACLNN_ERR_PARAM_NULLPTR);
  ExpectMessage("aclGetTensorListSize: tensorList must not be null");
  EXPECT_EQ(aclGetTensorListSize(list, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  ExpectMessage("aclGetTensorListSize: size must not be null");
  // The list does not own its tensors: they stay usable after it is destroyed (ASan would flag a double free).
  EXPECT_EQ(aclDestroyTensorList(list), ACLNN_SUCCESS);
  EXPECT_EQ(first->desc.data, static_cast<void*>(data));
  EXPECT_EQ(aclDestroyTensor(first), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensor(second), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensorList(nullptr), ACLNN_SUCCESS);
}

TEST_F(TensorObjectsTest, TensorListRefusesANullElement) {
  float data[2] = {};
  aclTensor* tensor = SmallTensor(data);
  const aclTensor* elements[] = {tensor, nullptr};
  EXPECT_EQ(aclCreateTensorList(elements, 2), nullptr);
  ExpectMessage("aclCreateTensorList: value[1] must not be null");
  aclDestroyTensor(tensor);
}

TEST_F(TensorObjectsTest, ScalarList) {
  float one = 1.0f;
  int32_t two = 2;
  aclScalar* a = aclCreateScalar(&one, ACL_FLOAT);
  aclScalar* b = aclCreateScalar(&two, ACL_INT32);
  const aclScalar* elements[] = {a, b};
  aclScalarList* list = aclCreateScalarList(elements, 2);
  ASSERT_NE(list, nullptr);
  EXPECT_EQ(list->scalars, std::vector<const aclScalar*>({a, b}));
  uint64_t size = 0;
  EXPECT_EQ(aclGetScalarListSize(list, &size), ACLNN_SUCCESS);
  EXPECT_EQ(size, 2u);
  EXPECT_EQ(aclGetScalarListSize(nullptr, &size), ACLNN_ERR_PARAM_NULLPTR);
  ExpectMessage("aclGetScalarListSize: scalarList must not be null");
  EXPECT_EQ(aclDestroyScalarList(list), ACLNN_SUCCESS);
  EXPECT_EQ(pacl::ScalarToDouble(*b), 2.0);
  aclDestroyScalar(a);
  aclDestroyScalar(b);
  EXPECT_EQ(aclDestroyScalarList(nullptr), ACLNN_SUCCESS);

  const aclScalar* with_null[] = {nullptr};
  EXPECT_EQ(aclCreateScalarList(with_null, 1), nullptr);
  ExpectMessage("aclCreateScalarList: value[0] must not be null");
}

TEST_F(TensorObjectsTest, HugeArraysFailCleanly) {
  // The size is checked before the (never read) values: the allocation fails and is reported.
  const int64_t one = 1;
  EXPECT_EQ(aclCreateIntArray(&one, std::numeric_limits<uint64_t>::max()), nullptr);
  ExpectMessage("aclCreateIntArray: cannot allocate");
}

TEST(FormatHelpersTest, NamesAndKnownFormats) {
  EXPECT_EQ(pacl::FormatName(ACL_FORMAT_ND), "ND");
  EXPECT_EQ(pacl::FormatName(ACL_FORMAT_FRACTAL_NZ), "FRACTAL_NZ");
  EXPECT_EQ(pacl::FormatName(ACL_FRACTAL_Z_3D), "FRACTAL_Z_3D");
  EXPECT_EQ(pacl::FormatName(ACL_FORMAT_UNDEFINED), "UNDEFINED");
  EXPECT_EQ(pacl::FormatName(5), "UNKNOWN(5)");
  EXPECT_EQ(pacl::FormatName(1000), "UNKNOWN(1000)");
  EXPECT_TRUE(pacl::IsKnownFormat(ACL_FORMAT_NCL));
  EXPECT_FALSE(pacl::IsKnownFormat(ACL_FORMAT_UNDEFINED));
  EXPECT_FALSE(pacl::IsKnownFormat(48));
  EXPECT_FALSE(pacl::IsKnownFormat(1000));
  EXPECT_FALSE(pacl::IsKnownFormat(-1000000));
}

TEST(FormatHelpersTest, KnownDataTypes) {
  EXPECT_TRUE(pacl::IsKnownDataType(ACL_BF16));
  EXPECT_TRUE(pacl::IsKnownDataType(ACL_STRING));  // an enumerator; tensors and scalars refuse it separately
  EXPECT_FALSE(pacl::IsKnownDataType(ACL_DT_UNDEFINED));
  EXPECT_FALSE(pacl::IsKnownDataType(5));
  EXPECT_FALSE(pacl::IsKnownDataType(1000));
  aclDataType from_c;  // as a C caller would pass it
  const int c_value = 1000;
  std::memcpy(&from_c, &c_value, sizeof from_c);
  EXPECT_EQ(pacl::EnumValue(from_c), 1000);
}

}  // namespace
