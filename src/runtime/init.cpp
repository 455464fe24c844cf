// aclInit (with its configuration file, config.cpp) / aclFinalize / aclrtGetVersion.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <mutex>

#include "acl/acl.h"
#include "backend.h"
#include "config.h"
#include "cpu/strict_memory.h"
#include "runtime_state.h"

using pacl::rt::Fail;
using pacl::rt::RuntimeState;
using pacl::rt::State;

namespace {

// Whether path names a readable file; on failure *reason says why.
bool IsReadableFile(const char* path, const char** reason) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *reason = std::strerror(errno);
    return false;
  }
  struct stat info;
  bool ok = ::fstat(fd, &info) == 0;
  if (!ok) {
    *reason = std::strerror(errno);
  } else if (S_ISDIR(info.st_mode)) {
    *reason = "it is a directory";
    ok = false;
  }
  ::close(fd);
  return ok;
}

// The configuration is a small JSON file; anything larger is refused before it is read.
constexpr size_t kMaxConfigBytes = size_t{16} << 20;

// Reads path (at most kMaxConfigBytes) into *text; false when it is larger.
bool ReadSmallFile(const char* path, std::string* text) {
  std::ifstream file(path, std::ios::binary);
  char buffer[65536];
  while (file.read(buffer, sizeof buffer) || file.gcount() > 0) {
    text->append(buffer, static_cast<size_t>(file.gcount()));
    if (text->size() > kMaxConfigBytes) return false;
  }
  return true;
}

}  // namespace

extern "C" {

aclError aclInit(const char* configPath) {
  RuntimeState& state = State();
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (state.initialized) {
      return Fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit", "already initialised: call aclFinalize before aclInit again");
    }
  }
  if (configPath != nullptr && configPath[0] != '\0') {
    const char* reason = "";
    if (!IsReadableFile(configPath, &reason)) {
      return Fail(ACL_ERROR_INVALID_FILE, "aclInit",
                  "configPath \"%s\" cannot be used (%s): it must be NULL, \"\" or an existing, readable file",
                  configPath, reason);
    }
    std::string text;
    if (!ReadSmallFile(configPath, &text)) {
      return Fail(ACL_ERROR_INVALID_FILE_SIZE, "aclInit",
                  "configPath \"%s\" is larger than %zu bytes: not a configuration file", configPath, kMaxConfigBytes);
    }
    pacl::rt::RuntimeConfig config;
    std::string error;
    if (aclError status = pacl::rt::ParseRuntimeConfig(text, &config, &error)) {
      return Fail(status, "aclInit", "configPath \"%s\" is not a valid configuration: %s", configPath, error.c_str());
    }
    if (!config.device.empty() && !pacl::rt::ConfigureDeviceChoice(config.device, &error)) {
      return Fail(ACL_ERROR_FILE_ATTR_INVALID, "aclInit", "configPath \"%s\": %s", configPath, error.c_str());
    }
    if (config.strict >= 0 && !pacl::rt::strict::Configure(config.strict == 1, &error)) {
      return Fail(ACL_ERROR_FILE_ATTR_INVALID, "aclInit", "configPath \"%s\": %s", configPath, error.c_str());
    }
  }
  std::lock_guard<std::mutex> lock(state.mutex);
  if (state.initialized) {  // another thread won the race
    return Fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit", "already initialised: call aclFinalize before aclInit again");
  }
  state.initialized = true;
  return ACL_SUCCESS;
}

aclError aclFinalize(void) {
  RuntimeState& state = State();
  std::vector<std::shared_ptr<pacl::rt::Stream>> streams;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    if (!state.initialized) {
      return Fail(ACL_ERROR_REPEAT_FINALIZE, "aclFinalize",
                  "not initialised: aclInit was never called or aclFinalize already ran");
    }
    state.initialized = false;
    // Every context and stream goes; queued work still runs first.
    streams = pacl::rt::DestroyAllContextsLocked(state);
  }
  pacl::rt::DrainAndStop(streams);
  for (const pacl::rt::DeviceEntry& device : pacl::rt::Devices()) {
    device.backend->ReleaseCachedMemory(device.ordinal);  // the cached memory goes back to the system
  }
  return ACL_SUCCESS;
}

aclError aclrtGetVersion(int32_t* majorVersion, int32_t* minorVersion, int32_t* patchVersion) {
  if (majorVersion == nullptr || minorVersion == nullptr || patchVersion == nullptr) {
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetVersion", "%s must not be null",
                majorVersion == nullptr ? "majorVersion" : (minorVersion == nullptr ? "minorVersion" : "patchVersion"));
  }
  *majorVersion = ACL_MAJOR_VERSION;
  *minorVersion = ACL_MINOR_VERSION;
  *patchVersion = ACL_PATCH_VERSION;
  return ACL_SUCCESS;
}

}  // extern "C"
