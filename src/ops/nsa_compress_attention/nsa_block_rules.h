// Phase 1's rules for NSA's compression and select blocks, shared by NsaCompressAttention and
// NsaCompressAttentionInfer (their documents give the same ranges).
#ifndef PACL_OPS_NSA_COMPRESS_ATTENTION_NSA_BLOCK_RULES_H_
#define PACL_OPS_NSA_COMPRESS_ATTENTION_NSA_BLOCK_RULES_H_

#include <cstdint>

#include "pacl/op_glue.h"

namespace pacl::nsa_block_rules {

inline constexpr int64_t kSizeMultiple = 16;  // compressBlockSize, the stride, selectBlockSize
inline constexpr int64_t kMaxCompressBlockSize = 128;
inline constexpr int64_t kMaxCompressStride = 64;
inline constexpr int64_t kMaxSelectBlockSize = 128;

// compressBlockSize l, the stride d (named stride_name), selectBlockSize l', selectBlockCount in [1, max_count].
inline bool CheckBlocks(OpChecker& check, int64_t l, int64_t d, const char* stride_name, int64_t l_select,
                        int64_t count, int64_t max_count) {
  const auto ll = [](int64_t v) { return static_cast<long long>(v); };
  return check.Check(l >= kSizeMultiple && l <= kMaxCompressBlockSize && l % kSizeMultiple == 0,
                     "compressBlockSize must be a multiple of 16 in [16, 128], got %lld", ll(l)) &&
         check.Check(d >= kSizeMultiple && d <= kMaxCompressStride && d % kSizeMultiple == 0,
                     "%s must be a multiple of 16 in [16, 64], got %lld", stride_name, ll(d)) &&
         check.Check(l_select >= kSizeMultiple && l_select <= kMaxSelectBlockSize && l_select % kSizeMultiple == 0,
                     "selectBlockSize must be a multiple of 16 in [16, 128], got %lld", ll(l_select)) &&
         check.Check(l >= d, "compressBlockSize (%lld) must be at least %s (%lld)", ll(l), stride_name, ll(d)) &&
         check.Check(l_select >= l, "selectBlockSize (%lld) must be at least compressBlockSize (%lld)", ll(l_select),
                     ll(l)) &&
         check.Check(l_select % d == 0, "selectBlockSize (%lld) must be a multiple of %s (%lld)", ll(l_select),
                     stride_name, ll(d)) &&
         check.Check(count >= 1 && count <= max_count, "selectBlockCount must be in [1, %lld], got %lld", ll(max_count),
                     ll(count));
}

}  // namespace pacl::nsa_block_rules

#endif  // PACL_OPS_NSA_COMPRESS_ATTENTION_NSA_BLOCK_RULES_H_
