/* portable-aclnn: CANN's aclnn/aclnn_base.h. */
#ifndef PORTABLE_ACLNN_ACLNN_ACLNN_BASE_H_
#define PORTABLE_ACLNN_ACLNN_ACLNN_BASE_H_

#include "aclnn/acl_meta.h"
#include "aclnn/opdev/op_errno.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnInit(const char *configPath);
ACL_FUNC_VISIBILITY aclnnStatus aclnnFinalize(void);

#ifdef __cplusplus
}
#endif

#endif /* PORTABLE_ACLNN_ACLNN_ACLNN_BASE_H_ */
