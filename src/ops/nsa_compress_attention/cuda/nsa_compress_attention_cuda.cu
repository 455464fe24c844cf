// NOTE [NsaCompressAttention on CUDA]
//
// Problem: that of the CPU kernel (the NOTE in cpu/nsa_compress_attention_cpu.cpp): for query token t (position u in
// its sequence) and KV head h, the G query heads of the group attend over the sequence's compressed keys i that
// attenMask[u, i] leaves visible; then the importance w_i = sum over the group of P[g][i] = e_i / l, each select
// block's score (CANN's formula, nsa_block_scores.h: the code the CPU runs) and the selectBlockCount best blocks not
// masked by topkMask (a NaN score first, then higher, then the lower index; -1 in slots past the candidates).
//
// One thread block (8 warps) per (t, h); D is a runtime value, so the rows live in dynamic shared memory laid out
// by SharedLayout: the G query rows, a tile of 32 keys (rows padded to an odd stride so that lane k reading row k
// hits distinct banks) and their values, the tile's e or P per row, the lanes' partial maxima and sums, the G x D_v
// sums, the sequence's w and block scores, and a taken flag per block. The key axis is walked in tiles of 32
// consecutive keys, a lane per key (masked keys left out), three times: the row maxima (a NaN score makes the
// maximum NaN), then e = exp(s - m) into the lanes' partial sums and e * value into the sums (each element owned by
// one thread, keys ascending), then P = e / l (NaN throughout for a NaN or +inf maximum, nothing for a row without
// a visible key) added into w over the group's heads in ascending order, by one thread per key. The block scores are
// one thread per block; the selection is warp 0's: selectBlockCount rounds, each lane's best untaken candidate of its
// strided share, a butterfly over the order (strict: blocks differ), the winner marked taken. fp32 throughout, one
// rounding per output element; every sum's order is fixed by the shape and the mask: the same bits run to run (not
// the CPU's: its dot products and exp differ in the last bits, so a near tie may select differently; the tests
// compare the selection by score, within a tolerance).
#include <cuda_runtime.h>
#include <math_constants.h>

#include <cstdint>
#include <limits>

#include "nsa_compress_attention/cuda/nsa_compress_attention_cuda.h"
#include "nsa_compress_attention/nsa_block_scores.h"
#include "nsa_compress_attention/nsa_compress_attention_params.h"
#include "nsa_selected_attention/cuda/nsa_rows_cuda.cuh"
#include "nsa_selected_attention/nsa_selected_slots.h"
#include "pacl/cuda_kernels.cuh"
#include "pacl/workspace_plan.h"

