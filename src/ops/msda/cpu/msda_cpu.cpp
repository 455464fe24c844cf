// NOTE [Multi-scale deformable attention on the CPU]
//
// Problem. value (bs, nk, nh, c) holds nl feature maps per image and head, flattened: level l is an H x W map
// (spatialShape[l]) whose pixel (y, x) is key levelStartIndex[l] + y * W + x. Each query q of head h samples np
// points per level at location (x, y) in [0, 1] (pixel coordinates x * W - 0.5, y * H - 0.5) by bilinear
// interpolation and sums the samples weighted by attnWeight: out[b, q, h, :] = sum over l, p of
// attn * bilinear(value[b, level l, h, :], point). The backward scatters attn * corner weight * gradOutput into
// gradValue and reduces gradOutput . (corner rows) into gradAttnWeight and gradLocation.
//
// Memory safety. spatialShape and levelStartIndex are device data, read here (phase 2) and never trusted: a point
// counts only if its pixel position is strictly inside (-1, W) x (-1, H) (a float comparison, so NaN fails; the
// floor of such a position always fits in int64), and each of its 4 corners is read or written only if
// 0 <= y < H, 0 <= x < W and 0 <= start + y * W + x < nk, the key computed exactly (a level whose whole map lies
// in [0, nk) needs no per-corner key check; on others each key is checked in exact unsigned 64-bit arithmetic).
// Other corners are zero padding; a point with no valid corner contributes nothing and gets zero gradients.
//
// Corners. A row is one (image, query, head) with its nl * np points. On the fast path (every map inside
// [0, nk), nk < 2^31, H and W <= 2^24: then float(W) is exact and keys fit in int32) the corners of all the row's
// points are computed in vectors (FastCorners): pixel position, inside test, floor, the 4 weights (and, for the
// backward, their x/y derivatives), and int32 keys, with -1 and zero weights for a corner outside the map.
// Otherwise (hostile sizes or starts) GenericCorners does the same per point in scalar code with the exact key
// check, keys in int64. Corner k of point i is stored at [k][i], so the later loops read them as arrays; they take
// the keys in the type their path wrote (widening int32 keys in a separate pass cost 8% of the forward).
//
// Layout. Work is on fp32 rows of c channels, vectorised over channels (c is a multiple of 8: whole vectors of
// the target, plus one 8-lane vector on 16-lane targets); a corner's weight is computed once and shared by all
// channels. Forward: value is read from a compact fp32 copy in the workspace, layout (bs, nh, nk, c), unless its
// channels have unit stride and the queries are few (then in place, FLOAT16/BFLOAT16 rows widened exactly in
// registers: see PlanForwardWorkspace); up to 4 vectors of sums stay in registers while the row's corners are
// walked. Backward: value and the gradValue sums are
// compact fp32 planes (bs, nh, nk, c) in the workspace: its tasks walk one (image, head) plane, whose rows in the
// caller's layout would lie nh * c floats apart and crowd into a fraction of the cache sets. The sums are converted
// once at the end (fp16/bf16 rounded once). With few queries, tensors with unit channel stride are used in place
// instead (the passes over whole planes would cost more than the corners: see PlanBackwardWorkspace): value in any
// dtype (FLOAT16/BFLOAT16 rows widened in registers), and a FLOAT gradValue, whose sums then accumulate in
// gradValue itself, in the same order. The forward with few queries and a value that cannot
// be read in place (strided channels) converts only the rows its corners reach, when a corner of the task first
// touches one (rows_on_first_touch; a byte per key marks it). location, attnWeight, gradOutput and
// the small outputs are read and written through their strides in any float dtype. Outputs of 8 MiB and more
// (gradValue from the sums, gradLocation, gradAttnWeight, a FLOAT16/BFLOAT16 output, a FLOAT one with plane tasks)
// are written with non-temporal stores where their rows are contiguous, so that their lines are not read first.
//
// Parallelism and determinism. Forward: tasks are whole (image, head) planes when there are at least
// kPlanesPerThread per thread and value is copied and shares no memory with the output (each task then copies its
// own plane just before walking it), else runs of kQueriesPerTask queries of one (image, head); each task writes
// its own output rows, so the split never changes a result. A row sums its corners in a fixed order: corner k of
// each point (points ascending) into chain k % 2 (fused multiply-adds), the two chains added at the end, on every
// target; independent chains keep the multiply-add latency from bounding the row's time.
// Backward: one task per (image, head), a split fixed by the shape alone. The task zeroes its gradValue plane,
// walks its queries in ascending order and each row's corners in a fixed order (points ascending, then corner k:
// a point's valid corners have distinct keys, so a step of four corners rarely updates one row twice; the other
// order, corner k of four neighbouring points, often did, 7% slower), scattering attn * weight * gradOutput into
// the plane and taking one dot product gradOutput . value row per corner (in the canonical order of
// pacl/canonical_math-inl.h: 16 partial sums and a fixed tree, whatever the vector width; four corners at a time,
// their trees reduced together, the rows still updated in corner order, except on SSE4, where the four sets of
// partials do not fit in the registers, and on the scalar baseline, which sums them one at a time); gradAttnWeight
// and gradLocation of a point combine its 4 dots. Every sum has one order whatever the thread count, schedule or
// instruction set, and every multiply-add is fused on every target (the pixel position loc * W - 0.5 too, on the
// vector and the scalar path): results are bit-identical run to run, for any number of threads and on every SIMD
// target. Backward parallelism is bs * nh tasks. (What this order costs against per-target chains: docs/ops/msda.md.)
//
// Files: this one holds the drivers (tasks, rows, value copies, outputs); msda_cpu_simd.cpp the vector loops, once
// per SIMD target; msda_cpu_plan.cpp the workspace plans; msda_cpu_generic.cpp the scalar kernels for DOUBLE and
// other channel counts.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "hwy/base.h"
#include "hwy/cache_control.h"
#include "msda/cpu/msda_cpu_common.h"
#include "msda/cpu/msda_cpu_simd.h"
#include "msda/msda_corners.h"
#include "msda/msda_params.h"
#include "pacl/convert.h"
#include "pacl/dtype.h"
#include "pacl/parallel.h"
#include "pacl/workspace_plan.h"

