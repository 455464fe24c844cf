// The device table: which devices applications number 0..n-1 (see the NOTE in backend.h).
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "backend.h"
#include "pacl/error.h"

namespace pacl::rt {
namespace {

struct DeviceTable {
  std::vector<DeviceEntry> devices;
  std::string why_empty;
};

// The choice in force: ACLNN_DEVICE when set, else the configuration file's (aclInit), else "auto".
std::string EffectiveChoice(const std::string& configured) {
  const char* environment = std::getenv("ACLNN_DEVICE");
  if (environment != nullptr && environment[0] != '\0') return environment;
  return configured.empty() ? "auto" : configured;
}

// The devices of one kind, appended to the table; false (with why) when it has none.
bool AddDevicesOf(const BackendKind& kind, DeviceKind index, std::vector<DeviceEntry>* devices, std::string* why) {
  const int count = kind.device_count(why);
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    devices->push_back(DeviceEntry{index, ordinal, kind.device_name(ordinal), kind.backend()});
  }
  return count > 0;
}

DeviceTable BuildTable(const std::string& wanted) {
  DeviceTable table;
  if (!IsDeviceChoice(wanted)) {
    table.why_empty = StrFormat("ACLNN_DEVICE=\"%s\" is not a device choice: expected %s", wanted.c_str(),
                                DeviceChoicesText("").c_str());
    return table;
  }
  const std::vector<const BackendKind*>& kinds = BackendKinds();
  const BackendKind& cpu = *kinds[0];
  if (wanted == "auto") {
    // The first accelerator kind that has devices, else the CPU.
    for (size_t i = 1; i < kinds.size(); ++i) {
      std::string why;
      if (AddDevicesOf(*kinds[i], static_cast<DeviceKind>(i), &table.devices, &why)) return table;
    }
    AddDevicesOf(cpu, DeviceKind::kCpu, &table.devices, &table.why_empty);
    return table;
  }
  // "<key>" or "<key>,cpu".
  const std::string key = wanted.substr(0, wanted.find(','));
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (key != kinds[i]->key) continue;
    std::string why;
    if (!AddDevicesOf(*kinds[i], static_cast<DeviceKind>(i), &table.devices, &why) && key == wanted) {
      table.why_empty = StrFormat("ACLNN_DEVICE=%s, but no %s device can be used: %s", wanted.c_str(),
                                  kinds[i]->name, why.c_str());
    }
  }
  // Both: the accelerator's devices as 0..n-1 (n may be 0), then the CPU as device n.
  if (key != wanted) AddDevicesOf(cpu, DeviceKind::kCpu, &table.devices, &table.why_empty);
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
