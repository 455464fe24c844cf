// The thread-local "recent error message" behind aclGetRecentErrMsg (implemented in libascendcl).
#ifndef PACL_ERROR_H_
#define PACL_ERROR_H_

#include <cstdarg>
#include <string>

#include "pacl/export.h"

namespace pacl {

// Records a failure message on the calling thread. Every failing public call records one that names the
// function, the parameter, the values involved and the rule broken. As in CANN, messages pile up until
// aclGetRecentErrMsg returns them (newest first, one per line) and clears them; only the newest 32 are kept.
PACL_INTERNAL_API void SetRecentErrorMessage(const std::string& message);

// The newest message recorded on the calling thread and not yet taken by aclGetRecentErrMsg ("" when none).
PACL_INTERNAL_API std::string RecentErrorMessage();

// printf-style formatting into a std::string.
PACL_INTERNAL_API std::string StrFormat(const char* format, ...) __attribute__((format(printf, 1, 2)));
// The same with a va_list (args is consumed).
PACL_INTERNAL_API std::string VStrFormat(const char* format, va_list args) __attribute__((format(printf, 1, 0)));

}  // namespace pacl

#endif  // PACL_ERROR_H_
