// Which compression blocks cover a token, and which sequence holds a token or a block: the index rules of
// NsaCompress shared by the CPU kernels (cpu/) and the CUDA kernels (cuda/), host-device (pacl/host_device.h), so the
// CPU tests check what the GPU computes.
#ifndef PACL_OPS_NSA_COMPRESS_NSA_COMPRESS_BLOCKS_H_
#define PACL_OPS_NSA_COMPRESS_NSA_COMPRESS_BLOCKS_H_

#include <cstdint>

#include "nsa_compress/nsa_compress_params.h"
#include "pacl/host_device.h"

namespace pacl::nsa_compress {

// The blocks k in [first, first + count) of a sequence with `blocks` blocks that cover its token u (u = t - start,
// 0 <= u): k * stride <= u < k * stride + block_size, ascending.
struct CoveringBlocks {
  int64_t first = 0;
  int64_t count = 0;
};
PACL_HOST_DEVICE_INLINE CoveringBlocks BlocksCovering(int64_t u, int64_t block_size, int64_t stride, int64_t blocks) {
  CoveringBlocks covering;
  if (blocks <= 0) return covering;
  covering.first = u >= block_size ? (u - block_size) / stride + 1 : 0;
  const int64_t last = hd::Min(u / stride, blocks - 1);
  covering.count = hd::Max(int64_t{0}, last - covering.first + 1);
  return covering;
}

// The index of the sequence holding token t (the first whose end is past t), or count when none does.
PACL_HOST_DEVICE_INLINE int64_t SequenceOfToken(const Sequence* sequences, int64_t count, int64_t t) {
  int64_t low = 0;
  int64_t high = count;
  while (low < high) {
    const int64_t mid = low + (high - low) / 2;
    if (sequences[mid].end <= t) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  return low;
}

// The index of the sequence holding block `block` (the first whose blocks end past it), or count when none does.
PACL_HOST_DEVICE_INLINE int64_t SequenceOfBlock(const Sequence* sequences, int64_t count, int64_t block) {
  int64_t low = 0;
  int64_t high = count;
  while (low < high) {
    const int64_t mid = low + (high - low) / 2;
    if (sequences[mid].first_block + sequences[mid].blocks <= block) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  return low;
}

}  // namespace pacl::nsa_compress

#endif  // PACL_OPS_NSA_COMPRESS_NSA_COMPRESS_BLOCKS_H_
