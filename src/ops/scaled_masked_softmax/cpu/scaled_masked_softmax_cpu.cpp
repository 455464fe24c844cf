// NOTE [Scaled masked softmax on the CPU]
//
// Problem. All tensors are (B, N, S1, S2); the softmax runs over S2 ("a row", at most kMaxRowLength = 4096
// elements). The BOOL mask is (Bm, Nm, S1, S2) with Bm in {1, B}, Nm in {1, N}; phase 1 turned it into broadcast
// strides (0 along a broadcast dim), so every operand is read through element strides for (b, n, s1, s2) from its
// own view (any strides, any offset).
//
// Algorithm, per row (fp32 arithmetic whatever the storage dtype):
//   forward:  v = mask ? -10000 : x * scale;  m = max(v);  e = exp(v - m);  y = e * (1 / sum(e)).
//             A fully masked row has v = -10000 everywhere, so e = 1 and y = 1/S2 exactly as the spec asks.
//             An unmasked NaN (or +inf, through inf - inf) logit makes its whole row NaN, as in PyTorch; masked
//             inputs are never read into the result, whatever they hold.
//   backward: s = sum(dy * y);  out = mask ? 0 : scale * y * (dy - s)
//             (algebraically scale * (dy*y - s*y); one subtraction before the products loses less to rounding).
//             Masked elements are written as exactly 0 even when the inputs hold NaN or Inf.
//
// Memory layout and data movement. A row is S2 elements at an element stride (1 for the usual layouts, S1 for a
// transposed view). When every operand's row has unit stride (gradOutput, y and out; x and y), rows are read
// and written in place, fp16/bf16 converted in registers (pacl/float_vectors-inl.h); otherwise each row that is
// not a unit-stride FLOAT row is gathered into an fp32 stack buffer with pacl::LoadAsFloat and written back with
// pacl::StoreFromFloat. Either way the arithmetic is the same and the output is rounded once, to nearest even.
// The forward keeps its logits, then exponentials, in an fp32 stack row between its three passes. Both directions
// write an output of 8 MiB or more with non-temporal stores (in rows that are vector-aligned): the caller cannot
// find so large an output in cache anyway, and the stores then do not read each line before writing it (a third of
// the forward's memory traffic, a quarter of the backward's).
// The row fits in L1 (16 KiB of fp32 at S2 = 4096), so the second pass of each algorithm re-reads it from cache:
// the main memory traffic is each input once and the output once. A contiguous mask row is read as bytes and
// widened to 32-bit lanes (nonzero = masked); a strided one is first gathered into a stack byte row.
// Rows are visited in the order (b, n, s1), s1 fastest, so a contiguous tensor is streamed front to back. (Visiting
// (b, s1, n) instead, to keep a head-broadcast mask row in L1 across the N heads, makes every row a separate short
// stream N rows away from the previous one; the hardware prefetchers then restart at every row, and it measured
// about 3x slower for FLOAT16 at (4, 16, 1024, 1024).) A mask that broadcasts over heads is re-read once per head,
// but its per-batch slice (S1 * S2 bytes) stays in L2/L3 between heads, so memory sees it about once.
//
// Parallelism and determinism. pacl::ParallelFor splits the rows into chunks of about kChunkElements elements;
// the chunk size depends only on S2, never on the thread count. A row is computed entirely by one thread, and its
// reductions run in an order fixed by S2 alone (pacl/canonical_math-inl.h): sum(dy*y) and the sum of exp keep 16
// partial sums (element i into partial i % 16, fused multiply-adds for the products) added by one fixed tree,
// whatever the vector width; the max needs no order. exp is pacl's own (Highway's evaluates its polynomial with
// fused or unfused multiply-adds depending on the target). So results are bit-identical run to run, for any number
// of threads and on every SIMD target (AVX-512, AVX2, SSE4, the scalar baseline). There is no cross-row reduction,
// so no workspace is needed. (This costs the backward nothing measurable against per-target reductions; the forward
// is faster with pacl's Exp, which sets lanes below -104, masked logits and padding, to 0 instead of computing them
// through subnormal multiplies, a slow microcode path: docs/ops/scaled_masked_softmax.md.) A vector of logits whose lanes all lie below that cut-off skips the exponential altogether: Exp would
// return exactly 0 there, so the bits do not change. The vectors of masked lanes alone that end a row (the masked
// half of a causal row) go further when the row's max is above -9896 (so that exp(-10000 - max) is 0): the sum
// stops before them and their outputs are written as +0 without reading the fp32 row again (adding +0 to a sum of
// non-negative terms changes no bit), and the first pass stores the fill for such vectors without arithmetic
// (together the FLOAT16/BFLOAT16 forward, bound by arithmetic, took about 20% less time).
//
// Aliasing. An output that is the very same view as an input (in-place) is supported: each element is read
// before it is written, within one row. Outputs that partially overlap an input are not supported (the result is
// unspecified but memory-safe); phase 1 rejects outputs that overlap themselves.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "hwy/cache_control.h"
#include "pacl/convert.h"
#include "pacl/dtype.h"
#include "pacl/parallel.h"
#include "scaled_masked_softmax/scaled_masked_softmax_params.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "scaled_masked_softmax/cpu/scaled_masked_softmax_cpu.cpp"
// foreach_target.h must come first: it re-includes this file once per target.
// clang-format off
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "pacl/canonical_math-inl.h"
#include "pacl/float_vectors-inl.h"
// clang-format on

