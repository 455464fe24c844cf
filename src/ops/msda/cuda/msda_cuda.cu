// NOTE [Multi-scale deformable attention on CUDA]
//
// Problem and per-point rules: those of the CPU kernels (see the NOTE in cpu/msda_cpu.cpp). spatialShape and
// levelStartIndex are device data, read by the kernels and never trusted; a point's corners (pixel position,
// inside test, weights, derivatives, exact key check) come from msda_corners.h, the code the CPU's generic path
// runs. A point without a valid corner is dropped (attention weight taken as 0: no output, zero gradients). fp32
// arithmetic for every dtype; outputs rounded once.
//
// Layout: a row is one (image, query, head); one warp per row, lane j owning channels j, j + 32, ... (c <= 256: at
// most 8 per lane, held in registers), so value rows (b, key, h, :) and output / gradOutput rows are read with
// adjacent lanes on adjacent channels. The row's points are taken 32 at a time: lane i loads point i's location
// and attention weight and computes its corners, all lanes at once, and the warp then walks the points in order,
// each lane receiving point i's corners by shuffle from lane i, so that the loads of a row are in flight together
// rather than one dependent chain per point.
// Forward: out = sum over levels, points (ascending), corners k = 0..3 of (attn * weight) * value. When value's rows
// can be read 8 channels at a time (c a multiple of 8, unit channel stride, rows 16-byte aligned: the usual case),
// GroupForwardKernel runs instead: one thread per (row, 8 channels), value read as 16-byte pieces (two for FLOAT),
// each thread computing its own points' corners (no shuffles; 4 points' locations loaded together, then each point's
// 4 corner pieces), the same terms in the same order: the same bits. A level whose keys all lie in value (checked
// once per block, LevelFitsKeys) takes its corners' keys without the exact 64-bit check. An output that may share
// value's memory (the forward's output; the backward's gradLocation or gradAttnWeight: gradValue is written after
// the last read) gets value copied into the workspace first (threads read value while others write outputs).
// Backward, per row: each lane sums over its channels, per point, gradOutput * (the corners' values combined with
// their weights / x derivatives / y derivatives); a warp butterfly adds the lanes' sums (the same bits in every
// lane, pacl/cuda_kernels.cuh); gradAttnWeight = the first, gradLocation = attn * W * the second, attn * H * the
// third. Deterministic: fixed orders only. With value in 8-channel groups and c / 8 dividing 32, GroupRowGradKernel
// runs instead: a thread per (row, 8 channels) as in the forward, its 8 channels' sums added across the row's
// threads by a butterfly (another fixed order: the gradients' last bits may differ between value layouts).
// Backward, gradValue: a scatter from every row into value rows shared by all queries. The deterministic
// implementation gathers instead, chunk by chunk (a chunk: `chunk_planes` (image, head) planes, and within each a
// range of at most `chunk_queries` queries, a split fixed by the shape alone): every corner of the chunk becomes an
// entry (key = plane in chunk * nk + value key, or a sentinel past them when invalid; id = its position in the
// chunk, rows (plane, query) then point then corner; weight = attn * corner weight), CUB's stable radix sort orders
// the entries by key (ids ascending within a key), a binary search finds each key's segment, and one thread per
// (key, 8 channels) adds its segment's weight * gradOutput in that order to the fp32 gradValue sums (an entry's id,
// weight and gradOutput row found once for the 8 channels, not once per channel). Chunks run one after the other
// on the stream, so each sum's order is fixed by the shape: bit-identical on every run. At the end
// the sums are rounded into gradValue through its strides. The atomic implementation (only with
// ACL_OPT_DETERMINISTIC off) adds attn * weight * gradOutput into the same sums with atomicAdd in the row kernel.
// Workspace: the sums (bs * nh * nk * c fp32) and, deterministic, a chunk's entries (two 8-byte keys, two 4-byte
// ids and a weight each, chunk_entries <= 2^22 + one row) and segment starts, then CUB's scratch for the
// largest chunk's sort, whose size phase 1 asks CUB for (it depends on the GPU): nothing is allocated in phase 2.
#include <cstdint>
#include <initializer_list>

#include "msda/cuda/msda_cuda.h"
#include "msda/msda_corners.h"
#include "msda/msda_params.h"
#include "pacl/cuda_kernels.cuh"
#include "pacl/cuda_sort.cuh"