namespace pacl::msda {

namespace {

constexpr int64_t kQueriesPerTask = 1024;
constexpr int64_t kPlanesPerThread = 4;
constexpr int64_t kFastMaxMapSide = int64_t{1} << 24;

bool FastPathApplies(const std::vector<Level>& levels, int64_t keys) {
  if (keys > INT32_MAX) return false;
  for (const Level& level : levels) {
    if (!level.map_in_keys || level.height > kFastMaxMapSide || level.width > kFastMaxMapSide) return false;
  }
  return true;
}

LevelLanes MakeLevelLanes(const std::vector<Level>& levels, int64_t points) {
  LevelLanes lanes;
  const int64_t row_points = static_cast<int64_t>(levels.size()) * points;
  for (int64_t i = 0; i < kMaxRowPoints; ++i) {
    const Level padding{1, 1, 0, true};
    const Level& level = i < row_points ? levels[static_cast<size_t>(i / points)] : padding;
    lanes.width_f[i] = static_cast<float>(level.width);
    lanes.height_f[i] = static_cast<float>(level.height);
    // Only read on the fast path, where these fit.
    lanes.width_i[i] = static_cast<int32_t>(std::min<int64_t>(level.width, INT32_MAX));
    lanes.height_i[i] = static_cast<int32_t>(std::min<int64_t>(level.height, INT32_MAX));
    lanes.start_i[i] = static_cast<int32_t>(std::clamp<int64_t>(level.start, 0, INT32_MAX));
  }
  return lanes;
}

// The sample points of one row (image, query, head) and their corners; see the layout above FastCorners. The
// arrays lie back to back in one buffer sized by the row's padded point count: arrays of the largest possible size
// (multiples of 4 KiB) would all begin at the same offset modulo 4 KiB and compete for the same few L1 cache sets.
// The padding points (count to stride) are set once here: NaN locations (no corner) and zero attention weights.
class RowPoints {
 public:
  explicit RowPoints(int64_t points)
      : count(points),
        stride((points + kPointAlign - 1) / kPointAlign * kPointAlign),
        storage_(new float[static_cast<size_t>(kFloatsPerPoint * stride + kPointAlign)]) {
    // stride is a multiple of kPointAlign floats (64 bytes), so every array starts on a 64-byte boundary.
    float* next = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(storage_.get()) + 63) / 64 * 64);
    auto take = [&](int64_t floats) {
      float* array = next;
      next += floats;
      return array;
    };
    loc = take(2 * stride);
    loc_grad = take(2 * stride);
    attn = take(stride);
    attn_grad = take(stride);
    weights = take(4 * stride);
    d_dx = take(4 * stride);
    d_dy = take(4 * stride);
    dots = take(4 * stride);
    keys32 = reinterpret_cast<int32_t*>(take(4 * stride));
    keys = reinterpret_cast<int64_t*>(take(8 * stride));
    std::fill(loc + 2 * count, loc + 2 * stride, std::numeric_limits<float>::quiet_NaN());
    std::fill(attn + count, attn + stride, 0.0f);
  }

