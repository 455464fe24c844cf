// NOTE [NsaCompress on the CPU]
//
// Problem. input (T, N, D) holds the tokens of several sequences back to back (actSeqLen: cumulative ends). Each
// sequence of length L has nb = (L - blockSize) / stride + 1 blocks (0 when L < blockSize); block k covers tokens
// s + k * stride + j, j < blockSize. Forward: out[block, n, :] = sum_j weight[j, n] * input[s + k*stride + j, n, :].
// Backward: inputGrad[t, n, :] = sum over the blocks covering t of weight[j, n] * outputGrad[block, n, :] (0 when
// none), weightGrad[j, n] = sum over blocks and d of outputGrad[block, n, d] * input[s + k*stride + j, n, d].
//
// Layout and vectors. Work is on rows of D channels, converted to fp32 in registers while they are used (fp16 via
// F16C where the CPU has it, bf16 by a shift): a row with unit stride along D is read in place, any other view is
// first gathered into an fp32 row (pacl::LoadAsFloat). fp32 accumulators, one rounding to nearest even per output
// element (in registers for unit-stride outputs, pacl::StoreFromFloat otherwise). weight is read once into an fp32
// table.
//
// Passes and memory traffic. Forward: tasks are chunks of kBlocksPerChunk consecutive blocks. When input rows are read
// in place and at most kMaxRegisterCover blocks cover a token (ceil(blockSize / stride), 2 for the usual
// blockSize = 2 * stride), each head's tokens are walked once in order (BlockSums): a row is loaded and widened once,
// in as few channel groups as the registers allow (a D = 192 row in one go on AVX-512), and multiply-added into the
// sums of every block covering it, held in registers; a block's sums leave when its last row is in. One walk per row
// keeps each row's bytes in one run of loads, which matters more than anything else here (the rows of one head lie
// N * D elements apart). Where a chunk's token rows of all heads lie together in at most kWholeRowPrefetchBytes, the
// first head's walk prefetches all of them and the other heads' walks read from L2. Otherwise (gathered rows, or many
// blocks per token) each block sums its blockSize rows directly (WeightedSum), the shared rows coming from cache the
// second time. Either way input is read once from memory and output written once (non-temporal stores when large).
// Backward: one walk over the tokens, which both outputs need (input rows for weightGrad, inputGrad rows to write).
// Tasks are chunks of kBackwardTokensPerChunk tokens; per chunk, sequence and head the outputGrad rows of the covering
// blocks are widened once into an fp32 buffer, then GradWalkRows walks the head's tokens in order, prefetching input
// rows ahead (PrefetchTokens; without it the walk took 1.8x as long): each token's inputGrad row sums weight *
// outputGrad row over its covering blocks in ascending block order in registers and is rounded and written once (zeros
// when no block covers it; non-temporal stores when large), and its weightGrad terms (outputGrad row . input row, one
// per covering block) are added into the chunk's partial sums (heads, block_size) in the workspace, four dot products
// at a time sharing each token's widened row; two consecutive tokens each covered by two blocks (the usual
// blockSize = 2 * stride) go in one pass over the channels (GradPairT), each 16 channels of their input and outputGrad
// rows loaded once for both outputs. Then the chunks' partials are added in ascending chunk order into weightGrad.
// Input is read once from memory and inputGrad written once.
//
// Determinism. Both forward paths start each block's sum at zero and add its rows in ascending j, so they give the
// same bits. Every sum has an order fixed by the shape and actSeqLen (blocks ascending, j ascending, a weightGrad
// partial's terms in token order - so blocks ascending - channels in the canonical order of
// pacl/canonical_math-inl.h - 16 partial sums and a fixed tree, whatever the vector width - chunks ascending),
// never by the thread count, and every multiply-add is fused on every target: results are bit-identical run to run,
// for any number of threads and on every SIMD target.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "hwy/cache_control.h"
#include "nsa_compress/nsa_compress_blocks.h"
#include "nsa_compress/nsa_compress_params.h"
#include "pacl/convert.h"
#include "pacl/dtype.h"
#include "pacl/parallel.h"
#include "pacl/workspace_plan.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nsa_compress/cpu/nsa_compress_cpu.cpp"
// foreach_target.h must come first: it re-includes this file once per target.
// clang-format off
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "pacl/canonical_math-inl.h"
#include "pacl/float_vectors-inl.h"
// clang-format on

#ifndef PACL_OPS_NSA_COMPRESS_CPU_SHARED_
#define PACL_OPS_NSA_COMPRESS_CPU_SHARED_
namespace pacl::nsa_compress {
// How a row's elements are stored: fp32, or fp16/bf16 bits.
enum RowKind : int { kFloatRow = 0, kHalfRow = 1, kBFloat16Row = 2 };

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
// kMinPrefetchTokens and at most kMaxPrefetchTokens tokens (measured, FLOAT16 forward, 2 threads: 8 x 4096 tokens
// with N 4, D 128 - 1 KiB from one token's row to the next - 0.79 ms 8 tokens ahead, 0.53 ms 32, 0.44 ms 64,
// 0.47 ms 128; 4 x 2048 tokens with N 128, D 192 - 48 KiB apart, a new page every token - 12.0 ms 8 ahead, 12.6 ms
// 64, 13.3 ms 128).
inline constexpr int64_t kPrefetchBytes = int64_t{64} << 10;
inline constexpr int64_t kMinPrefetchTokens = 8;
inline constexpr int64_t kMaxPrefetchTokens = 64;
// The most bytes of input a forward chunk may span for its first head's walk to prefetch every head's rows.
inline constexpr int64_t kWholeRowPrefetchBytes = int64_t{640} << 10;
inline int64_t PrefetchTokens(int64_t row_step_bytes) {
  const int64_t tokens = row_step_bytes > 0 ? kPrefetchBytes / row_step_bytes : kMaxPrefetchTokens;
  return std::max(kMinPrefetchTokens, std::min(kMaxPrefetchTokens, tokens));
}
}  // namespace pacl::nsa_compress
#endif  // PACL_OPS_NSA_COMPRESS_CPU_SHARED_

