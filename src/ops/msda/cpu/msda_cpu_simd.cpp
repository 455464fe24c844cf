// The vector loops of the MSDA CPU kernels, once per SIMD target (Highway's foreach_target re-includes this file),
// with the functions that call the best target's (msda_cpu_simd.h). The algorithm, layouts and sum orders are in the
// NOTE of msda_cpu.cpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "msda/cpu/msda_cpu_common.h"
#include "msda/cpu/msda_cpu_simd.h"
#include "msda/msda_corners.h"
#include "msda/msda_params.h"
#include "pacl/convert.h"
#include "pacl/dtype.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "msda/cpu/msda_cpu_simd.cpp"
// foreach_target.h must come first: it re-includes this file once per target.
// clang-format off
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "pacl/canonical_math-inl.h"
#include "pacl/float_vectors-inl.h"
// clang-format on

// Per-target loops (the row layout: msda_cpu_simd.h).
HWY_BEFORE_NAMESPACE();
namespace pacl::msda {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// At most 16 lanes: the partial sums of the canonical order (pacl/canonical_math-inl.h) are whole vectors of DF.
using DF = pacl::HWY_NAMESPACE::DSum;
using DI = hn::RebindToSigned<DF>;
using pacl::HWY_NAMESPACE::CanonicalSum;
using pacl::HWY_NAMESPACE::CanonicalSums4;
using pacl::HWY_NAMESPACE::CanonicalSums4InOneWalk;
using pacl::HWY_NAMESPACE::CanonicalSums4WholeVectors;
using pacl::HWY_NAMESPACE::FusedMulAdd;
using pacl::HWY_NAMESPACE::LoadRowLanes;
using pacl::HWY_NAMESPACE::VectorArray;
// The tail of a channel row on targets with 16 lanes (c is a multiple of 8, not always of 16).
using DF8 = hn::CappedTag<float, 8>;

// Corners of the row's points on levels that passed the fast-path test (see LevelLanes): all arithmetic in
// vectors, keys in int32. loc holds the points' locations as (x, y) pairs, as the location tensor has them (NaN in
// the padding): split here in registers, since splitting them with scalar stores that vector loads then read back
// stalls the loads (a load cannot take its data from several smaller pending stores).
// attn is zeroed for points outside their map. d_dx and d_dy are null in the forward, which has no use for the
// derivatives: storing them there cost 3-9% of its time (half of this function's stores).
void FastCorners(const float* loc, float* attn, const LevelLanes& lanes, int64_t stride, int32_t* keys,
                 float* weights, float* d_dx, float* d_dy) {
  const DF df;
  const DI di;
  const int64_t n = static_cast<int64_t>(hn::Lanes(df));
  const auto one = hn::Set(df, 1.0f);
  const auto minus_one = hn::Set(df, -1.0f);
  const auto minus_half = hn::Set(df, -0.5f);
  const auto one_i = hn::Set(di, 1);
  const auto minus_one_i = hn::Set(di, -1);
  const bool with_derivatives = d_dx != nullptr;
  for (int64_t i = 0; i < stride; i += n) {
    const auto width = hn::Load(df, lanes.width_f + i);
    const auto height = hn::Load(df, lanes.height_f + i);
    const auto width_i = hn::Load(di, lanes.width_i + i);
    const auto height_i = hn::Load(di, lanes.height_i + i);
    hn::Vec<DF> loc_x, loc_y;
    hn::LoadInterleaved2(df, loc + 2 * i, loc_x, loc_y);
    auto x = FusedMulAdd(df, loc_x, width, minus_half);  // as GenericCorners: std::fma
    auto y = FusedMulAdd(df, loc_y, height, minus_half);
    const auto inside =
        hn::And(hn::And(hn::Gt(x, minus_one), hn::Lt(x, width)), hn::And(hn::Gt(y, minus_one), hn::Lt(y, height)));
    // Outside points (NaN included) become (0, 0) before the conversion to int, then lose all their corners.
    x = hn::IfThenElseZero(inside, x);
    y = hn::IfThenElseZero(inside, y);
    hn::Store(hn::IfThenElseZero(inside, hn::Load(df, attn + i)), df, attn + i);
    const auto floor_x = hn::Floor(x);
    const auto floor_y = hn::Floor(y);
    const auto ax = hn::Sub(x, floor_x);
    const auto ay = hn::Sub(y, floor_y);
    const auto bx = hn::Sub(one, ax);
    const auto by = hn::Sub(one, ay);
    const auto x0 = hn::ConvertTo(di, floor_x);
    const auto y0 = hn::ConvertTo(di, floor_y);
    const auto inside_i = hn::RebindMask(di, inside);
    const auto x0_ok = hn::Gt(x0, minus_one_i);
    const auto x1_ok = hn::Lt(hn::Add(x0, one_i), width_i);
    const auto y0_ok = hn::And(inside_i, hn::Gt(y0, minus_one_i));
    const auto y1_ok = hn::And(inside_i, hn::Lt(hn::Add(y0, one_i), height_i));
    const auto key00 = hn::Add(hn::Load(di, lanes.start_i + i), hn::Add(hn::Mul(y0, width_i), x0));
    const auto key10 = hn::Add(key00, width_i);
    // Corner k: whether it is inside the map, its key, its weight and the weight's x and y derivatives.
    auto store_corner = [&](int64_t k, auto ok_i, auto key, auto weight, auto grad_x, auto grad_y) {
      const auto ok = hn::RebindMask(df, ok_i);
      const int64_t at = k * stride + i;
      hn::Store(hn::IfThenElse(ok_i, key, minus_one_i), di, keys + at);
      hn::Store(hn::IfThenElseZero(ok, weight), df, weights + at);
      if (!with_derivatives) return;
      hn::Store(hn::IfThenElseZero(ok, grad_x), df, d_dx + at);
      hn::Store(hn::IfThenElseZero(ok, grad_y), df, d_dy + at);
    };
    store_corner(0, hn::And(y0_ok, x0_ok), key00, hn::Mul(by, bx), hn::Neg(by), hn::Neg(bx));
    store_corner(1, hn::And(y0_ok, x1_ok), hn::Add(key00, one_i), hn::Mul(by, ax), by, hn::Neg(ax));
    store_corner(2, hn::And(y1_ok, x0_ok), key10, hn::Mul(ay, bx), hn::Neg(ay), bx);
    store_corner(3, hn::And(y1_ok, x1_ok), hn::Add(key10, one_i), hn::Mul(ay, ax), ay, ax);
  }
}

// Channels [first, first + kVectors * Lanes(d)) of WeightedRowSum, with the sums in registers: each corner's key,
// weight and address are worked out once for all kVectors vectors. Corner k of every point adds into chain k % 2,
// so that two independent multiply-add chains per vector hide the instruction latency (one chain of 4 * points
// steps would bound the row's time); the chains are added at the end. The chains are the same on every target (the
// same bits everywhere): only how many vectors of channels go together (kMaxGroupVectors) depends on the target.
template <int kKind, int kVectors, class D, class Key>
void WeightedRowSumGroup(D d, const void* rows, int64_t key_stride, const Key* keys, const float* weights,
                         const float* attn, int64_t points, int64_t stride, int64_t first, float* out) {
  using Element = std::conditional_t<kKind == kFloatRow, float, uint16_t>;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  VectorArray<D, 2 * kVectors> sums;  // chain c, vector v at c * kVectors + v
  for (int s = 0; s < 2 * kVectors; ++s) sums.Set(d, s, hn::Zero(d));
  for (int64_t i = 0; i < points; ++i) {
    for (int k = 0; k < 4; ++k) {
      const int64_t key = keys[k * stride + i];
      if (key < 0) continue;
      const auto w = hn::Set(d, attn[i] * weights[k * stride + i]);
      const Element* row = static_cast<const Element*>(rows) + key * key_stride;
      const int chain = (k & 1) * kVectors;
      for (int v = 0; v < kVectors; ++v) {
        sums.Set(d, chain + v,
                 FusedMulAdd(d, w, LoadRowLanes<kKind>(d, row, first + v * lanes), sums.Get(d, chain + v)));
      }
    }
  }
  for (int v = 0; v < kVectors; ++v) {
    hn::StoreU(hn::Add(sums.Get(d, v), sums.Get(d, kVectors + v)), d, out + first + v * lanes);
  }
}

// Vectors of channels one WeightedRowSumGroup takes: its 2 chains of sums, and as many registers for the loads,
// fit in the target's registers (8 on AVX-512, so C = 128 in one walk; 4 on AVX2, so C = 32 in one walk).
constexpr int kMaxGroupVectors = pacl::HWY_NAMESPACE::kVectorRegisters / 4;

// out[ch] = sum over corners of attn[i] * weights[k][i] * value row, in the order WeightedRowSumGroup fixes.
// rows + key * key_stride (elements of kKind) is the value row of a key.
// Key: int32_t on the fast path (see FastCorners), int64_t on the generic one.
template <int kKind, class Key>
void WeightedRowSumT(const void* rows, int64_t key_stride, const Key* keys, const float* weights, const float* attn,
                     int64_t points, int64_t stride, int64_t channels, float* out) {
  const DF d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t ch = 0;
  for (; ch + kMaxGroupVectors * lanes <= channels; ch += kMaxGroupVectors * lanes) {
    WeightedRowSumGroup<kKind, kMaxGroupVectors>(d, rows, key_stride, keys, weights, attn, points, stride, ch, out);
  }
  // Fewer than kMaxGroupVectors whole vectors left: groups of 4, 2, 1.
  if constexpr (kMaxGroupVectors > 4) {
    if (ch + 4 * lanes <= channels) {
      WeightedRowSumGroup<kKind, 4>(d, rows, key_stride, keys, weights, attn, points, stride, ch, out);
      ch += 4 * lanes;
    }
  }
  if (ch + 2 * lanes <= channels) {
    WeightedRowSumGroup<kKind, 2>(d, rows, key_stride, keys, weights, attn, points, stride, ch, out);
    ch += 2 * lanes;
  }
  if (ch + lanes <= channels) {
    WeightedRowSumGroup<kKind, 1>(d, rows, key_stride, keys, weights, attn, points, stride, ch, out);
    ch += lanes;
  }
  if (ch < channels) {
    // 8 channels left on a 16-lane target.
    WeightedRowSumGroup<kKind, 1>(DF8(), rows, key_stride, keys, weights, attn, points, stride, ch, out);
  }
}

// Calls fn(std::integral_constant<int, kKind>{}) for the RowKind `kind`.
template <class Fn>
HWY_INLINE void WithRowKind(int kind, Fn&& fn) {
  if (kind == kHalfRow) return fn(std::integral_constant<int, kHalfRow>{});
  if (kind == kBFloat16Row) return fn(std::integral_constant<int, kBFloat16Row>{});
  fn(std::integral_constant<int, kFloatRow>{});
}

void WeightedRowSum32(int kind, const void* rows, int64_t key_stride, const int32_t* keys, const float* weights,
                      const float* attn, int64_t points, int64_t stride, int64_t channels, float* out) {
  WithRowKind(kind, [&](auto row_kind) {
    WeightedRowSumT<decltype(row_kind)::value>(rows, key_stride, keys, weights, attn, points, stride, channels, out);
  });
}
void WeightedRowSum64(int kind, const void* rows, int64_t key_stride, const int64_t* keys, const float* weights,
                      const float* attn, int64_t points, int64_t stride, int64_t channels, float* out) {
  WithRowKind(kind, [&](auto row_kind) {
    WeightedRowSumT<decltype(row_kind)::value>(rows, key_stride, keys, weights, attn, points, stride, channels, out);
  });
}

// The corners of a row that have a key, in the order the backward walks them (points ascending, then k ascending):
// their keys, positions k * stride + i in the corner arrays and scales attn[i] * weights[k][i]. Zeroes dots for
// every corner (those without a key keep 0). Returns how many.
// Valid-corner lists hold up to 4 * kMaxRowPoints entries, plus one vector of slack for the stores of the fast
// path (a compressed vector is stored whole; only its first CountTrue lanes count).
inline constexpr int64_t kValidCornerSlots = 4 * kMaxRowPoints + kPointAlign;
struct ValidCorners {
  int32_t at[kValidCornerSlots];
  float scale[kValidCornerSlots];
};

// Generic path (int64 keys): corner by corner.
int64_t CollectValidCorners(const int64_t* keys, const float* weights, const float* attn, int64_t points,
                            int64_t stride, int64_t* valid_keys, ValidCorners* valid, float* dots) {
  int64_t count = 0;
  std::fill(dots, dots + 4 * stride, 0.0f);
  for (int64_t i = 0; i < points; ++i) {
    for (int64_t k = 0; k < 4; ++k) {
      const int64_t at = k * stride + i;
      valid_keys[count] = keys[at];
      valid->at[count] = static_cast<int32_t>(at);
      valid->scale[count] = attn[i] * weights[at];
      count += keys[at] >= 0 ? 1 : 0;
    }
  }
  return count;
}

// StoreCompressed(has_key, key, at, scale, ...): the three vectors with the lanes where has_key is true moved to the
// front, in order (hn::Compress), stored whole at the three destinations (one function rather than a class holding
// the mask: SVE's masks cannot be members). Highway 1.0.3's Compress on AVX2, SSE4 and NEON reads its lane indices
// from a constexpr array local to the function, which GCC copies onto the stack at every call (1 KiB on AVX2, where
// the copies took more than half of the MSDA backward's time); on those targets the indices come from a static
// table built at compile time instead, once for the three vectors.
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_SSSE3 || HWY_TARGET == HWY_NEON
template <size_t kLanes>
struct CompressIndexTable {
  uint8_t lanes[size_t{1} << kLanes][kLanes];  // [mask bits]: the true lanes in order, then the others
};
template <size_t kLanes>
constexpr CompressIndexTable<kLanes> MakeCompressIndexTable() {
  CompressIndexTable<kLanes> table{};
  for (size_t bits = 0; bits < (size_t{1} << kLanes); ++bits) {
    size_t out = 0;
    for (size_t lane = 0; lane < kLanes; ++lane) {
      if ((bits >> lane) & 1) table.lanes[bits][out++] = static_cast<uint8_t>(lane);
    }
    for (size_t lane = 0; lane < kLanes; ++lane) {
      if (((bits >> lane) & 1) == 0) table.lanes[bits][out++] = static_cast<uint8_t>(lane);
    }
  }
  return table;
}
template <size_t kLanes>
inline constexpr CompressIndexTable<kLanes> kCompressIndices = MakeCompressIndexTable<kLanes>();

HWY_INLINE void StoreCompressed(hn::Mask<DI> has_key, hn::Vec<DI> key, hn::Vec<DI> at, hn::Vec<DF> scale,
                                int32_t* key_dst, int32_t* at_dst, float* scale_dst) {
  const DI di;
  uint8_t bits[8] = {};
  hn::StoreMaskBits(di, has_key, bits);
  const uint8_t* lanes = kCompressIndices<hn::MaxLanes(DI())>.lanes[bits[0]];
  const auto indices = hn::IndicesFromVec(di, hn::PromoteTo(di, hn::LoadU(hn::Rebind<uint8_t, DI>(), lanes)));
  hn::StoreU(hn::TableLookupLanes(key, indices), di, key_dst);
  hn::StoreU(hn::TableLookupLanes(at, indices), di, at_dst);
  hn::StoreU(hn::BitCast(DF(), hn::TableLookupLanes(hn::BitCast(di, scale), indices)), DF(), scale_dst);
}
#else
HWY_INLINE void StoreCompressed(hn::Mask<DI> has_key, hn::Vec<DI> key, hn::Vec<DI> at, hn::Vec<DF> scale,
                                int32_t* key_dst, int32_t* at_dst, float* scale_dst) {
  hn::StoreU(hn::Compress(key, has_key), DI(), key_dst);
  hn::StoreU(hn::Compress(at, has_key), DI(), at_dst);
  hn::StoreU(hn::Compress(scale, hn::RebindMask(DF(), has_key)), DF(), scale_dst);
}
#endif

// Fast path (int32 keys): a vector of points at a time, its four corners interleaved into walking order and the
// corners with a key compressed to the front (in registers: a compressing store is microcoded on some CPUs).
int64_t CollectValidCorners(const int32_t* keys, const float* weights, const float* attn, int64_t /*points*/,
                            int64_t stride, int32_t* valid_keys, ValidCorners* valid, float* dots) {
  const DF df;
  const DI di;
  const int64_t n = static_cast<int64_t>(hn::Lanes(df));
  HWY_ALIGN int32_t key_order[4 * hn::MaxLanes(DI())];
  HWY_ALIGN int32_t at_order[4 * hn::MaxLanes(DI())];
  HWY_ALIGN float scale_order[4 * hn::MaxLanes(DF())];
  int64_t count = 0;
  // Padding points (count to stride) have no keys, so walking them adds nothing.
  for (int64_t i = 0; i < stride; i += n) {
    const auto a = hn::Load(df, attn + i);
    const auto at0 = hn::Iota(di, static_cast<int32_t>(i));
    const auto step = hn::Set(di, static_cast<int32_t>(stride));
    const auto at1 = hn::Add(at0, step);
    const auto at2 = hn::Add(at1, step);
    const auto at3 = hn::Add(at2, step);
    hn::StoreInterleaved4(hn::Load(di, keys + i), hn::Load(di, keys + stride + i), hn::Load(di, keys + 2 * stride + i),
                          hn::Load(di, keys + 3 * stride + i), di, key_order);
    hn::StoreInterleaved4(at0, at1, at2, at3, di, at_order);
    hn::StoreInterleaved4(hn::Mul(a, hn::Load(df, weights + i)), hn::Mul(a, hn::Load(df, weights + stride + i)),
                          hn::Mul(a, hn::Load(df, weights + 2 * stride + i)),
                          hn::Mul(a, hn::Load(df, weights + 3 * stride + i)), df, scale_order);
    for (int64_t k = 0; k < 4; ++k) {
      hn::Store(hn::Zero(df), df, dots + k * stride + i);
      const auto key = hn::Load(di, key_order + k * n);
      const auto has_key = hn::Gt(key, hn::Set(di, -1));
      StoreCompressed(has_key, key, hn::Load(di, at_order + k * n), hn::Load(df, scale_order + k * n),
                      valid_keys + count, valid->at + count, valid->scale + count);
      count += static_cast<int64_t>(hn::CountTrue(di, has_key));
    }
  }
  return count;
}

// For each corner (points ascending, then k ascending): dots[k][i] = grad . value row (in the canonical order of
// pacl/canonical_math-inl.h), and the gradValue row of the key += attn[i] * weights[k][i] * grad. Corners with key
// -1 get dots 0 and touch nothing. The valid corners go four at a time (CanonicalSums4: one load of grad for four
// rows, and their four sums reduced together); within a step the four rows are updated in corner order, so a row
// that several of them update gets its additions in the same order as one corner at a time.
template <int kKind, class Key>
void CornerBackwardT(const void* rows, int64_t key_stride, float* grad_rows, int64_t grad_key_stride,
                     const Key* keys, const float* weights, const float* attn, int64_t points, int64_t stride,
                     int64_t channels, const float* grad, float* dots) {
  using V = hn::Vec<DF>;
  using Element = std::conditional_t<kKind == kFloatRow, float, uint16_t>;
  Key valid_keys[kValidCornerSlots];
  ValidCorners valid;
  const int64_t count = CollectValidCorners(keys, weights, attn, points, stride, valid_keys, &valid, dots);
  // grad_row += scale * g, and acc += g . row, for channels [first, first + lanes) where g holds grad's (the row
  // widened to fp32 as it is loaded).
  auto corner_step = [](DF d, size_t first, V g, const Element* row, float* grad_row, V scale, V& acc) {
    hn::StoreU(FusedMulAdd(d, scale, g, hn::LoadU(d, grad_row + first)), d, grad_row + first);
    acc = FusedMulAdd(d, g, LoadRowLanes<kKind>(d, row, static_cast<int64_t>(first)), acc);
  };
  // The same for the last 8 channels on a 16-lane target: lanes past `lanes` are zero, and only `lanes` are stored.
  auto partial_corner_step = [corner_step](DF d, size_t first, size_t lanes, V g, const Element* row,
                                           float* grad_row, V scale, V& acc) {
    HWY_ALIGN Element row_lanes[hn::MaxLanes(DF())] = {};
    HWY_ALIGN float grad_row_lanes[hn::MaxLanes(DF())] = {};
    std::memcpy(row_lanes, row + first, lanes * sizeof(Element));
    std::memcpy(grad_row_lanes, grad_row + first, lanes * sizeof(float));
    corner_step(d, 0, g, row_lanes, grad_row_lanes, scale, acc);
    std::memcpy(grad_row + first, grad_row_lanes, lanes * sizeof(float));
  };
  auto load_grad = [grad](DF d, size_t first, size_t lanes) {
    if (lanes == hn::Lanes(d)) return hn::LoadU(d, grad + first);
    HWY_ALIGN float g_lanes[hn::MaxLanes(DF())] = {};
    std::memcpy(g_lanes, grad + first, lanes * sizeof(float));
    return hn::Load(d, g_lanes);
  };
  const Element* value_rows = static_cast<const Element*>(rows);
  const DF d;
  int64_t c = 0;
  // corner_step stores, so it may go to CanonicalSums4 only where that calls it once per chunk for all four sums;
  // and only where the four sums' partials (16 vectors on 4 lanes) leave registers for the rest: not on SSE4, whose
  // 16 registers they fill (the small MSDA backward took 3-10% longer four corners at a time there).
  const bool four_at_a_time =
      CanonicalSums4InOneWalk() && (pacl::HWY_NAMESPACE::kVectorRegisters >= 32 || hn::Lanes(d) >= 8);
  // The value rows and gradValue rows of corners c .. c + 3.
  struct FourRows {
    const Element* row[4];
    float* grad_row[4];
  };
  auto four_rows = [&](int64_t c4) {
    FourRows r;
    for (int j = 0; j < 4; ++j) {
      r.row[j] = value_rows + valid_keys[c4 + j] * key_stride;
      r.grad_row[j] = grad_rows + valid_keys[c4 + j] * grad_key_stride;
    }
    return r;
  };
  // With whole vectors of channels (c = 32, 64, 256 ...) the step need not handle a partial vector; without that
  // path, in a loop of its own, GCC keeps the pointers, scales and sums in registers (CanonicalSums4WholeVectors).
  const bool whole_vectors = static_cast<size_t>(channels) % hn::Lanes(d) == 0;
  for (; four_at_a_time && whole_vectors && c + 4 <= count; c += 4) {
    const FourRows r = four_rows(c);
    // (The scales as floats: SVE's vectors cannot be captured by copy.)
    const float scale0 = valid.scale[c], scale1 = valid.scale[c + 1];
    const float scale2 = valid.scale[c + 2], scale3 = valid.scale[c + 3];
    float four[4];
    CanonicalSums4WholeVectors(
        static_cast<size_t>(channels),
        [=](DF dj, size_t first, V& acc0, V& acc1, V& acc2, V& acc3) {
          const V g = hn::LoadU(dj, grad + first);
          corner_step(dj, first, g, r.row[0], r.grad_row[0], hn::Set(dj, scale0), acc0);
          corner_step(dj, first, g, r.row[1], r.grad_row[1], hn::Set(dj, scale1), acc1);
          corner_step(dj, first, g, r.row[2], r.grad_row[2], hn::Set(dj, scale2), acc2);
          corner_step(dj, first, g, r.row[3], r.grad_row[3], hn::Set(dj, scale3), acc3);
        },
        four);
    for (int j = 0; j < 4; ++j) dots[valid.at[c + j]] = four[j];
  }
  for (; four_at_a_time && c + 4 <= count; c += 4) {
    const FourRows r = four_rows(c);
    // (Named vectors, not arrays: SVE's vectors cannot be array elements.)
    const V scale0 = hn::Set(d, valid.scale[c]), scale1 = hn::Set(d, valid.scale[c + 1]);
    const V scale2 = hn::Set(d, valid.scale[c + 2]), scale3 = hn::Set(d, valid.scale[c + 3]);
    float four[4];
    CanonicalSums4(
        static_cast<size_t>(channels),
        [&](DF dj, size_t first, size_t lanes, V& acc0, V& acc1, V& acc2, V& acc3) {
          const V g = load_grad(dj, first, lanes);
          if (lanes == hn::Lanes(dj)) {
            corner_step(dj, first, g, r.row[0], r.grad_row[0], scale0, acc0);
            corner_step(dj, first, g, r.row[1], r.grad_row[1], scale1, acc1);
            corner_step(dj, first, g, r.row[2], r.grad_row[2], scale2, acc2);
            corner_step(dj, first, g, r.row[3], r.grad_row[3], scale3, acc3);
            return;
          }
          partial_corner_step(dj, first, lanes, g, r.row[0], r.grad_row[0], scale0, acc0);
          partial_corner_step(dj, first, lanes, g, r.row[1], r.grad_row[1], scale1, acc1);
          partial_corner_step(dj, first, lanes, g, r.row[2], r.grad_row[2], scale2, acc2);
          partial_corner_step(dj, first, lanes, g, r.row[3], r.grad_row[3], scale3, acc3);
        },
        four);
    for (int j = 0; j < 4; ++j) dots[valid.at[c + j]] = four[j];
  }
  for (; c < count; ++c) {
    const Element* row = value_rows + valid_keys[c] * key_stride;
    float* grad_row = grad_rows + valid_keys[c] * grad_key_stride;
    const V scale = hn::Set(d, valid.scale[c]);
    dots[valid.at[c]] = CanonicalSum(static_cast<size_t>(channels), [&](DF dj, V acc, size_t first, size_t lanes) {
      const V g = load_grad(dj, first, lanes);
      if (lanes == hn::Lanes(dj)) {
        corner_step(dj, first, g, row, grad_row, scale, acc);
      } else {
        partial_corner_step(dj, first, lanes, g, row, grad_row, scale, acc);
      }
      return acc;
    });
  }
}

// value rows of `kind` (ValueRowKind): fp32, or FLOAT16/BFLOAT16 in place.
void CornerBackward32(int kind, const void* rows, int64_t key_stride, float* grad_rows, int64_t grad_key_stride,
                      const int32_t* keys, const float* weights, const float* attn, int64_t points, int64_t stride,
                      int64_t channels, const float* grad, float* dots) {
  WithRowKind(kind, [&](auto row_kind) {
    CornerBackwardT<decltype(row_kind)::value>(rows, key_stride, grad_rows, grad_key_stride, keys, weights, attn,
                                               points, stride, channels, grad, dots);
  });
}
void CornerBackward64(int kind, const void* rows, int64_t key_stride, float* grad_rows, int64_t grad_key_stride,
                      const int64_t* keys, const float* weights, const float* attn, int64_t points, int64_t stride,
                      int64_t channels, const float* grad, float* dots) {
  WithRowKind(kind, [&](auto row_kind) {
    CornerBackwardT<decltype(row_kind)::value>(rows, key_stride, grad_rows, grad_key_stride, keys, weights, attn,
                                               points, stride, channels, grad, dots);
  });
}

// Per point: attn_grad = sum over corners of weight * dot; x_grad = attn * W * sum of d_dx * dot; y likewise with H,
// stored as (x, y) pairs in loc_grad (the gradLocation layout).
// Points outside the map have all weights 0, so all three are 0 (attn is zeroed for them by the caller).
void PointGradients(const float* weights, const float* d_dx, const float* d_dy, const float* dots, const float* attn,
                    const LevelLanes& lanes, int64_t stride, float* attn_grad, float* loc_grad) {
  const DF d;
  const int64_t n = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t i = 0; i < stride; i += n) {
    auto sum_w = hn::Zero(d);
    auto sum_x = hn::Zero(d);
    auto sum_y = hn::Zero(d);
    for (int64_t k = 0; k < 4; ++k) {
      const int64_t at = k * stride + i;
      const auto dot = hn::Load(d, dots + at);
      sum_w = FusedMulAdd(d, hn::Load(d, weights + at), dot, sum_w);
      sum_x = FusedMulAdd(d, hn::Load(d, d_dx + at), dot, sum_x);
      sum_y = FusedMulAdd(d, hn::Load(d, d_dy + at), dot, sum_y);
    }
    const auto a = hn::Load(d, attn + i);
    hn::Store(sum_w, d, attn_grad + i);
    hn::StoreInterleaved2(hn::Mul(sum_x, hn::Mul(a, hn::Load(d, lanes.width_f + i))),
                          hn::Mul(sum_y, hn::Mul(a, hn::Load(d, lanes.height_f + i))), d, loc_grad + 2 * i);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace pacl::msda
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pacl::msda {

HWY_EXPORT(FastCorners);
HWY_EXPORT(WeightedRowSum32);
HWY_EXPORT(WeightedRowSum64);
HWY_EXPORT(CornerBackward32);
HWY_EXPORT(CornerBackward64);
HWY_EXPORT(PointGradients);

namespace simd {

void FastCorners(const float* loc, float* attn, const LevelLanes& lanes, int64_t stride, int32_t* keys,
                 float* weights, float* d_dx, float* d_dy) {
  HWY_DYNAMIC_DISPATCH(FastCorners)(loc, attn, lanes, stride, keys, weights, d_dx, d_dy);
}

void WeightedRowSum32(int kind, const void* rows, int64_t key_stride, const int32_t* keys, const float* weights,
                      const float* attn, int64_t points, int64_t stride, int64_t channels, float* out) {
  HWY_DYNAMIC_DISPATCH(WeightedRowSum32)(kind, rows, key_stride, keys, weights, attn, points, stride, channels, out);
}

void WeightedRowSum64(int kind, const void* rows, int64_t key_stride, const int64_t* keys, const float* weights,
                      const float* attn, int64_t points, int64_t stride, int64_t channels, float* out) {
  HWY_DYNAMIC_DISPATCH(WeightedRowSum64)(kind, rows, key_stride, keys, weights, attn, points, stride, channels, out);
}

void CornerBackward32(int kind, const void* rows, int64_t key_stride, float* grad_rows, int64_t grad_key_stride,
                      const int32_t* keys, const float* weights, const float* attn, int64_t points, int64_t stride,
                      int64_t channels, const float* grad, float* dots) {
  HWY_DYNAMIC_DISPATCH(CornerBackward32)
  (kind, rows, key_stride, grad_rows, grad_key_stride, keys, weights, attn, points, stride, channels, grad, dots);
}

void CornerBackward64(int kind, const void* rows, int64_t key_stride, float* grad_rows, int64_t grad_key_stride,
                      const int64_t* keys, const float* weights, const float* attn, int64_t points, int64_t stride,
                      int64_t channels, const float* grad, float* dots) {
  HWY_DYNAMIC_DISPATCH(CornerBackward64)
  (kind, rows, key_stride, grad_rows, grad_key_stride, keys, weights, attn, points, stride, channels, grad, dots);
}

void PointGradients(const float* weights, const float* d_dx, const float* d_dy, const float* dots, const float* attn,
                    const LevelLanes& lanes, int64_t stride, float* attn_grad, float* loc_grad) {
  HWY_DYNAMIC_DISPATCH(PointGradients)(weights, d_dx, d_dy, dots, attn, lanes, stride, attn_grad, loc_grad);
}

}  // namespace simd
}  // namespace pacl::msda
#endif  // HWY_ONCE