  const int64_t count;   // levels * points
  const int64_t stride;  // count rounded up to kPointAlign
  float* loc;            // point i's location at [2 * i] (x) and [2 * i + 1] (y)
  float* loc_grad;       // its gradient, likewise
  float* attn;           // 0 for points outside their map
  float* attn_grad;
  float* weights;  // corner k of point i at [k * stride + i], likewise d_dx, d_dy, dots, keys32 and keys
  float* d_dx;
  float* d_dy;
  float* dots;
  int32_t* keys32;  // the keys on the fast path (FastCorners)
  int64_t* keys;    // on the generic path (GenericCorners)

 private:
  static constexpr int64_t kFloatsPerPoint = 2 + 2 + 1 + 1 + 4 * 4 + 4 + 8;  // the arrays above, per padded point
  std::unique_ptr<float[]> storage_;
};

// The per-call facts the row functions share.
struct Sampler {
  const MsdaShape& shape;
  const TensorDesc& location;
  const TensorDesc& attn_weight;
  std::vector<Level> levels;
  bool fast = false;
  LevelLanes lanes;
};

// Generic path (any spatialShape / levelStartIndex contents): point i's corners, scalar, 64-bit keys checked
// exactly (msda_corners.h, shared with the CUDA kernels). False when the point has no valid corner; the caller then
// zeroes the point's attention weight.
bool GenericCorners(const Level& level, int64_t keys, int64_t i, RowPoints* row) {
  PointCorners corners;
  const bool any_valid =
      ComputeCorners(level.height, level.width, level.start, keys, row->loc[2 * i], row->loc[2 * i + 1], &corners);
  for (int64_t k = 0; k < 4; ++k) {
    const int64_t at = k * row->stride + i;
    row->keys[at] = corners.key[k];
    row->weights[at] = corners.weight[k];
    row->d_dx[at] = corners.d_dx[k];
    row->d_dy[at] = corners.d_dy[k];
  }
  return any_valid;
}

// Values per point of a location-shaped (rank 6: x and y) or attnWeight-shaped (rank 5) tensor.
int64_t ValuesPerPoint(const TensorDesc& t) { return t.rank == 6 ? 2 : 1; }

// Whether the points of one (b, q, h) of such a tensor form one contiguous block of levels * points * (2 or 1)
// elements, as in the layouts models use.
bool PointsContiguous(const TensorDesc& t, const MsdaShape& s) {
  const int64_t per_point = ValuesPerPoint(t);
  return (t.rank != 6 || t.strides[5] == 1) && t.strides[4] == per_point && t.strides[3] == s.points * per_point;
}

// out[l * points + p] = element (b, q, h, l, p) of attnWeight, or out[2 * (l * points + p) + j] = element
// (b, q, h, l, p, j) of location, as float: the dtype is dispatched once per row, not per element. Blocks that are
// contiguous are converted whole (pacl::LoadAsFloat: vector conversions; FLOAT16 read element by element made its
// forward 1.5x FLOAT's). Element indices are formed only for elements of the view (a pointer stepped past the last
// one could leave the storage: strides of size-1 dims may be anything).
void ReadRowElements(const TensorDesc& t, const MsdaShape& s, int64_t b, int64_t q, int64_t h, float* out) {
  const int64_t per_point = ValuesPerPoint(t);
  const int64_t first = PointElement(t, b, q, h, 0, 0);
  if (PointsContiguous(t, s)) {
    LoadAsFloat(t.dtype, t.ElementAt(first), 1, out, s.levels * s.points * per_point);
    return;
  }
  DispatchFloat(t.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* data = static_cast<const T*>(t.data);
    auto load = [data](int64_t element) {
      T v;
      std::memcpy(&v, data + element, sizeof v);
      return ToFloat(v);
    };
    int64_t i = 0;
    for (int64_t l = 0; l < s.levels; ++l) {
      for (int64_t p = 0; p < s.points; ++p) {
        const int64_t element = first + l * t.strides[3] + p * t.strides[4];
        for (int64_t j = 0; j < per_point; ++j) out[i++] = load(element + j * t.strides[5]);
      }
    }
  });
}