// Per-target row loops: whole vectors, then single lanes for the tail (D is any size).
HWY_BEFORE_NAMESPACE();
namespace pacl::nsa_compress {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// At most 16 lanes: the partial sums of the canonical order (pacl/canonical_math-inl.h) are whole vectors of DF.
using DF = pacl::HWY_NAMESPACE::DSum;
using DF1 = hn::CappedTag<float, 1>;
using pacl::HWY_NAMESPACE::CanonicalSum;
using pacl::HWY_NAMESPACE::CanonicalSums4;
using pacl::HWY_NAMESPACE::CanonicalSums4InOneWalk;
using pacl::HWY_NAMESPACE::CanonicalSums4WholeVectors;
using pacl::HWY_NAMESPACE::FusedMulAdd;
using pacl::HWY_NAMESPACE::VectorArray;

template <int kKind, class D>
hn::Vec<D> LoadLanes(D d, const void* row, int64_t i) {
  if constexpr (kKind == kFloatRow) {
    return hn::LoadU(d, static_cast<const float*>(row) + i);
  } else {
    const hn::Rebind<uint16_t, D> du16;
    const auto bits = hn::LoadU(du16, static_cast<const uint16_t*>(row) + i);
    if constexpr (kKind == kHalfRow) {
      return pacl::HWY_NAMESPACE::HalfBitsToFloat(d, bits);
    } else {
      return pacl::HWY_NAMESPACE::BFloat16BitsToFloat(d, bits);
    }
  }
}

// out[i] = sum over rows r (in order) of weights[r] * rows[r][i], for i < n: up to 4 vectors of sums stay in
// registers while the rows are walked.
template <int kKind, int kVectors, class D>
void WeightedSumGroup(D d, const void* const* rows, const float* weights, int64_t count, int64_t first, float* out) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  VectorArray<D, kVectors> sums;
  for (int v = 0; v < kVectors; ++v) sums.Set(d, v, hn::Zero(d));
  for (int64_t r = 0; r < count; ++r) {
    const auto w = hn::Set(d, weights[r]);
    for (int v = 0; v < kVectors; ++v)
      sums.Set(d, v, FusedMulAdd(d, w, LoadLanes<kKind>(d, rows[r], first + v * lanes), sums.Get(d, v)));
  }
  for (int v = 0; v < kVectors; ++v) hn::StoreU(sums.Get(d, v), d, out + first + v * lanes);
}

template <int kKind>
void WeightedSumT(const void* const* rows, const float* weights, int64_t count, int64_t n, float* out) {
  const DF d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) WeightedSumGroup<kKind, 4>(d, rows, weights, count, i, out);
  for (; i + lanes <= n; i += lanes) WeightedSumGroup<kKind, 1>(d, rows, weights, count, i, out);
  for (; i < n; ++i) WeightedSumGroup<kKind, 1>(DF1(), rows, weights, count, i, out);
}

void WeightedSum(int kind, const void* const* rows, const float* weights, int64_t count, int64_t n, float* out) {
  if (kind == kHalfRow) return WeightedSumT<kHalfRow>(rows, weights, count, n, out);
  if (kind == kBFloat16Row) return WeightedSumT<kBFloat16Row>(rows, weights, count, n, out);
  WeightedSumT<kFloatRow>(rows, weights, count, n, out);
}

// Block sums of channels [first, first + kVectors * lanes) of a BlockWalk, converting each input row once: a token
// is covered by at most kCover blocks, whose sums stay in registers (slot c holds block group - c, where `group`
// is the newest block begun). Each block's sum starts at zero and takes its rows in ascending j, exactly as
// WeightedSum would, so both give the same bits. Every loop over the sums is unrolled by pragma: GCC left the
// covering-block loop rolled, and with it kept all the sums on the stack (a load and a store around each
// multiply-add; 1 thread, 8 x 4096 tokens, N 4, D 128: 2.3 ms, 1.6-1.9 ms in registers).
template <int kKind, int kCover, int kVectors, class D>
void BlockSumsGroup(D d, const BlockWalk& walk, int64_t first) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const int64_t tokens = (walk.blocks - 1) * walk.stride + walk.block_size;
  // The rows of a token prefetch_tokens ahead are asked for on the first channel group's walk only.
  const bool prefetch = first == 0 && walk.prefetch_bytes > 0;
  const int64_t prefetch_tokens = PrefetchTokens(walk.row_step);
  VectorArray<D, kCover * kVectors> sums;  // block slot c, vector v at c * kVectors + v
  #pragma GCC unroll 32
  for (int s = 0; s < kCover * kVectors; ++s) sums.Set(d, s, hn::Zero(d));
  const char* row = walk.first_row;
  int64_t u = 0;
  for (int64_t group = 0; u < tokens; ++group) {
    // Block `group` begins at token u: every block in flight moves one slot older.
    #pragma GCC unroll 32
    for (int s = kCover * kVectors - 1; s >= kVectors; --s) sums.Set(d, s, sums.Get(d, s - kVectors));
    #pragma GCC unroll 32
    for (int v = 0; v < kVectors; ++v) sums.Set(d, v, hn::Zero(d));
    const int64_t group_end = std::min(tokens, u + walk.stride);
    for (; u < group_end; ++u, row += walk.row_step) {
      if (prefetch && u + prefetch_tokens < tokens) {
        const char* ahead = row + prefetch_tokens * walk.row_step;
        for (int64_t byte = 0; byte < walk.prefetch_bytes; byte += 64) hwy::Prefetch(ahead + byte);
      }
      // The covering blocks' weights for this token; each vector of the row is loaded and widened once and added
      // into every covering block's sums right away, so that only one vector of the row is held at a time.
      bool covers[kCover];
      bool completes[kCover];  // this token is the block's last: its sums are done
      VectorArray<D, kCover> weights;
      #pragma GCC unroll 32
      for (int c = 0; c < kCover; ++c) {
        const int64_t block = group - c;
        const int64_t j = u - block * walk.stride;
        covers[c] = block >= 0 && block < walk.blocks && j < walk.block_size;
        completes[c] = covers[c] && j == walk.block_size - 1;
        weights.Set(d, c, hn::Set(d, covers[c] ? walk.weights[j] : 0.0f));
      }
      #pragma GCC unroll 32
      for (int v = 0; v < kVectors; ++v) {
        const auto x = LoadLanes<kKind>(d, row, first + v * lanes);
        #pragma GCC unroll 32
        for (int c = 0; c < kCover; ++c) {
          if (covers[c]) {
            sums.Set(d, c * kVectors + v, FusedMulAdd(d, weights.Get(d, c), x, sums.Get(d, c * kVectors + v)));
          }
        }
      }
      #pragma GCC unroll 32
      for (int c = 0; c < kCover; ++c) {
        if (!completes[c]) continue;
        #pragma GCC unroll 32
        for (int v = 0; v < kVectors; ++v)
          hn::StoreU(sums.Get(d, c * kVectors + v), d, walk.sums + (group - c) * walk.dim + first + v * lanes);
      }
    }
  }
}