namespace pacl::msda {
namespace {

constexpr int kThreads = 128;
constexpr int kRowsPerBlock = kThreads / 32;
constexpr int kMaxChannelsPerLane = static_cast<int>(kMaxChannels / 32);
// A chunk's entries: at most this many, plus one row's.
constexpr int64_t kChunkEntryTarget = int64_t{1} << 22;
constexpr int64_t kMaxSegmentStarts = int64_t{1} << 26;

struct LevelMap {
  int64_t height, width, start;
  bool fits;  // LevelFitsKeys: its corners take their keys without the exact check
};

__device__ __forceinline__ int64_t LoadIndex(const TensorDesc& t, int64_t element) {
  if (t.dtype == ACL_INT32) return static_cast<const int32_t*>(t.data)[element];
  return static_cast<const int64_t*>(t.data)[element];
}

// The levels, read once per block into shared memory (threads 0..levels-1).
__device__ __forceinline__ void LoadLevels(const MsdaInputs& in, int64_t levels, int64_t keys, LevelMap* maps) {
  for (int64_t l = threadIdx.x; l < levels; l += blockDim.x) {
    const int64_t row = in.spatial_shape.offset + l * in.spatial_shape.strides[0];
    maps[l].height = LoadIndex(in.spatial_shape, row);
    maps[l].width = LoadIndex(in.spatial_shape, row + in.spatial_shape.strides[1]);
    maps[l].start = LoadIndex(in.level_start_index, in.level_start_index.offset + l * in.level_start_index.strides[0]);
    maps[l].fits = LevelFitsKeys(maps[l].height, maps[l].width, maps[l].start, keys);
  }
  __syncthreads();
}

__device__ __forceinline__ int64_t PointElement(const TensorDesc& t, int64_t b, int64_t q, int64_t h, int64_t l,
                                                int64_t p) {
  return t.offset + b * t.strides[0] + q * t.strides[1] + h * t.strides[2] + l * t.strides[3] + p * t.strides[4];
}

__device__ __forceinline__ int64_t HeadRowElement(const HeadRows& rows, int64_t b, int64_t q, int64_t h, int64_t c) {
  return rows.desc.offset + b * rows.batch_stride + q * rows.query_stride + h * rows.head_stride +
         c * rows.channel_stride;
}

__device__ __forceinline__ int64_t ValueElement(const TensorDesc& v, int64_t b, int64_t key, int64_t h, int64_t c) {
  return v.offset + b * v.strides[0] + key * v.strides[1] + h * v.strides[2] + c * v.strides[3];
}

// A sample point of a row: its corners and attention weight, with its level's size. A dropped point (no valid
// corner) has attn 0 and every key -1.
struct Point {
  PointCorners corners;
  bool kept;
  float attn;
  float width, height;
};

// kUseFits: take the LevelFitsKeys shortcut on levels that allow it (the same corners).
template <class Storage, bool kUseFits = true>
__device__ __forceinline__ Point LoadPoint(const MsdaShape& s, const MsdaInputs& in, const LevelMap& map, int64_t b,
                                           int64_t q, int64_t h, int64_t l, int64_t p) {
  Point point;
  const int64_t at = PointElement(in.location, b, q, h, l, p);
  const float loc_x = cuda::Load<Storage>(in.location, at);
  const float loc_y = cuda::Load<Storage>(in.location, at + in.location.strides[5]);
  point.kept =
      ComputeCorners(map.height, map.width, map.start, s.keys, loc_x, loc_y, &point.corners, kUseFits && map.fits);
  point.attn = point.kept ? cuda::Load<Storage>(in.attn_weight, PointElement(in.attn_weight, b, q, h, l, p)) : 0.0f;
  point.width = static_cast<float>(map.width);
  point.height = static_cast<float>(map.height);
  return point;
}

struct Row {
  int64_t b, q, h;
};
__device__ __forceinline__ Row RowOf(const MsdaShape& s, int64_t row) {
  Row r;
  r.h = row % s.heads;
  const int64_t bq = row / s.heads;
  r.q = bq % s.queries;
  r.b = bq / s.queries;
  return r;
}

// Point `index` (level-major: index = level * points + point) of a row, loaded by the lane that owns it; a lane
// past the row's points holds a dropped point.
template <class Storage, bool kUseFits = true>
__device__ __forceinline__ Point LoadLanePoint(const MsdaShape& s, const MsdaInputs& in, const LevelMap* maps,
                                               const Row& r, int64_t index) {
  Point point{};
  if (index < s.levels * s.points) {
    const int64_t l = index / s.points;
    point = LoadPoint<Storage, kUseFits>(s, in, maps[l], r.b, r.q, r.h, l, index % s.points);
  }
  if (!point.kept) {
    for (int k = 0; k < 4; ++k) point.corners.key[k] = -1;
    point.attn = 0.0f;
  }
  return point;
}

// Element index of value(b, 0, h, 0): a corner's element is this + key * strides[1] + c * strides[3].
__device__ __forceinline__ int64_t ValuePlane(const TensorDesc& v, const Row& r) {
  return v.offset + r.b * v.strides[0] + r.h * v.strides[2];
}

template <class Storage>
__global__ void __launch_bounds__(kThreads) ForwardKernel(const ForwardParams p, int64_t rows) {
  __shared__ LevelMap maps[kMaxLevels];
  const MsdaShape& s = p.shape;
  LoadLevels(p.in, s.levels, s.keys, maps);
  const int lane = threadIdx.x % 32;
  const int64_t row_points = s.levels * s.points;
  const TensorDesc& value = p.in.value;
  for (int64_t row = int64_t{blockIdx.x} * kRowsPerBlock + threadIdx.x / 32; row < rows;
       row += int64_t{gridDim.x} * kRowsPerBlock) {
    const Row r = RowOf(s, row);
    const int64_t plane = ValuePlane(value, r);
    float sum[kMaxChannelsPerLane] = {};
    for (int64_t first = 0; first < row_points; first += 32) {
      const Point mine = LoadLanePoint<Storage>(s, p.in, maps, r, first + lane);
      float mine_w[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) mine_w[k] = mine.attn * mine.corners.weight[k];
      const int count = row_points - first < 32 ? static_cast<int>(row_points - first) : 32;
      for (int i = 0; i < count; ++i) {
        int64_t key[4];
        float w[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          key[k] = __shfl_sync(0xffffffffu, mine.corners.key[k], i);
          w[k] = __shfl_sync(0xffffffffu, mine_w[k], i);
        }
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          if (key[k] < 0) continue;
          const int64_t at = plane + key[k] * value.strides[1];
#pragma unroll
          for (int j = 0; j < kMaxChannelsPerLane; ++j) {
            const int64_t c = lane + 32 * j;
            if (c >= s.channels) continue;
            sum[j] += w[k] * cuda::Load<Storage>(value, at + c * value.strides[3]);
          }
        }
      }
    }
#pragma unroll
    for (int j = 0; j < kMaxChannelsPerLane; ++j) {
      const int64_t c = lane + 32 * j;
      if (c < s.channels) cuda::Store<Storage>(p.output.desc, HeadRowElement(p.output, r.b, r.q, r.h, c), sum[j]);
    }
  }
}

// ---- Forward over channel groups (value rows read 8 channels at a time) ----

constexpr int kGroupChannels = 8;
// Points whose locations and attention weights a thread loads together before it reads their corners (the
// gradient kernel holds more per point: 2 keeps it at 150-170 registers).
constexpr int kPointBatch = 4;
constexpr int kGradPointBatch = 2;

// The 8 channels at `at` (16-byte aligned) in float: two 16-byte loads for FLOAT, one for FLOAT16 and BFLOAT16.
__device__ __forceinline__ void LoadGroup(const float* at, float v[kGroupChannels]) {
  const float4 low = *reinterpret_cast<const float4*>(at);
  const float4 high = *reinterpret_cast<const float4*>(at + 4);
  v[0] = low.x, v[1] = low.y, v[2] = low.z, v[3] = low.w;
  v[4] = high.x, v[5] = high.y, v[6] = high.z, v[7] = high.w;
}
// FLOAT16 and BFLOAT16: one 16-byte load.
template <class Half>
__device__ __forceinline__ void LoadGroup(const Half* at, float v[kGroupChannels]) {
  const uint4 raw = *reinterpret_cast<const uint4*>(at);
  const Half* halves = reinterpret_cast<const Half*>(&raw);
#pragma unroll
  for (int i = 0; i < kGroupChannels; ++i) v[i] = cuda::ToCompute(halves[i]);
}

// Points first, first + 1, ... (level-major) of row r, their loads in flight together; those past the row's points
// are dropped (kept false, attn 0).
template <class Storage, int kBatch>
__device__ __forceinline__ void LoadPointBatch(const MsdaShape& s, const MsdaInputs& in, const LevelMap* maps,
                                               const Row& r, int64_t first, Point (&batch)[kBatch]) {
#pragma unroll
  for (int i = 0; i < kBatch; ++i) {
    const int64_t index = first + i;
    batch[i].kept = false;
    batch[i].attn = 0.0f;
    if (index < s.levels * s.points) {
      const int64_t l = index / s.points;
      batch[i] = LoadPoint<Storage>(s, in, maps[l], r.b, r.q, r.h, l, index % s.points);
    }
  }
}

// One thread per (row, group of 8 channels), group fastest: the `groups` threads of a row read each corner's value
// row as adjacent 16-byte pieces. Each thread computes its points' corners itself (no shuffles) and walks levels,
// points and corners in the order of ForwardKernel, with the same operations: the same bits.
template <class Storage>
__global__ void __launch_bounds__(kThreads) GroupForwardKernel(const ForwardParams p, int64_t items) {
  __shared__ LevelMap maps[kMaxLevels];
  const MsdaShape& s = p.shape;
  LoadLevels(p.in, s.levels, s.keys, maps);
  const int64_t groups = s.channels / kGroupChannels;
  const int64_t row_points = s.levels * s.points;
  const TensorDesc& value = p.in.value;
  const int64_t key_stride = value.strides[1];
  for (int64_t item = cuda::GridStart(); item < items; item += cuda::GridStride()) {
    const int64_t group = item % groups;
    const Row r = RowOf(s, item / groups);
    const Storage* plane = static_cast<const Storage*>(value.data) + ValuePlane(value, r) + group * kGroupChannels;
    float sum[kGroupChannels] = {};
    for (int64_t first = 0; first < row_points; first += kPointBatch) {
      // The batch's locations and weights in flight together, then their corners' value rows, point by point.
      Point batch[kPointBatch];
      LoadPointBatch<Storage>(s, p.in, maps, r, first, batch);
#pragma unroll
      for (int i = 0; i < kPointBatch; ++i) {
        if (!batch[i].kept) continue;
        float corner_values[4][kGroupChannels];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          if (batch[i].corners.key[k] >= 0) LoadGroup(plane + batch[i].corners.key[k] * key_stride, corner_values[k]);
        }
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          if (batch[i].corners.key[k] < 0) continue;
          const float w = batch[i].attn * batch[i].corners.weight[k];
#pragma unroll
          for (int j = 0; j < kGroupChannels; ++j) sum[j] += w * corner_values[k][j];
        }
      }
    }
#pragma unroll
    for (int j = 0; j < kGroupChannels; ++j) {
      const int64_t c = group * kGroupChannels + j;
      cuda::Store<Storage>(p.output.desc, HeadRowElement(p.output, r.b, r.q, r.h, c), sum[j]);
    }
  }
}