// The inverse of ReadRowElements, for gradAttnWeight and gradLocation: values rounded to the tensor's dtype.
// `stream`: a contiguous block is written with non-temporal stores (see StreamsPoints).
void WriteRowElements(const TensorDesc& t, const MsdaShape& s, int64_t b, int64_t q, int64_t h, const float* in,
                      bool stream) {
  const int64_t per_point = ValuesPerPoint(t);
  const int64_t first = PointElement(t, b, q, h, 0, 0);
  if (PointsContiguous(t, s)) {
    StoreOrStreamFromFloat(in, t.dtype, t.ElementAt(first), 1, s.levels * s.points * per_point, stream);
    return;
  }
  DispatchFloat(t.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* data = static_cast<T*>(t.data);
    auto store = [data](int64_t element, float value) {
      const T v = FromFloat<T>(value);
      std::memcpy(data + element, &v, sizeof v);
    };
    int64_t i = 0;
    for (int64_t l = 0; l < s.levels; ++l) {
      for (int64_t p = 0; p < s.points; ++p) {
        const int64_t element = first + l * t.strides[3] + p * t.strides[4];
        for (int64_t j = 0; j < per_point; ++j) store(element + j * t.strides[5], in[i++]);
      }
    }
  });
}

// The points and corners of row (b, q, h). derivatives: the backward's, which needs the corner weights' x/y
// derivatives for gradLocation (the fast path leaves d_dx and d_dy unwritten otherwise).
void SampleRow(const Sampler& sampler, int64_t b, int64_t q, int64_t h, RowPoints* row, bool derivatives) {
  const MsdaShape& s = sampler.shape;
  ReadRowElements(sampler.location, s, b, q, h, row->loc);
  ReadRowElements(sampler.attn_weight, s, b, q, h, row->attn);
  if (sampler.fast) {
    simd::FastCorners(row->loc, row->attn, sampler.lanes, row->stride, row->keys32, row->weights, derivatives ? row->d_dx : nullptr,
     derivatives ? row->d_dy : nullptr);
    return;
  }
  for (int64_t i = 0; i < row->stride; ++i) {
    const Level& level = sampler.levels[static_cast<size_t>(std::min(i / s.points, s.levels - 1))];
    if (!GenericCorners(level, s.keys, i, row)) row->attn[i] = 0.0f;
  }
}

// Both kernels walk one head's queries, so their accesses to location, attnWeight (and gradOutput and the
// gradients) jump over the other heads' data from query to query; the hardware prefetchers do not follow, so the
// data kPrefetchQueries queries ahead is requested explicitly (a third off the backward's time).
// The Prefetch* helpers are always inlined: a function that only prefetches has no effect GCC can see, so its
// interprocedural analysis may call it pure and drop every call to it (it did, once the element size was inline).
constexpr int64_t kPrefetchQueries = 8;

template <bool kForWrite = false>
HWY_INLINE void PrefetchElements(const TensorDesc& t, int64_t first_element, int64_t count) {
  const char* begin = t.ElementAt(first_element);
  const int64_t bytes = count * static_cast<int64_t>(t.ElementSize());
  for (int64_t offset = 0; offset < bytes; offset += 64) __builtin_prefetch(begin + offset, kForWrite ? 1 : 0);
}

// The points of (b, q, h) in a location-shaped (rank 6) or attnWeight-shaped (rank 5) tensor, when they form one
// contiguous block (other views are rare, and correct without prefetching).
template <bool kForWrite = false>
HWY_INLINE void PrefetchRowPoints(const TensorDesc& t, const MsdaShape& s, int64_t b, int64_t q, int64_t h) {
  if (!PointsContiguous(t, s)) return;
  PrefetchElements<kForWrite>(t, PointElement(t, b, q, h, 0, 0), s.levels * s.points * ValuesPerPoint(t));
}

HWY_INLINE void PrefetchHeadRow(const HeadRows& rows, const MsdaShape& s, int64_t b, int64_t q, int64_t h) {
  if (rows.channel_stride != 1) return;
  PrefetchElements(rows.desc, rows.desc.offset + b * rows.batch_stride + q * rows.query_stride + h * rows.head_stride,
                   s.channels);
}