// Channel groups (vectors per walk) there are kernels for; a row walked in one go is read in one run.
constexpr int kGroupSizes[] = {12, 8, 6, 4, 2, 1};

// True when the sums of `cover` blocks over `vectors` vectors fit in the target's registers. The row vector and the
// weights may then spill: fewer walks over a row count for more (FLOAT16 forward, 2 threads, 8 x 4096 tokens, N 4,
// D 128 on AVX2: 1.41-1.51 ms in walks of 6, 6 and 4 vectors, 1.21-1.22 ms in two of 8; blockSize 64, stride 16
// (4 blocks a token): AVX2 4.67 -> 2.67 ms, AVX-512 1.46 -> 1.12 ms).
constexpr bool SumsFitInRegisters(int cover, int vectors) {
  return cover * vectors <= pacl::HWY_NAMESPACE::kVectorRegisters;
}

template <int kKind, int kCover, int kVectors>
void BlockSumsVectors(const BlockWalk& walk, int64_t first) {
  // Only group sizes whose sums fit in registers are instantiated; larger requests never reach here.
  if constexpr (SumsFitInRegisters(kCover, kVectors) || kVectors == 1) {
    BlockSumsGroup<kKind, kCover, kVectors>(DF(), walk, first);
  }
}

template <int kKind, int kCover>
void BlockSumsT(const BlockWalk& walk) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(DF()));
  int max_group = 1;
  for (int size : kGroupSizes) {
    if (SumsFitInRegisters(kCover, size)) {
      max_group = size;
      break;
    }
  }
  // Whole vectors in as few walks as the registers allow: each time the largest group that fits what is left.
  int64_t remaining = walk.dim / lanes;
  int64_t first = 0;
  while (remaining > 0) {
    int size = 1;
    for (int candidate : kGroupSizes) {
      if (candidate <= max_group && candidate <= remaining) {
        size = candidate;
        break;
      }
    }
    if (size == 12) BlockSumsVectors<kKind, kCover, 12>(walk, first);
    if (size == 8) BlockSumsVectors<kKind, kCover, 8>(walk, first);
    if (size == 6) BlockSumsVectors<kKind, kCover, 6>(walk, first);
    if (size == 4) BlockSumsVectors<kKind, kCover, 4>(walk, first);
    if (size == 2) BlockSumsVectors<kKind, kCover, 2>(walk, first);
    if (size == 1) BlockSumsVectors<kKind, kCover, 1>(walk, first);
    first += size * lanes;
    remaining -= size;
  }
  // The channels past the last whole vector, one lane at a time.
  for (; first < walk.dim; ++first) BlockSumsGroup<kKind, kCover, 1>(DF1(), walk, first);
}

template <int kKind>
void BlockSumsOfKind(int cover, const BlockWalk& walk) {
  if (cover == 2) return BlockSumsT<kKind, 2>(walk);
  if (cover == 3) return BlockSumsT<kKind, 3>(walk);
  BlockSumsT<kKind, 4>(walk);
}

// cover: the most blocks covering one token, 2 to kMaxRegisterCover; kind: kHalfRow or kBFloat16Row.
void BlockSums(int kind, int cover, const BlockWalk& walk) {
  if (kind == kHalfRow) return BlockSumsOfKind<kHalfRow>(cover, walk);
  BlockSumsOfKind<kBFloat16Row>(cover, walk);
}

// *terms[q].sum += terms[q].grad . terms[q].row (over i < n) for each term q, in order, each dot product in the
// canonical order of pacl/canonical_math-inl.h (the same bits on every target). Four terms go together, keeping
// four sets of partial sums in flight (one term's are a chain of n / 16 dependent multiply-adds).
template <int kKind>
void AddTermDotsT(const DotTerm* terms, int64_t count, int64_t n) {
  constexpr size_t kElementBytes = kKind == kFloatRow ? sizeof(float) : sizeof(uint16_t);
  using V = hn::Vec<DF>;
  // Lanes [first, first + lanes) of a grad row and of an input row, zero past the end of the partial last vector.
  auto load_grad = [&](DF d, const float* grad, size_t first, size_t lanes) {
    if (lanes == hn::Lanes(d)) return hn::LoadU(d, grad + first);
    HWY_ALIGN float grad_lanes[hn::MaxLanes(DF())] = {};
    std::memcpy(grad_lanes, grad + first, lanes * sizeof(float));
    return hn::Load(d, grad_lanes);
  };
  auto load_row = [&](DF d, const void* row, size_t first, size_t lanes) {
    if (lanes == hn::Lanes(d)) return LoadLanes<kKind>(d, row, static_cast<int64_t>(first));
    HWY_ALIGN float row_lanes[hn::MaxLanes(DF())] = {};  // room for as many fp32, fp16 or bf16 elements
    std::memcpy(row_lanes, static_cast<const char*>(row) + first * kElementBytes, lanes * kElementBytes);
    return LoadLanes<kKind>(d, row_lanes, 0);
  };
  auto term_step = [&](DF d, const DotTerm& term, size_t first, size_t lanes, V acc) {
    return FusedMulAdd(d, load_grad(d, term.grad, first, lanes), load_row(d, term.row, first, lanes), acc);
  };
  int64_t q = 0;
  for (; q + 4 <= count; q += 4) {
    float dots[4];
    const DotTerm* four = terms + q;
    // A token's terms share its input row: loaded and widened once for them (terms 0-1 and 2-3 usually do).
    const bool shared01 = four[1].row == four[0].row;
    const bool shared23 = four[3].row == four[2].row;
    CanonicalSums4(
        static_cast<size_t>(n),
        [&](DF d, size_t first, size_t lanes, V& acc0, V& acc1, V& acc2, V& acc3) {
          const V x0 = load_row(d, four[0].row, first, lanes);
          const V x1 = shared01 ? x0 : load_row(d, four[1].row, first, lanes);
          const V x2 = load_row(d, four[2].row, first, lanes);
          const V x3 = shared23 ? x2 : load_row(d, four[3].row, first, lanes);
          acc0 = FusedMulAdd(d, load_grad(d, four[0].grad, first, lanes), x0, acc0);
          acc1 = FusedMulAdd(d, load_grad(d, four[1].grad, first, lanes), x1, acc1);
          acc2 = FusedMulAdd(d, load_grad(d, four[2].grad, first, lanes), x2, acc2);
          acc3 = FusedMulAdd(d, load_grad(d, four[3].grad, first, lanes), x3, acc3);
        },
        dots);
    for (int j = 0; j < 4; ++j) *four[j].sum += dots[j];
  }
  for (; q < count; ++q) {
    const DotTerm& term = terms[q];
    *term.sum += CanonicalSum(static_cast<size_t>(n), [&](DF d, V acc, size_t first, size_t lanes) {
      return term_step(d, term, first, lanes, acc);
    });
  }
}

