// Implementation lists (pacl::BindImplementation): the first entry for the current device that supports the call,
// deterministic ones only while ACL_OPT_DETERMINISTIC is on (the default), the chosen entry's workspace plan, and
// 161002 naming the operator, the dtype and the device when no entry fits.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn/opdev/op_errno.h"
#include "pacl/op_glue.h"
#include "pacl/runtime.h"

namespace {

constexpr const char* kOp = "aclnnListedOp";

struct ListedParams {
  aclDataType dtype = ACL_FLOAT;
  uint64_t planned_bytes = 0;  // written by the plan, read back by the run
  std::string* ran = nullptr;  // which implementation ran
};

bool FloatOnly(const ListedParams& params) { return params.dtype == ACL_FLOAT; }
bool HalfOnly(const ListedParams& params) { return params.dtype == ACL_FLOAT16; }

uint64_t PlanSixtyFour(ListedParams* params) {
  params->planned_bytes = 64;
  return 64;
}

aclnnStatus Record(const ListedParams& params, const pacl::KernelContext& context, const char* name) {
  *params.ran = name;
  if (context.workspace_size != params.planned_bytes) *params.ran += " (wrong workspace size)";
  if (params.planned_bytes > 0 && context.workspace == nullptr) *params.ran += " (no workspace)";
  return ACLNN_SUCCESS;
}

// Two kinds of device contribute their fragments (as an operator's cpu/ and cuda/ folders do), the CUDA one first.
const pacl::Implementation<ListedParams> kCudaEntries[] = {
    {"cuda", true, nullptr, nullptr,
     [](const ListedParams& p, const pacl::KernelContext& c) { return Record(p, c, "cuda"); }},
};
const pacl::Implementation<ListedParams> kCpuEntries[] = {
    {"cpu-fast", /*deterministic=*/false, FloatOnly, PlanSixtyFour,
     [](const ListedParams& p, const pacl::KernelContext& c) { return Record(p, c, "cpu-fast"); }},
    {"cpu-half", /*deterministic=*/true, HalfOnly, nullptr,
     [](const ListedParams& p, const pacl::KernelContext& c) { return Record(p, c, "cpu-half"); }},
};

const pacl::ImplementationFragment<ListedParams> kOnCuda("cuda", kCudaEntries);
const pacl::ImplementationFragment<ListedParams> kOnCpu("cpu", kCpuEntries);

std::string TakeMessages() {
  const char* text = aclGetRecentErrMsg();
  return text != nullptr ? std::string(text) : std::string();
}

class ImplementationListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS) << TakeMessages();
    TakeMessages();
  }
  void TearDown() override {
    EXPECT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), ACL_SUCCESS);
    EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS) << TakeMessages();
  }

  // Binds and runs a call of dtype; returns the phase-1 status and sets ran to the implementation that ran.
  aclnnStatus BindAndRun(aclDataType dtype, std::string* ran) {
    ListedParams params;
    params.dtype = dtype;
    params.ran = ran;
    uint64_t workspace_size = 12345;
    aclOpExecutor* executor = nullptr;
    const aclnnStatus status =
        pacl::BindImplementation(kOp, dtype, params, &workspace_size, &executor);
    if (status != ACLNN_SUCCESS) return status;
    std::vector<unsigned char> workspace(workspace_size + 1);
    EXPECT_EQ(pacl::RunExecutor(kOp, workspace.data(), workspace_size, executor, nullptr), ACLNN_SUCCESS)
        << TakeMessages();
    EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << TakeMessages();
    return status;
  }
};

TEST_F(ImplementationListTest, TakesTheFirstEntryForTheDeviceThatSupportsTheCall) {
  std::string ran;
  EXPECT_EQ(BindAndRun(ACL_FLOAT16, &ran), ACLNN_SUCCESS) << TakeMessages();
  EXPECT_EQ(ran, "cpu-half");  // not the CUDA entry, not the FLOAT-only one
}

TEST_F(ImplementationListTest, NonDeterministicEntriesOnlyWhenTheOptionIsOff) {
  std::string ran;
  // The default is deterministic: the FLOAT entry is not deterministic, so nothing fits.
  EXPECT_EQ(BindAndRun(ACL_FLOAT, &ran), ACLNN_ERR_PARAM_INVALID);
  const std::string message = TakeMessages();
  for (const char* part : {kOp, "no implementation for FLOAT", "device 0 (CPU)", "ACL_OPT_DETERMINISTIC"}) {
    EXPECT_NE(message.find(part), std::string::npos) << part << " in: " << message;
  }
  EXPECT_EQ(ran, "");
  ASSERT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 0), ACL_SUCCESS);
  EXPECT_EQ(BindAndRun(ACL_FLOAT, &ran), ACLNN_SUCCESS) << TakeMessages();
  EXPECT_EQ(ran, "cpu-fast");  // with its planned 64-byte workspace
}