// fp32 rows of c channels addressed by (image, key, head); strides in floats.
template <class T>
struct RowTable {
  T* base = nullptr;
  int64_t batch_stride = 0;
  int64_t key_stride = 0;
  int64_t head_stride = 0;
  T* Row(int64_t b, int64_t key, int64_t h) const {
    return base + b * batch_stride + key * key_stride + h * head_stride;
  }
  RowTable<const T> AsConst() const { return {base, batch_stride, key_stride, head_stride}; }
};

// The caller's FLOAT tensor (bs, nk, nh, c) with unit channel stride, in place. A value without elements (nk = 0)
// may have null data: its rows are never read (no key is in range), and a null pointer must not be offset, so it
// gets the empty table whose rows are all the null pointer.
template <class T>
RowTable<T> InPlaceRows(const TensorDesc& t) {
  if (t.data == nullptr) return {};
  return {static_cast<T*>(t.data) + t.offset, t.strides[0], t.strides[1], t.strides[2]};
}

// An fp32 array (bs, nh, nk, c) in the workspace.
template <class T>
RowTable<T> WorkspaceRows(char* aligned_workspace, int64_t byte_offset, const MsdaShape& s) {
  return {reinterpret_cast<T*>(aligned_workspace + byte_offset), s.heads * s.keys * s.channels, s.channels,
          s.keys * s.channels};
}

// With rows_on_first_touch (forward, few corner reads per value row): which keys of one (image, head) plane a task
// has touched, so that the value rows are converted when a corner first reaches them instead of by a pass over all
// of value. A byte per key.
class TouchedKeys {
 public:
  TouchedKeys(bool enabled, int64_t keys) : marks_(enabled ? static_cast<size_t>(keys) : 0) {}
  bool enabled() const { return !marks_.empty(); }
  void Clear() { std::fill(marks_.begin(), marks_.end(), uint8_t{0}); }
  // Marks the keys of a row's corners; fill(key) for each one not touched before.
  template <class Fill>
  void Touch(const RowPoints& row, bool fast, Fill&& fill) {
    for (int64_t at = 0; at < 4 * row.stride; ++at) {
      const int64_t key = fast ? row.keys32[at] : row.keys[at];
      if (key < 0 || marks_[static_cast<size_t>(key)] != 0) continue;
      marks_[static_cast<size_t>(key)] = 1;
      fill(key);
    }
  }

 private:
  std::vector<uint8_t> marks_;
};

// Row (b, key, h) of value converted into the workspace array.
void ConvertValueRow(const TensorDesc& value, const MsdaShape& s, const RowTable<float>& copy, int64_t b, int64_t key,
                     int64_t h) {
  LoadAsFloat(value.dtype, value.ElementAt(ElementOf(value, b, key, h)), value.strides[3], copy.Row(b, key, h),
              s.channels);
}

// Plane (b, h) of value converted into the workspace copy by the forward task that walks it next: the plane's lines
// are then still in that core's caches, and written by it, when its corners read them. After one pass over all of
// value before the tasks (ValueRows), written by every thread, the forward was slower and far less steady on a
// 2-core VM. The backward, whose tasks are planes too, gained nothing from it, so it keeps the pass.
void CopyValuePlane(const TensorDesc& value, const MsdaShape& s, const RowTable<float>& copy, int64_t b, int64_t h) {
  for (int64_t key = 0; key < s.keys; ++key) ConvertValueRow(value, s, copy, b, key, h);
}

// value as fp32 rows: in place, or converted into the workspace copy (in parallel over (image, key)).
RowTable<const float> ValueRows(const TensorDesc& value, const MsdaShape& s, char* workspace, int64_t copy_offset) {
  if (copy_offset < 0) return InPlaceRows<const float>(value);
  const RowTable<float> copy = WorkspaceRows<float>(workspace, copy_offset, s);
  ParallelFor(s.batch * s.keys, 256, [&](int64_t begin, int64_t end) {
    for (int64_t bk = begin; bk < end; ++bk) {
      const int64_t b = bk / s.keys;
      const int64_t key = bk % s.keys;
      for (int64_t h = 0; h < s.heads; ++h) ConvertValueRow(value, s, copy, b, key, h);
    }
  });
  return copy.AsConst();
}