// Whether rows of `channels` elements (channel stride channel_stride) come in aligned 8-channel pieces: channels a
// multiple of 8, unit channel stride, and every row start (the view's offset, and strides[d] wherever dims[d] > 1) a
// multiple of 8 elements from a 16-byte aligned pointer, so that each group is one aligned 16- or 32-byte piece.
bool RowsInGroups(const TensorDesc& desc, int64_t channels, int64_t channel_stride, const int64_t (&dims)[3],
                  const int64_t (&strides)[3]) {
  if (channels % kGroupChannels != 0 || channel_stride != 1) return false;
  if (reinterpret_cast<uintptr_t>(desc.data) % 16 != 0 || desc.offset % kGroupChannels != 0) return false;
  for (int d = 0; d < 3; ++d) {
    if (dims[d] > 1 && strides[d] % kGroupChannels != 0) return false;
  }
  return true;
}

// Whether the channel-group kernels may read value (batch, key, head, channel): its rows in groups.
bool ValueInGroups(const TensorDesc& value, int64_t channels) {
  const int64_t dims[3] = {value.shape[0], value.shape[1], value.shape[2]};
  const int64_t strides[3] = {value.strides[0], value.strides[1], value.strides[2]};
  return RowsInGroups(value, channels, value.strides[3], dims, strides);
}

// gradAttnWeight and gradLocation of point `index` (level-major) of row r from its sums over the channels of
// gradOutput * the corners' values combined with their weights, x and y derivatives. A dropped point has no valid
// corner: its sums and attn are 0, and so are its gradients.
template <class Storage>
__device__ __forceinline__ void StorePointGradients(const BackwardParams& p, const Row& r, int64_t index,
                                                    const Point& point, float by_weight, float by_dx, float by_dy) {
  const int64_t l = index / p.shape.points;
  const int64_t pt = index % p.shape.points;
  const TensorDesc& attn_grad = p.grad_attn_weight;
  cuda::Store<Storage>(attn_grad, PointElement(attn_grad, r.b, r.q, r.h, l, pt), by_weight);
  const TensorDesc& loc_grad = p.grad_location;
  const int64_t at = PointElement(loc_grad, r.b, r.q, r.h, l, pt);
  cuda::Store<Storage>(loc_grad, at, by_dx * (point.attn * point.width));
  cuda::Store<Storage>(loc_grad, at + loc_grad.strides[5], by_dy * (point.attn * point.height));
}

