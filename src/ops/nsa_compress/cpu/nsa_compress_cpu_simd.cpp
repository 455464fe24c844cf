// The row loops of the NsaCompress CPU kernels, once per SIMD target (Highway's foreach_target re-includes this
// file), with the functions that call the best target's (nsa_compress_cpu_simd.h). The algorithm, layouts and sum
// orders are in the NOTE of nsa_compress_cpu.cpp.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "hwy/cache_control.h"
#include "nsa_compress/nsa_compress_blocks.h"
#include "nsa_compress/cpu/nsa_compress_cpu_simd.h"
#include "nsa_compress/nsa_compress_params.h"
#include "pacl/convert.h"
#include "pacl/dtype.h"
#include "pacl/parallel.h"
#include "pacl/workspace_plan.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nsa_compress/cpu/nsa_compress_cpu_simd.cpp"
// foreach_target.h must come first: it re-includes this file once per target.
// clang-format off
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "pacl/canonical_math-inl.h"
#include "pacl/float_vectors-inl.h"
// clang-format on

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
using pacl::HWY_NAMESPACE::LoadRowLanes;
using pacl::HWY_NAMESPACE::VectorArray;

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
      sums.Set(d, v, FusedMulAdd(d, w, LoadRowLanes<kKind>(d, rows[r], first + v * lanes), sums.Get(d, v)));
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
// multiply-add, about a third of the walk's time).
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
        const auto x = LoadRowLanes<kKind>(d, row, first + v * lanes);
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
// weights may then spill: fewer walks over a row count for more (two walks of 8 vectors beat three of 6, 6 and 4 on
// AVX2; the measurements: docs/ops/nsa_compress.md, log).
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
    if (lanes == hn::Lanes(d)) return LoadRowLanes<kKind>(d, row, static_cast<int64_t>(first));
    HWY_ALIGN float row_lanes[hn::MaxLanes(DF())] = {};  // room for as many fp32, fp16 or bf16 elements
    std::memcpy(row_lanes, static_cast<const char*>(row) + first * kElementBytes, lanes * kElementBytes);
    return LoadRowLanes<kKind>(d, row_lanes, 0);
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
        const V x0 = LoadRowLanes<kKind>(dj, pair.rows[0], static_cast<int64_t>(first));
        const V x1 = LoadRowLanes<kKind>(dj, pair.rows[1], static_cast<int64_t>(first));
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
  // Not PrefetchTokens: this walk also writes a row per token, and prefetching further ahead lost time.
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

namespace simd {

void WeightedSum(int kind, const void* const* rows, const float* weights, int64_t count, int64_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(WeightedSum)(kind, rows, weights, count, n, out);
}

void BlockSums(int kind, int cover, const BlockWalk& walk) { HWY_DYNAMIC_DISPATCH(BlockSums)(kind, cover, walk); }

void GradWalkRows(const GradWalk& walk) { HWY_DYNAMIC_DISPATCH(GradWalkRows)(walk); }

void NarrowRow(int kind, const float* acc, int64_t n, uint16_t* dst, bool stream) {
  HWY_DYNAMIC_DISPATCH(NarrowRow)(kind, acc, n, dst, stream);
}

}  // namespace simd
}  // namespace pacl::nsa_compress
#endif  // HWY_ONCE