// value as the corner walks read it, an (image, head) plane at a time: fp32 rows (a FLOAT value in place, or the
// workspace copy), or FLOAT16/BFLOAT16 rows in place, which the walks widen in registers.
struct WalkRows {
  int kind = kFloatRow;  // RowKind
  RowTable<const float> floats;
  RowTable<const uint16_t> bits;
  const void* Plane(int64_t b, int64_t h) const {
    return kind == kFloatRow ? static_cast<const void*>(floats.Row(b, 0, h))
                             : static_cast<const void*>(bits.Row(b, 0, h));
  }
  int64_t KeyStride() const { return kind == kFloatRow ? floats.key_stride : bits.key_stride; }
};

// The walks' rows of value: in place where the plan took no copy (copy_offset < 0), else ValueRows' copy.
WalkRows ValueWalkRows(const TensorDesc& value, const MsdaShape& s, char* workspace, int64_t copy_offset) {
  WalkRows rows;
  if (copy_offset < 0 && (value.dtype == ACL_FLOAT16 || value.dtype == ACL_BF16)) {
    rows.kind = HalfWidthRowKind(value.dtype);
    rows.bits = InPlaceRows<const uint16_t>(value);
  } else {
    rows.floats = ValueRows(value, s, workspace, copy_offset);
  }
  return rows;
}

// Address of row (b, q, h) of output / gradOutput.
char* HeadRowAddress(const HeadRows& rows, int64_t b, int64_t q, int64_t h) {
  return rows.desc.ElementAt(HeadRowElement(rows, b, q, h, 0));
}

Sampler MakeSampler(const MsdaShape& shape, const MsdaInputs& in) {
  std::vector<Level> levels = ReadLevels(in.spatial_shape, in.level_start_index, shape.levels, shape.keys);
  const bool fast = FastPathApplies(levels, shape.keys);
  const LevelLanes lanes = MakeLevelLanes(levels, shape.points);
  return Sampler{shape, in.location, in.attn_weight, std::move(levels), fast, lanes};
}

}  // namespace