// gradAttnWeight and gradLocation of every point of every row; with kAtomic, also the gradValue scatter into sums.
template <class Storage, bool kAtomic>
__global__ void __launch_bounds__(kThreads) RowGradKernel(const BackwardParams p, int64_t rows, float* sums) {
  __shared__ LevelMap maps[kMaxLevels];
  const MsdaShape& s = p.shape;
  LoadLevels(p.in, s.levels, s.keys, maps);
  const int lane = threadIdx.x % 32;
  const int64_t row_points = s.levels * s.points;
  const TensorDesc& value = p.in.value;
  for (int64_t row = int64_t{blockIdx.x} * kRowsPerBlock + threadIdx.x / 32; row < rows;
       row += int64_t{gridDim.x} * kRowsPerBlock) {
    const Row r = RowOf(s, row);
    const int64_t plane = ValuePlane(value, r);
    float g[kMaxChannelsPerLane];
#pragma unroll
    for (int j = 0; j < kMaxChannelsPerLane; ++j) {
      const int64_t c = lane + 32 * j;
      g[j] = c < s.channels
                 ? cuda::Load<Storage>(p.grad_output.desc, HeadRowElement(p.grad_output, r.b, r.q, r.h, c))
                 : 0.0f;
    }
    for (int64_t first = 0; first < row_points; first += 32) {
      // The exact key check on every level: with the LevelFitsKeys shortcut too, ptxas (nvcc 13, sm_90) spilled
      // the deterministic instance's registers.
      const Point mine = LoadLanePoint<Storage, /*kUseFits=*/false>(s, p.in, maps, r, first + lane);
      // The warp's sums for this lane's point, kept by the lane when the warp reaches it.
      float mine_by_weight = 0.0f;
      float mine_by_dx = 0.0f;
      float mine_by_dy = 0.0f;
      const int count = row_points - first < 32 ? static_cast<int>(row_points - first) : 32;
      for (int i = 0; i < count; ++i) {
        PointCorners corners;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          corners.key[k] = __shfl_sync(0xffffffffu, mine.corners.key[k], i);
          corners.weight[k] = __shfl_sync(0xffffffffu, mine.corners.weight[k], i);
          corners.d_dx[k] = __shfl_sync(0xffffffffu, mine.corners.d_dx[k], i);
          corners.d_dy[k] = __shfl_sync(0xffffffffu, mine.corners.d_dy[k], i);
        }
        const float attn = kAtomic ? __shfl_sync(0xffffffffu, mine.attn, i) : 0.0f;
        float dot[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          dot[k] = 0.0f;
          if (corners.key[k] < 0) continue;
          const int64_t at = plane + corners.key[k] * value.strides[1];
#pragma unroll
          for (int j = 0; j < kMaxChannelsPerLane; ++j) {
            const int64_t c = lane + 32 * j;
            if (c >= s.channels) continue;
            dot[k] = fmaf(g[j], cuda::Load<Storage>(value, at + c * value.strides[3]), dot[k]);
            if (kAtomic) {
              atomicAdd(sums + ((r.b * s.heads + r.h) * s.keys + corners.key[k]) * s.channels + c,
                        (attn * corners.weight[k]) * g[j]);
            }
          }
        }
        float by_weight = 0.0f;
        float by_dx = 0.0f;
        float by_dy = 0.0f;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          if (corners.key[k] < 0) continue;
          by_weight = fmaf(corners.weight[k], dot[k], by_weight);
          by_dx = fmaf(corners.d_dx[k], dot[k], by_dx);
          by_dy = fmaf(corners.d_dy[k], dot[k], by_dy);
        }
        by_weight = cuda::WarpSum(by_weight);
        by_dx = cuda::WarpSum(by_dx);
        by_dy = cuda::WarpSum(by_dy);
        if (lane == i) {
          mine_by_weight = by_weight;
          mine_by_dx = by_dx;
          mine_by_dy = by_dy;
        }
      }
      const int64_t index = first + lane;
      if (index < row_points) StorePointGradients<Storage>(p, r, index, mine, mine_by_weight, mine_by_dx, mine_by_dy);
    }
  }
}

