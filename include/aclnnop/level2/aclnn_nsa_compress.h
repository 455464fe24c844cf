/* portable-aclnn: CANN also installs each operator header under aclnnop/level2/. */
#ifndef PORTABLE_ACLNN_ACLNNOP_LEVEL2_ACLNN_NSA_COMPRESS_H_
#define PORTABLE_ACLNN_ACLNNOP_LEVEL2_ACLNN_NSA_COMPRESS_H_
#include "../aclnn_nsa_compress.h"
#endif
