// NOTE [NsaSelectedAttention on CUDA]
//
// Problem: that of the CPU kernels (the NOTE in cpu/nsa_selected_attention_cpu.cpp): for each query token t and KV
// head h, the key list K(t, h) is the visible keys of the blocks its topkIndices slots select, in slot order; the
// G query heads of the group attend over it. Which keys a slot selects, and which sequence holds a token or a key
// block, come from nsa_selected_slots.h, the code the CPU runs. fp32 arithmetic from inputs widened exactly, one
// rounding per output element. D_qk and D_v are template constants (phase 1 allows 128 and 192, D_v <= D_qk).
//
// Forward: one thread block (4 warps) per (t, h). The G query rows are widened into shared memory; the key list is
// walked in tiles of up to 32 keys of one slot (a tile's keys and values widened into shared memory, key rows padded
// to an odd stride so that lane k reading row k hits distinct banks). Two passes over the list: the first finds the
// row maximum m of the scores s = scale * (q . key) (warp w takes rows g = w, w + 4, ...; lane k the tile's key k;
// each lane keeps its own maximum, then a warp reduction; any NaN score makes m NaN, as on the CPU), the second
// forms e = exp(s - m), each lane adding its e to its own partial sum in list order, and accumulates e * value into
// the G x D_v sums in shared memory (each element owned by one thread, keys in list order). Then l = the warp's
// butterfly sum of the lane partials, out = sums / l, softmaxMax = m and softmaxSum = l in their 8 lanes; a row
// with no key gets out 0, max -inf, sum 0, and a NaN or +inf maximum gives NaN, as FinishRow does on the CPU.
//
// Backward, deterministic without float atomics:
// 1. Query pass, one thread block per (t, h): delta = dout . out per row (a warp's lanes over D, then a butterfly),
//    kept in the workspace; for each tile the scores and dout . value recomputed, p = exp(s - m) / l from the
//    forward's statistics, ds = p (dp - delta), and dq += ds key accumulated in shared memory (keys in list order);
//    dq = scale * sums, rounded once.
// 2. Index: every (h, t, slot) entry gets the key (h, global key block) it selects (a sentinel past the last when
//    it selects nothing); CUB's stable radix sort by key keeps each key's tokens ascending, so the segment of a key
//    block lists the tokens that selected it in token order (twice when twice), as the CPU's counting sort does.
// 3. Key pass, one thread block (8 warps) per (h, key block, tile of 32 of its keys): the tile's key and value rows
//    in shared memory; for each token of the segment in order, its G query, dout rows and statistics are loaded, the
//    warps recompute s, dp, p and ds for the tile's keys visible to the token (causal: the keys at or before its
//    position), and each thread adds ds * q and p * dout to the dk / dv elements it owns, in registers (query
//    heads ascending). dk = scale * sums and dv are rounded and written once; rows of blocks nobody selected get 0.
// Every sum runs in an order fixed by the shape and the indices alone: the same bits on every run (not the CPU's
// bits: its sums are split differently; both are checked against the float64 reference).
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>

#include "nsa_selected_attention/cuda/nsa_rows_cuda.cuh"
#include "nsa_selected_attention/cuda/nsa_selected_attention_cuda.h"
#include "nsa_selected_attention/nsa_selected_attention_params.h"
#include "nsa_selected_attention/nsa_selected_slots.h"
#include "pacl/cuda_kernels.cuh"
#include "pacl/cuda_sort.cuh"
#include "pacl/workspace_plan.h"