// RowGradKernel over channel groups, for value in groups (ValueInGroups) whose row's groups share a warp (c / 8
// divides 32): one thread per (row, 8 channels) as in GroupForwardKernel. Per point, each thread's sums over its 8
// channels are added across the row's threads by a butterfly (the same bits in each of them), and the row's first
// thread stores the point's gradients. The sums' order differs from RowGradKernel's (channels in groups of 8, then
// groups): FLOAT-rounding-level differences between value layouts, none between runs.
template <class Storage, bool kAtomic>
__global__ void __launch_bounds__(kThreads) GroupRowGradKernel(const BackwardParams p, int64_t items, float* sums) {
  __shared__ LevelMap maps[kMaxLevels];
  const MsdaShape& s = p.shape;
  LoadLevels(p.in, s.levels, s.keys, maps);
  const int groups = static_cast<int>(s.channels / kGroupChannels);
  const int64_t row_points = s.levels * s.points;
  const TensorDesc& value = p.in.value;
  const int64_t key_stride = value.strides[1];
  // The lanes of this thread's row: `groups` adjacent lanes, aligned (items is rows * groups and 32 % groups == 0,
  // so a row's threads run the loop together and take the same branches).
  const int lane = static_cast<int>(threadIdx.x % 32);
  const unsigned row_lanes =
      groups == 32 ? 0xffffffffu : ((1u << groups) - 1) << (static_cast<unsigned>(lane) & ~(groups - 1u));
  for (int64_t item = cuda::GridStart(); item < items; item += cuda::GridStride()) {
    const int64_t group = item % groups;
    const Row r = RowOf(s, item / groups);
    const Storage* plane = static_cast<const Storage*>(value.data) + ValuePlane(value, r) + group * kGroupChannels;
    float g[kGroupChannels];
#pragma unroll
    for (int j = 0; j < kGroupChannels; ++j) {
      const int64_t c = group * kGroupChannels + j;
      g[j] = cuda::Load<Storage>(p.grad_output.desc, HeadRowElement(p.grad_output, r.b, r.q, r.h, c));
    }
    float* plane_sums = sums + (r.b * s.heads + r.h) * s.keys * s.channels + group * kGroupChannels;
    for (int64_t first = 0; first < row_points; first += kGradPointBatch) {
      Point batch[kGradPointBatch];
      LoadPointBatch<Storage>(s, p.in, maps, r, first, batch);
#pragma unroll
      for (int i = 0; i < kGradPointBatch; ++i) {
        const int64_t index = first + i;
        if (index >= row_points) break;
        const Point& point = batch[i];
        // A dropped point has no valid corner: its three sums, and so its gradients, are 0.
        float by_weight = 0.0f;
        float by_dx = 0.0f;
        float by_dy = 0.0f;
        if (point.kept) {
          float corner_values[4][kGroupChannels];
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            if (point.corners.key[k] >= 0) LoadGroup(plane + point.corners.key[k] * key_stride, corner_values[k]);
          }
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            if (point.corners.key[k] < 0) continue;
            float dot = 0.0f;
#pragma unroll
            for (int j = 0; j < kGroupChannels; ++j) {
              dot = fmaf(g[j], corner_values[k][j], dot);
              if (kAtomic) {
                atomicAdd(plane_sums + point.corners.key[k] * s.channels + j,
                          (point.attn * point.corners.weight[k]) * g[j]);
              }
            }
            by_weight = fmaf(point.corners.weight[k], dot, by_weight);
            by_dx = fmaf(point.corners.d_dx[k], dot, by_dx);
            by_dy = fmaf(point.corners.d_dy[k], dot, by_dy);
          }
        }
        // Outside the branch: every lane of the row shuffles even if their loads of the point disagreed (an output
        // written over location by another row while this one loads it), so the shuffle never waits on a lane.
        for (int offset = groups / 2; offset > 0; offset /= 2) {
          by_weight += __shfl_xor_sync(row_lanes, by_weight, offset);
          by_dx += __shfl_xor_sync(row_lanes, by_dx, offset);
          by_dy += __shfl_xor_sync(row_lanes, by_dy, offset);
        }
        if (group == 0) StorePointGradients<Storage>(p, r, index, point, by_weight, by_dx, by_dy);
      }
    }
  }
}

// Whether GroupRowGradKernel takes the backward: value in groups, and a row's groups within one warp.
bool GroupRowGradTakes(const BackwardParams& p) {
  return ValueInGroups(p.in.value, p.shape.channels) && p.shape.channels > 0 &&
         32 % (p.shape.channels / kGroupChannels) == 0;
}

// One chunk of the deterministic gradValue (see the NOTE): its planes [plane_begin, plane_begin + planes), queries
// [query_begin, query_begin + queries) of each.
struct Chunk {
  int64_t plane_begin, planes, query_begin, queries;
};

// Entries of a chunk: one thread per (row of the chunk, point).
template <class Storage>
__global__ void __launch_bounds__(kThreads)
    ListEntriesKernel(const BackwardParams p, Chunk chunk, uint64_t* keys, uint32_t* ids, float* weights) {
  __shared__ LevelMap maps[kMaxLevels];
  const MsdaShape& s = p.shape;
  LoadLevels(p.in, s.levels, s.keys, maps);
  const int64_t row_points = s.levels * s.points;
  const int64_t count = chunk.planes * chunk.queries * row_points;
  const uint64_t sentinel = static_cast<uint64_t>(chunk.planes * s.keys);
  for (int64_t index = cuda::GridStart(); index < count; index += cuda::GridStride()) {
    const int64_t point_index = index % row_points;
    const int64_t chunk_row = index / row_points;
    const int64_t plane_in_chunk = chunk_row / chunk.queries;
    const int64_t plane = chunk.plane_begin + plane_in_chunk;
    const int64_t q = chunk.query_begin + chunk_row % chunk.queries;
    const int64_t b = plane / s.heads;
    const int64_t h = plane % s.heads;
    const int64_t l = point_index / s.points;
    const Point point = LoadPoint<Storage>(s, p.in, maps[l], b, q, h, l, point_index % s.points);
    for (int k = 0; k < 4; ++k) {
      const int64_t e = index * 4 + k;
      const int64_t key = point.corners.key[k];
      keys[e] = key >= 0 ? static_cast<uint64_t>(plane_in_chunk * s.keys + key) : sentinel;
      ids[e] = static_cast<uint32_t>(e);
      weights[e] = key >= 0 ? point.attn * point.corners.weight[k] : 0.0f;
    }
  }
}

