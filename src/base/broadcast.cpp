// NOTE: shape helpers. Broadcasting follows NumPy: shapes align on the right; a source dim equal to the target
// dim keeps its stride, a source dim of 1 repeats (stride 0), a target dim with no source dim (leading) repeats.
// Contiguous strides follow PyTorch: stride[d] = product of max(shape[k], 1) for k > d, so a zero-size dim does
// not zero the strides of the dims before it.
#include "pacl/broadcast.h"

#include <algorithm>

namespace pacl {

bool BroadcastStrides(const TensorDesc& t, const int64_t* target_shape, int target_rank, int64_t* out_strides) {
  if (target_rank < 0 || target_rank > kMaxRank || t.rank < 0 || t.rank > target_rank) return false;
  if (target_rank > 0 && (target_shape == nullptr || out_strides == nullptr)) return false;
  const int leading = target_rank - t.rank;  // target dims with no source dim
  for (int d = 0; d < target_rank; ++d) {
    const int64_t target_dim = target_shape[d];
    if (target_dim < 0) return false;
    if (d < leading) {
      out_strides[d] = 0;
      continue;
    }
    const int64_t source_dim = t.shape[d - leading];
    if (source_dim == 1) {
      out_strides[d] = 0;  // also when target_dim is 1 (the stride is never used) or 0 (nothing is read)
    } else if (source_dim == target_dim) {
      out_strides[d] = t.strides[d - leading];
    } else {
      return false;
    }
  }
  return true;
}

void ContiguousStrides(const int64_t* shape, int rank, int64_t* out_strides) {
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    out_strides[d] = stride;
    if (d > 0) stride *= std::max<int64_t>(shape[d], 1);  // (the full product is not needed)
  }
}

}  // namespace pacl