// Target-independent helpers (this file is compiled once per SIMD target; define these once).
#ifndef PACL_OPS_SCALED_MASKED_SOFTMAX_CPU_SHARED_
#define PACL_OPS_SCALED_MASKED_SOFTMAX_CPU_SHARED_
namespace pacl::scaled_masked_softmax {

// Rows per ParallelFor chunk: about this many elements, whatever the thread count.
inline constexpr int64_t kChunkElements = int64_t{1} << 16;
// Stack row buffers hold a full row plus one vector of padding (a padded last vector is stored whole).
inline constexpr int64_t kRowBufferLength = kMaxRowLength + 64;

inline int64_t RowsPerChunk(int64_t row_length) {
  const int64_t rows = kChunkElements / row_length;
  return rows > 0 ? rows : 1;
}

// Where the row (b, n, s1) of an operand starts.
inline char* RowStart(const SoftmaxOperand& operand, int64_t element_bytes, int64_t b, int64_t n, int64_t s1) {
  const int64_t element =
      operand.desc.offset + b * operand.strides[0] + n * operand.strides[1] + s1 * operand.strides[2];
  return static_cast<char*>(operand.desc.data) + element * element_bytes;
}

// Row r of the visiting order (b, n, s1), s1 fastest: row-major order of a contiguous (B, N, S1, S2) tensor.
struct RowIndex {
  int64_t b;
  int64_t n;
  int64_t s1;
};
inline RowIndex RowAt(const SoftmaxShape& shape, int64_t row) {
  RowIndex index;
  index.s1 = row % shape.query_len;
  const int64_t bn = row / shape.query_len;
  index.n = bn % shape.heads;
  index.b = bn / shape.heads;
  return index;
}

// The row as fp32: the tensor's own memory for a unit-stride FLOAT row, else converted into buffer.
inline const float* RowAsFloat(const SoftmaxOperand& operand, const char* start, int64_t length, float* buffer) {
  const int64_t stride = operand.strides[3];
  if (operand.desc.dtype == ACL_FLOAT && stride == 1) return reinterpret_cast<const float*>(start);
  LoadAsFloat(operand.desc.dtype, start, stride, buffer, length);
  return buffer;
}

// Whether an output row can be written in place of the fp32 buffer.
inline bool WritesDirectly(const SoftmaxOperand& operand) {
  return operand.desc.dtype == ACL_FLOAT && operand.strides[3] == 1;
}

// The mask row as bytes: the tensor's own memory at unit stride, else gathered into buffer.
inline const uint8_t* MaskRow(const SoftmaxOperand& mask, const char* start, int64_t length, uint8_t* buffer) {
  const int64_t stride = mask.strides[3];
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(start);
  if (stride == 1) return bytes;
  for (int64_t i = 0; i < length; ++i) buffer[i] = bytes[i * stride];
  return buffer;
}

// The mask row of each visited row, gathered (when strided) only when it differs from the previous row's: rows
// share one when S1 == 1 and the mask broadcasts over heads.
class MaskRowReader {
 public:
  MaskRowReader(const SoftmaxOperand& mask, int64_t length) : mask_(mask), length_(length) {}
  const uint8_t* Row(const RowIndex& r) {
    const char* start = RowStart(mask_, 1, r.b, r.n, r.s1);
    if (row_ == nullptr || start != last_start_) {
      row_ = MaskRow(mask_, start, length_, buffer_);
      last_start_ = start;
    }
    return row_;
  }