// sums[b, h, key, c] += the key's segment's weight * gradOutput(b, q, h, c), in sorted order: one thread per (plane in
// chunk, key, group of 8 channels), group fastest (the last group partial when c is not a multiple of 8). An entry's
// id, weight and gradOutput row are found once for the group's channels, four entries' loads in flight together, and
// the row's 8 channels read as one 16-byte piece (two for FLOAT) when gradOutput allows (grad_in_groups).
template <class Storage>
__global__ void __launch_bounds__(kThreads)
    GatherKernel(const BackwardParams p, Chunk chunk, const uint32_t* sorted_ids, const float* weights,
                 const int32_t* starts, bool grad_in_groups, float* sums) {
  const MsdaShape& s = p.shape;
  const int64_t groups = (s.channels + kGroupChannels - 1) / kGroupChannels;
  // Entry ids are below 2^23 (a chunk's entries), so their row and query come from 32-bit divisions.
  const uint32_t row_entries = static_cast<uint32_t>(s.levels * s.points * 4);
  const uint32_t chunk_queries = static_cast<uint32_t>(chunk.queries);
  const int64_t count = chunk.planes * s.keys * groups;
  const Storage* grad_output = static_cast<const Storage*>(p.grad_output.desc.data);
  for (int64_t index = cuda::GridStart(); index < count; index += cuda::GridStride()) {
    const int64_t group = index % groups;
    const int64_t chunk_key = index / groups;  // plane in chunk * nk + key
    const int64_t begin = starts[chunk_key];
    const int64_t end = starts[chunk_key + 1];
    if (begin == end) continue;
    const int64_t plane = chunk.plane_begin + chunk_key / s.keys;
    const int64_t b = plane / s.heads;
    const int64_t h = plane % s.heads;
    const int64_t first_channel = group * kGroupChannels;
    // Term `at` of the segment: its weight and its gradOutput row's 8 channels.
    auto term = [&](int64_t at, float* weight, float grad[kGroupChannels]) {
      const uint32_t e = sorted_ids[at];
      *weight = weights[e];
      const int64_t q = chunk.query_begin + (e / row_entries) % chunk_queries;
      const int64_t row = HeadRowElement(p.grad_output, b, q, h, first_channel);
      if (grad_in_groups) {
        LoadGroup(grad_output + row, grad);
      } else {
#pragma unroll
        for (int j = 0; j < kGroupChannels; ++j) {
          grad[j] = first_channel + j < s.channels
                        ? cuda::Load<Storage>(p.grad_output.desc, row + j * p.grad_output.channel_stride)
                        : 0.0f;
        }
      }
    };
    float sum[kGroupChannels] = {};
    int64_t at = begin;
    constexpr int kTerms = 4;
    for (; at + kTerms <= end; at += kTerms) {  // four terms' loads in flight together, added in order
      float weight[kTerms];
      float grad[kTerms][kGroupChannels];
#pragma unroll
      for (int u = 0; u < kTerms; ++u) term(at + u, &weight[u], grad[u]);
#pragma unroll
      for (int u = 0; u < kTerms; ++u) {
#pragma unroll
        for (int j = 0; j < kGroupChannels; ++j) sum[j] = fmaf(weight[u], grad[u][j], sum[j]);
      }
    }
    for (; at < end; ++at) {
      float weight;
      float grad[kGroupChannels];
      term(at, &weight, grad);
#pragma unroll
      for (int j = 0; j < kGroupChannels; ++j) sum[j] = fmaf(weight, grad[j], sum[j]);
    }
    float* out = sums + (plane * s.keys + chunk_key % s.keys) * s.channels + first_channel;
#pragma unroll
    for (int j = 0; j < kGroupChannels; ++j) {
      if (first_channel + j < s.channels) out[j] += sum[j];
    }
  }
}

// Whether gradOutput's (batch, query, head) rows come in aligned 8-channel pieces.
bool GradOutputInGroups(const BackwardParams& p) {
  const HeadRows& rows = p.grad_output;
  const MsdaShape& s = p.shape;
  return RowsInGroups(rows.desc, s.channels, rows.channel_stride, {s.batch, s.queries, s.heads},
                      {rows.batch_stride, rows.query_stride, rows.head_stride});
}

// gradValue(b, key, h, c) = sums[b, h, key, c], rounded once.
template <class Storage>
__global__ void __launch_bounds__(kThreads) StoreGradValueKernel(const BackwardParams p, const float* sums) {
  const MsdaShape& s = p.shape;
  const int64_t count = s.batch * s.heads * s.keys * s.channels;
  for (int64_t index = cuda::GridStart(); index < count; index += cuda::GridStride()) {
    const int64_t c = index % s.channels;
    int64_t rest = index / s.channels;
    const int64_t key = rest % s.keys;
    rest /= s.keys;
    const int64_t h = rest % s.heads;
    const int64_t b = rest / s.heads;
    cuda::Store<Storage>(p.grad_value, ValueElement(p.grad_value, b, key, h, c), sums[index]);
  }
}

int64_t SumsCount(const MsdaShape& s) { return s.batch * s.heads * s.keys * s.channels; }

// A copy of value's elements (lowest to highest) in the workspace, for when an output may share value's memory: the
// kernels read value while other threads already write outputs. bytes 0: no copy.
struct ValueCopy {
  int64_t lowest = 0;  // value's lowest element, the copy's first
  uint64_t bytes = 0;
};
ValueCopy ValueCopyFor(const TensorDesc& value, std::initializer_list<const TensorDesc*> outputs) {
  ValueCopy copy;
  bool shared = false;
  for (const TensorDesc* output : outputs) shared = shared || value.MayShareMemoryWith(*output);
  int64_t highest = 0;
  if (shared && value.ElementRange(&copy.lowest, &highest)) {
    copy.bytes = static_cast<uint64_t>(highest - copy.lowest + 1) * value.ElementSize();
  }
  return copy;
}
// gradValue is not among the backward's: it is written after every read of value.
ValueCopy ValueCopyFor(const ForwardParams& params) { return ValueCopyFor(params.in.value, {&params.output.desc}); }
ValueCopy ValueCopyFor(const BackwardParams& params) {
  return ValueCopyFor(params.in.value, {&params.grad_location, &params.grad_attn_weight});
}

// The copy's place in a workspace layout: the first array, so that its offset does not depend on the others; -1 when
// there is no copy.
int64_t ReserveValueCopy(const ValueCopy& copy, WorkspaceLayout* layout) {
  return copy.bytes > 0 ? layout->Reserve(copy.bytes) : -1;
}

// Phase 2: copies value to the workspace at `offset` (from ReserveValueCopy) in stream order and points *value there.
aclnnStatus CopyValueAway(const char* op_name, const ValueCopy& copy, int64_t offset, const KernelContext& context,
                          cudaStream_t stream, TensorDesc* value) {
  if (copy.bytes == 0) return ACLNN_SUCCESS;
  char* copied = cuda::WorkspaceArray<char>(context.workspace, offset);
  if (cudaMemcpyAsync(copied, value->ElementAt(copy.lowest), copy.bytes, cudaMemcpyDeviceToDevice, stream) !=
      cudaSuccess) {
    return cuda::LaunchStatus(op_name, "copying value away from an output");
  }
  value->data = copied;
  value->offset -= copy.lowest;
  return ACLNN_SUCCESS;
}

