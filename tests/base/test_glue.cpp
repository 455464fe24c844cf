// OpChecker's rules, status codes and exact messages; aclnnInit / aclnnFinalize.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "pacl/op_glue.h"
#include "pacl/runtime.h"
#include "pacl/tensor.h"

namespace {

std::string TakeMessages() {
  const char* text = aclGetRecentErrMsg();
  return text != nullptr ? std::string(text) : std::string();
}

pacl::TensorDesc Desc(std::vector<int64_t> shape, aclDataType dtype = ACL_FLOAT, aclFormat format = ACL_FORMAT_ND) {
  pacl::TensorDesc desc;
  desc.dtype = dtype;
  desc.format = format;
  desc.rank = static_cast<int>(shape.size());
  int64_t stride = 1;
  for (int d = desc.rank - 1; d >= 0; --d) {
    desc.shape[d] = shape[static_cast<size_t>(d)];
    desc.strides[d] = stride;
    stride *= shape[static_cast<size_t>(d)];
  }
  return desc;
}

class OpCheckerTest : public ::testing::Test {
 protected:
  void SetUp() override { TakeMessages(); }

  // Expects check to have failed with status and exactly the message expected (the only one recorded).
  static void ExpectFailure(const pacl::OpChecker& check, aclnnStatus status, const std::string& expected) {
    EXPECT_FALSE(check.ok());
    EXPECT_EQ(check.status(), status);
    EXPECT_EQ(TakeMessages(), expected);
  }
};

TEST_F(OpCheckerTest, StartsOk) {
  pacl::OpChecker check("aclnnTest");
  EXPECT_TRUE(check.ok());
  EXPECT_EQ(check.status(), ACLNN_SUCCESS);
  EXPECT_STREQ(check.op_name(), "aclnnTest");
}

TEST_F(OpCheckerTest, NotNull) {
  int value = 0;
  pacl::OpChecker check("aclnnTest");
  EXPECT_TRUE(check.NotNull(&value, "x"));
  EXPECT_TRUE(check.ok());
  EXPECT_FALSE(check.NotNull(nullptr, "x"));
  ExpectFailure(check, ACLNN_ERR_PARAM_NULLPTR, "aclnnTest: x must not be null");
}

TEST_F(OpCheckerTest, OutPointers) {
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  pacl::OpChecker good("aclnnTest");
  EXPECT_TRUE(good.OutPointers(&size, &executor));
  EXPECT_TRUE(good.ok());

  pacl::OpChecker no_size("aclnnTest");
  EXPECT_FALSE(no_size.OutPointers(nullptr, &executor));
  ExpectFailure(no_size, ACLNN_ERR_PARAM_NULLPTR, "aclnnTest: workspaceSize must not be null");

  pacl::OpChecker no_executor("aclnnTest");
  EXPECT_FALSE(no_executor.OutPointers(&size, nullptr));
  ExpectFailure(no_executor, ACLNN_ERR_PARAM_NULLPTR, "aclnnTest: executor must not be null");
}

TEST_F(OpCheckerTest, Tensor) {
  // Normal mode's checks, on host buffers, which strict mode refuses (tests/strict/).
  if (pacl::rt::StrictMode()) GTEST_SKIP() << "not in strict mode: it refuses host memory as tensor data";
  float data[6] = {};
  const int64_t dims[] = {2, 3};
  const int64_t strides[] = {3, 1};
  const int64_t storage[] = {6};
  aclTensor* with_data = aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, data);
  aclTensor* without_data = aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, nullptr);
  const int64_t empty_dims[] = {0, 3};
  aclTensor* empty = aclCreateTensor(empty_dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, nullptr);
  ASSERT_NE(with_data, nullptr);
  ASSERT_NE(without_data, nullptr);
  ASSERT_NE(empty, nullptr);

  pacl::OpChecker good("aclnnTest");
  EXPECT_TRUE(good.Tensor(with_data, "x"));
  EXPECT_TRUE(good.Tensor(empty, "y"));  // an empty tensor needs no data
  EXPECT_TRUE(good.ok());

  pacl::OpChecker null_tensor("aclnnTest");
  EXPECT_FALSE(null_tensor.Tensor(nullptr, "gradOutput"));
  ExpectFailure(null_tensor, ACLNN_ERR_PARAM_NULLPTR, "aclnnTest: gradOutput must not be null");

  pacl::OpChecker null_data("aclnnTest");
  EXPECT_FALSE(null_data.Tensor(without_data, "mask"));
  ExpectFailure(null_data, ACLNN_ERR_PARAM_NULLPTR,
                "aclnnTest: mask data must not be null (the tensor has shape [2, 3])");

  aclDestroyTensor(with_data);
  aclDestroyTensor(without_data);
  aclDestroyTensor(empty);
}