// Whether whole vectors may go out with non-temporal stores (when asked for and dst is vector-aligned: a large
// output is written once and not read again here, so its lines need not be fetched first; the caller flushes the
// stores). Only where a vector of the narrowed lanes fills a whole 128-bit register or more (AVX2 and up): on SSE4
// it is 64 bits, and Highway 1.0.3's Stream of a 64-bit vector writes 16 bytes with an instruction that needs
// 16-byte alignment (it crashed on an 8-byte-aligned row: NsaCompressLarge.StreamedInputGradMatchesReference,
// pinned to SSE4).
constexpr bool kCanStreamNarrowed = hn::MaxLanes(hn::Rebind<uint16_t, DF>()) * sizeof(uint16_t) >= 16;

// v rounded to nearest even, as fp16 (kind kHalfRow) or bf16 bits, stored at dst (non-temporal when stream).
template <int kKind, class D>
HWY_INLINE void StoreNarrowed(D d, hn::Vec<D> v, uint16_t* dst, bool stream) {
  const hn::Rebind<uint16_t, D> du16;
  const auto bits = kKind == kHalfRow ? pacl::HWY_NAMESPACE::FloatToHalfBits(d, v)
                                      : pacl::HWY_NAMESPACE::FloatToBFloat16Bits(d, v);
  if (stream) {
    hn::Stream(bits, du16, dst);
  } else {
    hn::StoreU(bits, du16, dst);
  }
}

// dst[i] = acc[i] rounded as StoreNarrowed does, for i < n, whole vectors streamed when stream (see
// kCanStreamNarrowed).
template <int kKind>
void NarrowRowT(const float* acc, int64_t n, uint16_t* dst, bool stream) {
  const DF d;
  const DF1 d1;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const bool aligned = reinterpret_cast<uintptr_t>(dst) % (static_cast<uintptr_t>(lanes) * sizeof(uint16_t)) == 0;
  const bool streams = kCanStreamNarrowed && stream && aligned;
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) StoreNarrowed<kKind>(d, hn::LoadU(d, acc + i), dst + i, streams);
  for (; i < n; ++i) StoreNarrowed<kKind>(d1, hn::LoadU(d1, acc + i), dst + i, false);
}

void NarrowRow(int kind, const float* acc, int64_t n, uint16_t* dst, bool stream) {
  if (kind == kHalfRow) return NarrowRowT<kHalfRow>(acc, n, dst, stream);
  NarrowRowT<kBFloat16Row>(acc, n, dst, stream);
}

// One inputGrad row from fp32 outputGrad rows: sums of weights[r] * rows[r] over the rows in order, from zero (as
// WeightedSum), for channels [first, first + kVectors * lanes), stored as fp32 (kOutKind kFloatRow) or rounded to
// fp16 / bf16 in registers (with non-temporal stores when stream; the caller checked the alignment).
template <int kOutKind, int kVectors, class D>
void GradRowGroup(D d, const float* const* rows, const float* weights, int64_t count, int64_t first, void* out,
                  bool stream) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  VectorArray<D, kVectors> sums;
  for (int v = 0; v < kVectors; ++v) sums.Set(d, v, hn::Zero(d));
  for (int64_t r = 0; r < count; ++r) {
    const auto w = hn::Set(d, weights[r]);
    for (int v = 0; v < kVectors; ++v)
      sums.Set(d, v, FusedMulAdd(d, w, hn::LoadU(d, rows[r] + first + v * lanes), sums.Get(d, v)));
  }
  for (int v = 0; v < kVectors; ++v) {
    const int64_t i = first + v * lanes;
    if constexpr (kOutKind == kFloatRow) {
      hn::StoreU(sums.Get(d, v), d, static_cast<float*>(out) + i);
    } else {
      StoreNarrowed<kOutKind>(d, sums.Get(d, v), static_cast<uint16_t*>(out) + i, stream);
    }
  }
}

template <int kOutKind>
void GradRowT(const float* const* rows, const float* weights, int64_t count, int64_t n, void* out, bool stream) {
  const DF d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const bool aligned = reinterpret_cast<uintptr_t>(out) % (static_cast<uintptr_t>(lanes) * sizeof(uint16_t)) == 0;
  const bool streams = kOutKind != kFloatRow && kCanStreamNarrowed && stream && aligned;
  int64_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) GradRowGroup<kOutKind, 4>(d, rows, weights, count, i, out, streams);
  for (; i + lanes <= n; i += lanes) GradRowGroup<kOutKind, 1>(d, rows, weights, count, i, out, streams);
  for (; i < n; ++i) GradRowGroup<kOutKind, 1>(DF1(), rows, weights, count, i, out, false);
}

