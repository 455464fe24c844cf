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
// Passes and memory traffic. Forward: tasks are chunks of kBlocksPerChunk consecutive blocks. When input rows are
// read in place and at most kMaxRegisterCover blocks cover a token (ceil(blockSize / stride), 2 for the usual
// blockSize = 2 * stride), each head's tokens are walked once in order (BlockSums): a row is loaded and widened
// once, in as few channel groups as the registers allow (a D = 192 row in one go on AVX-512), and multiply-added
// into the sums of every block covering it, held in registers; a block's sums leave when its last row is in. One
// walk per row keeps each row's bytes in one run of loads, which matters more than anything else here (the rows of
// one head lie N * D elements apart). Otherwise (gathered rows, or many blocks per token) each block sums its
// blockSize rows directly (WeightedSum), the shared rows coming from cache the second time. Either way input is
// read once from memory and output written once (non-temporal stores when large). Backward, pass 1 (weightGrad): the
// same chunks; per head and block the outputGrad row is widened once and dotted with the block's blockSize input rows,
// adding into the chunk's partial sums (block_size, N) in the workspace — input is read once. Pass 2 (inputGrad): tasks
// are chunks of tokens; each token row sums weight * outputGrad row over its covering blocks in ascending block order,
// and is written once (zeros when no block covers it). Pass 3 adds the chunks' partials in ascending chunk order into
// weightGrad.
//
// Determinism. Both forward paths start each block's sum at zero and add its rows in ascending j, so they give the
// same bits. Every sum has an order fixed by the shape and actSeqLen (blocks ascending, j ascending, channels in the
// canonical order of pacl/canonical_math-inl.h - 16 partial sums and a fixed tree, whatever the vector width -
// chunks ascending), never by the thread count, and every multiply-add is fused on every target: results are
// bit-identical run to run, for any number of threads and on every SIMD target. Cost, measured on AVX2 against
// per-target lane reductions: backward 1.05-1.10x in FLOAT16 and 1.01-1.04x in BFLOAT16 at N 4, D 128 (pass 1's
// dot products; AddDots shares each load of a among four rows to keep it there), forward unchanged.
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
};

// The most blocks covering one token (ceil(block_size / stride)) for which BlockSums keeps the sums in registers.
inline constexpr int64_t kMaxRegisterCover = 4;
// Tokens ahead whose rows a forward walk prefetches.
inline constexpr int64_t kPrefetchTokens = 8;
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
// WeightedSum would, so both give the same bits.
template <int kKind, int kCover, int kVectors, class D>
void BlockSumsGroup(D d, const BlockWalk& walk, int64_t first) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const int64_t tokens = (walk.blocks - 1) * walk.stride + walk.block_size;
  // The whole row of a token kPrefetchTokens ahead is asked for on the first channel group's walk only.
  const bool prefetch = first == 0;
  VectorArray<D, kCover * kVectors> sums;  // block slot c, vector v at c * kVectors + v
  for (int s = 0; s < kCover * kVectors; ++s) sums.Set(d, s, hn::Zero(d));
  const char* row = walk.first_row;
  int64_t u = 0;
  for (int64_t group = 0; u < tokens; ++group) {
    // Block `group` begins at token u: every block in flight moves one slot older.
    for (int s = kCover * kVectors - 1; s >= kVectors; --s) sums.Set(d, s, sums.Get(d, s - kVectors));
    for (int v = 0; v < kVectors; ++v) sums.Set(d, v, hn::Zero(d));
    const int64_t group_end = std::min(tokens, u + walk.stride);
    for (; u < group_end; ++u, row += walk.row_step) {
      if (prefetch && u + kPrefetchTokens < tokens) {
        const char* ahead = row + kPrefetchTokens * walk.row_step;
        for (int64_t byte = 0; byte < walk.dim * 2; byte += 64) hwy::Prefetch(ahead + byte);
      }
      VectorArray<D, kVectors> x;
      for (int v = 0; v < kVectors; ++v) x.Set(d, v, LoadLanes<kKind>(d, row, first + v * lanes));
      for (int c = 0; c < kCover; ++c) {
        const int64_t block = group - c;
        const int64_t j = u - block * walk.stride;
        if (block < 0 || block >= walk.blocks || j >= walk.block_size) continue;
        const auto weight = hn::Set(d, walk.weights[j]);
        const int slot = c * kVectors;
        for (int v = 0; v < kVectors; ++v)
          sums.Set(d, slot + v, FusedMulAdd(d, weight, x.Get(d, v), sums.Get(d, slot + v)));
        if (j == walk.block_size - 1) {
          for (int v = 0; v < kVectors; ++v)
            hn::StoreU(sums.Get(d, slot + v), d, walk.sums + block * walk.dim + first + v * lanes);
        }
      }
    }
  }
}

