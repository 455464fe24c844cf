// aclInit / aclFinalize / aclrtGetVersion.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "acl/acl.h"
#include "cpu/block_cache.h"
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
  pacl::rt::cpu::DeviceBlockCache().ReleaseIdle();  // the cached memory goes back to the system
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
