// NOTE [Grid sampler 2-D on CUDA]
//
// Problem and per-element rules: those of the CPU kernels (see the NOTE in cpu/grid_sampler2d_cpu.cpp); the taps
// of a sample along each axis (source coordinate, padding, weights, derivatives, which taps are valid) come from
// grid_sampler2d_taps_math.h, the very code the CPU runs, so the CPU tests check them. FLOAT, FLOAT16 and BFLOAT16
// compute in fp32, DOUBLE in fp64; outputs are rounded once. An invalid tap is never read or written.
//
// Forward: one thread per output pixel (n, h, w), a thread block per tile of 32 x 8 output pixels (PixelTiles
// below; a warp takes 32 adjacent pixels of a row, so it reads adjacent grid entries and writes adjacent outputs of
// each channel plane): the K x K taps once, then per channel out = sum over the taps, y-major, of (wy * wx) *
// input. Every operand through its own strides.
//
// Backward, gridGrad: one thread per output pixel (tiled as the forward) sums over the channels, in order,
// gradOutput * (sum over taps of the weight derivatives * input): a per-thread loop, deterministic. Nearest (or
// C == 0) writes 0.
//
// Backward, inputGrad: a scatter (each output pixel adds weight * gradOutput to up to K*K input elements), which
// float atomics would make order-dependent (PyTorch's and mmcv's kernels: pytorch#68959). The deterministic
// implementation turns it into a gather:
//   1. one thread per output pixel lists its K*K taps: tap id e = pixel * K*K + (ky * K + kx), key = the input
//      element (n, iy, ix) it adds to (or the sentinel N*Hin*Win past every element when the tap is invalid), and
//      its weight wy * wx;
//   2. the (key, tap id) pairs are sorted by key with CUB's radix sort, which is stable: within one key the tap
//      ids stay ascending, so the order of each input element's terms is fixed by the problem alone;
//   3. one thread per input element finds where its taps begin (a binary search of the sorted keys);
//   4. one thread per input element and group of 16 channels (ix fastest) works out its taps' gradOutput offsets
//      and weights once, then for each channel sums weight * gradOutput(n, c, tap's pixel) over its taps in that
//      order and writes inputGrad once (0 where no tap lands).
// Bit-identical on every run. Workspace: 2 * E keys and 2 * E tap ids (8 bytes each, the sort's double buffers),
// E weights, N*Hin*Win + 1 segment starts (E = N * Hout * Wout * K*K), plus CUB's own scratch, whose size phase 1
// asks CUB for (it depends on the GPU): nothing is allocated in phase 2.
// The atomic implementation (chosen only with ACL_OPT_DETERMINISTIC off) adds weight * gradOutput with atomicAdd
// into a zeroed compute-type copy of inputGrad in the workspace, then converts it into inputGrad: faster, but the
// sums' order (and so their last bits) varies from run to run.
#include <cstdint>
#include <type_traits>

#include "grid_sampler2d/cuda/grid_sampler2d_cuda.h"
#include "grid_sampler2d/grid_sampler2d_params.h"
#include "grid_sampler2d/grid_sampler2d_taps_math.h"
#include "pacl/cuda_kernels.cuh"
#include "pacl/cuda_sort.cuh"