 private:
  const SoftmaxOperand& mask_;
  const int64_t length_;
  const char* last_start_ = nullptr;
  const uint8_t* row_ = nullptr;
  alignas(64) uint8_t buffer_[kRowBufferLength];
};

}  // namespace pacl::scaled_masked_softmax
#endif  // PACL_OPS_SCALED_MASKED_SOFTMAX_CPU_SHARED_

HWY_BEFORE_NAMESPACE();
namespace pacl::scaled_masked_softmax {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// At most 16 lanes: the partial sums of the canonical order (pacl/canonical_math-inl.h) are whole vectors of DF.
using DF = pacl::HWY_NAMESPACE::DSum;
using VF = hn::Vec<DF>;
using pacl::HWY_NAMESPACE::CanonicalSum;
using pacl::HWY_NAMESPACE::Exp;
using pacl::HWY_NAMESPACE::FusedMulAdd;
using MF = hn::Mask<DF>;

// How a row's elements are stored: fp32, or the bits of fp16 / bf16 (converted in registers, exactly on load,
// rounded to nearest even on store).
struct F32Storage {
  using Element = float;
};
struct F16Storage {
  using Element = uint16_t;
};
struct BF16Storage {
  using Element = uint16_t;
};

using DU16 = hn::Rebind<uint16_t, DF>;
using pacl::HWY_NAMESPACE::BFloat16BitsToFloat;
using pacl::HWY_NAMESPACE::FloatToBFloat16Bits;
using pacl::HWY_NAMESPACE::FloatToHalfBits;
using pacl::HWY_NAMESPACE::HalfBitsToFloat;

HWY_INLINE VF LoadVector(DF d, const float* p, F32Storage) { return hn::LoadU(d, p); }
HWY_INLINE VF LoadVector(DF d, const uint16_t* p, F16Storage) { return HalfBitsToFloat(d, hn::LoadU(DU16(), p)); }
HWY_INLINE VF LoadVector(DF d, const uint16_t* p, BF16Storage) { return BFloat16BitsToFloat(d, hn::LoadU(DU16(), p)); }
HWY_INLINE void StoreVector(DF d, VF v, float* p, F32Storage) { hn::StoreU(v, d, p); }
HWY_INLINE void StoreVector(DF d, VF v, uint16_t* p, F16Storage) { hn::StoreU(FloatToHalfBits(d, v), DU16(), p); }
HWY_INLINE void StoreVector(DF d, VF v, uint16_t* p, BF16Storage) { hn::StoreU(FloatToBFloat16Bits(d, v), DU16(), p); }
// Whether Storage's stored vectors are at least 128 bits: Highway's Stream writes a whole 128-bit register, so a
// narrower vector (fp16 bits of 4 lanes on SSE4) must not be streamed.
template <class Storage>
constexpr bool StreamsWholeVectors() {
  return hn::MaxLanes(DF()) * sizeof(typename Storage::Element) >= 16;
}

// Whether a row's whole vectors go out with non-temporal stores: asked for (stream), possible for Storage, and out
// aligned to the stored vector's size.
template <class Storage>
HWY_INLINE bool StreamsRow(DF d, const typename Storage::Element* out, bool stream) {
  return StreamsWholeVectors<Storage>() && stream &&
         reinterpret_cast<uintptr_t>(out) % (hn::Lanes(d) * sizeof(out[0])) == 0;
}

// Non-temporal stores of whole vectors; p must be aligned to the stored vector's size.
HWY_INLINE void StreamVector(DF d, VF v, float* p, F32Storage) { hn::Stream(v, d, p); }
HWY_INLINE void StreamVector(DF d, VF v, uint16_t* p, F16Storage) { hn::Stream(FloatToHalfBits(d, v), DU16(), p); }
HWY_INLINE void StreamVector(DF d, VF v, uint16_t* p, BF16Storage) {
  hn::Stream(FloatToBFloat16Bits(d, v), DU16(), p);
}

// Storage that knows its vectors hold no NaN: the same stores, with bf16's cheaper rounding (the same bits there).
template <class Storage>
struct NonNaN {
  using Element = typename Storage::Element;
};
HWY_INLINE void StoreVector(DF d, VF v, float* p, NonNaN<F32Storage>) { StoreVector(d, v, p, F32Storage()); }
HWY_INLINE void StoreVector(DF d, VF v, uint16_t* p, NonNaN<F16Storage>) { StoreVector(d, v, p, F16Storage()); }
HWY_INLINE void StoreVector(DF d, VF v, uint16_t* p, NonNaN<BF16Storage>) {
  hn::StoreU(pacl::HWY_NAMESPACE::NonNaNFloatToBFloat16Bits(d, v), DU16(), p);
}
HWY_INLINE void StreamVector(DF d, VF v, float* p, NonNaN<F32Storage>) { StreamVector(d, v, p, F32Storage()); }
HWY_INLINE void StreamVector(DF d, VF v, uint16_t* p, NonNaN<F16Storage>) { StreamVector(d, v, p, F16Storage()); }
HWY_INLINE void StreamVector(DF d, VF v, uint16_t* p, NonNaN<BF16Storage>) {
  hn::Stream(pacl::HWY_NAMESPACE::NonNaNFloatToBFloat16Bits(d, v), DU16(), p);
}

// The last, partial vector of a row: lanes [0, count) from p, zeros beyond; never touches p[count] or later.
template <class Storage>
HWY_INLINE VF LoadPartial(DF d, const typename Storage::Element* p, size_t count, Storage storage) {
  HWY_ALIGN typename Storage::Element lanes[hn::MaxLanes(DF())] = {};
  std::memcpy(lanes, p, count * sizeof(lanes[0]));
  return LoadVector(d, lanes, storage);
}
template <class Storage>
HWY_INLINE void StorePartial(DF d, VF v, typename Storage::Element* p, size_t count, Storage storage) {
  HWY_ALIGN typename Storage::Element lanes[hn::MaxLanes(DF())];
  StoreVector(d, v, lanes, storage);
  std::memcpy(p, lanes, count * sizeof(lanes[0]));
}
HWY_INLINE VF LoadPartial(DF d, const float* p, size_t count) { return LoadPartial(d, p, count, F32Storage()); }
HWY_INLINE void StorePartial(DF d, VF v, float* p, size_t count) { StorePartial(d, v, p, count, F32Storage()); }

// Lanes whose mask byte is nonzero.
HWY_INLINE MF MaskedLanes(DF d, const uint8_t* bytes) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  // AVX-512 masks are one bit per lane whatever the lane size: the 16 bytes' nonzero test is the float mask itself
  // (one byte-wide test instead of widening the bytes to 32-bit lanes and comparing those; Highway 1.0.3 has no
  // mask conversion between lane sizes).
  static_assert(hn::MaxLanes(DF()) == 16, "one mask byte per float lane of a 512-bit vector");
  const __m128i lanes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes));
  (void)d;
  return MF{_mm_test_epi8_mask(lanes, lanes)};