namespace pacl::nsa_selected_attention {
namespace {

constexpr int kTile = 32;             // keys per tile: one per lane
constexpr int kRowThreads = 128;      // forward and query pass
constexpr int kKeyPassThreads = 256;  // key pass
constexpr int kMaxGroup = 32;         // phase 1: G <= 32
constexpr int kMaxSlots = 32;         // phase 1: selectedBlockCount <= 32

using nsa_rows_cuda::ElementOf;
using nsa_rows_cuda::LoadElement;
using nsa_rows_cuda::Statistic;
using nsa_rows_cuda::StoreElement;
using nsa_rows_cuda::StoreStatistic;
using nsa_rows_cuda::View;
using nsa_rows_cuda::ViewOf;

// What the kernels need of the parameters (which hold a std::vector, so cannot be kernel arguments themselves).
struct Tensors {
  AttentionShape shape;
  View query, key, value, topk, softmax_max, softmax_sum, out, out_grad, dq, dk, dv;
};

__device__ __forceinline__ SlotKeys SlotOf(const Tensors& p, const Sequence& seq, int64_t t, int64_t h, int64_t slot) {
  const int64_t index = static_cast<const int32_t*>(p.topk.data)[ElementOf(p.topk, t, h, slot)];
  return SelectedKeys(index, seq, t - seq.q_start, p.shape.block_size, p.shape.causal);
}

// rows x kDim elements of view rows (token0 + r, h, :) widened into dst[r * kStride + d].
template <class Storage, int kDim, int kStride>
__device__ __forceinline__ void LoadRows(const View& v, int64_t token0, int64_t h, int rows, float* dst) {
  for (int i = threadIdx.x; i < rows * kDim; i += blockDim.x) {
    dst[(i / kDim) * kStride + i % kDim] = LoadElement<Storage>(v, token0 + i / kDim, h, i % kDim);
  }
}

// The G rows (t, h * G + g, :) widened into dst[g * kDim + d].
template <class Storage, int kDim>
__device__ __forceinline__ void LoadGroupRows(const View& v, int64_t t, int64_t h, int group, float* dst) {
  for (int i = threadIdx.x; i < group * kDim; i += blockDim.x) {
    dst[i] = LoadElement<Storage>(v, t, h * group + i / kDim, i % kDim);
  }
}

// a . b over kDim elements: one fused multiply-add chain in index order.
template <int kDim>
__device__ __forceinline__ float Dot(const float* a, const float* b) {
  float sum = 0.0f;
#pragma unroll 16
  for (int d = 0; d < kDim; ++d) sum = fmaf(a[d], b[d], sum);
  return sum;
}

constexpr float kInf = std::numeric_limits<float>::infinity();

// The keys each slot of (token t, KV head h) selects, into slots[0, block_count) (shared memory; read after a
// barrier).
__device__ __forceinline__ void ListSlots(const Tensors& p, const Sequence* sequences, int64_t sequence_count,
                                          int64_t t, int64_t h, SlotKeys* slots) {
  const Sequence seq = sequences[SequenceOfQueryToken(sequences, sequence_count, t)];
  for (int slot = threadIdx.x; slot < p.shape.block_count; slot += blockDim.x) slots[slot] = SlotOf(p, seq, t, h, slot);
}

// Calls tile(first_key, keys) for the key list of the slots in tiles of at most kTile keys of one slot, in list
// order (every thread of the block, so that tile() may hold barriers).
template <class Tile>
__device__ __forceinline__ void ForEachTile(const SlotKeys* slots, int64_t block_count, Tile&& tile) {
  for (int slot = 0; slot < block_count; ++slot) {
    const SlotKeys selected = slots[slot];
    for (int64_t first = 0; first < selected.keys; first += kTile) {
      tile(selected.first_key + first, static_cast<int>(selected.keys - first < kTile ? selected.keys - first : kTile));
    }
  }
}

// The backward's p = exp(s - m) / l and ds = p (dp - delta) of one query row and one key (as the CPU's GradRow),
// s = scale * (q . key) and dp = dout . value recomputed; both 0 for a row whose maximum is -inf (no key carried
// weight in the forward).
struct KeyGradient {
  float probability = 0.0f;
  float grad = 0.0f;
};
template <int kDqk, int kDv>
__device__ __forceinline__ KeyGradient GradientOfKey(const float* q, const float* dout, const float* key,
                                                     const float* value, float scale, float max, float sum,
                                                     float delta) {
  KeyGradient result;
  if (max == -kInf) return result;
  const float score = Dot<kDqk>(q, key) * scale;
  const float dp = Dot<kDv>(dout, value);
  result.probability = expf(score - max) / sum;
  result.grad = result.probability * (dp - delta);
  return result;
}

// The forward's statistics of the G rows of (t, h) into max[g] and sum[g] (shared memory; lane 0 of 8).
__device__ __forceinline__ void LoadStatistics(const Tensors& p, int64_t t, int64_t h, int group, float* max,
                                               float* sum) {
  if (threadIdx.x < group) {
    max[threadIdx.x] = Statistic(p.softmax_max, t, h * group + threadIdx.x);
    sum[threadIdx.x] = Statistic(p.softmax_sum, t, h * group + threadIdx.x);
  }
}

// ---- Forward ----

template <int kDqk, int kDv>
size_t ForwardSharedBytes(int group) {
  return sizeof(float) * (group * kDqk + kTile * (kDqk + 1) + kTile * kDv + 3 * group * kTile + group * kDv);
}

template <class Storage, int kDqk, int kDv>
__global__ void __launch_bounds__(kRowThreads)
    ForwardKernel(const Tensors p, const Sequence* sequences, int64_t sequence_count) {
  constexpr int kKeyStride = kDqk + 1;
  constexpr int kWarps = kRowThreads / 32;
  extern __shared__ float shared[];
  __shared__ SlotKeys slots[kMaxSlots];
  __shared__ float row_max[kMaxGroup];
  __shared__ float row_sum[kMaxGroup];
  const AttentionShape& s = p.shape;
  const int group = static_cast<int>(s.group);
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int64_t t = blockIdx.x;
  const int64_t h = blockIdx.y;
  float* q = shared;                           // [group][kDqk]
  float* keys = q + group * kDqk;              // [kTile][kKeyStride]
  float* values = keys + kTile * kKeyStride;   // [kTile][kDv]
  float* weights = values + kTile * kDv;       // [group][kTile]: e of the tile
  float* lane_max = weights + group * kTile;   // [group][kTile]
  float* lane_sum = lane_max + group * kTile;  // [group][kTile]
  float* sums = lane_sum + group * kTile;      // [group][kDv]

  ListSlots(p, sequences, sequence_count, t, h, slots);
  LoadGroupRows<Storage, kDqk>(p.query, t, h, group, q);
  for (int i = threadIdx.x; i < group * kTile; i += blockDim.x) {
    lane_max[i] = -kInf;
    lane_sum[i] = 0.0f;
  }
  for (int i = threadIdx.x; i < group * kDv; i += blockDim.x) sums[i] = 0.0f;
  __syncthreads();

  // Pass 1: each row's maximum score (NaN when any score is NaN).
  ForEachTile(slots, s.block_count, [&](int64_t first_key, int n) {
    LoadRows<Storage, kDqk, kKeyStride>(p.key, first_key, h, n, keys);
    __syncthreads();
    if (lane < n) {
      for (int g = warp; g < group; g += kWarps) {
        nsa_rows_cuda::UpdateMax(&lane_max[g * kTile + lane],
                                 Dot<kDqk>(q + g * kDqk, keys + lane * kKeyStride) * s.scale);
      }
    }
    __syncthreads();
  });
  nsa_rows_cuda::ReduceRowMaxima(lane_max, group, kWarps, row_max);
  __syncthreads();

  // Pass 2: e = exp(s - m), the lanes' partial sums of e, and the sums of e * value.
  ForEachTile(slots, s.block_count, [&](int64_t first_key, int n) {
    LoadRows<Storage, kDqk, kKeyStride>(p.key, first_key, h, n, keys);
    LoadRows<Storage, kDv, kDv>(p.value, first_key, h, n, values);
    __syncthreads();
    for (int g = warp; g < group; g += kWarps) {
      const float m = row_max[g];
      float e = 0.0f;
      if (lane < n && m > -kInf && m < kInf) {
        e = expf(Dot<kDqk>(q + g * kDqk, keys + lane * kKeyStride) * s.scale - m);
        lane_sum[g * kTile + lane] += e;
      }
      weights[g * kTile + lane] = e;
    }
    __syncthreads();
    nsa_rows_cuda::AccumulateTile(sums, weights, values, group, nsa_rows_cuda::Constant<kDv>{},
                                  nsa_rows_cuda::Constant<kDv>{}, n);
    __syncthreads();
  });
  nsa_rows_cuda::ReduceRowSums(lane_sum, row_max, group, kWarps, row_sum);
  __syncthreads();
  nsa_rows_cuda::WriteSoftmaxRows<Storage>(p.out, p.softmax_max, p.softmax_sum, t, h, group, kDv, sums, row_max,
                                           row_sum);
}

// ---- Backward, pass 1: delta and dq ----

template <int kDqk, int kDv>
size_t QueryPassSharedBytes(int group) {
  return sizeof(float) *
         (group * kDqk + group * kDv + kTile * (kDqk + 1) + kTile * (kDv + 1) + group * kTile + group * kDqk);
}

template <class Storage, int kDqk, int kDv>
__global__ void __launch_bounds__(kRowThreads)
    QueryPassKernel(const Tensors p, const Sequence* sequences, int64_t sequence_count, float* delta) {
  constexpr int kKeyStride = kDqk + 1;
  constexpr int kValueStride = kDv + 1;
  constexpr int kWarps = kRowThreads / 32;
  extern __shared__ float shared[];
  __shared__ SlotKeys slots[kMaxSlots];
  __shared__ float row_max[kMaxGroup];
  __shared__ float row_sum[kMaxGroup];
  __shared__ float row_delta[kMaxGroup];
  const AttentionShape& s = p.shape;
  const int group = static_cast<int>(s.group);
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int64_t t = blockIdx.x;
  const int64_t h = blockIdx.y;
  float* q = shared;                          // [group][kDqk]
  float* dout = q + group * kDqk;             // [group][kDv]
  float* keys = dout + group * kDv;           // [kTile][kKeyStride]
  float* values = keys + kTile * kKeyStride;  // [kTile][kValueStride]
  float* ds = values + kTile * kValueStride;  // [group][kTile]
  float* sums = ds + group * kTile;           // [group][kDqk]

  ListSlots(p, sequences, sequence_count, t, h, slots);
  LoadGroupRows<Storage, kDqk>(p.query, t, h, group, q);
  LoadGroupRows<Storage, kDv>(p.out_grad, t, h, group, dout);
  for (int i = threadIdx.x; i < group * kDqk; i += blockDim.x) sums[i] = 0.0f;
  LoadStatistics(p, t, h, group, row_max, row_sum);
  __syncthreads();
  for (int g = warp; g < group; g += kWarps) {
    const int64_t n = h * group + g;
    float partial = 0.0f;
    for (int d = lane; d < kDv; d += 32)
      partial = fmaf(dout[g * kDv + d], LoadElement<Storage>(p.out, t, n, d), partial);
    const float sum = cuda::WarpSum(partial);
    if (lane == 0) {
      row_delta[g] = sum;
      delta[t * s.q_heads + n] = sum;
    }
  }
  __syncthreads();

  ForEachTile(slots, s.block_count, [&](int64_t first_key, int n) {
    LoadRows<Storage, kDqk, kKeyStride>(p.key, first_key, h, n, keys);
    LoadRows<Storage, kDv, kValueStride>(p.value, first_key, h, n, values);
    __syncthreads();
    for (int g = warp; g < group; g += kWarps) {
      ds[g * kTile + lane] =
          lane < n ? GradientOfKey<kDqk, kDv>(q + g * kDqk, dout + g * kDv, keys + lane * kKeyStride,
                                              values + lane * kValueStride, s.scale, row_max[g], row_sum[g],
                                              row_delta[g])
                         .grad
                   : 0.0f;
    }
    __syncthreads();
    nsa_rows_cuda::AccumulateTile(sums, ds, keys, group, nsa_rows_cuda::Constant<kDqk>{},
                                  nsa_rows_cuda::Constant<kKeyStride>{}, n);
    __syncthreads();
  });
  for (int i = threadIdx.x; i < group * kDqk; i += blockDim.x) {
    StoreElement<Storage>(p.dq, t, h * group + i / kDqk, i % kDqk, sums[i] * s.scale);
  }
}

// ---- Backward, pass 2: the (KV head, key block) each (KV head, token, slot) entry selects ----

__global__ void ListEntriesKernel(const Tensors p, const Sequence* sequences, int64_t sequence_count, int64_t kv_blocks,
                                  uint64_t* keys, uint32_t* tokens) {
  const AttentionShape& s = p.shape;
  const int64_t entries = s.kv_heads * s.q_tokens * s.block_count;
  for (int64_t i = cuda::GridStart(); i < entries; i += cuda::GridStride()) {
    const int64_t slot = i % s.block_count;
    const int64_t t = (i / s.block_count) % s.q_tokens;
    const int64_t h = i / (s.block_count * s.q_tokens);
    const Sequence seq = sequences[SequenceOfQueryToken(sequences, sequence_count, t)];
    const SlotKeys selected = SlotOf(p, seq, t, h, slot);
    keys[i] = static_cast<uint64_t>(selected.keys > 0 ? h * kv_blocks + selected.first_key / s.block_size
                                                      : s.kv_heads * kv_blocks);
    tokens[i] = static_cast<uint32_t>(t);
  }
}

// ---- Backward, pass 3: dk and dv ----

template <int kDqk, int kDv>
size_t KeyPassSharedBytes(int group) {
  return sizeof(float) * (kTile * (kDqk + 1) + kTile * (kDv + 1) + group * kDqk + group * kDv + 2 * group * kTile);
}

template <class Storage, int kDqk, int kDv>
__global__ void __launch_bounds__(kKeyPassThreads)
    KeyPassKernel(const Tensors p, const Sequence* sequences, int64_t sequence_count, int64_t kv_blocks,
                  const float* delta, const int64_t* segment_starts, const uint32_t* tokens) {
  constexpr int kKeyStride = kDqk + 1;
  constexpr int kValueStride = kDv + 1;
  constexpr int kWarps = kKeyPassThreads / 32;
  constexpr int kKeyElements = kTile * kDqk / kKeyPassThreads;   // dk elements a thread owns
  constexpr int kValueElements = kTile * kDv / kKeyPassThreads;  // dv elements a thread owns
  static_assert(kTile * kDqk % kKeyPassThreads == 0 && kTile * kDv % kKeyPassThreads == 0, "whole rows per pass");
  extern __shared__ float shared[];
  __shared__ float row_max[kMaxGroup];
  __shared__ float row_sum[kMaxGroup];
  __shared__ float row_delta[kMaxGroup];
  const AttentionShape& s = p.shape;
  const int group = static_cast<int>(s.group);
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int64_t tiles = (s.block_size + kTile - 1) / kTile;
  const int64_t block = blockIdx.x / tiles;
  const int64_t h = blockIdx.y;
  const int64_t tile_start = (blockIdx.x % tiles) * kTile;  // within the block
  const int rows = static_cast<int>(s.block_size - tile_start < kTile ? s.block_size - tile_start : kTile);
  const int64_t first_key = block * s.block_size + tile_start;  // global token of the tile's row 0
  float* keys = shared;                                         // [kTile][kKeyStride]
  float* values = keys + kTile * kKeyStride;                    // [kTile][kValueStride]
  float* q = values + kTile * kValueStride;                     // [group][kDqk]
  float* dout = q + group * kDqk;                               // [group][kDv]
  float* probabilities = dout + group * kDv;                    // [group][kTile]
  float* ds = probabilities + group * kTile;                    // [group][kTile]

  const Sequence seq = sequences[SequenceOfKeyBlock(sequences, sequence_count, block, s.block_size)];
  const int64_t tile_position = first_key - seq.kv_start;  // row 0's position in its sequence
  float dk[kKeyElements];
  float dv[kValueElements];
#pragma unroll
  for (int r = 0; r < kKeyElements; ++r) dk[r] = 0.0f;
#pragma unroll
  for (int r = 0; r < kValueElements; ++r) dv[r] = 0.0f;
  const int64_t segment_begin = segment_starts[h * kv_blocks + block];
  const int64_t segment_end = segment_starts[h * kv_blocks + block + 1];
  if (segment_end > segment_begin) {
    LoadRows<Storage, kDqk, kKeyStride>(p.key, first_key, h, rows, keys);
    LoadRows<Storage, kDv, kValueStride>(p.value, first_key, h, rows, values);
  }
  for (int64_t e = segment_begin; e < segment_end; ++e) {
    const int64_t t = tokens[e];
    // The tile's keys this token sees (the same for every thread of the block).
    int64_t visible_keys = rows;
    if (s.causal) {
      const int64_t through = t - seq.q_start - tile_position + 1;
      visible_keys = through < visible_keys ? through : visible_keys;
    }
    if (visible_keys <= 0) continue;
    const int visible = static_cast<int>(visible_keys);
    __syncthreads();  // the previous token's rows are no longer read
    LoadGroupRows<Storage, kDqk>(p.query, t, h, group, q);
    LoadGroupRows<Storage, kDv>(p.out_grad, t, h, group, dout);
    LoadStatistics(p, t, h, group, row_max, row_sum);
    if (threadIdx.x < group) row_delta[threadIdx.x] = delta[t * s.q_heads + h * group + threadIdx.x];
    __syncthreads();
    for (int g = warp; g < group; g += kWarps) {
      KeyGradient gradient;
      if (lane < visible) {
        gradient = GradientOfKey<kDqk, kDv>(q + g * kDqk, dout + g * kDv, keys + lane * kKeyStride,
                                            values + lane * kValueStride, s.scale, row_max[g], row_sum[g],
                                            row_delta[g]);
      }
      probabilities[g * kTile + lane] = gradient.probability;
      ds[g * kTile + lane] = gradient.grad;
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kKeyElements; ++r) {
      const int i = threadIdx.x + r * kKeyPassThreads;
      const int k = i / kDqk;
      if (k < visible) {
        for (int g = 0; g < group; ++g) dk[r] = fmaf(ds[g * kTile + k], q[g * kDqk + i % kDqk], dk[r]);
      }
    }
#pragma unroll
    for (int r = 0; r < kValueElements; ++r) {
      const int i = threadIdx.x + r * kKeyPassThreads;
      const int k = i / kDv;
      if (k < visible) {
        for (int g = 0; g < group; ++g) dv[r] = fmaf(probabilities[g * kTile + k], dout[g * kDv + i % kDv], dv[r]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kKeyElements; ++r) {
    const int i = threadIdx.x + r * kKeyPassThreads;
    if (i / kDqk < rows) StoreElement<Storage>(p.dk, first_key + i / kDqk, h, i % kDqk, dk[r] * s.scale);
  }
#pragma unroll
  for (int r = 0; r < kValueElements; ++r) {
    const int i = threadIdx.x + r * kKeyPassThreads;
    if (i / kDv < rows) StoreElement<Storage>(p.dv, first_key + i / kDv, h, i % kDv, dv[r]);
  }
}

// ---- Launch glue ----

template <int kDqk_, int kDv_>
struct HeadDims {
  static constexpr int kDqk = kDqk_;
  static constexpr int kDv = kDv_;
};

// Calls launch(Storage{}, HeadDims<D_qk, D_v>{}) for the call's dtype and head dims (phase 1 allows FLOAT16 and
// BFLOAT16, D 128 or 192 with D_v <= D_qk); the status of its launches.
template <class Launcher>
aclnnStatus DispatchKernels(const char* op_name, aclDataType dtype, const AttentionShape& s, Launcher&& launch) {
  return nsa_rows_cuda::DispatchHalfWidth(op_name, dtype, [&](auto storage) {
    if (s.dim_qk == 128) {
      launch(storage, HeadDims<128, 128>{});
    } else if (s.dim_v == 128) {
      launch(storage, HeadDims<192, 128>{});
    } else {
      launch(storage, HeadDims<192, 192>{});
    }
  });
}

Tensors ForwardTensors(const ForwardParams& p) {
  Tensors t;
  t.shape = p.shape;
  t.query = ViewOf(p.query);
  t.key = ViewOf(p.key);
  t.value = ViewOf(p.value);
  t.topk = ViewOf(p.topk);
  t.softmax_max = ViewOf(p.softmax_max);
  t.softmax_sum = ViewOf(p.softmax_sum);
  t.out = ViewOf(p.out);
  return t;
}

Tensors BackwardTensors(const BackwardParams& p) {
  Tensors t;
  t.shape = p.shape;
  t.query = ViewOf(p.query);
  t.key = ViewOf(p.key);
  t.value = ViewOf(p.value);
  t.topk = ViewOf(p.topk);
  t.softmax_max = ViewOf(p.softmax_max);
  t.softmax_sum = ViewOf(p.softmax_sum);
  t.out = ViewOf(p.out);
  t.out_grad = ViewOf(p.out_grad);
  t.dq = ViewOf(p.dq);
  t.dk = ViewOf(p.dk);
  t.dv = ViewOf(p.dv);
  return t;
}

uint64_t SequenceBytes(const std::vector<Sequence>& sequences) {
  return SaturatingMul(sequences.size(), sizeof(Sequence));
}

}  // namespace

CudaWorkspacePlan PlanCudaForward(const ForwardParams& params) {
  CudaWorkspacePlan plan;
  WorkspaceLayout layout;
  plan.sequences = layout.Reserve(SequenceBytes(params.sequences));
  plan.bytes = layout.TotalBytes();
  return plan;
}

CudaWorkspacePlan PlanCudaBackward(const BackwardParams& params, DeviceQuery query) {
  const AttentionShape& s = params.shape;
  CudaWorkspacePlan plan;
  WorkspaceLayout layout;
  plan.sequences = layout.Reserve(SequenceBytes(params.sequences));
  plan.delta = layout.Reserve(SaturatingMul(SaturatingMul(s.q_tokens, s.q_heads), sizeof(float)));
  plan.pairs = s.kv_heads * s.q_tokens * s.block_count;
  plan.keys = layout.Reserve(SaturatingMul(SaturatingMul(plan.pairs, 2), sizeof(uint64_t)));
  plan.tokens = layout.Reserve(SaturatingMul(SaturatingMul(plan.pairs, 2), sizeof(uint32_t)));
  const int64_t kv_blocks = s.kv_tokens / s.block_size;
  plan.segment_starts = layout.Reserve(SaturatingMul(s.kv_heads * kv_blocks + 1, sizeof(int64_t)));
  // Last (see DeviceQuery); keys are (KV head, key block) numbers.
  plan.sort_scratch =
      layout.Reserve(query == DeviceQuery::kAsk ? cuda::SortScratchBytes<uint64_t, uint32_t>(
                                                      plan.pairs, static_cast<uint64_t>(s.kv_heads * kv_blocks))
                                                : 0);
  plan.bytes = layout.TotalBytes();
  return plan;
}

aclnnStatus RunForwardCuda(const ForwardParams& params, const KernelContext& context) {
  if (aclnnStatus status = cuda::Activate(kForwardName, context)) return status;
  const AttentionShape& s = params.shape;
  const CudaWorkspacePlan plan = PlanCudaForward(params);
  const cudaStream_t stream = cuda::StreamOf(context);
  Sequence* sequences = cuda::WorkspaceArray<Sequence>(context.workspace, plan.sequences);
  if (aclnnStatus status = cuda::CopyToDevice(kForwardName, "copying the sequences", params.sequences.data(),
                                              params.sequences.size(), sequences, stream)) {
    return status;
  }
  if (s.q_tokens == 0) return ACLNN_SUCCESS;
  const Tensors tensors = ForwardTensors(params);
  const auto count = static_cast<int64_t>(params.sequences.size());
  const dim3 grid(static_cast<unsigned int>(s.q_tokens), static_cast<unsigned int>(s.kv_heads));
  return DispatchKernels(kForwardName, params.query.dtype, s, [&](auto storage, auto dims) {
    using Storage = decltype(storage);
    using Dims = decltype(dims);
    const auto kernel = ForwardKernel<Storage, Dims::kDqk, Dims::kDv>;
    const size_t bytes = ForwardSharedBytes<Dims::kDqk, Dims::kDv>(static_cast<int>(s.group));
    nsa_rows_cuda::AllowSharedMemory(kernel, bytes);
    kernel<<<grid, kRowThreads, bytes, stream>>>(tensors, sequences, count);
  });
}

aclnnStatus RunBackwardCuda(const BackwardParams& params, const KernelContext& context) {
  if (aclnnStatus status = cuda::Activate(kBackwardName, context)) return status;
  const AttentionShape& s = params.shape;
  const CudaWorkspacePlan plan = PlanCudaBackward(params, DeviceQuery::kSkip);
  const cudaStream_t stream = cuda::StreamOf(context);
  Sequence* sequences = cuda::WorkspaceArray<Sequence>(context.workspace, plan.sequences);
  if (aclnnStatus status = cuda::CopyToDevice(kBackwardName, "copying the sequences", params.sequences.data(),
                                              params.sequences.size(), sequences, stream)) {
    return status;
  }
  const Tensors tensors = BackwardTensors(params);
  const auto count = static_cast<int64_t>(params.sequences.size());
  float* delta = cuda::WorkspaceArray<float>(context.workspace, plan.delta);
  const int64_t kv_blocks = s.kv_tokens / s.block_size;
  const int64_t key_count = s.kv_heads * kv_blocks;
  uint64_t* keys = cuda::WorkspaceArray<uint64_t>(context.workspace, plan.keys);
  uint32_t* tokens = cuda::WorkspaceArray<uint32_t>(context.workspace, plan.tokens);
  auto* segment_starts = cuda::WorkspaceArray<int64_t>(context.workspace, plan.segment_starts);
  cub::DoubleBuffer<uint64_t> sorted_keys(keys, keys + plan.pairs);
  cub::DoubleBuffer<uint32_t> sorted_tokens(tokens, tokens + plan.pairs);

  if (s.q_tokens > 0) {
    // Pass 1 (dq and delta), then the entries of pass 2, sorted.
    const dim3 grid(static_cast<unsigned int>(s.q_tokens), static_cast<unsigned int>(s.kv_heads));
    aclnnStatus status = DispatchKernels(kBackwardName, params.query.dtype, s, [&](auto storage, auto dims) {
      using Storage = decltype(storage);
      using Dims = decltype(dims);
      const auto kernel = QueryPassKernel<Storage, Dims::kDqk, Dims::kDv>;
      const size_t bytes = QueryPassSharedBytes<Dims::kDqk, Dims::kDv>(static_cast<int>(s.group));
      nsa_rows_cuda::AllowSharedMemory(kernel, bytes);
      kernel<<<grid, kRowThreads, bytes, stream>>>(tensors, sequences, count, delta);
    });
    if (status != ACLNN_SUCCESS) return status;
    constexpr int kListThreads = 256;
    ListEntriesKernel<<<cuda::GridBlocks(plan.pairs, kListThreads), kListThreads, 0, stream>>>(
        tensors, sequences, count, kv_blocks, keys, tokens);
    if ((status = cuda::LaunchStatus(kBackwardName, "listing the selected blocks"))) return status;
    status = cuda::StableSortPairs(kBackwardName, "the selected blocks", &sorted_keys, &sorted_tokens, plan.pairs,
                                   static_cast<uint64_t>(key_count),
                                   cuda::SortScratchInWorkspace(context, plan.sort_scratch), stream);
    if (status != ACLNN_SUCCESS) return status;
  }
  constexpr int kStartsThreads = 256;
  cuda::SegmentStartsKernel<int64_t><<<cuda::GridBlocks(key_count + 1, kStartsThreads), kStartsThreads, 0, stream>>>(
      sorted_keys.Current(), s.q_tokens > 0 ? plan.pairs : 0, key_count, segment_starts);
  if (aclnnStatus status = cuda::LaunchStatus(kBackwardName, "finding the key blocks' segments")) return status;
  // Pass 3: dk and dv (every key row, zeros where no token selected its block).
  const int64_t tiles = (s.block_size + kTile - 1) / kTile;
  const dim3 grid(static_cast<unsigned int>(kv_blocks * tiles), static_cast<unsigned int>(s.kv_heads));
  const uint32_t* listed_tokens = sorted_tokens.Current();
  return DispatchKernels(kBackwardName, params.query.dtype, s, [&](auto storage, auto dims) {
    using Storage = decltype(storage);
    using Dims = decltype(dims);
    const auto kernel = KeyPassKernel<Storage, Dims::kDqk, Dims::kDv>;
    const size_t bytes = KeyPassSharedBytes<Dims::kDqk, Dims::kDv>(static_cast<int>(s.group));
    nsa_rows_cuda::AllowSharedMemory(kernel, bytes);
    kernel<<<grid, kKeyPassThreads, bytes, stream>>>(tensors, sequences, count, kv_blocks, delta, segment_starts,
                                                     listed_tokens);
  });
}

}  // namespace pacl::nsa_selected_attention