namespace pacl::nsa_compress_attention {
namespace {

using nsa_rows_cuda::LoadElement;
using nsa_rows_cuda::Masked;
using nsa_rows_cuda::StoreElement;
using nsa_rows_cuda::StoreStatistic;
using nsa_rows_cuda::View;
using nsa_rows_cuda::ViewOf;

constexpr int kTile = 32;  // keys per tile: one per lane
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxGroup = 64;                   // phase 1: G < 128 and divides 128
constexpr size_t kMaxSharedBytes = 227 * 1024;  // sm_90's most per thread block (opt-in)
constexpr float kInf = std::numeric_limits<float>::infinity();

struct Tensors {
  AttentionShape shape;
  View query, key, value, atten_mask, topk_mask, softmax_max, softmax_sum, out, topk;
  bool has_atten_mask = false;
  bool has_topk_mask = false;
  int64_t max_kv_length = 0;
  int64_t max_select_blocks = 0;
};

// Offsets (in floats) of an item's arrays in dynamic shared memory; the taken flags (bytes) come last.
struct SharedLayout {
  int64_t q, keys, values, tile, lane_max, lane_sum, sums, weights, block_scores, taken, bytes;
  int64_t key_stride;
  PACL_HOST_DEVICE SharedLayout(const AttentionShape& s, int64_t max_kv_length, int64_t max_select_blocks) {
    key_stride = s.dim_qk + 1;
    q = 0;
    keys = q + s.group * s.dim_qk;
    values = keys + kTile * key_stride;
    tile = values + kTile * s.dim_v;
    lane_max = tile + s.group * kTile;
    lane_sum = lane_max + s.group * kTile;
    sums = lane_sum + s.group * kTile;
    weights = sums + s.group * s.dim_v;
    block_scores = weights + max_kv_length;
    taken = block_scores + max_select_blocks;
    bytes = static_cast<int64_t>(sizeof(float)) * taken + max_select_blocks;
  }
};

// rows x dim elements of view rows (token0 + r, h, :) widened into dst[r * stride + d].
template <class Storage>
__device__ __forceinline__ void LoadRows(const View& v, int64_t token0, int64_t h, int rows, int64_t dim,
                                         int64_t stride, float* dst) {
  for (int64_t i = threadIdx.x; i < rows * dim; i += blockDim.x) {
    dst[(i / dim) * stride + i % dim] = LoadElement<Storage>(v, token0 + i / dim, h, i % dim);
  }
}

// a . b over dim elements: one fused multiply-add chain in index order.
__device__ __forceinline__ float Dot(const float* a, const float* b, int64_t dim) {
  float sum = 0.0f;
  for (int64_t d = 0; d < dim; ++d) sum = fmaf(a[d], b[d], sum);
  return sum;
}

template <class Storage>
__global__ void __launch_bounds__(kThreads)
    CompressAttentionKernel(const Tensors p, const Sequence* sequences, int64_t sequence_count) {
  extern __shared__ float shared[];
  __shared__ float row_max[kMaxGroup];
  __shared__ float row_sum[kMaxGroup];
  const AttentionShape& s = p.shape;
  const SharedLayout layout(s, p.max_kv_length, p.max_select_blocks);
  const int group = static_cast<int>(s.group);
  const int64_t dqk = s.dim_qk;
  const int64_t dv = s.dim_v;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int64_t t = blockIdx.x;
  const int64_t h = blockIdx.y;
  float* q = shared + layout.q;
  float* keys = shared + layout.keys;
  float* values = shared + layout.values;
  float* tile = shared + layout.tile;  // [group][kTile]: e, then P
  float* lane_max = shared + layout.lane_max;
  float* lane_sum = shared + layout.lane_sum;
  float* sums = shared + layout.sums;  // [group][dv]
  float* weights = shared + layout.weights;
  float* block_scores = shared + layout.block_scores;
  auto* taken = reinterpret_cast<uint8_t*>(shared + layout.taken);

  const Sequence seq = sequences[nsa_selected_attention::SequenceOfQueryToken(sequences, sequence_count, t)];
  const int64_t u = t - seq.q_start;
  const int64_t key_count = seq.kv_end - seq.kv_start;
  for (int64_t i = threadIdx.x; i < group * dqk; i += blockDim.x) {
    q[i] = LoadElement<Storage>(p.query, t, h * group + i / dqk, i % dqk);
  }
  for (int i = threadIdx.x; i < group * kTile; i += blockDim.x) {
    lane_max[i] = -kInf;
    lane_sum[i] = 0.0f;
  }
  for (int64_t i = threadIdx.x; i < group * dv; i += blockDim.x) sums[i] = 0.0f;
  for (int64_t i = threadIdx.x; i < key_count; i += blockDim.x) weights[i] = 0.0f;
  __syncthreads();

  // The three walks over the keys: tile(first, n, visible) with this lane's key visible or not.
  const auto for_each_tile = [&](auto&& body) {
    for (int64_t first = 0; first < key_count; first += kTile) {
      const int n = static_cast<int>(key_count - first < kTile ? key_count - first : kTile);
      const bool visible = lane < n && !(p.has_atten_mask && Masked(p.atten_mask, u, first + lane));
      body(first, n, visible);
    }
  };
  const auto score_of = [&](int g) { return Dot(q + g * dqk, keys + lane * layout.key_stride, dqk) * s.scale; };

  // 1. Each row's maximum score (NaN when any score is NaN).
  for_each_tile([&](int64_t first, int n, bool visible) {
    LoadRows<Storage>(p.key, seq.kv_start + first, h, n, dqk, layout.key_stride, keys);
    __syncthreads();
    if (visible) {
      for (int g = warp; g < group; g += kWarps) {
        nsa_rows_cuda::UpdateMax(&lane_max[g * kTile + lane], score_of(g));
      }
    }
    __syncthreads();
  });
  nsa_rows_cuda::ReduceRowMaxima(lane_max, group, kWarps, row_max);
  __syncthreads();

  // 2. e = exp(s - m), the lanes' partial sums, the sums of e * value.
  for_each_tile([&](int64_t first, int n, bool visible) {
    LoadRows<Storage>(p.key, seq.kv_start + first, h, n, dqk, layout.key_stride, keys);
    LoadRows<Storage>(p.value, seq.kv_start + first, h, n, dv, dv, values);
    __syncthreads();
    for (int g = warp; g < group; g += kWarps) {
      const float m = row_max[g];
      float e = 0.0f;
      if (visible && m > -kInf && m < kInf) {
        e = expf(score_of(g) - m);
        lane_sum[g * kTile + lane] += e;
      }
      tile[g * kTile + lane] = e;
    }
    __syncthreads();
    nsa_rows_cuda::AccumulateTile(sums, tile, values, group, dv, dv, n);
    __syncthreads();
  });
  nsa_rows_cuda::ReduceRowSums(lane_sum, row_max, group, kWarps, row_sum);
  __syncthreads();
  nsa_rows_cuda::WriteSoftmaxRows<Storage>(p.out, p.softmax_max, p.softmax_sum, t, h, group, dv, sums, row_max,
                                           row_sum);

  // 3. w_i = sum over the group of P[g][i], heads ascending.
  for_each_tile([&](int64_t first, int n, bool visible) {
    LoadRows<Storage>(p.key, seq.kv_start + first, h, n, dqk, layout.key_stride, keys);
    __syncthreads();
    for (int g = warp; g < group; g += kWarps) {
      const float m = row_max[g];
      float probability = 0.0f;
      if (visible && m != -kInf) probability = m < kInf ? expf(score_of(g) - m) / row_sum[g] : CUDART_NAN_F;
      tile[g * kTile + lane] = probability;
    }
    __syncthreads();
    if (threadIdx.x < n) {
      float w = weights[first + threadIdx.x];
      for (int g = 0; g < group; ++g) w += tile[g * kTile + threadIdx.x];
      weights[first + threadIdx.x] = w;
    }
    __syncthreads();
  });

  // 4. The block scores, then warp 0 selects the best selectBlockCount.
  const int64_t blocks = seq.select_blocks;
  for (int64_t j = threadIdx.x; j < blocks; j += blockDim.x) {
    block_scores[j] = nsa_block_selection::BlockScore(weights, key_count, s.select_per_cmp, s.cmp_per_stride, j);
    taken[j] = p.has_topk_mask && Masked(p.topk_mask, u, j) ? 1 : 0;
  }
  __syncthreads();
  if (warp != 0) return;
  for (int64_t slot = 0; slot < s.select_count; ++slot) {
    float best_score = 0.0f;
    int64_t best = -1;
    for (int64_t j = lane; j < blocks; j += 32) {
      if (taken[j] != 0) continue;
      if (best < 0 || nsa_block_selection::RanksBefore(block_scores[j], j, best_score, best)) {
        best_score = block_scores[j];
        best = j;
      }
    }
    for (int offset = 16; offset > 0; offset /= 2) {
      const float other_score = __shfl_xor_sync(0xffffffffu, best_score, offset);
      const int64_t other = __shfl_xor_sync(0xffffffffu, best, offset);
      if (other >= 0 && (best < 0 || nsa_block_selection::RanksBefore(other_score, other, best_score, best))) {
        best_score = other_score;
        best = other;
      }
    }
    if (lane == 0) {
      static_cast<int32_t*>(p.topk.data)[nsa_rows_cuda::ElementOf(p.topk, t, h, slot)] = static_cast<int32_t>(best);
      if (best >= 0) taken[best] = 1;
    }
    __syncwarp();
  }
}

Tensors TensorsOf(const ForwardParams& p) {
  Tensors t;
  t.shape = p.shape;
  t.query = ViewOf(p.query);
  t.key = ViewOf(p.key);
  t.value = ViewOf(p.value);
  t.has_atten_mask = p.has_atten_mask;
  if (p.has_atten_mask) t.atten_mask = ViewOf(p.atten_mask);
  t.has_topk_mask = p.has_topk_mask;
  if (p.has_topk_mask) t.topk_mask = ViewOf(p.topk_mask);
  t.softmax_max = ViewOf(p.softmax_max);
  t.softmax_sum = ViewOf(p.softmax_sum);
  t.out = ViewOf(p.out);
  t.topk = ViewOf(p.topk);
  t.max_kv_length = p.max_kv_length;
  t.max_select_blocks = p.max_select_blocks;
  return t;
}

WorkspaceLayout PlannedLayout(const ForwardParams& params, int64_t* sequences) {
  WorkspaceLayout layout;
  *sequences = layout.Reserve(SaturatingMul(params.sequences.size(), sizeof(Sequence)));
  return layout;
}

}  // namespace

bool SupportsCuda(const ForwardParams& params) {
  const AttentionShape& s = params.shape;
  if (s.group > kMaxGroup) return false;
  const SharedLayout layout(s, params.max_kv_length, params.max_select_blocks);
  return layout.bytes >= 0 && static_cast<size_t>(layout.bytes) <= kMaxSharedBytes;
}

uint64_t PlanForwardCuda(ForwardParams* params) {
  int64_t sequences = -1;
  return PlannedLayout(*params, &sequences).TotalBytes();
}

aclnnStatus RunForwardCuda(const ForwardParams& params, const KernelContext& context) {
  if (aclnnStatus status = cuda::Activate(kForwardName, context)) return status;
  const AttentionShape& s = params.shape;
  const cudaStream_t stream = cuda::StreamOf(context);
  int64_t sequences_offset = -1;
  PlannedLayout(params, &sequences_offset);
  Sequence* sequences = cuda::WorkspaceArray<Sequence>(context.workspace, sequences_offset);
  if (aclnnStatus status = cuda::CopyToDevice(kForwardName, "copying the sequences", params.sequences.data(),
                                              params.sequences.size(), sequences, stream)) {
    return status;
  }
  if (s.q_tokens == 0) return ACLNN_SUCCESS;
  const Tensors tensors = TensorsOf(params);
  const auto count = static_cast<int64_t>(params.sequences.size());
  const auto bytes = static_cast<size_t>(SharedLayout(s, params.max_kv_length, params.max_select_blocks).bytes);
  const dim3 grid(static_cast<unsigned int>(s.q_tokens), static_cast<unsigned int>(s.kv_heads));
  return nsa_rows_cuda::DispatchHalfWidth(kForwardName, params.query.dtype, [&](auto storage) {
    const auto kernel = CompressAttentionKernel<decltype(storage)>;
    nsa_rows_cuda::AllowSharedMemory(kernel, bytes);
    kernel<<<grid, kThreads, bytes, stream>>>(tensors, sequences, count);
  });
}

}  // namespace pacl::nsa_compress_attention
