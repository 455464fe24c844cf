// aclInit's configuration file (config.cpp).
#ifndef PACL_RUNTIME_CONFIG_H_
#define PACL_RUNTIME_CONFIG_H_

#include <string>

#include "acl/acl_base.h"

namespace pacl::rt {

struct RuntimeConfig {
  std::string device;  // "portable_aclnn"."device": "cpu", "cuda", "auto", or "" when absent
  int strict = -1;     // "portable_aclnn"."strict": 1 true, 0 false, -1 absent
};

// Parses the text of a configuration file. ACL_ERROR_PARSE_FILE when it is not a JSON object,
// ACL_ERROR_FILE_ATTR_INVALID when the "portable_aclnn" section holds something else than it may; *error then says
// where ("line 3, column 7: ...") and what.
aclError ParseRuntimeConfig(const std::string& text, RuntimeConfig* config, std::string* error);

}  // namespace pacl::rt

#endif  // PACL_RUNTIME_CONFIG_H_
