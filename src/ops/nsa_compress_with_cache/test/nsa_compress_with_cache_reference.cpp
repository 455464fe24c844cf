#include "nsa_compress_with_cache/test/nsa_compress_with_cache_reference.h"

#include <cstddef>

namespace ref {

int64_t NsaCompressWithCacheShape::Tokens() const {
  int64_t total = 0;
  for (int64_t length : lengths) total += length;
  return total;
}

std::vector<uint8_t> NsaCompressWithCache(const double* sequences, const double* weight,
                                          const std::vector<int64_t>& slots, const std::vector<uint8_t>& writable,
                                          const NsaCompressWithCacheShape& s, double* cache) {
  std::vector<uint8_t> written(static_cast<size_t>(s.result_len), 0);
  const int64_t row = s.heads * s.dim;
  int64_t start = 0;  // the entry's first token in `sequences`
  for (size_t b = 0; b < s.lengths.size(); ++b) {
    const int64_t length = s.lengths[b];
    const bool completes = length >= s.block_size && (length - s.block_size) % s.stride == 0;
    const int64_t slot = slots[b];
    const bool allowed = writable.empty() || writable[b] != 0;
    if (completes && allowed && slot >= 0 && slot < s.result_len) {
      const int64_t window = start + length - s.block_size;
      for (int64_t n = 0; n < s.heads; ++n) {
        for (int64_t d = 0; d < s.dim; ++d) {
          double sum = 0.0;
          for (int64_t j = 0; j < s.block_size; ++j) {
            sum += weight[j * s.heads + n] * sequences[(window + j) * row + n * s.dim + d];
          }
          cache[slot * row + n * s.dim + d] = sum;
        }
      }
      written[static_cast<size_t>(slot)] = 1;
    }
    start += length;
  }
  return written;
}

}  // namespace ref
