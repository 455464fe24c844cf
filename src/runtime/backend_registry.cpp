// The backend registry: every kind of device this runtime knows, one line each in kinds below, the CPU first. A kind
// is a folder of src/runtime (its Backend and its BackendKind) plus, for each operator, a folder of src/ops/<op>
// with its kernels and implementation-list fragment (docs/adding_a_backend.md).
#include <string>
#include <vector>

#include "backend.h"

namespace pacl::rt {

const BackendKind& CpuBackendKind();   // cpu/cpu_backend.cpp
const BackendKind& CudaBackendKind();  // cuda/cuda_backend.cu, or cuda/cuda_absent.cpp without the CUDA backend

const std::vector<const BackendKind*>& BackendKinds() {
  static const std::vector<const BackendKind*> kinds = {
      &CpuBackendKind(),   // DeviceKind::kCpu
      &CudaBackendKind(),  // NVIDIA GPUs
  };
  return kinds;
}

const BackendKind& KindOf(DeviceKind kind) {
  const std::vector<const BackendKind*>& kinds = BackendKinds();
  const size_t index = static_cast<size_t>(kind);
  return index < kinds.size() ? *kinds[index] : *kinds[0];
}

std::vector<std::string> DeviceChoices() {
  std::vector<std::string> choices;
  const std::vector<const BackendKind*>& kinds = BackendKinds();
  for (const BackendKind* kind : kinds) choices.push_back(kind->key);
  // An accelerator's devices with the CPU after them: host memory and device memory in one process (the Python
  // package's choice).
  for (size_t i = 1; i < kinds.size(); ++i) choices.push_back(std::string(kinds[i]->key) + "," + kinds[0]->key);
  choices.push_back("auto");
  return choices;
}

bool IsDeviceChoice(const std::string& choice) {
  for (const std::string& allowed : DeviceChoices()) {
    if (choice == allowed) return true;
  }
  return false;
}

std::string DeviceChoicesText(const char* quote) {
  const std::vector<std::string> choices = DeviceChoices();
  std::string text;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) text += i + 1 == choices.size() ? " or " : ", ";
    text += quote + choices[i] + quote;
  }
  return text;
}

}  // namespace pacl::rt