// The workspace layouts (msda_cuda.h), from the parameters (and, in phase 1, CUB's scratch size on the device):
// phase 1 sizes the workspace with them, phase 2 finds its arrays.
// The forward's: value's copy alone.
CudaWorkspacePlan ForwardPlan(const ValueCopy& copy) {
  CudaWorkspacePlan plan;
  WorkspaceLayout layout;
  plan.value_copy = ReserveValueCopy(copy, &layout);
  plan.bytes = layout.TotalBytes();
  return plan;
}

CudaWorkspacePlan AtomicPlan(const BackwardParams& params, const ValueCopy& copy) {
  CudaWorkspacePlan plan;
  WorkspaceLayout layout;
  plan.value_copy = ReserveValueCopy(copy, &layout);
  plan.grad_value_sums = layout.Reserve(SaturatingMul(static_cast<uint64_t>(SumsCount(params.shape)), sizeof(float)));
  plan.bytes = layout.TotalBytes();
  return plan;
}

CudaWorkspacePlan DeterministicPlan(const BackwardParams& params, const ValueCopy& copy, DeviceQuery query) {
  const MsdaShape& s = params.shape;
  CudaWorkspacePlan plan;
  const int64_t row_entries = s.levels * s.points * 4;
  const int64_t rows_target = row_entries > 0 ? (kChunkEntryTarget + row_entries - 1) / row_entries : 1;
  if (s.queries >= rows_target) {
    plan.chunk_planes = 1;
    plan.chunk_queries = rows_target;
  } else {
    const int64_t planes = s.batch * s.heads;
    int64_t chunk_planes = s.queries > 0 ? rows_target / s.queries : planes;
    const int64_t by_starts = kMaxSegmentStarts / (s.keys + 1);
    if (chunk_planes > by_starts) chunk_planes = by_starts;
    if (chunk_planes > planes) chunk_planes = planes;
    plan.chunk_planes = chunk_planes > 0 ? chunk_planes : 1;
    plan.chunk_queries = s.queries > 0 ? s.queries : 1;
  }
  plan.chunk_entries = plan.chunk_planes * plan.chunk_queries * row_entries;
  const uint64_t entries = static_cast<uint64_t>(plan.chunk_entries);
  WorkspaceLayout layout;
  plan.value_copy = ReserveValueCopy(copy, &layout);
  plan.grad_value_sums = layout.Reserve(SaturatingMul(static_cast<uint64_t>(SumsCount(s)), sizeof(float)));
  // No rows or no channels: the gather does not run (RunBackward), so its arrays are not needed.
  if (s.queries == 0 || s.channels == 0 || entries == 0) {
    plan.chunk_entries = 0;
    plan.bytes = layout.TotalBytes();
    return plan;
  }
  plan.keys = layout.Reserve(2 * entries * sizeof(uint64_t));
  plan.entry_ids = layout.Reserve(2 * entries * sizeof(uint32_t));
  plan.weights = layout.Reserve(entries * sizeof(float));
  const uint64_t chunk_keys = SaturatingMul(static_cast<uint64_t>(plan.chunk_planes), static_cast<uint64_t>(s.keys));
  plan.segment_starts = layout.Reserve(SaturatingMul(SaturatingAdd(chunk_keys, 1), sizeof(int32_t)));
  // Last (see DeviceQuery): for the largest chunk, whose keys are at most chunk_keys (the sentinel of invalid corners).
  plan.sort_scratch = layout.Reserve(
      query == DeviceQuery::kAsk ? cuda::SortScratchBytes<uint64_t, uint32_t>(plan.chunk_entries, chunk_keys) : 0);
  plan.bytes = layout.TotalBytes();
  return plan;
}

template <class Storage>
aclnnStatus DeterministicGradValue(const BackwardParams& p, const CudaWorkspacePlan& plan, const KernelContext& context,
                                   float* sums, cudaStream_t stream) {
  const MsdaShape& s = p.shape;
  void* workspace = context.workspace;
  const cuda::SortScratch scratch = cuda::SortScratchInWorkspace(context, plan.sort_scratch);
  const bool grad_in_groups = GradOutputInGroups(p);
  float* weights = cuda::WorkspaceArray<float>(workspace, plan.weights);
  int32_t* starts = cuda::WorkspaceArray<int32_t>(workspace, plan.segment_starts);
  const int64_t planes = s.batch * s.heads;
  const int64_t row_entries = s.levels * s.points * 4;
  for (int64_t plane = 0; plane < planes; plane += plan.chunk_planes) {
    for (int64_t q = 0; q < s.queries; q += plan.chunk_queries) {
      Chunk chunk;
      chunk.plane_begin = plane;
      chunk.planes = planes - plane < plan.chunk_planes ? planes - plane : plan.chunk_planes;
      chunk.query_begin = q;
      chunk.queries = s.queries - q < plan.chunk_queries ? s.queries - q : plan.chunk_queries;
      const int64_t entries = chunk.planes * chunk.queries * row_entries;
      const int64_t key_count = chunk.planes * s.keys;
      uint64_t* keys = cuda::WorkspaceArray<uint64_t>(workspace, plan.keys);
      uint32_t* ids = cuda::WorkspaceArray<uint32_t>(workspace, plan.entry_ids);
      ListEntriesKernel<Storage><<<cuda::GridBlocks(entries / 4, kThreads), kThreads, 0, stream>>>(p, chunk, keys,
                                                                                                  ids, weights);
      if (aclnnStatus status = cuda::LaunchStatus(kBackwardName, "listing the gradValue entries")) return status;
      cub::DoubleBuffer<uint64_t> sort_keys(keys, keys + plan.chunk_entries);
      cub::DoubleBuffer<uint32_t> sort_ids(ids, ids + plan.chunk_entries);
      // Keys are at most key_count (the sentinel of invalid corners).
      if (aclnnStatus status = cuda::StableSortPairs(kBackwardName, "the gradValue entries", &sort_keys, &sort_ids,
                                                     entries, static_cast<uint64_t>(key_count), scratch, stream)) {
        return status;
      }
      cuda::SegmentStartsKernel<<<cuda::GridBlocks(key_count + 1, kThreads), kThreads, 0, stream>>>(
          sort_keys.Current(), entries, key_count, starts);
      const int64_t items = key_count * ((s.channels + kGroupChannels - 1) / kGroupChannels);
      GatherKernel<Storage><<<cuda::GridBlocks(items, kThreads), kThreads, 0, stream>>>(
          p, chunk, sort_ids.Current(), weights, starts, grad_in_groups, sums);
      if (aclnnStatus status = cuda::LaunchStatus(kBackwardName, "gathering gradValue")) return status;
    }
  }
  return ACLNN_SUCCESS;
}