// Two consecutive tokens each covered by exactly two blocks, in one pass over the channels: per 16 channels (one
// canonical chunk) the two tokens' input rows and their blocks' outputGrad rows are loaded once and give both the
// inputGrad rows (sums of weight * outputGrad row from zero, blocks ascending, as GradRowT; rounded and stored
// right away) and the four weightGrad dot products (as AddTermDotsT: the canonical order, added into their sums in
// token order, blocks ascending). Done apart, the outputGrad rows were loaded twice and the walk went over each
// token's channels twice. Only where CanonicalSums4 walks the channels once (its step stores) and whole chunks
// cover the row (n a multiple of 16); out is fp16 or bf16 bits with unit stride.
struct TokenPair {
  const void* rows[2];        // the tokens' input rows
  const float* grads[2][2];   // [token][r]: the outputGrad rows of its covering blocks, ascending
  float weights[2][2];        // [token][r]: their weights for the token
  float* sums[2][2];          // [token][r]: the weightGrad partial sums the dot products go to
  uint16_t* out[2];           // the tokens' inputGrad rows
};

// kSameBlocks: both tokens lie in the same two blocks (the grads rows are the same), so they are loaded once.
template <int kKind, int kOutKind, bool kSameBlocks>
void GradPairT(const TokenPair& pair, int64_t n, bool stream) {
  using V = hn::Vec<DF>;
  const DF d;
  const V w00 = hn::Set(d, pair.weights[0][0]), w01 = hn::Set(d, pair.weights[0][1]);
  const V w10 = hn::Set(d, pair.weights[1][0]), w11 = hn::Set(d, pair.weights[1][1]);
  float dots[4];
  CanonicalSums4WholeVectors(
      static_cast<size_t>(n),
      [&](DF dj, size_t first, V& acc0, V& acc1, V& acc2, V& acc3) {
        const V x0 = LoadLanes<kKind>(dj, pair.rows[0], static_cast<int64_t>(first));
        const V x1 = LoadLanes<kKind>(dj, pair.rows[1], static_cast<int64_t>(first));
        const V g00 = hn::LoadU(dj, pair.grads[0][0] + first), g01 = hn::LoadU(dj, pair.grads[0][1] + first);
        const V g10 = kSameBlocks ? g00 : hn::LoadU(dj, pair.grads[1][0] + first);
        const V g11 = kSameBlocks ? g01 : hn::LoadU(dj, pair.grads[1][1] + first);
        acc0 = FusedMulAdd(dj, g00, x0, acc0);
        acc1 = FusedMulAdd(dj, g01, x0, acc1);
        acc2 = FusedMulAdd(dj, g10, x1, acc2);
        acc3 = FusedMulAdd(dj, g11, x1, acc3);
        StoreNarrowed<kOutKind>(dj, FusedMulAdd(dj, w01, g01, FusedMulAdd(dj, w00, g00, hn::Zero(dj))),
                                pair.out[0] + first, stream);
        StoreNarrowed<kOutKind>(dj, FusedMulAdd(dj, w11, g11, FusedMulAdd(dj, w10, g10, hn::Zero(dj))),
                                pair.out[1] + first, stream);
      },
      dots);
  *pair.sums[0][0] += dots[0];
  *pair.sums[0][1] += dots[1];
  *pair.sums[1][0] += dots[2];
  *pair.sums[1][1] += dots[3];
}