aclnnStatus RunForwardCpu(const ForwardParams& params, void* workspace) {
  const MsdaShape& s = params.shape;
  if (s.batch == 0 || s.queries == 0) return ACLNN_SUCCESS;
  char* aligned = AlignedWorkspace(workspace);
  const Sampler sampler = MakeSampler(s, params.in);
  // With rows_on_first_touch the value rows are converted as corners reach them (TouchedKeys), so a task is a
  // whole (image, head) plane: no two tasks fill the same rows.
  const bool on_first_touch = params.workspace.rows_on_first_touch;
  // Tasks are whole (image, head) planes where there are enough of them to keep every thread busy (kPlanesPerThread
  // each, so that uneven progress evens out) and the value copy may be made per task: each task then copies the
  // plane it walks (CopyValuePlane). The split never changes a row's order of additions, so any split gives the
  // same bits.
  const bool plane_tasks = on_first_touch || (params.workspace.value_copy_per_task &&
                                              s.batch * s.heads >= kPlanesPerThread * NumThreads());
  const bool copy_per_task = plane_tasks && !on_first_touch;
  const RowTable<float> value_plane =
      plane_tasks ? WorkspaceRows<float>(aligned, params.workspace.value_copy, s) : RowTable<float>{};
  // Without a copy (few corner reads, unit channel stride: see PlanForwardWorkspace) the walk reads value in place,
  // FLOAT16/BFLOAT16 rows widened in registers (exact, so the same sums as from a copy).
  const WalkRows value = plane_tasks ? WalkRows{kFloatRow, value_plane.AsConst(), {}}
                                     : ValueWalkRows(params.in.value, s, aligned, params.workspace.value_copy);
  const HeadRows& out = params.output;
  // An output with unit channel stride too large to stay in cache is summed on the stack and written with
  // non-temporal stores (its lines are then not read first): FLOAT16/BFLOAT16 always, FLOAT with plane tasks, where
  // the threads' rows (different heads) share each query's block of the output (summed in place there, FLOAT
  // encoder_pixels took 30-34 ms instead of 28-29). A FLOAT output of runs of queries is summed in place: streaming
  // it was no faster there (Deformable-DETR encoder).
  const bool stream_large_out = out.channel_stride == 1 && WorthStreaming(out.desc);
  const bool out_in_place =
      out.desc.dtype == ACL_FLOAT && out.channel_stride == 1 && !(plane_tasks && stream_large_out);
  const bool stream_out = !out_in_place && stream_large_out;

  // Otherwise tasks are runs of kQueriesPerTask queries of one (image, head): neighbouring queries sample
  // neighbouring rows of that head's plane, which stay in cache.
  const int64_t runs_per_head = plane_tasks ? 1 : (s.queries + kQueriesPerTask - 1) / kQueriesPerTask;
  const int64_t queries_per_task = plane_tasks ? s.queries : kQueriesPerTask;
  ParallelFor(s.batch * s.heads * runs_per_head, 1, [&](int64_t begin, int64_t end) {
    const auto row = std::make_unique<RowPoints>(s.levels * s.points);
    alignas(64) float out_row[kMaxChannels];
    TouchedKeys touched(on_first_touch, s.keys);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / (s.heads * runs_per_head);
      const int64_t h = task / runs_per_head % s.heads;
      const int64_t first_query = task % runs_per_head * queries_per_task;
      const int64_t last_query = std::min(first_query + queries_per_task, s.queries);
      auto fill = [&](int64_t key) { ConvertValueRow(params.in.value, s, value_plane, b, key, h); };
      touched.Clear();
      if (copy_per_task) CopyValuePlane(params.in.value, s, value_plane, b, h);
      for (int64_t q = first_query; q < last_query; ++q) {
        if (q + kPrefetchQueries < last_query) {
          PrefetchRowPoints(params.in.location, s, b, q + kPrefetchQueries, h);
          PrefetchRowPoints(params.in.attn_weight, s, b, q + kPrefetchQueries, h);
        }
        SampleRow(sampler, b, q, h, row.get(), false);
        if (touched.enabled()) touched.Touch(*row, sampler.fast, fill);
        char* dst = HeadRowAddress(out, b, q, h);
        float* sums = out_in_place ? reinterpret_cast<float*>(dst) : out_row;
        if (sampler.fast) {
          simd::WeightedRowSum32(value.kind, value.Plane(b, h), value.KeyStride(), row->keys32, row->weights, row->attn, row->count,
           row->stride, s.channels, sums);
        } else {
          simd::WeightedRowSum64(value.kind, value.Plane(b, h), value.KeyStride(), row->keys, row->weights, row->attn, row->count,
           row->stride, s.channels, sums);
        }
        if (!out_in_place) {
          StoreOrStreamFromFloat(out_row, out.desc.dtype, dst, out.channel_stride, s.channels, stream_out);
        }
      }
    }
    if (stream_out) FinishStreamedStores();
  });
  return ACLNN_SUCCESS;
}

// Whether the backward writes gradLocation / gradAttnWeight with non-temporal stores: a block per (image, query,
// head) that is contiguous, in a tensor too large to stay in cache (so its lines need not be read first).
bool StreamsPoints(const TensorDesc& t, const MsdaShape& s) {
  return PointsContiguous(t, s) && WorthStreaming(t);
}