#else
  const hn::Rebind<uint8_t, DF> d8;
  const hn::RebindToUnsigned<DF> du;
  return hn::RebindMask(d, hn::Ne(hn::PromoteTo(du, hn::LoadU(d8, bytes)), hn::Zero(du)));
#endif
}
HWY_INLINE MF MaskedLanesPartial(DF d, const uint8_t* bytes, size_t count) {
  uint8_t lanes[hn::MaxLanes(DF())] = {};
  std::memcpy(lanes, bytes, count);
  return MaskedLanes(d, lanes);
}

// sum(a[i] * b[i]) for i < n in the canonical order (pacl/canonical_math-inl.h), whatever the storage.
template <class Storage>
HWY_INLINE float DotRow(const typename Storage::Element* a, const typename Storage::Element* b, size_t n,
                        Storage storage) {
  return CanonicalSum(n, [&](DF d, VF acc, size_t first, size_t count) {
    if (count == hn::Lanes(d)) {
      return FusedMulAdd(d, LoadVector(d, a + first, storage), LoadVector(d, b + first, storage), acc);
    }
    return FusedMulAdd(d, LoadPartial(d, a + first, count, storage), LoadPartial(d, b + first, count, storage), acc);
  });
}

// out = mask ? 0 : scale * y * (dy - s) for one row of unit-stride elements. out may be dy or y itself (same
// elements). The arithmetic does not depend on Storage, so a row gives the same bits whether it is converted here
// in registers or beforehand into an fp32 row.
template <class Storage>
HWY_INLINE void BackwardRow(DF d, const typename Storage::Element* dy, const typename Storage::Element* y,
                            const uint8_t* mask, float scale, size_t n, typename Storage::Element* out,
                            bool stream, Storage storage) {
  const size_t lanes = hn::Lanes(d);
  const float s = DotRow(dy, y, n, storage);
  const VF vs = hn::Set(d, s);
  const VF vscale = hn::Set(d, scale);
  auto gradient = [&](size_t i) {
    const VF g = hn::Mul(hn::Mul(vscale, LoadVector(d, y + i, storage)), hn::Sub(LoadVector(d, dy + i, storage), vs));
    return hn::IfThenZeroElse(MaskedLanes(d, mask + i), g);
  };
  size_t i = 0;
  if (StreamsRow<Storage>(d, out, stream)) {
    for (; i + lanes <= n; i += lanes) StreamVector(d, gradient(i), out + i, storage);
  }
  for (; i + lanes <= n; i += lanes) StoreVector(d, gradient(i), out + i, storage);
  if (i < n) {
    const size_t rest = n - i;
    const VF g = hn::Mul(hn::Mul(vscale, LoadPartial(d, y + i, rest, storage)),
                         hn::Sub(LoadPartial(d, dy + i, rest, storage), vs));
    StorePartial(d, hn::IfThenZeroElse(MaskedLanesPartial(d, mask + i, rest), g), out + i, rest, storage);
  }
}

