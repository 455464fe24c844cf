/* portable-aclnn: CANN also installs each operator header under aclnnop/level2/. */
#ifndef PORTABLE_ACLNN_ACLNNOP_LEVEL2_ACLNN_SCALED_MASKED_SOFTMAX_H_
#define PORTABLE_ACLNN_ACLNNOP_LEVEL2_ACLNN_SCALED_MASKED_SOFTMAX_H_
#include "../aclnn_scaled_masked_softmax.h"
#endif
