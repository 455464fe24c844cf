// Reading an index element (INT32 or INT64 device data: page tables, top-k indices, level shapes) from a tensor
// description, whatever its alignment. The kernels never trust these values: each caller bounds what it reads.
#ifndef PACL_INDEX_H_
#define PACL_INDEX_H_

#include <cstdint>
#include <cstring>

#include "pacl/tensor.h"

namespace pacl {

// Storage element `element` (offset and strides applied by the caller) of an INT32 or INT64 tensor, widened to int64.
inline int64_t LoadIndex(const TensorDesc& t, int64_t element) {
  if (t.dtype == ACL_INT32) {
    int32_t v;
    std::memcpy(&v, t.ElementAt(element), sizeof v);
    return v;
  }
  int64_t v;
  std::memcpy(&v, t.ElementAt(element), sizeof v);
  return v;
}

}  // namespace pacl

#endif  // PACL_INDEX_H_