// Channel groups (vectors per walk) there are kernels for; a row walked in one go is read in one run.
constexpr int kGroupSizes[] = {12, 8, 6, 4, 2, 1};

// True when the sums of `cover` blocks over `vectors` vectors, plus room for an input vector and a weight, fit in
// the target's registers.
constexpr bool SumsFitInRegisters(int cover, int vectors) {
  return cover * vectors + 2 <= pacl::HWY_NAMESPACE::kVectorRegisters;
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

// sums[r] += a . rows[r] (over i < n) for each row r, each dot product in the canonical order of
// pacl/canonical_math-inl.h (the same bits on every target). Four rows go together, sharing the loads of a and
// keeping four sets of partial sums in flight (one row's are a chain of n / 16 dependent multiply-adds).
template <int kKind>
void AddDotsT(const float* a, const void* const* rows, int64_t count, int64_t n, float* sums) {
  constexpr size_t kElementBytes = kKind == kFloatRow ? sizeof(float) : sizeof(uint16_t);
  using V = hn::Vec<DF>;
  // Lanes [first, first + lanes) of a and of a row, zero past the end of the partial last vector.
  auto load_a = [&](DF d, size_t first, size_t lanes) {
    if (lanes == hn::Lanes(d)) return hn::LoadU(d, a + first);
    HWY_ALIGN float a_lanes[hn::MaxLanes(DF())] = {};
    std::memcpy(a_lanes, a + first, lanes * sizeof(float));
    return hn::Load(d, a_lanes);
  };
  auto load_row = [&](DF d, const void* row, size_t first, size_t lanes) {
    if (lanes == hn::Lanes(d)) return LoadLanes<kKind>(d, row, static_cast<int64_t>(first));
    HWY_ALIGN float row_lanes[hn::MaxLanes(DF())] = {};  // room for as many fp32, fp16 or bf16 elements
    std::memcpy(row_lanes, static_cast<const char*>(row) + first * kElementBytes, lanes * kElementBytes);
    return LoadLanes<kKind>(d, row_lanes, 0);
  };
  int64_t r = 0;
  for (; r + 4 <= count; r += 4) {
    float dots[4];
    const void* const* four = rows + r;
    CanonicalSums4(
        static_cast<size_t>(n),
        [&](DF d, size_t first, size_t lanes, V& acc0, V& acc1, V& acc2, V& acc3) {
          const V x = load_a(d, first, lanes);
          acc0 = FusedMulAdd(d, x, load_row(d, four[0], first, lanes), acc0);
          acc1 = FusedMulAdd(d, x, load_row(d, four[1], first, lanes), acc1);
          acc2 = FusedMulAdd(d, x, load_row(d, four[2], first, lanes), acc2);
          acc3 = FusedMulAdd(d, x, load_row(d, four[3], first, lanes), acc3);
        },
        dots);
    for (int j = 0; j < 4; ++j) sums[r + j] += dots[j];
  }
  for (; r < count; ++r) {
    const void* row = rows[r];
    sums[r] += CanonicalSum(static_cast<size_t>(n), [&](DF d, V acc, size_t first, size_t lanes) {
      return FusedMulAdd(d, load_a(d, first, lanes), load_row(d, row, first, lanes), acc);
    });
  }
}

void AddDots(int kind, const float* a, const void* const* rows, int64_t count, int64_t n, float* sums) {
  if (kind == kHalfRow) return AddDotsT<kHalfRow>(a, rows, count, n, sums);
  if (kind == kBFloat16Row) return AddDotsT<kBFloat16Row>(a, rows, count, n, sums);
  AddDotsT<kFloatRow>(a, rows, count, n, sums);
}

// dst[i] = acc[i] rounded to nearest even, as fp16 (kind kHalfRow) or bf16 bits, for i < n.
template <int kKind, class D>
void StoreLanes(D d, const float* acc, int64_t i, uint16_t* dst) {
  const auto v = hn::LoadU(d, acc + i);
  const hn::Rebind<uint16_t, D> du16;
  if constexpr (kKind == kHalfRow) {
    hn::StoreU(pacl::HWY_NAMESPACE::FloatToHalfBits(d, v), du16, dst + i);
  } else {
    hn::StoreU(pacl::HWY_NAMESPACE::FloatToBFloat16Bits(d, v), du16, dst + i);
  }
}

// With stream, whole vectors go out with non-temporal stores when dst is vector-aligned: a large output is written
// once and not read again here, so its lines need not be fetched first (the caller flushes the stores). Only where
// a vector of the narrowed lanes fills a whole 128-bit register or more (AVX2 and up): on SSE4 it is 64 bits, and
// Highway 1.0.3's Stream of a 64-bit vector writes 16 bytes with an instruction that needs 16-byte alignment (it
// crashed on an 8-byte-aligned row: NsaCompressLarge.StreamedInputGradMatchesReference, pinned to SSE4).
template <int kKind>
void NarrowRowT(const float* acc, int64_t n, uint16_t* dst, bool stream) {
  const DF d;
  const DF1 d1;
  const hn::Rebind<uint16_t, DF> du16;
  constexpr bool kCanStream = hn::MaxLanes(hn::Rebind<uint16_t, DF>()) * sizeof(uint16_t) >= 16;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const bool aligned = reinterpret_cast<uintptr_t>(dst) % (static_cast<uintptr_t>(lanes) * sizeof(uint16_t)) == 0;
  int64_t i = 0;
  if (kCanStream && stream && aligned) {
    for (; i + lanes <= n; i += lanes) {
      const auto v = hn::LoadU(d, acc + i);
      if constexpr (kKind == kHalfRow) {
        hn::Stream(pacl::HWY_NAMESPACE::FloatToHalfBits(d, v), du16, dst + i);
      } else {
        hn::Stream(pacl::HWY_NAMESPACE::FloatToBFloat16Bits(d, v), du16, dst + i);
      }
    }
  }
  for (; i + lanes <= n; i += lanes) StoreLanes<kKind>(d, acc, i, dst);
  for (; i < n; ++i) StoreLanes<kKind>(d1, acc, i, dst);
}

void NarrowRow(int kind, const float* acc, int64_t n, uint16_t* dst, bool stream) {
  if (kind == kHalfRow) return NarrowRowT<kHalfRow>(acc, n, dst, stream);
  NarrowRowT<kBFloat16Row>(acc, n, dst, stream);
}

}  // namespace HWY_NAMESPACE
}  // namespace pacl::nsa_compress
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pacl::nsa_compress {

HWY_EXPORT(WeightedSum);
HWY_EXPORT(BlockSums);
HWY_EXPORT(AddDots);
HWY_EXPORT(NarrowRow);

namespace {

constexpr int64_t kTokensPerChunk = 64;
// inputGrad of at least this many bytes is written with non-temporal stores.
constexpr int64_t kStreamMinBytes = int64_t{8} << 20;

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
  const bool stream = params.output.NumElements() * 2 >= kStreamMinBytes;
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
        HWY_DYNAMIC_DISPATCH(BlockSums)(KindOf(in.dtype), cover, walk);
        for (int64_t b = first_block; b < last_block; ++b) {
          StoreRow(params.output, b, n, sums.data() + (b - first_block) * s.dim, stream);
        }
      }
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
  const std::vector<int64_t> first_token = BlockFirstTokens(params.sequences, s);
  const RowReader input(params.input);
  const RowReader output_grad(params.output_grad);
  const int64_t per_chunk = s.block_size * s.heads;
  float* partials = params.workspace.weight_grad_partials >= 0
                        ? reinterpret_cast<float*>(AlignedWorkspace(workspace) + params.workspace.weight_grad_partials)
                        : nullptr;

  // Pass 1: weightGrad partial sums per chunk of blocks, [chunk][n * block_size + j].
  if (s.dim > 0 && s.heads > 0) {
    ParallelFor(s.blocks, kBlocksPerChunk, [&](int64_t begin, int64_t end) {
      float* partial = partials + begin / kBlocksPerChunk * per_chunk;
      std::fill(partial, partial + per_chunk, 0.0f);
      std::vector<float> grad_row(static_cast<size_t>(s.dim));
      std::vector<float> buffers(input.gathers() ? static_cast<size_t>(s.block_size * s.dim) : 0);
      std::vector<const void*> rows(static_cast<size_t>(s.block_size));
      const TensorDesc& dy = params.output_grad;
      for (int64_t block = begin; block < end; ++block) {
        for (int64_t n = 0; n < s.heads; ++n) {
          // The outputGrad row, widened once for its block_size dot products.
          LoadAsFloat(dy.dtype,
                      static_cast<const char*>(dy.data) + (dy.offset + block * dy.strides[0] + n * dy.strides[1]) * 2,
                      dy.strides[2], grad_row.data(), s.dim);
          input.Rows(first_token[static_cast<size_t>(block)], s.block_size, n, buffers.data(), rows.data());
          HWY_DYNAMIC_DISPATCH(AddDots)
          (input.kind(), grad_row.data(), rows.data(), s.block_size, s.dim, partial + n * s.block_size);
        }
      }
    });
  }

  // Pass 2: inputGrad, token by token; a large one is written with non-temporal stores.
  const bool stream = params.input_grad.NumElements() * 2 >= kStreamMinBytes;
  const int64_t max_cover = (s.block_size + s.stride - 1) / s.stride;
  ParallelFor(s.tokens, kTokensPerChunk, [&](int64_t begin, int64_t end) {
    std::vector<float> acc(static_cast<size_t>(s.dim));
    std::vector<float> buffers(output_grad.gathers() ? static_cast<size_t>(max_cover * s.dim) : 0);
    std::vector<const void*> rows(static_cast<size_t>(max_cover));
    std::vector<float> row_weights(static_cast<size_t>(max_cover));
    // The sequence holding token `begin`: the first whose end is past it.
    auto seq = params.sequences.begin() +
               SequenceOfToken(params.sequences.data(), static_cast<int64_t>(params.sequences.size()), begin);
    for (int64_t t = begin; t < end; ++t) {
      while (seq != params.sequences.end() && seq->end <= t) ++seq;
      // Blocks k of the sequence with k * stride <= t - start < k * stride + block_size.
      CoveringBlocks covering;
      if (seq != params.sequences.end()) covering = BlocksCovering(t - seq->start, s.block_size, s.stride, seq->blocks);
      const int64_t first_k = covering.first;
      const int64_t count = covering.count;
      for (int64_t n = 0; n < s.heads; ++n) {
        for (int64_t r = 0; r < count; ++r) {
          const int64_t k = first_k + r;
          float* buffer = output_grad.gathers() ? buffers.data() + r * s.dim : nullptr;  // empty when in place
          rows[static_cast<size_t>(r)] = output_grad.Row(seq->first_block + k, n, buffer);
          row_weights[static_cast<size_t>(r)] =
              weights[static_cast<size_t>(n * s.block_size + (t - seq->start - k * s.stride))];
        }
        HWY_DYNAMIC_DISPATCH(WeightedSum)
        (output_grad.kind(), rows.data(), row_weights.data(), count, s.dim, acc.data());
        StoreRow(params.input_grad, t, n, acc.data(), stream);
      }
    }
    if (stream) hwy::FlushStream();
  });

  // Pass 3: weightGrad = the chunks' partials in ascending chunk order.
  const int64_t chunks = (s.blocks + kBlocksPerChunk - 1) / kBlocksPerChunk;
  const TensorDesc& wg = params.weight_grad;
  for (int64_t j = 0; j < s.block_size; ++j) {
    for (int64_t n = 0; n < s.heads; ++n) {
      float sum = 0.0f;
      if (s.dim > 0) {
        for (int64_t c = 0; c < chunks; ++c) sum += partials[c * per_chunk + n * s.block_size + j];
      }
      StoreFloatElement(wg.dtype, wg.ElementAt(wg.offset + j * wg.strides[0] + n * wg.strides[1]), sum);
    }
  }
  return ACLNN_SUCCESS;
}

}  // namespace pacl::nsa_compress
#endif  // HWY_ONCE
