// The row loops of the NsaCompress CPU kernels (nsa_compress_cpu.cpp), compiled for every SIMD target in
// nsa_compress_cpu_simd.cpp and called for the best one the CPU runs (Highway's dynamic dispatch), and what they share
// with the drivers.
#ifndef PACL_OPS_NSA_COMPRESS_CPU_NSA_COMPRESS_CPU_SIMD_H_
#define PACL_OPS_NSA_COMPRESS_CPU_NSA_COMPRESS_CPU_SIMD_H_

#include <algorithm>
#include <cstdint>

#include "pacl/convert.h"

namespace pacl::nsa_compress {

// One forward walk over the tokens of consecutive blocks of one sequence, for one head, on rows read in place.
struct BlockWalk {
  const char* first_row = nullptr;  // the row (first token of the first block, head)
  int64_t row_step = 0;             // bytes from one token's row to the next token's
  int64_t blocks = 0;               // consecutive blocks, block b starting at token b * stride
  int64_t block_size = 0;
  int64_t stride = 0;
  int64_t dim = 0;
  const float* weights = nullptr;  // weight[j] of this head, j < block_size
  float* sums = nullptr;           // out: block b's fp32 sums at sums[b * dim + i], i < dim
  int64_t prefetch_bytes = 0;      // bytes of each token's row (from first_row's token on) to prefetch ahead
};

// One term of the backward's weightGrad: *sum += grad . row over the channels (grad: an outputGrad row widened to
// fp32; row: an input row, in place or gathered).
struct DotTerm {
  const float* grad = nullptr;
  const void* row = nullptr;
  float* sum = nullptr;
};

// One backward walk over consecutive tokens of one sequence, for one head (see BackwardWalks).
struct GradWalk {
  const char* first_row = nullptr;  // the first token's input row: in place, or gathered into fp32
  int64_t row_step = 0;             // bytes from one token's input row to the next token's
  int row_kind = 0;                 // RowKind of the input rows
  bool prefetch = false;            // whether to prefetch input rows ahead (rows in place in the tensor)
  int64_t tokens = 0;
  int64_t first_u = 0;  // the first token's index in its sequence
  int64_t block_size = 0;
  int64_t stride = 0;
  int64_t blocks = 0;             // the sequence's blocks
  const float* grads = nullptr;   // the covering blocks' outputGrad rows in fp32: block k's at (k - first_k) * dim
  int64_t first_k = 0;
  int64_t dim = 0;
  const float* weights = nullptr;  // weight[j] of this head, j < block_size
  float* partial = nullptr;        // the head's weightGrad partial sums [j]; null when there are no blocks
  uint16_t* out = nullptr;         // the first token's inputGrad row (unit stride), rounded to out_kind ...
  int out_kind = 0;
  int64_t out_step = 0;        // elements from one token's inputGrad row to the next token's
  bool stream = false;         // non-temporal stores into out (see NarrowRow)
  float* out_rows = nullptr;   // ... or, when not null, fp32 rows dim apart for the caller to store
  const float** grad_rows = nullptr;  // scratch: as many as blocks cover a token
  float* grad_weights = nullptr;     // scratch: as many as blocks cover a token
};

// The most blocks covering one token (ceil(block_size / stride)) for which BlockSums keeps the sums in registers.
inline constexpr int64_t kMaxRegisterCover = 4;
// How far ahead a forward walk prefetches its rows: about kPrefetchBytes of the address range it walks, at least
// kMinPrefetchTokens and at most kMaxPrefetchTokens tokens: rows 1 KiB apart gain up to 64 tokens ahead, rows tens
// of KiB apart (a new page every token) lose from more than 8 (the measurements: docs/ops/nsa_compress.md, log).
inline constexpr int64_t kPrefetchBytes = int64_t{64} << 10;
inline constexpr int64_t kMinPrefetchTokens = 8;
inline constexpr int64_t kMaxPrefetchTokens = 64;
// The most bytes of input a forward chunk may span for its first head's walk to prefetch every head's rows.
inline constexpr int64_t kWholeRowPrefetchBytes = int64_t{640} << 10;
inline int64_t PrefetchTokens(int64_t row_step_bytes) {
  const int64_t tokens = row_step_bytes > 0 ? kPrefetchBytes / row_step_bytes : kMaxPrefetchTokens;
  return std::max(kMinPrefetchTokens, std::min(kMaxPrefetchTokens, tokens));
}

// The loops, each described where it is defined (nsa_compress_cpu_simd.cpp).
namespace simd {
// out[i] = sum over r < count of weights[r] * rows[r][i], i < n, rows of `kind` (RowKind), from zero, r ascending.
void WeightedSum(int kind, const void* const* rows, const float* weights, int64_t count, int64_t n, float* out);
// A forward walk's block sums (cover: the most blocks covering one token, 2 to kMaxRegisterCover; kind: kHalfRow or
// kBFloat16Row).
void BlockSums(int kind, int cover, const BlockWalk& walk);
// A backward walk: inputGrad rows and weightGrad terms of its tokens.
void GradWalkRows(const GradWalk& walk);
// An fp32 row rounded to FLOAT16 (kHalfRow) or BFLOAT16 (kBFloat16Row) bits; stream: non-temporal stores.
void NarrowRow(int kind, const float* acc, int64_t n, uint16_t* dst, bool stream);
}  // namespace simd

}  // namespace pacl::nsa_compress

#endif  // PACL_OPS_NSA_COMPRESS_CPU_NSA_COMPRESS_CPU_SIMD_H_
