// The device table: ACLNN_DEVICE (cpu, cuda, auto), the numbering aclrtGetDeviceCount / aclrtSetDevice see, and
// the messages when there is no such device. The table is built once per process, so each choice runs in a child.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "acl/acl.h"
#include "pacl/runtime.h"
#include "runtime_test_util.h"

namespace {

using pacl_test::Mentions;
using pacl_test::TakeErrors;

// Runs check in a fresh process with ACLNN_DEVICE set to choice (unset when nullptr); passes when check returns 0.
void ExpectInChild(const char* choice, int (*check)()) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (choice == nullptr) {
          unsetenv("ACLNN_DEVICE");
        } else {
          setenv("ACLNN_DEVICE", choice, 1);
        }
        std::exit(check());
      },
      ::testing::ExitedWithCode(0), "")
      << "ACLNN_DEVICE=" << (choice != nullptr ? choice : "(unset)");
}

// Device 0 is the CPU; it runs work; other ids are refused with the list of devices.
int CpuIsDeviceZero() {
  uint32_t count = 0;
  if (aclrtGetDeviceCount(&count) != ACL_SUCCESS || count != 1) return 1;
  if (aclrtSetDevice(0) != ACL_SUCCESS) return 2;
  if (pacl::rt::CurrentDevice().kind != pacl::rt::DeviceKind::kCpu) return 3;
  const char* name = aclrtGetSocName();
  if (name == nullptr || std::string(name).rfind("CPU (", 0) != 0) return 9;
  int32_t device = -1;
  if (aclrtGetDevice(&device) != ACL_SUCCESS || device != 0) return 4;
  if (aclrtSetDevice(1) != ACL_ERROR_RT_INVALID_DEVICEID) return 5;
  if (!Mentions(TakeErrors(), {"aclrtSetDevice", "deviceId (1)", "0: CPU ("})) return 6;
  void* p = nullptr;
  if (aclrtMalloc(&p, 100, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS || aclrtFree(p) != ACL_SUCCESS) return 7;
  return aclrtResetDevice(0) == ACL_SUCCESS ? 0 : 8;
}

// ACLNN_DEVICE=cuda: the GPUs, or (no GPU, no driver, or a build without CUDA) no device and a message saying why.
int CudaOrNoDevice() {
  uint32_t count = 0;
  const aclError status = aclrtGetDeviceCount(&count);
  if (status == ACL_SUCCESS) {
    if (count == 0) return 1;
    if (aclrtSetDevice(0) != ACL_SUCCESS) return 2;
    if (pacl::rt::CurrentDevice().kind != pacl::rt::DeviceKind::kCuda) return 3;
    const char* name = aclrtGetSocName();
    if (name == nullptr || std::string(name).rfind("CUDA device 0", 0) != 0) return 11;
    return aclrtResetDevice(0) == ACL_SUCCESS ? 0 : 4;
  }
  if (status != ACL_ERROR_RT_NO_DEVICE || count != 0) return 5;
  if (!Mentions(TakeErrors(), {"aclrtGetDeviceCount", "no device", "ACLNN_DEVICE=cuda"})) return 6;
  if (aclrtGetSocName() != nullptr) return 12;
  if (!Mentions(TakeErrors(), {"aclrtGetSocName", "no device"})) return 13;
  if (aclrtSetDevice(0) != ACL_ERROR_RT_NO_DEVICE) return 7;
  if (!Mentions(TakeErrors(), {"aclrtSetDevice", "deviceId (0)", "no device", "CUDA"})) return 8;
  void* p = nullptr;
  if (aclrtMalloc(&p, 100, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_ERROR_RT_NO_DEVICE) return 9;
  return Mentions(TakeErrors(), {"aclrtMalloc", "no device"}) ? 0 : 10;
}

int BadChoiceHasNoDevice() {
  uint32_t count = 7;
  if (aclrtGetDeviceCount(&count) != ACL_ERROR_RT_NO_DEVICE || count != 0) return 1;
  return Mentions(TakeErrors(), {"ACLNN_DEVICE=\"tpu\"", "cpu, cuda or auto"}) ? 0 : 2;
}

TEST(DeviceTable, CpuChoiceGivesTheCpuAsDeviceZero) { ExpectInChild("cpu", CpuIsDeviceZero); }

TEST(DeviceTable, CudaChoiceGivesTheGpusOrSaysWhyThereAreNone) { ExpectInChild("cuda", CudaOrNoDevice); }

TEST(DeviceTable, UnknownChoiceIsRefusedWithTheChoices) { ExpectInChild("tpu", BadChoiceHasNoDevice); }

// Unset or "auto": the GPUs where there are any, otherwise the CPU. Either way there is a device 0 that works.
TEST(DeviceTable, AutoAlwaysHasADevice) {
  for (const char* choice : {static_cast<const char*>(nullptr), "auto"}) {
    ExpectInChild(choice, [] {
      uint32_t count = 0;
      if (aclrtGetDeviceCount(&count) != ACL_SUCCESS || count == 0) return 1;
      if (aclrtSetDevice(0) != ACL_SUCCESS) return 2;
      return aclrtResetDevice(0) == ACL_SUCCESS ? 0 : 3;
    });
  }
}

}  // namespace
