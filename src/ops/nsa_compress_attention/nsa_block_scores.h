// A select block's importance score and the selection order of NSA's compress attention: the per-element rules the
// CPU (cpu/nsa_block_selection.h, NsaCompressAttention and NsaCompressAttentionInfer) and the CUDA kernels (cuda/)
// share, host-device (pacl/host_device.h), so the CPU tests check what the GPU computes.
#ifndef PACL_OPS_NSA_COMPRESS_ATTENTION_NSA_BLOCK_SCORES_H_
#define PACL_OPS_NSA_COMPRESS_ATTENTION_NSA_BLOCK_SCORES_H_

#include <cstdint>

#include "pacl/host_device.h"

namespace pacl::nsa_block_selection {

// score_j = sum_{m < r} sum_{n < c} w[r j - m - n] over the keys [0, keys) (r = selectBlockSize / stride, c =
// compressBlockSize / stride; indices outside contribute nothing): CANN's P_slc with the group's sum taken first.
// One fp32 sum, m outer, n inner, both ascending.
PACL_HOST_DEVICE_INLINE float BlockScore(const float* w, int64_t keys, int64_t r, int64_t c, int64_t j) {
  float score = 0.0f;
  for (int64_t m = 0; m < r; ++m) {
    for (int64_t n = 0; n < c; ++n) {
      const int64_t i = r * j - m - n;
      if (i >= 0 && i < keys) score += w[i];
    }
  }
  return score;
}

// The selection order of (score, block) pairs: a NaN score first, then higher scores, then the lower block index.
PACL_HOST_DEVICE_INLINE bool RanksBefore(float a_score, int64_t a_block, float b_score, int64_t b_block) {
  const bool a_nan = hd::IsNan(a_score), b_nan = hd::IsNan(b_score);
  if (a_nan != b_nan) return a_nan;
  if (!a_nan && a_score != b_score) return a_score > b_score;
  return a_block < b_block;
}

}  // namespace pacl::nsa_block_selection

#endif  // PACL_OPS_NSA_COMPRESS_ATTENTION_NSA_BLOCK_SCORES_H_