// A whole vector of +0.0 in Storage's element type (the bits of +0 are 0 in fp32, fp16 and bf16 alike).
template <class Storage>
HWY_INLINE void StoreZeros(typename Storage::Element* p, bool streamed) {
  using Element = typename Storage::Element;
  const hn::Rebind<Element, DF> de;
  if (streamed) {
    hn::Stream(hn::Zero(de), de, p);
  } else {
    hn::StoreU(hn::Zero(de), de, p);
  }
}

// out[i] = logits[i] * inverse_total for i < n, rounded to Storage (stream: see ForwardRow). The exponentials from
// zeros_from on (a multiple of the vector size) are exactly 0 and inverse_total is not NaN, so those elements are
// written as +0 (what the product would give) without reading logits there, which may not hold them.
template <class Storage>
HWY_INLINE void NormalizeRow(DF d, const float* logits, float inverse_total, size_t n, size_t zeros_from,
                             typename Storage::Element* out, bool stream, Storage storage) {
  const size_t lanes = hn::Lanes(d);
  const VF inverse = hn::Set(d, inverse_total);
  const size_t computed_end = zeros_from < n ? zeros_from : n;
  size_t k = 0;
  const bool streams = StreamsRow<Storage>(d, out, stream);
  if (streams) {
    for (; k + lanes <= computed_end; k += lanes) {
      StreamVector(d, hn::Mul(hn::Load(d, logits + k), inverse), out + k, storage);
    }
  }
  for (; k + lanes <= computed_end; k += lanes) {
    StoreVector(d, hn::Mul(hn::Load(d, logits + k), inverse), out + k, storage);
  }
  for (; k + lanes <= n; k += lanes) StoreZeros<Storage>(out + k, streams);
  if (k < n) {
    const VF last = k < computed_end ? hn::Mul(hn::Load(d, logits + k), inverse) : hn::Zero(d);
    StorePartial(d, last, out + k, n - k, storage);
  }
}

