/* portable-aclnn: CANN also installs each operator header under aclnnop/level2/. */
#ifndef PORTABLE_ACLNN_ACLNNOP_LEVEL2_ACLNN_MULTI_SCALE_DEFORMABLE_ATTN_FUNCTION_H_
#define PORTABLE_ACLNN_ACLNNOP_LEVEL2_ACLNN_MULTI_SCALE_DEFORMABLE_ATTN_FUNCTION_H_
#include "../aclnn_multi_scale_deformable_attn_function.h"
#endif