namespace pacl::grid_sampler2d {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ int64_t ElementIndex(const SamplerOperand& o, int64_t i0, int64_t i1, int64_t i2,
                                                int64_t i3) {
  return o.desc.offset + i0 * o.strides[0] + i1 * o.strides[1] + i2 * o.strides[2] + i3 * o.strides[3];
}

// The taps of output pixel (n, h, w) along x and y.
template <class Storage, int K>
__device__ __forceinline__ void PixelTaps(const SamplerShape& s, const SamplerModes& modes, const SamplerOperand& grid,
                                          int64_t n, int64_t h, int64_t w, AxisTaps<cuda::ComputeType<Storage>, K>* x,
                                          AxisTaps<cuda::ComputeType<Storage>, K>* y) {
  using T = cuda::ComputeType<Storage>;
  const int64_t at = ElementIndex(grid, n, h, w, 0);
  const T gx = cuda::Load<Storage>(grid.desc, at);
  const T gy = cuda::Load<Storage>(grid.desc, at + grid.strides[3]);
  ComputeTaps(Axis<T>(s.in_width, modes), gx, x);
  ComputeTaps(Axis<T>(s.in_height, modes), gy, y);
}

struct Pixel {
  int64_t n, h, w;
};
__device__ __forceinline__ Pixel PixelOf(const SamplerShape& s, int64_t p) {
  Pixel pixel;
  pixel.w = p % s.out_width;
  const int64_t nh = p / s.out_width;
  pixel.h = nh % s.out_height;
  pixel.n = nh / s.out_height;
  return pixel;
}

// The forward and gridGrad kernels take output pixels in tiles of kThreads: tile_width columns by kThreads /
// tile_width rows of one image (tile_width: 32, or the power of two that covers a narrower output), a thread block
// a tile. A sample reads its taps around where the grid points, which on a smooth but noisy grid wanders some
// pixels from the output pixel: the warps of a compact tile then read overlapping neighbourhoods of each channel
// plane, which the L1 cache serves, where a tile one row high (row-major order) spread them along a whole row.
struct PixelTiles {
  int64_t tile_width;    // columns of a tile (a power of two <= 32)
  int64_t tile_height;   // rows of a tile: kThreads / tile_width
  int64_t across, down;  // tiles along a row and down an image
  int64_t count;         // batch * down * across * kThreads: the loop's range
};

PixelTiles TilesOf(const SamplerShape& s) {
  PixelTiles t;
  t.tile_width = 32;
  while (t.tile_width > 1 && t.tile_width / 2 >= s.out_width) t.tile_width /= 2;
  t.tile_height = kThreads / t.tile_width;
  t.across = (s.out_width + t.tile_width - 1) / t.tile_width;
  t.down = (s.out_height + t.tile_height - 1) / t.tile_height;
  t.count = s.batch * t.down * t.across * kThreads;
  return t;
}

// The pixel of loop index `index` (blocks of kThreads threads, so a block holds whole tiles); false past the edges.
__device__ __forceinline__ bool TiledPixel(const SamplerShape& s, const PixelTiles& t, int64_t index, Pixel* px) {
  const int64_t tile = index / kThreads;
  const int64_t within = index % kThreads;
  px->w = (tile % t.across) * t.tile_width + within % t.tile_width;
  px->h = ((tile / t.across) % t.down) * t.tile_height + within / t.tile_width;
  px->n = tile / (t.across * t.down);
  return px->w < s.out_width && px->h < s.out_height;
}

template <class Storage, int K>
__global__ void __launch_bounds__(kThreads) ForwardKernel(const ForwardParams p, const PixelTiles tiles) {
  using T = cuda::ComputeType<Storage>;
  const SamplerShape& s = p.shape;
  for (int64_t index = cuda::GridStart(); index < tiles.count; index += cuda::GridStride()) {
    Pixel px;
    if (!TiledPixel(s, tiles, index, &px)) continue;
    AxisTaps<T, K> x, y;
    PixelTaps<Storage, K>(s, p.modes, p.grid, px.n, px.h, px.w, &x, &y);
    for (int64_t c = 0; c < s.channels; ++c) {
      const int64_t plane = ElementIndex(p.input, px.n, c, 0, 0);
      T sum = 0;
#pragma unroll
      for (int ky = 0; ky < K; ++ky) {
#pragma unroll
        for (int kx = 0; kx < K; ++kx) {
          if (!y.valid[ky] || !x.valid[kx]) continue;
          const int64_t at = plane + y.index[ky] * p.input.strides[2] + x.index[kx] * p.input.strides[3];
          sum += (y.weight[ky] * x.weight[kx]) * cuda::Load<Storage>(p.input.desc, at);
        }
      }
      cuda::Store<Storage>(p.out.desc, ElementIndex(p.out, px.n, c, px.h, px.w), sum);
    }
  }
}

template <class Storage, int K>
__global__ void __launch_bounds__(kThreads)
    GridGradKernel(const BackwardParams p, const PixelTiles tiles, bool nearest) {
  using T = cuda::ComputeType<Storage>;
  const SamplerShape& s = p.shape;
  for (int64_t index = cuda::GridStart(); index < tiles.count; index += cuda::GridStride()) {
    Pixel px;
    if (!TiledPixel(s, tiles, index, &px)) continue;
    T grad_x = 0;
    T grad_y = 0;
    if (!nearest) {
      AxisTaps<T, K> x, y;
      PixelTaps<Storage, K>(s, p.modes, p.grid, px.n, px.h, px.w, &x, &y);
      for (int64_t c = 0; c < s.channels; ++c) {
        const int64_t plane = ElementIndex(p.input, px.n, c, 0, 0);
        T dx = 0;
        T dy = 0;
#pragma unroll
        for (int ky = 0; ky < K; ++ky) {
#pragma unroll
          for (int kx = 0; kx < K; ++kx) {
            if (!y.valid[ky] || !x.valid[kx]) continue;
            const T v = cuda::Load<Storage>(
                p.input.desc, plane + y.index[ky] * p.input.strides[2] + x.index[kx] * p.input.strides[3]);
            dx += (y.weight[ky] * x.dweight[kx]) * v;
            dy += (y.dweight[ky] * x.weight[kx]) * v;
          }
        }
        const T g = cuda::Load<Storage>(p.grad_output.desc, ElementIndex(p.grad_output, px.n, c, px.h, px.w));
        grad_x += g * dx;
        grad_y += g * dy;
      }
    }
    const int64_t at = ElementIndex(p.grid_grad, px.n, px.h, px.w, 0);
    cuda::Store<Storage>(p.grid_grad.desc, at, grad_x);
    cuda::Store<Storage>(p.grid_grad.desc, at + p.grid_grad.strides[3], grad_y);
  }
}

// Step 1 of the deterministic inputGrad: every tap's key, id and weight.
template <class Storage, int K>
__global__ void __launch_bounds__(kThreads)
    ListTapsKernel(const BackwardParams p, int64_t pixels, uint64_t* keys, int64_t* tap_ids,
                   cuda::ComputeType<Storage>* weights) {
  using T = cuda::ComputeType<Storage>;
  const SamplerShape& s = p.shape;
  const uint64_t sentinel = static_cast<uint64_t>(s.batch * s.in_height * s.in_width);
  for (int64_t index = cuda::GridStart(); index < pixels; index += cuda::GridStride()) {
    const Pixel px = PixelOf(s, index);
    AxisTaps<T, K> x, y;
    PixelTaps<Storage, K>(s, p.modes, p.grid, px.n, px.h, px.w, &x, &y);
#pragma unroll
    for (int ky = 0; ky < K; ++ky) {
#pragma unroll
      for (int kx = 0; kx < K; ++kx) {
        const int64_t e = index * (K * K) + ky * K + kx;
        const bool valid = y.valid[ky] && x.valid[kx];
        keys[e] = valid ? static_cast<uint64_t>((px.n * s.in_height + y.index[ky]) * s.in_width + x.index[kx])
                        : sentinel;
        tap_ids[e] = e;
        weights[e] = valid ? y.weight[ky] * x.weight[kx] : T(0);
      }
    }
  }
}

// Step 4: inputGrad(n, c, iy, ix) = the sum of its taps' weight * gradOutput, in sorted (ascending tap id) order.
// A thread takes one input element (n, iy, ix) and a group of kGatherChannels channels: its taps' gradOutput
// offsets and weights are worked out once for the group (kGatherTapChunk at a time, in registers) instead of once
// per channel, which had each thread re-read its tap ids and weights and divide 64-bit indices for every channel.
// Each channel's sum still takes its taps in ascending order, so the bits are those of a thread per channel.
constexpr int kGatherChannels = 16;
constexpr int kGatherTapChunk = 4;

__host__ __device__ inline int64_t GatherChannelGroups(int64_t channels) {
  return (channels + kGatherChannels - 1) / kGatherChannels;
}

template <class Storage, int K>
__global__ void __launch_bounds__(kThreads)
    GatherInputGradKernel(const BackwardParams p, int64_t count, const int64_t* sorted_tap_ids,
                          const cuda::ComputeType<Storage>* weights, const int64_t* segment_starts) {
  using T = cuda::ComputeType<Storage>;
  const SamplerShape& s = p.shape;
  const SamplerOperand& dy = p.grad_output;
  const int64_t out_pixels = s.out_height * s.out_width;
  const int64_t groups = GatherChannelGroups(s.channels);
  for (int64_t index = cuda::GridStart(); index < count; index += cuda::GridStride()) {
    const int64_t ix = index % s.in_width;
    int64_t rest = index / s.in_width;
    const int64_t iy = rest % s.in_height;
    rest /= s.in_height;
    const int64_t first_channel = rest % groups * kGatherChannels;
    const int64_t n = rest / groups;
    const int64_t channels_here =
        s.channels - first_channel < kGatherChannels ? s.channels - first_channel : kGatherChannels;
    const int64_t key = (n * s.in_height + iy) * s.in_width + ix;
    // Element index of gradOutput(n, first_channel, 0, 0).
    const int64_t group_base = ElementIndex(dy, n, first_channel, 0, 0);
    T sums[kGatherChannels];
#pragma unroll
    for (int j = 0; j < kGatherChannels; ++j) sums[j] = 0;
    const int64_t end = segment_starts[key + 1];
    for (int64_t chunk = segment_starts[key]; chunk < end; chunk += kGatherTapChunk) {
      const int64_t taps = end - chunk < kGatherTapChunk ? end - chunk : kGatherTapChunk;
      int64_t offsets[kGatherTapChunk];  // of the tap's pixel from gradOutput(n, c, 0, 0)
      T tap_weights[kGatherTapChunk];
#pragma unroll
      for (int t = 0; t < kGatherTapChunk; ++t) {
        offsets[t] = 0;
        tap_weights[t] = 0;
        if (t < taps) {
          const int64_t e = sorted_tap_ids[chunk + t];
          const int64_t pixel = e / (K * K) - n * out_pixels;  // the tap's output pixel within image n
          const int64_t h = pixel / s.out_width;
          const int64_t w = pixel - h * s.out_width;
          offsets[t] = h * dy.strides[2] + w * dy.strides[3];
          tap_weights[t] = weights[e];
        }
      }
#pragma unroll
      for (int j = 0; j < kGatherChannels; ++j) {
        if (j < channels_here) {
          const int64_t plane = group_base + j * dy.strides[1];
#pragma unroll
          for (int t = 0; t < kGatherTapChunk; ++t) {
            if (t < taps) sums[j] += tap_weights[t] * cuda::Load<Storage>(dy.desc, plane + offsets[t]);
          }
        }
      }
    }
#pragma unroll
    for (int j = 0; j < kGatherChannels; ++j) {
      if (j < channels_here) {
        cuda::Store<Storage>(p.input_grad.desc, ElementIndex(p.input_grad, n, first_channel + j, iy, ix), sums[j]);
      }
    }
  }
}

// The atomic inputGrad: accumulator[n][c][iy][ix] += weight * gradOutput.
template <class Storage, int K>
__global__ void __launch_bounds__(kThreads)
    ScatterInputGradKernel(const BackwardParams p, int64_t pixels, cuda::ComputeType<Storage>* accumulator) {
  using T = cuda::ComputeType<Storage>;
  const SamplerShape& s = p.shape;
  for (int64_t index = cuda::GridStart(); index < pixels; index += cuda::GridStride()) {
    const Pixel px = PixelOf(s, index);
    AxisTaps<T, K> x, y;
    PixelTaps<Storage, K>(s, p.modes, p.grid, px.n, px.h, px.w, &x, &y);
    for (int64_t c = 0; c < s.channels; ++c) {
      const T g = cuda::Load<Storage>(p.grad_output.desc, ElementIndex(p.grad_output, px.n, c, px.h, px.w));
      T* plane = accumulator + (px.n * s.channels + c) * s.in_height * s.in_width;
#pragma unroll
      for (int ky = 0; ky < K; ++ky) {
#pragma unroll
        for (int kx = 0; kx < K; ++kx) {
          if (!y.valid[ky] || !x.valid[kx]) continue;
          atomicAdd(plane + y.index[ky] * s.in_width + x.index[kx], (y.weight[ky] * x.weight[kx]) * g);
        }
      }
    }
  }
}

// inputGrad = the accumulator (0 everywhere when it is null).
template <class Storage>
__global__ void __launch_bounds__(kThreads)
    StoreInputGradKernel(const BackwardParams p, int64_t count, const cuda::ComputeType<Storage>* accumulator) {
  const SamplerShape& s = p.shape;
  for (int64_t index = cuda::GridStart(); index < count; index += cuda::GridStride()) {
    const int64_t ix = index % s.in_width;
    int64_t rest = index / s.in_width;
    const int64_t iy = rest % s.in_height;
    rest /= s.in_height;
    const int64_t c = rest % s.channels;
    const int64_t n = rest / s.channels;
    const cuda::ComputeType<Storage> zero = 0;
    cuda::Store<Storage>(p.input_grad.desc, ElementIndex(p.input_grad, n, c, iy, ix),
                         accumulator != nullptr ? accumulator[index] : zero);
  }
}

int TapsPerAxis(Interpolation interpolation) {
  switch (interpolation) {
    case Interpolation::kNearest:
      return 1;
    case Interpolation::kBicubic:
      return 4;
    default:
      return 2;
  }
}

// Calls fn(std::integral_constant<int, K>{}) for the interpolation's taps per axis.
template <class Fn>
aclnnStatus DispatchTaps(Interpolation interpolation, Fn&& fn) {
  switch (TapsPerAxis(interpolation)) {
    case 1:
      return fn(std::integral_constant<int, 1>{});
    case 4:
      return fn(std::integral_constant<int, 4>{});
    default:
      return fn(std::integral_constant<int, 2>{});
  }
}

size_t ComputeBytes(aclDataType dtype) { return dtype == ACL_DOUBLE ? 8 : 4; }

// The tap count E, or -1 when it overflows.
int64_t TapCount(const BackwardParams& params) {
  const SamplerShape& s = params.shape;
  const int64_t k = TapsPerAxis(params.modes.interpolation);
  const int64_t limit = int64_t{1} << 56;  // 36 bytes of workspace each stays below 2^62
  int64_t count = k * k;
  for (int64_t dim : {s.batch, s.out_height, s.out_width}) {
    if (dim != 0 && count > limit / dim) return -1;
    count *= dim;
  }
  return count;
}

// The workspace layouts (grid_sampler2d_cuda.h), from the parameters (and, in phase 1, CUB's scratch size on the
// device): phase 1 sizes the workspace with them, phase 2 finds its arrays.
CudaWorkspacePlan DeterministicPlan(const BackwardParams& params, DeviceQuery query) {
  CudaWorkspacePlan plan;
  if (!params.want_input_grad) return plan;
  const SamplerShape& s = params.shape;
  const uint64_t taps = static_cast<uint64_t>(TapCount(params));
  const uint64_t compute_bytes = ComputeBytes(params.input.desc.dtype);
  plan.tap_count = static_cast<int64_t>(taps);
  WorkspaceLayout layout;
  plan.keys = layout.Reserve(SaturatingMul(2 * taps, sizeof(uint64_t)));
  plan.tap_ids = layout.Reserve(SaturatingMul(2 * taps, sizeof(int64_t)));
  plan.weights = layout.Reserve(SaturatingMul(taps, compute_bytes));
  const uint64_t elements = static_cast<uint64_t>(s.batch * s.in_height * s.in_width);
  plan.segment_starts = layout.Reserve(SaturatingMul(SaturatingAdd(elements, 1), sizeof(int64_t)));
  // Last (see DeviceQuery). Keys are at most `elements`, the sentinel of invalid taps.
  plan.sort_scratch = layout.Reserve(
      query == DeviceQuery::kAsk ? cuda::SortScratchBytes<uint64_t, int64_t>(plan.tap_count, elements) : 0);
  plan.bytes = layout.TotalBytes();
  return plan;
}

CudaWorkspacePlan AtomicPlan(const BackwardParams& params) {
  CudaWorkspacePlan plan;
  if (!params.want_input_grad) return plan;
  const SamplerShape& s = params.shape;
  WorkspaceLayout layout;
  const uint64_t images = SaturatingMul(static_cast<uint64_t>(s.batch), static_cast<uint64_t>(s.channels));
  const uint64_t elements = SaturatingMul(images, static_cast<uint64_t>(s.in_height * s.in_width));
  plan.accumulator = layout.Reserve(SaturatingMul(elements, ComputeBytes(params.input.desc.dtype)));
  plan.bytes = layout.TotalBytes();
  return plan;
}

// The deterministic inputGrad: steps 1 to 4 of the NOTE.
template <class Storage, int K>
aclnnStatus DeterministicInputGrad(const BackwardParams& p, const KernelContext& context, cudaStream_t stream) {
  using T = cuda::ComputeType<Storage>;
  const CudaWorkspacePlan plan = DeterministicPlan(p, DeviceQuery::kSkip);
  void* workspace = context.workspace;
  const SamplerShape& s = p.shape;
  const int64_t pixels = s.batch * s.out_height * s.out_width;
  const int64_t elements = s.batch * s.in_height * s.in_width;
  const int64_t taps = plan.tap_count;
  uint64_t* keys = cuda::WorkspaceArray<uint64_t>(workspace, plan.keys);
  int64_t* tap_ids = cuda::WorkspaceArray<int64_t>(workspace, plan.tap_ids);
  T* weights = cuda::WorkspaceArray<T>(workspace, plan.weights);
  int64_t* segment_starts = cuda::WorkspaceArray<int64_t>(workspace, plan.segment_starts);

  ListTapsKernel<Storage, K><<<cuda::GridBlocks(pixels, kThreads), kThreads, 0, stream>>>(p, pixels, keys, tap_ids,
                                                                                         weights);
  if (aclnnStatus status = cuda::LaunchStatus(kBackwardName, "listing the taps")) return status;
  cub::DoubleBuffer<uint64_t> sort_keys(keys, keys + taps);
  cub::DoubleBuffer<int64_t> sort_ids(tap_ids, tap_ids + taps);
  // Keys are at most `elements` (the sentinel of invalid taps).
  if (aclnnStatus status =
          cuda::StableSortPairs(kBackwardName, "the taps", &sort_keys, &sort_ids, taps, static_cast<uint64_t>(elements),
                                cuda::SortScratchInWorkspace(context, plan.sort_scratch), stream)) {
    return status;
  }
  cuda::SegmentStartsKernel<<<cuda::GridBlocks(elements + 1, kThreads), kThreads, 0, stream>>>(
      sort_keys.Current(), taps, elements, segment_starts);
  const int64_t count = elements * GatherChannelGroups(s.channels);
  GatherInputGradKernel<Storage, K><<<cuda::GridBlocks(count, kThreads), kThreads, 0, stream>>>(
      p, count, sort_ids.Current(), weights, segment_starts);
  return cuda::LaunchStatus(kBackwardName, "gathering inputGrad");
}

template <class Storage, int K>
aclnnStatus AtomicInputGrad(const BackwardParams& p, void* workspace, cudaStream_t stream) {
  using T = cuda::ComputeType<Storage>;
  const SamplerShape& s = p.shape;
  const int64_t pixels = s.batch * s.out_height * s.out_width;
  const int64_t count = s.batch * s.channels * s.in_height * s.in_width;
  T* accumulator = cuda::WorkspaceArray<T>(workspace, AtomicPlan(p).accumulator);
  const cudaError_t zeroed = cudaMemsetAsync(accumulator, 0, static_cast<size_t>(count) * sizeof(T), stream);
  if (zeroed != cudaSuccess) return cuda::LaunchStatus(kBackwardName, "zeroing the accumulator");
  ScatterInputGradKernel<Storage, K><<<cuda::GridBlocks(pixels, kThreads), kThreads, 0, stream>>>(p, pixels,
                                                                                                 accumulator);
  StoreInputGradKernel<Storage><<<cuda::GridBlocks(count, kThreads), kThreads, 0, stream>>>(p, count, accumulator);
  return cuda::LaunchStatus(kBackwardName, "scattering inputGrad");
}

aclnnStatus RunBackward(const BackwardParams& p, const KernelContext& context, bool deterministic) {
  if (aclnnStatus status = cuda::Activate(kBackwardName, context)) return status;
  const SamplerShape& s = p.shape;
  const int64_t pixels = s.batch * s.out_height * s.out_width;
  const int64_t input_elements = s.batch * s.channels * s.in_height * s.in_width;
  const cudaStream_t stream = cuda::StreamOf(context);
  return cuda::DispatchFloating</*kWithDouble=*/true>(kBackwardName, p.input.desc.dtype, [&](auto storage) {
    using Storage = decltype(storage);
    return DispatchTaps(p.modes.interpolation, [&](auto taps_per_axis) -> aclnnStatus {
      constexpr int K = decltype(taps_per_axis)::value;
      if (p.want_grid_grad && pixels > 0) {
        const PixelTiles tiles = TilesOf(s);
        GridGradKernel<Storage, K><<<cuda::GridBlocks(tiles.count, kThreads), kThreads, 0, stream>>>(
            p, tiles, p.modes.interpolation == Interpolation::kNearest);
        if (aclnnStatus status = cuda::LaunchStatus(kBackwardName, "gridGrad")) return status;
      }
      if (!p.want_input_grad || input_elements == 0) return ACLNN_SUCCESS;
      if (pixels == 0) {
        // No tap lands anywhere: inputGrad is 0. (The gather writes every element; so does this.)
        using T = cuda::ComputeType<Storage>;
        StoreInputGradKernel<Storage><<<cuda::GridBlocks(input_elements, kThreads), kThreads, 0, stream>>>(
            p, input_elements, static_cast<const T*>(nullptr));
        return cuda::LaunchStatus(kBackwardName, "zero inputGrad");
      }
      return deterministic ? DeterministicInputGrad<Storage, K>(p, context, stream)
                           : AtomicInputGrad<Storage, K>(p, context.workspace, stream);
    });
  });
}

}  // namespace