// One forward row of unit-stride elements, converted in registers. logits is an fp32 buffer of at least n rounded
// up to whole vectors; out may be x itself (same elements) or, for F32Storage, logits. stream: write out with
// non-temporal stores where it is aligned (a large output that the caller cannot find in cache anyway; the
// stores then need not read the lines first; vectors narrower than 128 bits are stored normally). The caller
// fences them (hwy::FlushStream).
template <class Storage>
HWY_INLINE void ForwardRow(DF d, const typename Storage::Element* x, const uint8_t* mask, float scale, size_t n,
                           float* logits, typename Storage::Element* out, bool stream, Storage storage) {
  const size_t lanes = hn::Lanes(d);
  constexpr bool kTracksNaNInPassOne = std::is_same_v<Storage, F32Storage>;
  const VF vscale = hn::Set(d, scale);
  const VF masked_logit = hn::Set(d, kMaskedLogit);
  const VF neg_inf = hn::Set(d, -std::numeric_limits<float>::infinity());

  // Pass 1: logits and their max. The padding lanes of the last vector get -inf, so exp() makes them 0 below.
  // NaN lanes are looked for in pass 2 (see there). A FLOAT row also collects them here, although pass 2 would
  // find them: without these two instructions in this loop the memory-bound FLOAT forward ran markedly slower on
  // AVX-512 (not explained; a prefetch instead did not help), while FLOAT16/BFLOAT16 rows (bound by arithmetic) run
  // a little faster without them.
  // A vector of masked lanes alone is the fill without arithmetic (the fill joins the max once, after the loop); its
  // x is prefetched into L1 although never used: without that (or with a prefetch into L2 only) the rows' reads stop
  // being one stream and the forward took 1.6-1.7x as long.
  VF vmax = neg_inf;
  MF nan_lanes = hn::FirstN(d, 0);
  size_t unmasked_end = 0;  // the end of the last vector with an unmasked lane: only masked lanes after it
  bool any_fully_masked = false;
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const MF masked = MaskedLanes(d, mask + i);
    if (hn::AllTrue(d, masked)) {
      hwy::Prefetch(x + i);
      hn::Store(masked_logit, d, logits + i);
      any_fully_masked = true;
      continue;
    }
    const VF v = hn::IfThenElse(masked, masked_logit, hn::Mul(LoadVector(d, x + i, storage), vscale));
    hn::Store(v, d, logits + i);
    vmax = hn::Max(vmax, v);
    unmasked_end = i + lanes;
    if constexpr (kTracksNaNInPassOne) nan_lanes = hn::Or(nan_lanes, hn::IsNaN(v));
  }
  if (i < n) {
    const size_t rest = n - i;
    const MF masked = MaskedLanesPartial(d, mask + i, rest);
    VF v = hn::IfThenElse(masked, masked_logit, hn::Mul(LoadPartial(d, x + i, rest, storage), vscale));
    v = hn::IfThenElse(hn::FirstN(d, rest), v, neg_inf);
    hn::Store(v, d, logits + i);
    vmax = hn::Max(vmax, v);
    if (!hn::AllTrue(d, hn::Or(masked, hn::Not(hn::FirstN(d, rest))))) unmasked_end = n;
  }
  if (any_fully_masked) vmax = hn::Max(vmax, masked_logit);
  const VF row_max = hn::MaxOfLanes(d, vmax);

  // Pass 2: exponentials (in place, whole vectors) and their sum in the canonical order. The shifted logits are
  // <= 0. A vector whose lanes all lie in Exp's normal range (the unmasked part of a row) takes ExpNormalRange,
  // without Exp's range checks; one whose lanes all lie below Exp's cut-off (-104, where it returns exactly 0) is 0
  // without evaluating the polynomial (a masked vector inside the summed range costs a compare). The bits are Exp's
  // either way.
  // A softmax over a row holding an unmasked NaN or +inf logit is NaN everywhere (as in PyTorch). Such a logit, and
  // only such, makes a shifted logit NaN (NaN - max, +inf - +inf; also -inf - -inf in a row of -inf alone, whose
  // softmax is NaN too); a NaN lane fails both range tests, so the general branch alone looks for it (Max and Exp
  // do not propagate NaN: x86 max returns an operand, pacl's Exp gives an unspecified value).
  const VF normal_below = hn::Set(d, hd::kExpNormalBelow);
  const VF cutoff = hn::Set(d, hd::kExpZeroBelow);
  bool row_has_nan = !hn::AllFalse(d, nan_lanes);
  size_t zeros_from = 0;  // the end of the last vector with a nonzero exponential: all zeros after it
  // The vectors of masked lanes alone that end the row (the masked half of a causal row) add nothing to the sum
  // when their shifted logit (kMaskedLogit - max) lies below Exp's cut-off, as it does unless the row's max is about
  // -9896 or less: then the sum stops before them (the same partial sums; +0 added to a sum of non-negative terms
  // changes no bit) and pass 3 writes them as zeros.
  const float masked_shifted = kMaskedLogit - hn::GetLane(row_max);
  const size_t summed_end = masked_shifted < hd::kExpZeroBelow ? unmasked_end : n;
  const float total = CanonicalSum(summed_end, [&](DF dsum, VF acc, size_t first, size_t /*count: padding adds 0*/) {
    const VF shifted = hn::Sub(hn::Load(dsum, logits + first), row_max);
    if (HWY_LIKELY(hn::AllTrue(dsum, hn::Ge(shifted, normal_below)))) {
      const VF e = pacl::HWY_NAMESPACE::ExpNormalRange(dsum, shifted);
      hn::Store(e, dsum, logits + first);
      zeros_from = first + hn::Lanes(dsum);
      return hn::Add(acc, e);
    }
    if (hn::AllTrue(dsum, hn::Lt(shifted, cutoff))) {
      hn::Store(hn::Zero(dsum), dsum, logits + first);
      return acc;
    }
    if (!hn::AllFalse(dsum, hn::IsNaN(shifted))) row_has_nan = true;
    const VF e = Exp(dsum, shifted);
    hn::Store(e, dsum, logits + first);
    zeros_from = first + hn::Lanes(dsum);
    return hn::Add(acc, e);
  });

  // Pass 3: normalize. The row max contributes exp(0) = 1, so total >= 1. One division per row, then products:
  // a division per element made the forward compute-bound (it adds at most one fp32 rounding). With a finite
  // total and no NaN logit every exponential is finite, so no output is NaN and the stores may skip NaN handling.
  // The zero vectors that end the row (the masked half of a causal row) are written without their products, which
  // are +0 unless the inverse is NaN.
  if (row_has_nan || !std::isfinite(total)) {
    const float inverse_total = row_has_nan ? std::numeric_limits<float>::quiet_NaN() : 1.0f / total;
    return NormalizeRow(d, logits, inverse_total, n, row_has_nan ? n : zeros_from, out, stream, storage);
  }
  NormalizeRow(d, logits, 1.0f / total, n, zeros_from, out, stream, NonNaN<Storage>());
}

