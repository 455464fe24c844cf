/* portable-aclnn: CANN also installs each operator header under aclnnop/level2/. */
#ifndef PORTABLE_ACLNN_ACLNNOP_LEVEL2_ACLNN_GRID_SAMPLER2D_H_
#define PORTABLE_ACLNN_ACLNNOP_LEVEL2_ACLNN_GRID_SAMPLER2D_H_
#include "../aclnn_grid_sampler2d.h"
#endif
