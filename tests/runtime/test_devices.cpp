// The device table: ACLNN_DEVICE (cpu, cuda, auto), the numbering aclrtGetDeviceCount / aclrtSetDevice see, and
// the messages when there is no such device. The table is built once per process, so each choice runs in a child.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "pacl/runtime.h"
#include "portable_aclnn/native_stream.h"
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
    if (std::string(pacl::rt::DeviceKindKey(pacl::rt::CurrentDevice().kind)) != "cuda") return 3;
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
  return Mentions(TakeErrors(), {"ACLNN_DEVICE=\"tpu\"", "cpu, cuda, cuda,cpu or auto"}) ? 0 : 2;
}

// ACLNN_DEVICE=cuda,cpu: the GPUs (none without a GPU or CUDA backend), then the CPU. The CPU device refuses GPU
// memory, and has no native streams to adopt.
int GpusThenCpu() {
  uint32_t count = 0;
  if (aclrtGetDeviceCount(&count) != ACL_SUCCESS || count == 0) return 1;
  const int32_t cpu = static_cast<int32_t>(count) - 1;
  for (int32_t id = 0; id < static_cast<int32_t>(count); ++id) {
    if (aclrtSetDevice(id) != ACL_SUCCESS) return 2;
    const pacl::rt::DeviceKind kind = pacl::rt::CurrentDevice().kind;
    if (std::string(pacl::rt::DeviceKindKey(kind)) != (id == cpu ? "cpu" : "cuda")) return 3;
  }
  const char* name = aclrtGetSocName();  // the CPU's: the last one set
  if (name == nullptr || std::string(name).rfind("CPU (", 0) != 0) return 4;
  aclrtStream stream = nullptr;
  if (paclrtCreateStreamFromNative(&stream, nullptr) != ACL_ERROR_FEATURE_UNSUPPORTED) return 5;
  if (!Mentions(TakeErrors(), {"paclrtCreateStreamFromNative", "is the CPU", "no native streams"})) return 6;
  if (cpu > 0) {
    void* gpu_memory = nullptr;
    if (aclrtSetDevice(0) != ACL_SUCCESS || aclrtMalloc(&gpu_memory, 256, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
      return 7;
    }
    std::string why;
    if (pacl::rt::DeviceCanAccess({pacl::rt::DeviceKind::kCpu, cpu}, gpu_memory, &why)) return 8;
    if (why.find("memory of CUDA device 0") == std::string::npos) return 9;
    std::vector<char> host(256);
    if (!pacl::rt::DeviceCanAccess({pacl::rt::DeviceKind::kCpu, cpu}, host.data(), &why)) return 10;
    if (aclrtFree(gpu_memory) != ACL_SUCCESS) return 11;
  }
  for (int32_t id = 0; id < static_cast<int32_t>(count); ++id) {
    if (aclrtResetDevice(id) != ACL_SUCCESS) return 12;
  }
  return 0;
}

TEST(DeviceTable, CudaCpuChoiceGivesTheGpusThenTheCpu) { ExpectInChild("cuda,cpu", GpusThenCpu); }

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