TEST_F(ImplementationListTest, NoEntryForTheDtypeOnThisDevice) {
  std::string ran;
  EXPECT_EQ(BindAndRun(ACL_DOUBLE, &ran), ACLNN_ERR_PARAM_INVALID);
  const std::string message = TakeMessages();
  EXPECT_NE(message.find("aclnnListedOp: no implementation for DOUBLE on device 0 (CPU)"), std::string::npos)
      << message;
  EXPECT_EQ(message.find("DETERMINISTIC"), std::string::npos) << message;  // nothing was skipped for that
  EXPECT_EQ(ran, "");
}

}  // namespace

namespace {

// Phase 1 refuses tensor data in memory that aclrtFree released (while the block cache keeps it): a use after free
// that would otherwise compute on stale memory. Once the block is allocated again, the same address is fine.
TEST(OpCheckerTensor, FreedDeviceMemoryIsRefused) {
  // Normal mode's block reuse; strict mode's quarantine is tested in tests/strict/.
  if (pacl::rt::StrictMode()) GTEST_SKIP() << "not in strict mode: freed memory is quarantined, not reused";
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  const int64_t shape[1] = {256};
  const int64_t strides[1] = {1};
  void* data = nullptr;
  ASSERT_EQ(aclrtMalloc(&data, 1024, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  aclTensor* tensor = aclCreateTensor(shape, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 1, data);
  ASSERT_NE(tensor, nullptr);
  {
    pacl::OpChecker check("aclnnListedOp");
    EXPECT_TRUE(check.Tensor(tensor, "x"));
  }
  ASSERT_EQ(aclrtFree(data), ACL_SUCCESS);
  {
    pacl::OpChecker check("aclnnListedOp");
    EXPECT_FALSE(check.Tensor(tensor, "x"));
    EXPECT_EQ(check.status(), ACLNN_ERR_PARAM_INVALID);
    const std::string message = TakeMessages();
    EXPECT_NE(message.find("aclnnListedOp: x data"), std::string::npos) << message;
    EXPECT_NE(message.find("freed by aclrtFree"), std::string::npos) << message;
  }
  void* again = nullptr;
  ASSERT_EQ(aclrtMalloc(&again, 1024, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(again, data);  // the cached block comes back
  {
    pacl::OpChecker check("aclnnListedOp");
    EXPECT_TRUE(check.Tensor(tensor, "x")) << TakeMessages();
  }
  aclDestroyTensor(tensor);
  EXPECT_EQ(aclrtFree(again), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
}

// A tensor whose storage (storageDims from its data pointer) runs past the end of the aclrtMalloc allocation that
// holds its data is refused in phase 1 (161002), naming the tensor, its byte extent and the allocation's; storage
// that ends exactly at the allocation's end, from its start or from inside it, is fine.
TEST(OpCheckerTensor, StoragePastItsAllocationIsRefused) {
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  void* data = nullptr;
  ASSERT_EQ(aclrtMalloc(&data, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);  // 16 floats
  const int64_t strides[1] = {1};
  auto check = [&](void* start, int64_t view, int64_t storage) {
    const int64_t view_shape[1] = {view};
    const int64_t storage_shape[1] = {storage};
    aclTensor* tensor = aclCreateTensor(view_shape, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage_shape, 1, start);
    EXPECT_NE(tensor, nullptr);
    pacl::OpChecker checker("aclnnListedOp");
    const bool accepted = checker.Tensor(tensor, "x");
    EXPECT_EQ(checker.status(), accepted ? ACLNN_SUCCESS : ACLNN_ERR_PARAM_INVALID);
    aclDestroyTensor(tensor);
    return accepted;
  };
  char* bytes = static_cast<char*>(data);
  EXPECT_TRUE(check(data, 16, 16)) << TakeMessages();
  EXPECT_TRUE(check(bytes + 32, 8, 8)) << TakeMessages();
  EXPECT_FALSE(check(data, 32, 32));
  std::string message = TakeMessages();
  for (const char* part : {"aclnnListedOp: x storage (32 elements of 4 bytes: 128 bytes from",
                           "runs past the end of its aclrtMalloc allocation (64 bytes at", "only 64 bytes follow"}) {
    EXPECT_NE(message.find(part), std::string::npos) << part << " in: " << message;
  }
  EXPECT_FALSE(check(bytes + 32, 9, 9));
  message = TakeMessages();
  EXPECT_NE(message.find("only 32 bytes follow"), std::string::npos) << message;
  EXPECT_FALSE(check(data, 16, 17));  // the view fits, the declared storage does not
  message = TakeMessages();
  EXPECT_NE(message.find("17 elements of 4 bytes: 68 bytes"), std::string::npos) << message;
  EXPECT_EQ(aclrtFree(data), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
}

}  // namespace