// Calls visit with the Storage of dtype (FLOAT16, BFLOAT16, else FLOAT).
template <class Visit>
void WithStorageOf(aclDataType dtype, const Visit& visit) {
  switch (dtype) {
    case ACL_FLOAT16:
      return visit(F16Storage());
    case ACL_BF16:
      return visit(BF16Storage());
    default:
      return visit(F32Storage());
  }
}

// Rows whose gradOutput, y and out all have unit element stride: read and written in place, converted in
// registers.
template <class Storage>
void BackwardUnitStrideRows(const BackwardParams& p, int64_t row_begin, int64_t row_end, Storage storage) {
  using Element = typename Storage::Element;
  const DF d;
  const int64_t length = p.shape.key_len;
  const int64_t value_bytes = static_cast<int64_t>(sizeof(Element));
  MaskRowReader masks(p.mask, length);
  const bool stream = WorthStreaming(p.out.desc);
  for (int64_t row = row_begin; row < row_end; ++row) {
    const RowIndex r = RowAt(p.shape, row);
    const uint8_t* mask_row = masks.Row(r);
    const auto* dy = reinterpret_cast<const Element*>(RowStart(p.grad_output, value_bytes, r.b, r.n, r.s1));
    const auto* y = reinterpret_cast<const Element*>(RowStart(p.y, value_bytes, r.b, r.n, r.s1));
    auto* out = reinterpret_cast<Element*>(RowStart(p.out, value_bytes, r.b, r.n, r.s1));
    BackwardRow(d, dy, y, mask_row, p.scale, static_cast<size_t>(length), out, stream, storage);
  }
  if (stream) hwy::FlushStream();
}

// Any other rows: each operand's row is gathered into an fp32 stack row (pacl::LoadAsFloat) unless it is a
// unit-stride FLOAT row, and the result is scattered back with one rounding (pacl::StoreFromFloat).
void BackwardStridedRows(const BackwardParams& p, int64_t row_begin, int64_t row_end) {
  const DF d;
  const int64_t length = p.shape.key_len;
  const int64_t value_bytes = static_cast<int64_t>(DataTypeSize(p.grad_output.desc.dtype));
  HWY_ALIGN float dy_buffer[kRowBufferLength];
  HWY_ALIGN float y_buffer[kRowBufferLength];
  HWY_ALIGN float out_buffer[kRowBufferLength];
  MaskRowReader masks(p.mask, length);
  const bool out_direct = WritesDirectly(p.out);

  for (int64_t row = row_begin; row < row_end; ++row) {
    const RowIndex r = RowAt(p.shape, row);
    const uint8_t* mask_row = masks.Row(r);
    const float* dy =
        RowAsFloat(p.grad_output, RowStart(p.grad_output, value_bytes, r.b, r.n, r.s1), length, dy_buffer);
    const float* y = RowAsFloat(p.y, RowStart(p.y, value_bytes, r.b, r.n, r.s1), length, y_buffer);
    char* out_start = RowStart(p.out, value_bytes, r.b, r.n, r.s1);
    float* out = out_direct ? reinterpret_cast<float*>(out_start) : out_buffer;
    BackwardRow(d, dy, y, mask_row, p.scale, static_cast<size_t>(length), out, false, F32Storage());
    if (!out_direct) StoreFromFloat(out_buffer, p.out.desc.dtype, out_start, p.out.strides[3], length);
  }
}

void BackwardRows(const BackwardParams& p, int64_t row_begin, int64_t row_end) {
  const bool unit_stride = p.grad_output.strides[3] == 1 && p.y.strides[3] == 1 && p.out.strides[3] == 1;
  if (!unit_stride) return BackwardStridedRows(p, row_begin, row_end);
  WithStorageOf(p.grad_output.desc.dtype,
                [&](auto storage) { BackwardUnitStrideRows(p, row_begin, row_end, storage); });
}

