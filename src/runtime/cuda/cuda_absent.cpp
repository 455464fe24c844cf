// A build without the CUDA backend (PACL_CUDA off, or no nvcc): no CUDA devices.
#include <string>

#include "../backend.h"

namespace pacl::rt {

Backend* CudaBackend() { return nullptr; }

int CudaDeviceCount(std::string* why) {
  if (why != nullptr) *why = "this build has no CUDA backend (configure with -DPACL_CUDA=ON where nvcc is installed)";
  return 0;
}

std::string CudaDeviceName(int ordinal) { return "CUDA device " + std::to_string(ordinal); }

}  // namespace pacl::rt
