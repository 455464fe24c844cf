// Shape helpers shared by the operators: broadcasting and contiguous strides.
#ifndef PACL_BROADCAST_H_
#define PACL_BROADCAST_H_

#include <cstdint>

#include "pacl/export.h"
#include "pacl/tensor.h"

namespace pacl {

// Strides (in elements) that read `t` as a tensor of target_shape under NumPy broadcasting: t's dims align to the
// right; a dim of size 1 broadcasts with stride 0; a missing leading dim has stride 0. Returns false if t's shape
// does not broadcast to target_shape (then out_strides is unspecified). target_rank <= kMaxRank.
PACL_INTERNAL_API bool BroadcastStrides(const TensorDesc& t, const int64_t* target_shape, int target_rank,
                                        int64_t* out_strides);

// Row-major strides of shape (rank entries).
PACL_INTERNAL_API void ContiguousStrides(const int64_t* shape, int rank, int64_t* out_strides);

}  // namespace pacl

#endif  // PACL_BROADCAST_H_
