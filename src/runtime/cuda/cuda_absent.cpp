// A build without the CUDA backend (PACL_CUDA off, or no nvcc): the kind is known, so that a choice of "cuda" says
// why there is no such device, but it has none.
#include <string>

#include "../backend.h"

namespace pacl::rt {
namespace {

int NoCudaDevices(std::string* why) {
  if (why != nullptr) *why = "this build has no CUDA backend (configure with -DPACL_CUDA=ON where nvcc is installed)";
  return 0;
}

std::string CudaDeviceName(int ordinal) { return "CUDA device " + std::to_string(ordinal); }

Backend* NoBackend() { return nullptr; }

}  // namespace

const BackendKind& CudaBackendKind() {
  static const BackendKind kind{"cuda", "CUDA", NoCudaDevices, CudaDeviceName, NoBackend};
  return kind;
}

}  // namespace pacl::rt
