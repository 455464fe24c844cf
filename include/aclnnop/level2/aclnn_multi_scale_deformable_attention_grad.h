/* portable-aclnn: CANN also installs each operator header under aclnnop/level2/. */
#ifndef PORTABLE_ACLNN_ACLNNOP_LEVEL2_ACLNN_MULTI_SCALE_DEFORMABLE_ATTENTION_GRAD_H_
#define PORTABLE_ACLNN_ACLNNOP_LEVEL2_ACLNN_MULTI_SCALE_DEFORMABLE_ATTENTION_GRAD_H_
#include "../aclnn_multi_scale_deformable_attention_grad.h"
#endif
