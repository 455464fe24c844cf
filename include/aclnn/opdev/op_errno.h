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
/* The rest of CANN's list, for programs that name them; this implementation never returns them (they report
   NPU kernel-package and operator-JSON failures). KEY_CONFILICT is CANN's deprecated spelling. */
static const int32_t ACLNN_ERR_INNER_KEY_CONFILICT = 561105;
static const int32_t ACLNN_ERR_INNER_KEY_CONFLICT = 561105;
static const int32_t ACLNN_ERR_INNER_INVALID_IMPL_MODE = 561106;
static const int32_t ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND = 561107;
static const int32_t ACLNN_ERR_INNER_LOAD_JSON_FAILED = 561108;
static const int32_t ACLNN_ERR_INNER_JSON_VALUE_NOT_FOUND = 561109;
static const int32_t ACLNN_ERR_INNER_JSON_FORMAT_INVALID = 561110;
static const int32_t ACLNN_ERR_INNER_JSON_DTYPE_INVALID = 561111;
static const int32_t ACLNN_ERR_INNER_OPP_KERNEL_PKG_NOT_FOUND = 561112;
static const int32_t ACLNN_ERR_INNER_OP_FILE_INVALID = 561113;
static const int32_t ACLNN_ERR_INNER_ATTR_NUM_OUT_OF_BOUND = 561114;
static const int32_t ACLNN_ERR_INNER_ATTR_LEN_NOT_ENOUGH = 561115;
static const int32_t ACLNN_ERR_INNER_INPUT_NUM_IN_JSON_TOO_LARGE = 561116;
static const int32_t ACLNN_ERR_INNER_INPUT_JSON_IS_NULL = 561117;
static const int32_t ACLNN_ERR_INNER_STATIC_WORKSPACE_INVALID = 561118;
static const int32_t ACLNN_ERR_INNER_STATIC_BLOCK_DIM_INVALID = 561119;

#ifdef __cplusplus
}
#endif

#endif /* PORTABLE_ACLNN_ACLNN_OPDEV_OP_ERRNO_H_ */
