/* portable-aclnn: CANN's aclnn status codes. */
#ifndef PORTABLE_ACLNN_ACLNN_OPDEV_OP_ERRNO_H_
#define PORTABLE_ACLNN_ACLNN_OPDEV_OP_ERRNO_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

static const int32_t ACLNN_SUCCESS = 0;
static const int32_t ACLNN_ERR_PARAM_NULLPTR = 161001;     /* a required tensor or out-pointer is null */
static const int32_t ACLNN_ERR_PARAM_INVALID = 161002;     /* dtype, shape, attribute or constraint violated */
static const int32_t ACLNN_ERR_RUNTIME_ERROR = 361001;     /* the runtime failed (stream, device, memory) */
static const int32_t ACLNN_ERR_INNER = 561000;             /* internal error */
static const int32_t ACLNN_ERR_INNER_INFERSHAPE_ERROR = 561001;
static const int32_t ACLNN_ERR_INNER_TILING_ERROR = 561002;
static const int32_t ACLNN_ERR_INNER_FIND_KERNEL_ERROR = 561003;
static const int32_t ACLNN_ERR_INNER_CREATE_EXECUTOR = 561101;
static const int32_t ACLNN_ERR_INNER_NOT_TRANS_EXECUTOR = 561102;
static const int32_t ACLNN_ERR_INNER_NULLPTR = 561103;
static const int32_t ACLNN_ERR_INNER_WRONG_ATTR_INFO_SIZE = 561104;

#ifdef __cplusplus
}
#endif

#endif /* PORTABLE_ACLNN_ACLNN_OPDEV_OP_ERRNO_H_ */