// A GradWalk, its input rows of kind kKind: token by token, the inputGrad row (covering blocks ascending), then the
// weightGrad terms, four dot products at a time (in token order, and ascending blocks within a token).
template <int kKind>
void GradWalkT(const GradWalk& walk) {
  DotTerm terms[4];
  int pending = 0;
  const char* row = walk.first_row;
  // BlocksCovering without its divisions (two per token and head were a tenth of the walk's time): u = quotient *
  // stride + phase, block_size = size_quotient * stride + size_phase, kept as u steps by one.
  int64_t quotient = walk.first_u / walk.stride;
  int64_t phase = walk.first_u % walk.stride;
  const int64_t size_quotient = walk.block_size / walk.stride;
  const int64_t size_phase = walk.block_size % walk.stride;
  // Not PrefetchTokens: this walk also writes a row per token, and prefetching further lost time (8 x 4096 tokens,
  // N 4, D 128: 1.79 ms 8 tokens ahead, 1.87-1.91 ms 64 ahead).
  const int64_t prefetch_tokens = kMinPrefetchTokens;
  // The blocks covering token u, whose quotient and phase are given.
  auto covering_of = [&](int64_t u, int64_t u_quotient, int64_t u_phase) {
    CoveringBlocks covering;
    if (walk.blocks > 0) {
      // First block: (u - block_size) / stride + 1 when u >= block_size, else 0; last: min(u / stride, blocks - 1).
      covering.first = u >= walk.block_size ? u_quotient - size_quotient + (u_phase >= size_phase ? 1 : 0) : 0;
      covering.count = std::max<int64_t>(0, std::min(u_quotient, walk.blocks - 1) - covering.first + 1);
    }
    return covering;
  };
  auto advance = [&walk](int64_t& u_quotient, int64_t& u_phase) {
    if (++u_phase == walk.stride) {
      u_phase = 0;
      ++u_quotient;
    }
  };
  auto prefetch_ahead = [&](int64_t i, const char* token_row) {
    if (!walk.prefetch || i + prefetch_tokens >= walk.tokens) return;
    const char* ahead = token_row + prefetch_tokens * walk.row_step;
    for (int64_t byte = 0; byte < walk.dim * 2; byte += 64) hwy::Prefetch(ahead + byte);
  };
  // Pairs of tokens go to GradPairT where it applies (see there).
  const bool pairs = CanonicalSums4InOneWalk() && walk.partial != nullptr && walk.out_rows == nullptr &&
                     walk.dim % 16 == 0;
  const bool pair_streams = kCanStreamNarrowed && walk.stream && reinterpret_cast<uintptr_t>(walk.out) % 32 == 0 &&
                            (walk.out_step * 2) % 32 == 0;
  for (int64_t i = 0; i < walk.tokens; ++i, row += walk.row_step) {
    const int64_t u = walk.first_u + i;
    const CoveringBlocks covering = covering_of(u, quotient, phase);
    advance(quotient, phase);
    if (pairs && covering.count == 2 && i + 1 < walk.tokens) {
      const CoveringBlocks next = covering_of(u + 1, quotient, phase);
      if (next.count == 2) {
        AddTermDotsT<kKind>(terms, pending, walk.dim);  // earlier tokens' terms first: the sums keep token order
        pending = 0;
        prefetch_ahead(i, row);
        prefetch_ahead(i + 1, row + walk.row_step);
        TokenPair pair;
        const CoveringBlocks both[2] = {covering, next};
        for (int t = 0; t < 2; ++t) {
          pair.rows[t] = row + t * walk.row_step;
          pair.out[t] = walk.out + (i + t) * walk.out_step;
          for (int r = 0; r < 2; ++r) {
            const int64_t k = both[t].first + r;
            const int64_t j = u + t - k * walk.stride;
            pair.grads[t][r] = walk.grads + (k - walk.first_k) * walk.dim;
            pair.weights[t][r] = walk.weights[j];
            pair.sums[t][r] = walk.partial + j;
          }
        }
        const bool same_blocks = next.first == covering.first;
        if (walk.out_kind == kHalfRow) {
          same_blocks ? GradPairT<kKind, kHalfRow, true>(pair, walk.dim, pair_streams)
                      : GradPairT<kKind, kHalfRow, false>(pair, walk.dim, pair_streams);
        } else {
          same_blocks ? GradPairT<kKind, kBFloat16Row, true>(pair, walk.dim, pair_streams)
                      : GradPairT<kKind, kBFloat16Row, false>(pair, walk.dim, pair_streams);
        }
        advance(quotient, phase);
        ++i;
        row += walk.row_step;
        continue;
      }
    }
    for (int64_t r = 0; r < covering.count; ++r) {
      const int64_t k = covering.first + r;
      walk.grad_rows[r] = walk.grads + (k - walk.first_k) * walk.dim;
      walk.grad_weights[r] = walk.weights[u - k * walk.stride];
    }
    if (walk.out_rows != nullptr) {
      GradRowT<kFloatRow>(walk.grad_rows, walk.grad_weights, covering.count, walk.dim, walk.out_rows + i * walk.dim,
                          false);
    } else if (walk.out_kind == kHalfRow) {
      GradRowT<kHalfRow>(walk.grad_rows, walk.grad_weights, covering.count, walk.dim, walk.out + i * walk.out_step,
                         walk.stream);
    } else {
      GradRowT<kBFloat16Row>(walk.grad_rows, walk.grad_weights, covering.count, walk.dim,
                             walk.out + i * walk.out_step, walk.stream);
    }
    if (walk.partial == nullptr) continue;
    prefetch_ahead(i, row);
    for (int64_t r = 0; r < covering.count; ++r) {
      const int64_t k = covering.first + r;
      terms[pending++] = DotTerm{walk.grads + (k - walk.first_k) * walk.dim, row, walk.partial + (u - k * walk.stride)};
      if (pending == 4) {
        AddTermDotsT<kKind>(terms, 4, walk.dim);
        pending = 0;
      }
    }
  }
  AddTermDotsT<kKind>(terms, pending, walk.dim);
}

