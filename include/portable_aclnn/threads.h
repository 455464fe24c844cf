// portable-aclnn's extension to CANN's API (not in CANN, whose operators run on the NPU's cores): the number of
// threads the CPU device's kernels use, set while the program runs. docs/runtime.md, "Threads".
#ifndef PORTABLE_ACLNN_THREADS_H_
#define PORTABLE_ACLNN_THREADS_H_

#include <stdint.h>

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

// Sets the CPU kernels' thread count for the calls that start after it returns (a call already running keeps its
// count): numThreads in [1, 1024], or 0 for the default (ACLNN_NUM_THREADS when set, else the CPUs of the process's
// affinity mask). Results do not depend on it: every operator gives the same bits for any thread count. Another value:
// ACL_ERROR_INVALID_PARAM, with a message from aclGetRecentErrMsg.
ACL_FUNC_VISIBILITY aclError paclSetNumThreads(int32_t numThreads);

// The count the next call will use.
ACL_FUNC_VISIBILITY aclError paclGetNumThreads(int32_t *numThreads);

#ifdef __cplusplus
}
#endif

#endif  // PORTABLE_ACLNN_THREADS_H_