// Rows whose x and y both have unit element stride: read and written in place, converted in registers.
template <class Storage>
void ForwardUnitStrideRows(const ForwardParams& p, int64_t row_begin, int64_t row_end, Storage storage) {
  using Element = typename Storage::Element;
  const DF d;
  const int64_t length = p.shape.key_len;
  const int64_t value_bytes = static_cast<int64_t>(sizeof(Element));
  HWY_ALIGN float logits[kRowBufferLength];
  MaskRowReader masks(p.mask, length);
  const bool stream = WorthStreaming(p.y.desc);
  for (int64_t row = row_begin; row < row_end; ++row) {
    const RowIndex r = RowAt(p.shape, row);
    const uint8_t* mask_row = masks.Row(r);
    const auto* x = reinterpret_cast<const Element*>(RowStart(p.x, value_bytes, r.b, r.n, r.s1));
    auto* y = reinterpret_cast<Element*>(RowStart(p.y, value_bytes, r.b, r.n, r.s1));
    ForwardRow(d, x, mask_row, p.scale, static_cast<size_t>(length), logits, y, stream, storage);
  }
  if (stream) hwy::FlushStream();
}

// Any other rows: gathered into an fp32 stack row (pacl::LoadAsFloat) unless unit-stride FLOAT, and scattered
// back with one rounding (pacl::StoreFromFloat). The arithmetic is ForwardRow's, so the bits are the same.
void ForwardStridedRows(const ForwardParams& p, int64_t row_begin, int64_t row_end) {
  const DF d;
  const int64_t length = p.shape.key_len;
  const int64_t value_bytes = static_cast<int64_t>(DataTypeSize(p.x.desc.dtype));
  HWY_ALIGN float x_buffer[kRowBufferLength];
  HWY_ALIGN float logits[kRowBufferLength];
  MaskRowReader masks(p.mask, length);
  const bool y_direct = WritesDirectly(p.y);

  for (int64_t row = row_begin; row < row_end; ++row) {
    const RowIndex r = RowAt(p.shape, row);
    const uint8_t* mask_row = masks.Row(r);
    const float* x = RowAsFloat(p.x, RowStart(p.x, value_bytes, r.b, r.n, r.s1), length, x_buffer);
    char* y_start = RowStart(p.y, value_bytes, r.b, r.n, r.s1);
    float* y = y_direct ? reinterpret_cast<float*>(y_start) : logits;
    ForwardRow(d, x, mask_row, p.scale, static_cast<size_t>(length), logits, y, false, F32Storage());
    if (!y_direct) StoreFromFloat(logits, p.y.desc.dtype, y_start, p.y.strides[3], length);
  }
}

void ForwardRows(const ForwardParams& p, int64_t row_begin, int64_t row_end) {
  const bool unit_stride = p.x.strides[3] == 1 && p.y.strides[3] == 1 && p.x.desc.dtype == p.y.desc.dtype;
  if (!unit_stride) return ForwardStridedRows(p, row_begin, row_end);
  WithStorageOf(p.x.desc.dtype, [&](auto storage) { ForwardUnitStrideRows(p, row_begin, row_end, storage); });
}

}  // namespace HWY_NAMESPACE
}  // namespace pacl::scaled_masked_softmax
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pacl::scaled_masked_softmax {

HWY_EXPORT(BackwardRows);
HWY_EXPORT(ForwardRows);

aclnnStatus RunBackwardCpu(const BackwardParams& params) {
  const SoftmaxShape& shape = params.shape;
  const int64_t rows = shape.batch * shape.heads * shape.query_len;
  if (rows == 0) return ACLNN_SUCCESS;
  ParallelFor(rows, RowsPerChunk(shape.key_len), [&params](int64_t begin, int64_t end) {
    HWY_DYNAMIC_DISPATCH(BackwardRows)(params, begin, end);
  });
  return ACLNN_SUCCESS;
}

aclnnStatus RunForwardCpu(const ForwardParams& params) {
  const SoftmaxShape& shape = params.shape;
  const int64_t rows = shape.batch * shape.heads * shape.query_len;
  if (rows == 0) return ACLNN_SUCCESS;
  ParallelFor(rows, RowsPerChunk(shape.key_len), [&params](int64_t begin, int64_t end) {
    HWY_DYNAMIC_DISPATCH(ForwardRows)(params, begin, end);
  });
  return ACLNN_SUCCESS;
}

}  // namespace pacl::scaled_masked_softmax
#endif  // HWY_ONCE