aclnnStatus RunBackwardCpu(const BackwardParams& params, void* workspace) {
  const MsdaShape& s = params.shape;
  if (s.batch == 0) return ACLNN_SUCCESS;
  char* aligned = AlignedWorkspace(workspace);
  const Sampler sampler = MakeSampler(s, params.in);
  // value and the gradValue sums: compact fp32 planes (bs, nh, nk, c) in the workspace, or (few corner reads, FLOAT
  // with unit channel stride: see PlanBackwardWorkspace) the caller's tensors in place; absent when empty.
  const TensorDesc& grad_value = params.grad_value;
  // Without a copy (see PlanBackwardWorkspace) value is read in place, FLOAT16/BFLOAT16 rows widened in registers.
  const WalkRows value = ValueWalkRows(params.in.value, s, aligned, params.workspace.value_copy);
  const bool sums_in_workspace = params.workspace.grad_value_sums >= 0;
  const bool sums_in_place = params.workspace.grad_value_in_place;
  const RowTable<float> sums = sums_in_workspace ? WorkspaceRows<float>(aligned, params.workspace.grad_value_sums, s)
                               : sums_in_place   ? InPlaceRows<float>(grad_value)
                                                 : RowTable<float>{};
  // A contiguous gradValue accumulated in place is zeroed up front in large blocks (a streamed pass); otherwise
  // each task zeroes its own rows.
  const bool zero_whole_grad_value = sums_in_place && grad_value.IsContiguous();
  if (zero_whole_grad_value) {
    constexpr int64_t kZeroBlock = int64_t{1} << 18;  // floats
    float* first = static_cast<float*>(grad_value.data) + grad_value.offset;
    const int64_t count = grad_value.NumElements();
    ParallelFor((count + kZeroBlock - 1) / kZeroBlock, 1, [&](int64_t begin, int64_t end) {
      const int64_t from = begin * kZeroBlock;
      const int64_t to = std::min(end * kZeroBlock, count);
      std::memset(first + from, 0, static_cast<size_t>(to - from) * sizeof(float));
    });
  }
  const HeadRows& dy = params.grad_output;
  const bool dy_in_place = dy.desc.dtype == ACL_FLOAT && dy.channel_stride == 1;
  const size_t row_bytes = static_cast<size_t>(s.channels) * sizeof(float);
  // Outputs too large to stay in cache are written with non-temporal stores (their lines are then not read first):
  // gradValue from the sums, and gradLocation / gradAttnWeight (StreamsPoints).
  const bool stream_grad_value = sums_in_workspace && grad_value.strides[3] == 1 && WorthStreaming(grad_value);
  const bool stream_location = StreamsPoints(params.grad_location, s);
  const bool stream_attn = StreamsPoints(params.grad_attn_weight, s);

  ParallelFor(s.batch * s.heads, 1, [&](int64_t begin, int64_t end) {
    const auto row = std::make_unique<RowPoints>(s.levels * s.points);
    alignas(64) float grad_row[kMaxChannels];
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / s.heads;
      const int64_t h = task % s.heads;
      if (sums_in_workspace) std::memset(sums.Row(b, 0, h), 0, static_cast<size_t>(s.keys) * row_bytes);
      if (sums_in_place && !zero_whole_grad_value) {
        for (int64_t key = 0; key < s.keys; ++key) std::memset(sums.Row(b, key, h), 0, row_bytes);
      }
      for (int64_t q = 0; q < s.queries; ++q) {
        if (q + kPrefetchQueries < s.queries) {
          const int64_t ahead = q + kPrefetchQueries;
          PrefetchRowPoints(params.in.location, s, b, ahead, h);
          PrefetchRowPoints(params.in.attn_weight, s, b, ahead, h);
          PrefetchHeadRow(dy, s, b, ahead, h);
          if (!stream_location) PrefetchRowPoints<true>(params.grad_location, s, b, ahead, h);
          if (!stream_attn) PrefetchRowPoints<true>(params.grad_attn_weight, s, b, ahead, h);
        }
        const char* dy_row = HeadRowAddress(dy, b, q, h);
        const float* g = reinterpret_cast<const float*>(dy_row);
        if (!dy_in_place) {
          LoadAsFloat(dy.desc.dtype, dy_row, dy.channel_stride, grad_row, s.channels);
          g = grad_row;
        }
        SampleRow(sampler, b, q, h, row.get(), true);
        if (sampler.fast) {
          simd::CornerBackward32(value.kind, value.Plane(b, h), value.KeyStride(), sums.Row(b, 0, h), sums.key_stride, row->keys32,
           row->weights, row->attn, row->count, row->stride, s.channels, g, row->dots);
        } else {
          simd::CornerBackward64(value.kind, value.Plane(b, h), value.KeyStride(), sums.Row(b, 0, h), sums.key_stride, row->keys,
           row->weights, row->attn, row->count, row->stride, s.channels, g, row->dots);
        }
        simd::PointGradients(row->weights, row->d_dx, row->d_dy, row->dots, row->attn, sampler.lanes, row->stride, row->attn_grad,
         row->loc_grad);
        WriteRowElements(params.grad_attn_weight, s, b, q, h, row->attn_grad, stream_attn);
        WriteRowElements(params.grad_location, s, b, q, h, row->loc_grad, stream_location);
      }
      if (sums_in_workspace) {
        for (int64_t key = 0; key < s.keys; ++key) {
          StoreOrStreamFromFloat(sums.Row(b, key, h), grad_value.dtype,
                                 grad_value.ElementAt(ElementOf(grad_value, b, key, h)), grad_value.strides[3],
                                 s.channels, stream_grad_value);
        }
      }
    }
    if (stream_grad_value || stream_location || stream_attn) FinishStreamedStores();
  });
  return ACLNN_SUCCESS;
}


}  // namespace pacl::msda