void GradWalkRows(const GradWalk& walk) {
  if (walk.row_kind == kHalfRow) return GradWalkT<kHalfRow>(walk);
  if (walk.row_kind == kBFloat16Row) return GradWalkT<kBFloat16Row>(walk);
  GradWalkT<kFloatRow>(walk);
}

}  // namespace HWY_NAMESPACE
}  // namespace pacl::nsa_compress
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pacl::nsa_compress {

HWY_EXPORT(WeightedSum);
HWY_EXPORT(BlockSums);
HWY_EXPORT(GradWalkRows);
HWY_EXPORT(NarrowRow);

namespace {

int KindOf(aclDataType dtype) { return dtype == ACL_FLOAT16 ? kHalfRow : kBFloat16Row; }

// Rows (i0, i1, :) of a 3-D FLOAT16/BFLOAT16 tensor as the row loops read them.
class RowReader {
 public:
  explicit RowReader(const TensorDesc& t) : t_(t), in_place_(t.strides[2] == 1) {}
  // The row's kind: the tensor's, or fp32 when it is gathered into a buffer.
  int kind() const { return in_place_ ? KindOf(t_.dtype) : kFloatRow; }
  // True when rows are gathered into buffers.
  bool gathers() const { return !in_place_; }
  // The row, in place, or gathered into buffer (dim floats).
  const void* Row(int64_t i0, int64_t i1, float* buffer) const {
    const char* address = Address(i0, i1);
    if (in_place_) return address;
    LoadAsFloat(t_.dtype, address, t_.strides[2], buffer, t_.shape[2]);
    return buffer;
  }
  // rows[r] = Row(first + r, i1) for r < count; buffers holds count * dim floats for gathered rows (and may be
  // null for rows read in place, so it is offset only when gathering).
  void Rows(int64_t first, int64_t count, int64_t i1, float* buffers, const void** rows) const {
    for (int64_t r = 0; r < count; ++r) rows[r] = Row(first + r, i1, in_place_ ? nullptr : buffers + r * t_.shape[2]);
  }

 private:
  const char* Address(int64_t i0, int64_t i1) const {
    return static_cast<const char*>(t_.data) + (t_.offset + i0 * t_.strides[0] + i1 * t_.strides[1]) * 2;
  }
  const TensorDesc& t_;
  bool in_place_;
};

// Stores an fp32 row as row (i0, i1, :) of a 3-D FLOAT16/BFLOAT16 tensor, rounded once (stream: see NarrowRow).
void StoreRow(const TensorDesc& t, int64_t i0, int64_t i1, const float* acc, bool stream = false) {
  char* address = static_cast<char*>(t.data) + (t.offset + i0 * t.strides[0] + i1 * t.strides[1]) * 2;
  if (t.strides[2] == 1) {
    HWY_DYNAMIC_DISPATCH(NarrowRow)(KindOf(t.dtype), acc, t.shape[2], reinterpret_cast<uint16_t*>(address), stream);
  } else {
    StoreFromFloat(acc, t.dtype, address, t.strides[2], t.shape[2]);
  }
}

// weight (block_size, heads) as fp32, by head: [n * block_size + j].
std::vector<float> ReadWeights(const TensorDesc& weight) {
  const int64_t rows = weight.shape[0];
  const int64_t heads = weight.shape[1];
  std::vector<float> table(static_cast<size_t>(rows * heads));
  for (int64_t j = 0; j < rows; ++j) {
    for (int64_t n = 0; n < heads; ++n) {
      table[static_cast<size_t>(n * rows + j)] = LoadFloatElement(
          weight.dtype, weight.ElementAt(weight.offset + j * weight.strides[0] + n * weight.strides[1]));
    }
  }
  return table;
}

// The first token of every block, in block order.
std::vector<int64_t> BlockFirstTokens(const std::vector<Sequence>& sequences, const NsaShape& s) {
  std::vector<int64_t> first(static_cast<size_t>(s.blocks));
  for (const Sequence& seq : sequences) {
    for (int64_t k = 0; k < seq.blocks; ++k) first[static_cast<size_t>(seq.first_block + k)] = seq.start + k * s.stride;
  }
  return first;
}

// Forward on in-place input rows when at most kMaxRegisterCover blocks cover a token: per chunk, sequence and
// head, one walk over the tokens (BlockSums), then the chunk's rows are rounded out.
void ForwardWalks(const ForwardParams& params, const std::vector<float>& weights, int cover) {
  const NsaShape& s = params.shape;
  const TensorDesc& in = params.input;
  const RowReader input(in);  // reads in place: the caller checked the unit stride along D
  const bool stream = WorthStreaming(params.output);
  ParallelFor(s.blocks, kBlocksPerChunk, [&](int64_t begin, int64_t end) {
    std::vector<float> sums(static_cast<size_t>((end - begin) * s.dim));
    // The sequences holding blocks [begin, end): from the first whose blocks end past `begin`.
    auto seq = params.sequences.begin() +
               SequenceOfBlock(params.sequences.data(), static_cast<int64_t>(params.sequences.size()), begin);
    for (; seq != params.sequences.end() && seq->first_block < end; ++seq) {
      const int64_t first_block = std::max(begin, seq->first_block);
      const int64_t last_block = std::min(end, seq->first_block + seq->blocks);
      if (first_block >= last_block) continue;
      const int64_t first_token = seq->start + (first_block - seq->first_block) * s.stride;
      // Where every head's rows of a token lie together and the chunk's tokens fit in a core's L2 with room to
      // spare, the first head's walk prefetches all heads' rows, in address order, and the other heads' walks
      // find them in cache; otherwise each walk prefetches its own head's rows (1/N of the bytes, N * D apart).
      const int64_t chunk_tokens = (last_block - first_block - 1) * s.stride + s.block_size;
      const bool whole_rows = in.strides[1] == s.dim && in.strides[0] == s.heads * s.dim &&
                              chunk_tokens * in.strides[0] * 2 <= kWholeRowPrefetchBytes;
      for (int64_t n = 0; n < s.heads; ++n) {
        BlockWalk walk;
        walk.first_row = static_cast<const char*>(input.Row(first_token, n, nullptr));
        walk.row_step = in.strides[0] * 2;
        walk.blocks = last_block - first_block;
        walk.block_size = s.block_size;
        walk.stride = s.stride;
        walk.dim = s.dim;
        walk.weights = &weights[static_cast<size_t>(n * s.block_size)];
        walk.sums = sums.data();
        walk.prefetch_bytes = !whole_rows ? s.dim * 2 : n == 0 ? s.heads * s.dim * 2 : 0;
        HWY_DYNAMIC_DISPATCH(BlockSums)(KindOf(in.dtype), cover, walk);
        for (int64_t b = first_block; b < last_block; ++b) {
          StoreRow(params.output, b, n, sums.data() + (b - first_block) * s.dim, stream);
        }
      }
    }
    if (stream) hwy::FlushStream();
  });
}

// The backward's one walk (see the NOTE): per chunk of kBackwardTokensPerChunk tokens, each sequence's part of it
// and each head, the outputGrad rows of the blocks covering those tokens are widened once, then GradWalkRows walks
// the tokens. Input rows that are not read in place are gathered into fp32 rows first, and inputGrad rows without
// unit stride along D are stored from fp32 rows after.
void BackwardWalks(const BackwardParams& params, const std::vector<float>& weights, float* partials) {
  const NsaShape& s = params.shape;
  const RowReader input(params.input);
  const TensorDesc& dy = params.output_grad;
  const TensorDesc& dx = params.input_grad;
  const bool stream = WorthStreaming(dx);
  const bool store_rows = dx.strides[2] != 1;
  const int64_t per_chunk = s.block_size * s.heads;
  const int64_t max_cover = (s.block_size + s.stride - 1) / s.stride;
  // Blocks k covering tokens [u0, u1] of a sequence satisfy (u0 - block_size) / stride < k <= u1 / stride.
  const int64_t max_blocks =
      std::max<int64_t>(0, std::min(s.blocks, (kBackwardTokensPerChunk - 1 + s.block_size) / s.stride + 2));
  const auto chunk_rows = static_cast<size_t>(kBackwardTokensPerChunk * s.dim);
  ParallelFor(s.tokens, kBackwardTokensPerChunk, [&](int64_t begin, int64_t end) {
    float* partial = partials == nullptr ? nullptr : partials + begin / kBackwardTokensPerChunk * per_chunk;
    if (partial != nullptr) std::fill(partial, partial + per_chunk, 0.0f);
    std::vector<float> grads(static_cast<size_t>(max_blocks * s.dim));
    std::vector<float> gathered(input.gathers() ? chunk_rows : 0);
    std::vector<float> out_rows(store_rows ? chunk_rows : 0);
    std::vector<const float*> grad_rows(static_cast<size_t>(max_cover));
    std::vector<float> grad_weights(static_cast<size_t>(max_cover));
    GradWalk walk;
    walk.row_kind = input.kind();
    walk.prefetch = !input.gathers();
    walk.block_size = s.block_size;
    walk.stride = s.stride;
    walk.grads = grads.data();
    walk.dim = s.dim;
    walk.out_kind = KindOf(dx.dtype);
    walk.out_step = dx.strides[0];
    walk.stream = stream;
    walk.out_rows = store_rows ? out_rows.data() : nullptr;
    walk.grad_rows = grad_rows.data();
    walk.grad_weights = grad_weights.data();
    auto seq = params.sequences.begin() +
               SequenceOfToken(params.sequences.data(), static_cast<int64_t>(params.sequences.size()), begin);
    for (int64_t t0 = begin; t0 < end;) {
      while (seq != params.sequences.end() && seq->end <= t0) ++seq;
      const bool in_sequence = seq != params.sequences.end();
      const int64_t t1 = in_sequence ? std::min(end, seq->end) : end;
      walk.tokens = t1 - t0;
      walk.first_u = in_sequence ? t0 - seq->start : 0;
      walk.blocks = in_sequence ? seq->blocks : 0;
      // The blocks covering the walk's tokens: [first_k, last_k] (none when last_k < first_k).
      walk.first_k = walk.first_u >= s.block_size ? (walk.first_u - s.block_size) / s.stride + 1 : 0;
      const int64_t last_k = std::min((walk.first_u + walk.tokens - 1) / s.stride, walk.blocks - 1);
      if (last_k < walk.first_k) walk.blocks = 0;  // the walk's tokens are past the sequence's last block
      for (int64_t n = 0; n < s.heads; ++n) {
        for (int64_t k = walk.first_k; walk.blocks > 0 && k <= last_k; ++k) {
          LoadAsFloat(dy.dtype,
                      static_cast<const char*>(dy.data) +
                          (dy.offset + (seq->first_block + k) * dy.strides[0] + n * dy.strides[1]) * 2,
                      dy.strides[2], grads.data() + (k - walk.first_k) * s.dim, s.dim);
        }
        walk.weights = &weights[static_cast<size_t>(n * s.block_size)];
        walk.partial = partial == nullptr || walk.blocks == 0 ? nullptr : partial + n * s.block_size;
        if (input.gathers()) {
          for (int64_t i = 0; walk.partial != nullptr && i < walk.tokens; ++i) {
            input.Row(t0 + i, n, gathered.data() + i * s.dim);
          }
          walk.first_row = reinterpret_cast<const char*>(gathered.data());
          walk.row_step = s.dim * static_cast<int64_t>(sizeof(float));
        } else {
          walk.first_row = static_cast<const char*>(input.Row(t0, n, nullptr));
          walk.row_step = params.input.strides[0] * 2;
        }
        walk.out = reinterpret_cast<uint16_t*>(static_cast<char*>(dx.data) +
                                               (dx.offset + t0 * dx.strides[0] + n * dx.strides[1]) * 2);
        HWY_DYNAMIC_DISPATCH(GradWalkRows)(walk);
        for (int64_t i = 0; store_rows && i < walk.tokens; ++i) StoreRow(dx, t0 + i, n, out_rows.data() + i * s.dim);
      }
      t0 = t1;
    }
    if (stream) hwy::FlushStream();
  });
}

}  // namespace

aclnnStatus RunForwardCpu(const ForwardParams& params, void* /*workspace*/) {
  const NsaShape& s = params.shape;
  if (s.blocks == 0 || s.heads == 0 || s.dim == 0) return ACLNN_SUCCESS;
  const std::vector<float> weights = ReadWeights(params.weight);
  const int64_t cover = (s.block_size + s.stride - 1) / s.stride;
  if (params.input.strides[2] == 1 && cover <= kMaxRegisterCover) {
    ForwardWalks(params, weights, static_cast<int>(cover));
    return ACLNN_SUCCESS;
  }
  const std::vector<int64_t> first_token = BlockFirstTokens(params.sequences, s);
  const RowReader input(params.input);
  ParallelFor(s.blocks, kBlocksPerChunk, [&](int64_t begin, int64_t end) {
    std::vector<float> acc(static_cast<size_t>(s.dim));
    std::vector<float> buffers(input.gathers() ? static_cast<size_t>(s.block_size * s.dim) : 0);
    std::vector<const void*> rows(static_cast<size_t>(s.block_size));
    for (int64_t block = begin; block < end; ++block) {
      for (int64_t n = 0; n < s.heads; ++n) {
        input.Rows(first_token[static_cast<size_t>(block)], s.block_size, n, buffers.data(), rows.data());
        HWY_DYNAMIC_DISPATCH(WeightedSum)
        (input.kind(), rows.data(), &weights[static_cast<size_t>(n * s.block_size)], s.block_size, s.dim, acc.data());
        StoreRow(params.output, block, n, acc.data());
      }
    }
  });
  return ACLNN_SUCCESS;
}

aclnnStatus RunBackwardCpu(const BackwardParams& params, void* workspace) {
  const NsaShape& s = params.shape;
  const std::vector<float> weights = ReadWeights(params.weight);
  const int64_t per_chunk = s.block_size * s.heads;
  float* partials = params.workspace.weight_grad_partials >= 0
                        ? reinterpret_cast<float*>(AlignedWorkspace(workspace) + params.workspace.weight_grad_partials)
                        : nullptr;
  BackwardWalks(params, weights, partials);

  // Pass 3: weightGrad = the chunks' partials in ascending chunk order.
  const int64_t chunks = (s.tokens + kBackwardTokensPerChunk - 1) / kBackwardTokensPerChunk;
  const TensorDesc& wg = params.weight_grad;
  for (int64_t j = 0; j < s.block_size; ++j) {
    for (int64_t n = 0; n < s.heads; ++n) {
      float sum = 0.0f;
      if (partials != nullptr) {
        for (int64_t c = 0; c < chunks; ++c) sum += partials[c * per_chunk + n * s.block_size + j];
      }
      StoreFloatElement(wg.dtype, wg.ElementAt(wg.offset + j * wg.strides[0] + n * wg.strides[1]), sum);
    }
  }
  return ACLNN_SUCCESS;
}

}  // namespace pacl::nsa_compress
#endif  // HWY_ONCE