TEST_F(OpCheckerTest, Rank) {
  pacl::OpChecker good("aclnnTest");
  EXPECT_TRUE(good.Rank(Desc({2, 3, 5, 7}), "gradOutput", 4));
  EXPECT_TRUE(good.Rank(Desc({}), "scale", 0));
  EXPECT_TRUE(good.ok());

  pacl::OpChecker bad("aclnnScaledMaskedSoftmaxBackward");
  EXPECT_FALSE(bad.Rank(Desc({2, 3, 5}), "gradOutput", 4));
  ExpectFailure(bad, ACLNN_ERR_PARAM_INVALID,
                "aclnnScaledMaskedSoftmaxBackward: gradOutput must be 4-D, got shape [2, 3, 5]");

  pacl::OpChecker scalar("aclnnTest");
  EXPECT_FALSE(scalar.Rank(Desc({}), "x", 1));
  ExpectFailure(scalar, ACLNN_ERR_PARAM_INVALID, "aclnnTest: x must be 1-D, got shape []");
}

TEST_F(OpCheckerTest, DType) {
  pacl::OpChecker good("aclnnTest");
  EXPECT_TRUE(good.DType(Desc({2}, ACL_BF16), "gradOutput", {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}));
  EXPECT_TRUE(good.DType(Desc({2}, ACL_BOOL), "mask", {ACL_BOOL}));
  EXPECT_TRUE(good.ok());

  pacl::OpChecker bad("aclnnTest");
  EXPECT_FALSE(bad.DType(Desc({2}, ACL_INT32), "gradOutput", {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}));
  ExpectFailure(bad, ACLNN_ERR_PARAM_INVALID,
                "aclnnTest: gradOutput dtype must be one of FLOAT, FLOAT16, BFLOAT16, got INT32");

  pacl::OpChecker single("aclnnTest");
  EXPECT_FALSE(single.DType(Desc({2}, ACL_UINT8), "mask", {ACL_BOOL}));
  ExpectFailure(single, ACLNN_ERR_PARAM_INVALID, "aclnnTest: mask dtype must be BOOL, got UINT8");
}

TEST_F(OpCheckerTest, SameDType) {
  pacl::OpChecker good("aclnnTest");
  EXPECT_TRUE(good.SameDType(Desc({2}, ACL_FLOAT16), "gradOutput", Desc({3}, ACL_FLOAT16), "y"));
  EXPECT_TRUE(good.ok());

  pacl::OpChecker bad("aclnnTest");
  EXPECT_FALSE(bad.SameDType(Desc({2}, ACL_FLOAT), "gradOutput", Desc({2}, ACL_FLOAT16), "y"));
  ExpectFailure(bad, ACLNN_ERR_PARAM_INVALID, "aclnnTest: y dtype must equal gradOutput dtype (FLOAT), got FLOAT16");
}

TEST_F(OpCheckerTest, SameShape) {
  pacl::OpChecker good("aclnnTest");
  EXPECT_TRUE(good.SameShape(Desc({2, 3}), "gradOutput", Desc({2, 3}, ACL_BF16), "y"));
  EXPECT_TRUE(good.SameShape(Desc({}), "a", Desc({}), "b"));
  EXPECT_TRUE(good.ok());

  pacl::OpChecker transposed("aclnnTest");
  EXPECT_FALSE(transposed.SameShape(Desc({2, 3}), "gradOutput", Desc({3, 2}), "y"));
  ExpectFailure(transposed, ACLNN_ERR_PARAM_INVALID,
                "aclnnTest: y shape must equal gradOutput shape [2, 3], got [3, 2]");

  pacl::OpChecker ranks("aclnnTest");
  EXPECT_FALSE(ranks.SameShape(Desc({2, 3}), "gradOutput", Desc({2, 3, 1}), "out"));
  ExpectFailure(ranks, ACLNN_ERR_PARAM_INVALID,
                "aclnnTest: out shape must equal gradOutput shape [2, 3], got [2, 3, 1]");
}

TEST_F(OpCheckerTest, DistinctOutputElements) {
  pacl::OpChecker good("aclnnTest");
  EXPECT_TRUE(good.DistinctOutputElements(Desc({2, 3}), "out"));
  EXPECT_TRUE(good.ok());

  pacl::TensorDesc broadcast = Desc({2, 3});
  broadcast.strides[0] = 0;
  pacl::OpChecker bad("aclnnTest");
  EXPECT_FALSE(bad.DistinctOutputElements(broadcast, "out"));
  ExpectFailure(bad, ACLNN_ERR_PARAM_INVALID,
                "aclnnTest: out must not have elements that share memory, got shape [2, 3] with strides [0, 1] (an "
                "output view needs distinct memory for every element)");
}

