// The device table: which devices applications number 0..n-1 (see the NOTE in backend.h).
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend.h"
#include "pacl/error.h"

namespace pacl::rt {
namespace {

struct DeviceTable {
  std::vector<DeviceEntry> devices;
  std::string why_empty;
};

std::string CpuName() {
#if defined(__x86_64__)
  const char* architecture = "x86_64";
#elif defined(__aarch64__)
  const char* architecture = "aarch64";
#else
  const char* architecture = "unknown architecture";
#endif
  return StrFormat("CPU (%s, %u hardware threads)", architecture, std::thread::hardware_concurrency());
}

// The choice in force: ACLNN_DEVICE when set, else the configuration file's (aclInit), else "auto".
std::string EffectiveChoice(const std::string& configured) {
  const char* environment = std::getenv("ACLNN_DEVICE");
  if (environment != nullptr && environment[0] != '\0') return environment;
  return configured.empty() ? "auto" : configured;
}

DeviceTable BuildTable(const std::string& wanted) {
  DeviceTable table;
  const bool want_cpu = wanted == "cpu";
  const bool want_cuda = wanted == "cuda";
  // Both: the GPUs as devices 0..n-1 (n may be 0), then the CPU as device n: host memory and device memory in one
  // process, each on its own device (the Python package's choice).
  const bool want_both = wanted == "cuda,cpu";
  if (wanted != "auto" && !want_cpu && !want_cuda && !want_both) {
    table.why_empty = StrFormat("ACLNN_DEVICE=\"%s\" is not a device choice: expected cpu, cuda, cuda,cpu or auto",
                                wanted.c_str());
    return table;
  }
  if (!want_cpu) {
    std::string why;
    const int gpus = CudaDeviceCount(&why);
    for (int i = 0; i < gpus; ++i) table.devices.push_back(DeviceEntry{DeviceKind::kCuda, i, CudaDeviceName(i),
                                                                       CudaBackend()});
    if (gpus > 0 && !want_both) return table;
    if (want_cuda) {
      table.why_empty = StrFormat("ACLNN_DEVICE=cuda, but no CUDA device can be used: %s", why.c_str());
      return table;
    }
  }
  table.devices.push_back(DeviceEntry{DeviceKind::kCpu, 0, CpuName(), &CpuBackend()});
  return table;
}

struct TableState {
  std::mutex mutex;
  std::string configured;  // from aclInit's configuration file
  bool built = false;
  std::string built_choice;
  DeviceTable table;  // immutable once built
};

TableState& GetTableState() {
  static TableState* const state = new TableState;  // never destroyed
  return *state;
}

const DeviceTable& Table() {
  TableState& state = GetTableState();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.built) {
    state.built_choice = EffectiveChoice(state.configured);
    state.table = BuildTable(state.built_choice);
    state.built = true;
  }
  return state.table;
}

}  // namespace

bool ConfigureDeviceChoice(const std::string& choice, std::string* error) {
  TableState& state = GetTableState();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (state.built && EffectiveChoice(choice) != state.built_choice) {
    *error = StrFormat("the configuration asks for device \"%s\", but the devices were already numbered for \"%s\" "
                       "before aclInit (call aclInit first)",
                       choice.c_str(), state.built_choice.c_str());
    return false;
  }
  state.configured = choice;
  return true;
}

const std::vector<DeviceEntry>& Devices(std::string* why) {
  const DeviceTable& table = Table();
  if (why != nullptr) *why = table.why_empty;
  return table.devices;
}

}  // namespace pacl::rt