aclnnStatus RunForwardCuda(const ForwardParams& p, const KernelContext& context) {
  if (aclnnStatus status = cuda::Activate(kForwardName, context)) return status;
  const int64_t pixels = p.shape.batch * p.shape.out_height * p.shape.out_width;
  if (pixels == 0 || p.shape.channels == 0) return ACLNN_SUCCESS;
  const cudaStream_t stream = cuda::StreamOf(context);
  return cuda::DispatchFloating</*kWithDouble=*/true>(kForwardName, p.input.desc.dtype, [&](auto storage) {
    using Storage = decltype(storage);
    return DispatchTaps(p.modes.interpolation, [&](auto taps_per_axis) {
      constexpr int K = decltype(taps_per_axis)::value;
      const PixelTiles tiles = TilesOf(p.shape);
      ForwardKernel<Storage, K><<<cuda::GridBlocks(tiles.count, kThreads), kThreads, 0, stream>>>(p, tiles);
      return cuda::LaunchStatus(kForwardName, "kernel launch");
    });
  });
}

bool SupportsBackwardCuda(const BackwardParams& params) { return TapCount(params) >= 0; }

uint64_t PlanBackwardCudaDeterministic(BackwardParams* params) {
  return DeterministicPlan(*params, DeviceQuery::kAsk).bytes;
}

uint64_t PlanBackwardCudaAtomic(BackwardParams* params) { return AtomicPlan(*params).bytes; }

aclnnStatus RunBackwardCudaDeterministic(const BackwardParams& params, const KernelContext& context) {
  return RunBackward(params, context, /*deterministic=*/true);
}

aclnnStatus RunBackwardCudaAtomic(const BackwardParams& params, const KernelContext& context) {
  return RunBackward(params, context, /*deterministic=*/false);
}

}  // namespace pacl::grid_sampler2d