TEST_F(OpCheckerTest, PlainFormat) {
  pacl::OpChecker good("aclnnTest");
  for (aclFormat format : {ACL_FORMAT_ND, ACL_FORMAT_NCHW, ACL_FORMAT_NHWC, ACL_FORMAT_NC, ACL_FORMAT_NCL,
                           ACL_FORMAT_NCDHW, ACL_FORMAT_NDHWC, ACL_FORMAT_HWCN}) {
    EXPECT_TRUE(good.PlainFormat(Desc({2}, ACL_FLOAT, format), "x")) << format;
  }
  EXPECT_TRUE(good.ok());

  for (aclFormat format : {ACL_FORMAT_FRACTAL_NZ, ACL_FORMAT_NC1HWC0, ACL_FORMAT_FRACTAL_Z, ACL_FORMAT_NC1HWC0_C04,
                           ACL_FORMAT_NDC1HWC0, ACL_FRACTAL_Z_3D, ACL_FORMAT_UNDEFINED}) {
    pacl::OpChecker bad("aclnnTest");
    EXPECT_FALSE(bad.PlainFormat(Desc({2}, ACL_BOOL, format), "mask")) << format;
    EXPECT_EQ(bad.status(), ACLNN_ERR_PARAM_INVALID);
    const std::string message = TakeMessages();
    EXPECT_EQ(message.rfind("aclnnTest: mask format must be ND", 0), 0u) << message;
  }
  pacl::OpChecker nz("aclnnTest");
  EXPECT_FALSE(nz.PlainFormat(Desc({2}, ACL_BOOL, ACL_FORMAT_FRACTAL_NZ), "mask"));
  const std::string message = TakeMessages();
  EXPECT_NE(message.find(", got FRACTAL_NZ"), std::string::npos) << message;
}

TEST_F(OpCheckerTest, Check) {
  pacl::OpChecker good("aclnnTest");
  EXPECT_TRUE(good.Check(true, "never %s", "shown"));
  EXPECT_TRUE(good.ok());
  EXPECT_EQ(TakeMessages(), "");

  pacl::OpChecker bad("aclnnTest");
  EXPECT_FALSE(bad.Check(3 % 2 == 0, "scale must be %s, got %d (%.1f)", "even", 3, 2.5));
  ExpectFailure(bad, ACLNN_ERR_PARAM_INVALID, "aclnnTest: scale must be even, got 3 (2.5)");
}

TEST_F(OpCheckerTest, FailRecordsAnyStatus) {
  pacl::OpChecker check("aclnnTest");
  EXPECT_EQ(check.Fail(ACLNN_ERR_INNER, "workspace too large"), ACLNN_ERR_INNER);
  ExpectFailure(check, ACLNN_ERR_INNER, "aclnnTest: workspace too large");
}

TEST_F(OpCheckerTest, OnlyTheFirstFailureIsRecorded) {
  float data = 0;
  pacl::OpChecker check("aclnnTest");
  EXPECT_FALSE(check.Rank(Desc({2}), "x", 3));
  // Every later check refuses at once, even ones that would pass, and records nothing.
  EXPECT_FALSE(check.NotNull(&data, "y"));
  EXPECT_FALSE(check.NotNull(nullptr, "z"));
  EXPECT_FALSE(check.OutPointers(nullptr, nullptr));
  EXPECT_FALSE(check.Tensor(nullptr, "w"));
  EXPECT_FALSE(check.Rank(Desc({2}), "x", 1));
  EXPECT_FALSE(check.DType(Desc({2}), "x", {ACL_FLOAT}));
  EXPECT_FALSE(check.SameDType(Desc({2}), "x", Desc({2}), "y"));
  EXPECT_FALSE(check.SameShape(Desc({2}), "x", Desc({2}), "y"));
  EXPECT_FALSE(check.PlainFormat(Desc({2}), "x"));
  EXPECT_FALSE(check.Check(true, "fine"));
  EXPECT_FALSE(check.Check(false, "second failure"));
  EXPECT_EQ(check.Fail(ACLNN_ERR_INNER, "third failure"), ACLNN_ERR_PARAM_INVALID);
  ExpectFailure(check, ACLNN_ERR_PARAM_INVALID, "aclnnTest: x must be 3-D, got shape [2]");
}

TEST(AclnnInitTest, AcceptsNoConfiguration) {
  TakeMessages();
  EXPECT_EQ(aclnnInit(nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclnnInit(""), ACLNN_SUCCESS);
  EXPECT_EQ(aclnnInit(nullptr), ACLNN_SUCCESS);  // repeated calls are fine
  EXPECT_EQ(aclnnFinalize(), ACLNN_SUCCESS);
  EXPECT_EQ(aclnnFinalize(), ACLNN_SUCCESS);
  EXPECT_EQ(TakeMessages(), "");
}

TEST(AclnnInitTest, AcceptsAReadableFile) {
  char path[] = "/tmp/pacl_aclnn_init_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "{}\n", 3), 3);
  close(fd);
  EXPECT_EQ(aclnnInit(path), ACLNN_SUCCESS) << TakeMessages();
  EXPECT_EQ(aclnnFinalize(), ACLNN_SUCCESS);
  std::remove(path);
}

TEST(AclnnInitTest, RefusesAMissingFileOrADirectory) {
  TakeMessages();
  EXPECT_EQ(aclnnInit("/nonexistent/pacl/acl.json"), ACLNN_ERR_PARAM_INVALID);
  std::string message = TakeMessages();
  EXPECT_NE(message.find("aclnnInit: configPath \"/nonexistent/pacl/acl.json\""), std::string::npos) << message;
  EXPECT_EQ(aclnnInit("/tmp"), ACLNN_ERR_PARAM_INVALID);
  message = TakeMessages();
  EXPECT_NE(message.find("not an existing regular file"), std::string::npos) << message;
}

}  // namespace