aclnnStatus RunBackward(const BackwardParams& params, const KernelContext& context, bool deterministic) {
  if (aclnnStatus status = cuda::Activate(kBackwardName, context)) return status;
  const MsdaShape& s = params.shape;
  const int64_t rows = s.batch * s.queries * s.heads;
  const cudaStream_t stream = cuda::StreamOf(context);
  const ValueCopy copy = ValueCopyFor(params);
  const CudaWorkspacePlan plan =
      deterministic ? DeterministicPlan(params, copy, DeviceQuery::kSkip) : AtomicPlan(params, copy);
  BackwardParams p = params;
  if (aclnnStatus status = CopyValueAway(kBackwardName, copy, plan.value_copy, context, stream, &p.in.value)) {
    return status;
  }
  return cuda::DispatchFloating</*kWithDouble=*/false>(kBackwardName, p.in.value.dtype, [&](auto storage) {
    using Storage = decltype(storage);
    float* sums = cuda::WorkspaceArray<float>(context.workspace, plan.grad_value_sums);
    const int64_t sums_count = SumsCount(s);
    if (sums_count > 0) {
      const cudaError_t zeroed = cudaMemsetAsync(sums, 0, static_cast<size_t>(sums_count) * sizeof(float), stream);
      if (zeroed != cudaSuccess) return cuda::LaunchStatus(kBackwardName, "zeroing the gradValue sums");
    }
    if (rows > 0) {
      if (GroupRowGradTakes(p)) {
        const int64_t items = rows * (s.channels / kGroupChannels);
        const unsigned int blocks = cuda::GridBlocks(items, kThreads);
        if (deterministic) {
          GroupRowGradKernel<Storage, false><<<blocks, kThreads, 0, stream>>>(p, items, sums);
        } else {
          GroupRowGradKernel<Storage, true><<<blocks, kThreads, 0, stream>>>(p, items, sums);
        }
      } else {
        const unsigned int blocks = cuda::GridBlocks(rows, kRowsPerBlock);
        if (deterministic) {
          RowGradKernel<Storage, false><<<blocks, kThreads, 0, stream>>>(p, rows, sums);
        } else {
          RowGradKernel<Storage, true><<<blocks, kThreads, 0, stream>>>(p, rows, sums);
        }
      }
      if (aclnnStatus status = cuda::LaunchStatus(kBackwardName, "the rows' gradients")) return status;
      if (deterministic && s.channels > 0) {
        if (aclnnStatus status = DeterministicGradValue<Storage>(p, plan, context, sums, stream)) {
          return status;
        }
      }
    }
    if (sums_count > 0) {
      StoreGradValueKernel<Storage><<<cuda::GridBlocks(sums_count, kThreads), kThreads, 0, stream>>>(p, sums);
    }
    return cuda::LaunchStatus(kBackwardName, "storing gradValue");
  });
}

}  // namespace

uint64_t PlanForwardCuda(ForwardParams* params) { return ForwardPlan(ValueCopyFor(*params)).bytes; }

aclnnStatus RunForwardCuda(const ForwardParams& params, const KernelContext& context) {
  if (aclnnStatus status = cuda::Activate(kForwardName, context)) return status;
  const int64_t rows = params.shape.batch * params.shape.queries * params.shape.heads;
  if (rows == 0 || params.shape.channels == 0) return ACLNN_SUCCESS;
  const cudaStream_t stream = cuda::StreamOf(context);
  ForwardParams p = params;
  const ValueCopy copy = ValueCopyFor(params);
  const CudaWorkspacePlan plan = ForwardPlan(copy);
  if (aclnnStatus status = CopyValueAway(kForwardName, copy, plan.value_copy, context, stream, &p.in.value)) {
    return status;
  }
  const bool by_groups = ValueInGroups(p.in.value, p.shape.channels);
  return cuda::DispatchFloating</*kWithDouble=*/false>(kForwardName, p.in.value.dtype, [&](auto storage) {
    using Storage = decltype(storage);
    if (by_groups) {
      const int64_t items = rows * (p.shape.channels / kGroupChannels);
      GroupForwardKernel<Storage><<<cuda::GridBlocks(items, kThreads), kThreads, 0, stream>>>(p, items);
    } else {
      ForwardKernel<Storage><<<cuda::GridBlocks(rows, kRowsPerBlock), kThreads, 0, stream>>>(p, rows);
    }
    return cuda::LaunchStatus(kForwardName, "kernel launch");
  });
}

uint64_t PlanBackwardCudaAtomic(BackwardParams* params) { return AtomicPlan(*params, ValueCopyFor(*params)).bytes; }

uint64_t PlanBackwardCudaDeterministic(BackwardParams* params) {
  return DeterministicPlan(*params, ValueCopyFor(*params), DeviceQuery::kAsk).bytes;
}

aclnnStatus RunBackwardCudaDeterministic(const BackwardParams& params, const KernelContext& context) {
  return RunBackward(params, context, /*deterministic=*/true);
}

aclnnStatus RunBackwardCudaAtomic(const BackwardParams& params, const KernelContext& context) {
  return RunBackward(params, context, /*deterministic=*/false);
}

}  // namespace pacl::msda
