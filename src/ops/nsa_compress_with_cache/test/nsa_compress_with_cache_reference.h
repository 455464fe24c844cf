// Float64 reference of NsaCompressWithCache (aclnnNsaCompressWithCache), written from CANN's document's formula and
// docs/ops/nsa_compress_with_cache.md's decisions, independently of src/: the yardstick of the operator tests. It sees
// each batch entry's sequence as its positions in order (the tests page them).
//
// Entry b (length s_b) writes when s_b >= block_size and (s_b - block_size) % stride == 0: row slots[b] of the cache
// becomes, per head n and channel d, sum_{j < block_size} weight[j, n] * sequence_b[s_b - block_size + j, n, d].
// Entries in batch order, so a later entry naming the same slot overwrites an earlier one's row. An entry writes
// nothing when its slot is outside [0, result_len) or writable[b] is 0 (its window touches an invalid page).
#ifndef PACL_OPS_NSA_COMPRESS_WITH_CACHE_TEST_NSA_COMPRESS_WITH_CACHE_REFERENCE_H_
#define PACL_OPS_NSA_COMPRESS_WITH_CACHE_TEST_NSA_COMPRESS_WITH_CACHE_REFERENCE_H_

#include <cstdint>
#include <vector>

namespace ref {

struct NsaCompressWithCacheShape {
  int64_t heads = 0, dim = 0;
  int64_t block_size = 0, stride = 0;
  int64_t result_len = 0;
  std::vector<int64_t> lengths;  // per batch entry
  int64_t Tokens() const;        // sum of lengths
};

// sequences (Tokens, heads, dim): the entries' positions back to back; weight (block_size, heads); slots (B);
// writable: empty (every entry) or B flags. cache (result_len, heads, dim): updated in place. Returns, per cache row,
// whether it was written.
std::vector<uint8_t> NsaCompressWithCache(const double* sequences, const double* weight,
                                          const std::vector<int64_t>& slots, const std::vector<uint8_t>& writable,
                                          const NsaCompressWithCacheShape& s, double* cache);

}  // namespace ref

#endif  // PACL_OPS_NSA_COMPRESS_WITH_CACHE_TEST_NSA_COMPRESS_WITH_CACHE_REFERENCE_H_
