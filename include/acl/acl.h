/* portable-aclnn: CANN's acl.h — process initialisation and the last error message. */
#ifndef PORTABLE_ACLNN_ACL_ACL_H_
#define PORTABLE_ACLNN_ACL_ACL_H_

#include "acl_base.h"
#include "acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACL_MAJOR_VERSION 1
#define ACL_MINOR_VERSION 0
#define ACL_PATCH_VERSION 0

/* configPath may be NULL or "" (no configuration); otherwise the file must exist and be readable. */
ACL_FUNC_VISIBILITY aclError aclInit(const char *configPath);
ACL_FUNC_VISIBILITY aclError aclFinalize(void);
ACL_FUNC_VISIBILITY aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion, int32_t *patchVersion);

/* Returns and clears the messages of the calling thread's failed acl/aclnn calls since the last call of this
 * function, newest first, one per line; NULL when there is none (as in CANN). The text stays valid until the
 * next aclGetRecentErrMsg on this thread. */
ACL_FUNC_VISIBILITY const char *aclGetRecentErrMsg(void);

#ifdef __cplusplus
}
#endif

#endif /* PORTABLE_ACLNN_ACL_ACL_H_ */
