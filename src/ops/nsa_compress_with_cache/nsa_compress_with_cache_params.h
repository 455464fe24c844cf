// Plain-data parameters of aclnnNsaCompressWithCache, filled by phase 1 (nsa_compress_with_cache_api.cpp) and
// consumed by the kernel (cpu/).
#ifndef PACL_OPS_NSA_COMPRESS_WITH_CACHE_NSA_COMPRESS_WITH_CACHE_PARAMS_H_
#define PACL_OPS_NSA_COMPRESS_WITH_CACHE_NSA_COMPRESS_WITH_CACHE_PARAMS_H_

#include <cstdint>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "pacl/tensor.h"

namespace pacl::nsa_compress_with_cache {

struct CacheShape {
  int64_t heads = 0;            // N
  int64_t dim = 0;              // D
  int64_t block_size = 0;       // compressBlockSize
  int64_t stride = 0;           // compressStride
  bool paged = false;           // input (blockNum, pageBlockSize, N, D) through the block table; else (T, N, D)
  int64_t page_block_size = 0;  // paged: positions per page
  int64_t pages = 0;            // paged: blockNum
  int64_t result_len = 0;       // rows of outputCache
};

// One batch entry: its length, and (TND) where its tokens begin in input.
struct Entry {
  int64_t length = 0;
  int64_t first_token = 0;
};

struct Params {
  CacheShape shape;
  std::vector<Entry> entries;  // B, in order
  TensorDesc input;            // paged: (blockNum, pageBlockSize, N, D); TND: (T, N, D)
  TensorDesc weight;           // (compressBlockSize, N)
  TensorDesc slot_mapping;     // INT32 (B)
  TensorDesc block_table;      // paged: INT32 (B, pages per entry)
  TensorDesc output_cache;     // (resultLen, N, D)
};

inline constexpr const char* kName = "aclnnNsaCompressWithCache";

aclnnStatus RunCpu(const Params& params, void* workspace);

}  // namespace pacl::nsa_compress_with_cache

#endif  // PACL_OPS_NSA_COMPRESS_WITH_CACHE_NSA_COMPRESS_WITH_CACHE_PARAMS_H_
