// aclnnInit / aclnnFinalize. The operators need no process-wide setup on this implementation, so both only
// validate their argument; as with aclInit, configPath may be NULL or "" (no configuration file), and otherwise must
// name a readable regular file (its content is not used). Both may be called any number of times.
#include <sys/stat.h>

#include <cstdio>

#include "aclnn/aclnn_base.h"
#include "pacl/error.h"

extern "C" {

aclnnStatus aclnnInit(const char* configPath) {
  if (configPath == nullptr || configPath[0] == '\0') return ACLNN_SUCCESS;
  struct stat info {};
  if (stat(configPath, &info) != 0 || !S_ISREG(info.st_mode)) {
    pacl::SetRecentErrorMessage(
        pacl::StrFormat("aclnnInit: configPath \"%s\" is not an existing regular file", configPath));
    return ACLNN_ERR_PARAM_INVALID;
  }
  std::FILE* file = std::fopen(configPath, "rb");
  if (file == nullptr) {
    pacl::SetRecentErrorMessage(pacl::StrFormat("aclnnInit: configPath \"%s\" cannot be read", configPath));
    return ACLNN_ERR_PARAM_INVALID;
  }
  std::fclose(file);
  return ACLNN_SUCCESS;
}

aclnnStatus aclnnFinalize(void) { return ACLNN_SUCCESS; }

}  // extern "C"
