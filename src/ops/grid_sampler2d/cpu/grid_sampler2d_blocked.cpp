// The channel-blocked fp32 path of the CPU kernels (FLOAT, FLOAT16, BFLOAT16): see the NOTE in
// grid_sampler2d_cpu.cpp. Scalar code around the vector loops of grid_sampler2d_simd.cpp.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "grid_sampler2d/cpu/grid_sampler2d_paths.h"
#include "grid_sampler2d/cpu/grid_sampler2d_taps.h"
#include "pacl/convert.h"
#include "pacl/parallel.h"

namespace pacl::grid_sampler2d {
namespace {

// ---- Channel-blocked fp32 path (FLOAT, FLOAT16, BFLOAT16): see the NOTE ----

// Output pixels per tile of the blocked path: the tile's tap list and its [pixel][lane] buffers stay in L1/L2.
constexpr int64_t kBlockTilePixels = 256;

int64_t ChannelBlocks(const SamplerShape& s) { return (s.channels + kBlockLanes - 1) / kBlockLanes; }

// Elements of one blocked plane [Hin][Win][kBlockLanes].
int64_t BlockedPlaneElements(const SamplerShape& s) { return s.in_height * s.in_width * kBlockLanes; }

// The valid taps of a tile's pixels, pixel-major: pixel q owns [tap_begin[q], tap_begin[q + 1]), in tap order.
// offset is an element offset into a blocked plane. One per thread on the heap (BlockTapsFor).
struct BlockTaps {
  static constexpr int64_t kMaxTaps = kBlockTilePixels * 16;  // bicubic: 4 x 4 taps per pixel at most
  int64_t count = 0;
  int32_t tap_begin[kBlockTilePixels + 1];
  int64_t offset[kMaxTaps];
  float weight[kMaxTaps];
  float grad_x_weight[kMaxTaps];
  float grad_y_weight[kMaxTaps];
  float xs[kBlockTilePixels];
  float ys[kBlockTilePixels];
  alignas(64) float lanes[kBlockTilePixels * kBlockLanes];  // [pixel][lane]: gradOutput or out of one block
  float rows[kBlockLanes * kBlockTilePixels];  // [lane][pixel]: channel rows (before RowsToLines, after LinesToRows)
};

BlockTaps& BlockTapsFor() {
  thread_local std::unique_ptr<BlockTaps> taps;
  if (!taps) taps.reset(new BlockTaps);
  return *taps;
}

// Reads grid[n, pixels [begin, end)] and lists the taps of each pixel (the same per-axis taps as the plane path).
template <int K>
void ListBlockTaps(const SamplerShape& shape, const SamplerModes& modes, const SamplerOperand& grid, int64_t n,
                   int64_t begin, int64_t end, bool want_grad_weights, BlockTaps* taps) {
  const int64_t count = end - begin;
  taps->count = count;
  ForEachRowSegment(begin, end, shape.out_width, [&](int64_t h, int64_t w, int64_t at, int64_t length) {
    LoadAsFloat(grid.desc.dtype, ElementAt(grid, n, h, w, 0), grid.strides[2], taps->xs + at, length);
    LoadAsFloat(grid.desc.dtype, ElementAt(grid, n, h, w, 1), grid.strides[2], taps->ys + at, length);
  });
  const Axis<float> x_axis(shape.in_width, modes);
  const Axis<float> y_axis(shape.in_height, modes);
  int32_t t = 0;
  for (int64_t q = 0; q < count; ++q) {
    taps->tap_begin[q] = t;
    AxisTaps<float, K> tx, ty;
    ComputeTaps(x_axis, taps->xs[q], &tx);
    ComputeTaps(y_axis, taps->ys[q], &ty);
    for (int j = 0; j < K; ++j) {
      if (!ty.valid[j]) continue;
      for (int i = 0; i < K; ++i) {
        if (!tx.valid[i]) continue;
        taps->offset[t] = (ty.index[j] * shape.in_width + tx.index[i]) * kBlockLanes;
        taps->weight[t] = tx.weight[i] * ty.weight[j];
        if (want_grad_weights) {
          taps->grad_x_weight[t] = tx.dweight[i] * ty.weight[j];
          taps->grad_y_weight[t] = tx.weight[i] * ty.dweight[j];
        }
        ++t;
      }
    }
  }
  taps->tap_begin[count] = t;
}

// Copies input rows (any float dtype, any strides) into the blocked fp32 layout [N][blocks][Hin][Win][lanes],
// padding channels zero: blocked rows [row_begin, row_end), row r = (n * blocks + block) * Hin + h, where blocked
// holds the rows from first_row on.
void CopyInputBlockedRows(const SamplerShape& s, const SamplerOperand& input, int64_t row_begin, int64_t row_end,
                          int64_t first_row, float* blocked, BlockTaps& buffers) {
  const int64_t blocks = ChannelBlocks(s);
  for (int64_t r = row_begin; r < row_end; ++r) {
    const int64_t nb = r / s.in_height;
    const int64_t h = r - nb * s.in_height;
    const int64_t n = nb / blocks;
    const int64_t c0 = (nb - n * blocks) * kBlockLanes;
    float* dst = blocked + (r - first_row) * s.in_width * kBlockLanes;
    const int64_t lanes = std::min(kBlockLanes, s.channels - c0);
    std::fill(buffers.rows + lanes * kBlockTilePixels, buffers.rows + kBlockLanes * kBlockTilePixels, 0.0f);
    for (int64_t w0 = 0; w0 < s.in_width; w0 += kBlockTilePixels) {
      const int64_t count = std::min(kBlockTilePixels, s.in_width - w0);
      for (int64_t lane = 0; lane < lanes; ++lane) {
        LoadAsFloat(input.desc.dtype, ElementAt(input, n, c0 + lane, h, w0), input.strides[3],
                    buffers.rows + lane * kBlockTilePixels, count);
      }
      simd::RowsToLines(buffers.rows, kBlockTilePixels, count, dst + w0 * kBlockLanes);
    }
  }
}

// The blocked input of images [n_begin, n_end) into blocked, in chunks of blocked rows.
void CopyInputBlocked(const SamplerShape& s, const SamplerOperand& input, int64_t n_begin, int64_t n_end,
                      float* blocked) {
  const int64_t rows_per_image = ChannelBlocks(s) * s.in_height;
  const int64_t first_row = n_begin * rows_per_image;
  ParallelFor((n_end - n_begin) * rows_per_image, 16, [&](int64_t row_begin, int64_t row_end) {
    CopyInputBlockedRows(s, input, first_row + row_begin, first_row + row_end, first_row, blocked, BlockTapsFor());
  });
}

// Blocked fp32 inputGrad sums of block [c0, c0 + 16) of image n -> inputGrad's dtype and strides. Each piece of a
// row is transposed into the [lane][pixel] buffer (writing straight into 16 channel rows of the tensor would alias
// in L1 like the gathers above), then copied out channel by channel: an inputGrad of at least kStreamMinBytes with
// unit stride along W with non-temporal stores (it cannot stay in cache for the caller anyway, and the stores need
// not fetch the lines first), a smaller unit-stride FLOAT one with memcpy.
void WriteInputGradPlane(const BackwardParams& p, int64_t n, int64_t c0, const float* plane, BlockTaps& buffers) {
  const SamplerShape& s = p.shape;
  const TensorDesc& input_grad = p.input_grad.desc;
  const bool stream = p.input_grad.strides[3] == 1 && WorthStreaming(input_grad);
  const bool direct = input_grad.dtype == ACL_FLOAT && p.input_grad.strides[3] == 1;
  const int64_t lanes = std::min(kBlockLanes, s.channels - c0);
  const int64_t plane_pixels = s.in_height * s.in_width;
  for (int64_t h = 0; h < s.in_height; ++h) {
    for (int64_t w0 = 0; w0 < s.in_width; w0 += kBlockTilePixels) {
      const int64_t count = std::min(kBlockTilePixels, s.in_width - w0);
      const int64_t first = h * s.in_width + w0;
      simd::LinesToRows
      (plane + first * kBlockLanes, count, plane_pixels - first, buffers.rows, kBlockTilePixels);
      for (int64_t lane = 0; lane < lanes; ++lane) {
        const float* row = buffers.rows + lane * kBlockTilePixels;
        char* dst = ElementAt(p.input_grad, n, c0 + lane, h, w0);
        if (stream) {
          StreamFromFloat(row, input_grad.dtype, dst, count);
        } else if (direct) {
          std::memcpy(dst, row, static_cast<size_t>(count) * sizeof(float));
        } else {
          StoreFromFloat(row, input_grad.dtype, dst, p.input_grad.strides[3], count);
        }
      }
    }
  }
  if (stream) FinishStreamedStores();
}

// Forward, in passes of p.workspace.images_per_pass images (fixed in phase 1 by the shape): copy the pass's
// images into the blocked workspace, then sample them. A pass's copy stays small enough to remain in the
// last-level cache for the sampling, and the workspace holds one pass, not the whole input.
template <int K>
void RunForwardBlocked(const ForwardParams& p, void* workspace) {
  const SamplerShape& s = p.shape;
  float* blocked = WorkspaceArray<float>(workspace, p.workspace.input_copy);
  const int64_t blocks = ChannelBlocks(s);
  const int64_t plane = BlockedPlaneElements(s);
  const int64_t pixels = s.out_height * s.out_width;
  const int64_t tiles = (pixels + kBlockTilePixels - 1) / kBlockTilePixels;
  // An output too large to stay in cache, with unit stride along W, is written with non-temporal stores (its lines
  // are then not read first).
  const bool stream_out = p.out.strides[3] == 1 && WorthStreaming(p.out.desc);
  const int64_t images_per_pass = std::max<int64_t>(1, p.workspace.images_per_pass);
  for (int64_t n_begin = 0; n_begin < s.batch; n_begin += images_per_pass) {
    const int64_t n_end = std::min(s.batch, n_begin + images_per_pass);
    CopyInputBlocked(s, p.input, n_begin, n_end, blocked);
    ParallelFor((n_end - n_begin) * tiles, 1, [&](int64_t task_begin, int64_t task_end) {
      BlockTaps& taps = BlockTapsFor();
      for (int64_t task = task_begin; task < task_end; ++task) {
        const int64_t image = task / tiles;  // within the pass
        const int64_t n = n_begin + image;
        const int64_t begin = (task - image * tiles) * kBlockTilePixels;
        const int64_t end = std::min(begin + kBlockTilePixels, pixels);
        const int64_t count = end - begin;
        ListBlockTaps<K>(s, p.modes, p.grid, n, begin, end, false, &taps);
        for (int64_t b = 0; b < blocks; ++b) {
          simd::SampleBlock
          (blocked + (image * blocks + b) * plane, taps.offset, taps.weight, taps.tap_begin, count, taps.lanes);
          // [pixel][lane] -> [lane][pixel] by 4 x 4 transposes, then each channel's row pieces are copied out (a
          // strided scalar read of each lane straight into out took 28% of the forward).
          simd::LinesToRows(taps.lanes, count, count, taps.rows, kBlockTilePixels);
          const int64_t c0 = b * kBlockLanes;
          const int64_t lanes = std::min(kBlockLanes, s.channels - c0);
          for (int64_t lane = 0; lane < lanes; ++lane) {
            const float* row = taps.rows + lane * kBlockTilePixels;
            ForEachRowSegment(begin, end, s.out_width, [&](int64_t h, int64_t w, int64_t at, int64_t length) {
              StoreOrStreamFromFloat(row + at, p.out.desc.dtype, ElementAt(p.out, n, c0 + lane, h, w),
                                     p.out.strides[3], length, stream_out);
            });
          }
        }
      }
      if (stream_out) FinishStreamedStores();
    });
  }
}

// Writes gridGrad[n, pixels [begin, end)] from x and y sums (fp32).
void StoreGridGradFloat(const BackwardParams& p, int64_t n, int64_t begin, int64_t end, const float* gx,
                        const float* gy) {
  ForEachRowSegment(begin, end, p.shape.out_width, [&](int64_t h, int64_t w, int64_t at, int64_t length) {
    StoreFromFloat(gx + at, p.grid_grad.desc.dtype, ElementAt(p.grid_grad, n, h, w, 0), p.grid_grad.strides[2],
                   length);
    StoreFromFloat(gy + at, p.grid_grad.desc.dtype, ElementAt(p.grid_grad, n, h, w, 1), p.grid_grad.strides[2],
                   length);
  });
}

// The workspace arrays of the backward (null when not needed): blocked input copy, blocked inputGrad sums, and
// the blocks' gridGrad partials [block][n][pixel][x, y].
struct BackwardBlockedPlanes {
  float* input = nullptr;
  float* input_grad = nullptr;
  float* partials = nullptr;
};

// Blocks [b_begin, b_end) of image n: zero their inputGrad sums and copy their input blocks, then per tile list
// the taps once and run every block on them (each block's sums in the same order as if it ran alone), then write
// the blocks' inputGrad.
template <int K>
void BackwardImageBlocks(const BackwardParams& p, const BackwardBlockedPlanes& planes, int64_t n, int64_t b_begin,
                         int64_t b_end, BlockTaps& taps) {
  const SamplerShape& s = p.shape;
  const int64_t pixels = s.out_height * s.out_width;
  const int64_t blocks = ChannelBlocks(s);
  const int64_t plane = BlockedPlaneElements(s);
  const bool gather = planes.input != nullptr;
  const bool scatter = planes.input_grad != nullptr;
  for (int64_t b = b_begin; b < b_end; ++b) {
    const int64_t nb = n * blocks + b;
    if (scatter) std::fill(planes.input_grad + nb * plane, planes.input_grad + (nb + 1) * plane, 0.0f);
    if (gather) CopyInputBlockedRows(s, p.input, nb * s.in_height, (nb + 1) * s.in_height, 0, planes.input, taps);
  }
  for (int64_t begin = 0; begin < pixels; begin += kBlockTilePixels) {
    const int64_t end = std::min(begin + kBlockTilePixels, pixels);
    const int64_t count = end - begin;
    ListBlockTaps<K>(s, p.modes, p.grid, n, begin, end, gather, &taps);
    for (int64_t b = b_begin; b < b_end; ++b) {
      const int64_t nb = n * blocks + b;
      const int64_t c0 = b * kBlockLanes;
      const int64_t lanes = std::min(kBlockLanes, s.channels - c0);
      // gradOutput of the block's channels, transposed to [pixel][lane]; rows of missing channels (C not a
      // multiple of 16) read as 0.
      for (int64_t lane = 0; lane < lanes; ++lane) {
        float* row = taps.rows + lane * kBlockTilePixels;
        ForEachRowSegment(begin, end, s.out_width, [&](int64_t h, int64_t w, int64_t at, int64_t length) {
          LoadAsFloat(p.grad_output.desc.dtype, ElementAt(p.grad_output, n, c0 + lane, h, w),
                      p.grad_output.strides[3], row + at, length);
        });
      }
      std::fill(taps.rows + lanes * kBlockTilePixels, taps.rows + kBlockLanes * kBlockTilePixels, 0.0f);
      simd::RowsToLines(taps.rows, kBlockTilePixels, count, taps.lanes);
      simd::BackwardBlock
      (gather ? planes.input + nb * plane : nullptr, scatter ? planes.input_grad + nb * plane : nullptr, taps.offset,
       taps.weight, taps.grad_x_weight, taps.grad_y_weight, taps.tap_begin, taps.lanes, count,
       gather ? planes.partials + ((b * s.batch + n) * pixels + begin) * 2 : nullptr);
    }
  }
  if (scatter) {
    for (int64_t b = b_begin; b < b_end; ++b) {
      WriteInputGradPlane(p, n, b * kBlockLanes, planes.input_grad + (n * blocks + b) * plane, taps);
    }
  }
}

template <int K>
void RunBackwardBlocked(const BackwardParams& p, void* workspace) {
  const SamplerShape& s = p.shape;
  const bool nearest = p.modes.interpolation == Interpolation::kNearest;
  const int64_t pixels = s.out_height * s.out_width;
  const int64_t blocks = ChannelBlocks(s);
  // Gathering the input is needed for gridGrad only, and nearest's gridGrad is 0.
  const bool gather = p.want_grid_grad && !nearest && pixels > 0 && blocks > 0;
  const bool scatter = p.want_input_grad && blocks > 0;
  float* blocked_input = nullptr;
  float* blocked_grad = nullptr;
  float* partials = nullptr;  // [block][n][pixel][x, y]
  if (gather) {
    blocked_input = WorkspaceArray<float>(workspace, p.workspace.input_copy);
    partials = WorkspaceArray<float>(workspace, p.workspace.grid_partials);
  }
  if (scatter) blocked_grad = WorkspaceArray<float>(workspace, p.workspace.input_grad_acc);

  if (gather || scatter) {
    BackwardBlockedPlanes planes;
    planes.input = blocked_input;
    planes.input_grad = blocked_grad;
    planes.partials = partials;
    // Consecutive blocks of one image go together when there are enough tasks to keep every thread busy: they
    // share the tile's tap list (what a task covers changes nothing in any result, see the NOTE).
    const int64_t tasks_wanted = 2 * static_cast<int64_t>(NumThreads());
    const int64_t blocks_per_task =
        std::max<int64_t>(1, std::min<int64_t>(blocks, s.batch * blocks / std::max<int64_t>(tasks_wanted, 1)));
    ParallelFor(s.batch * blocks, blocks_per_task, [&](int64_t task_begin, int64_t task_end) {
      BlockTaps& taps = BlockTapsFor();
      int64_t task = task_begin;
      while (task < task_end) {
        const int64_t n = task / blocks;
        const int64_t b_begin = task - n * blocks;
        const int64_t b_end = std::min(blocks, b_begin + (task_end - task));
        BackwardImageBlocks<K>(p, planes, n, b_begin, b_end, taps);
        task += b_end - b_begin;
      }
    });
  }

  if (p.want_grid_grad && pixels > 0) {
    // gridGrad = the blocks' partial sums added in ascending block order (0 for nearest or C == 0).
    const int64_t tiles = (pixels + kBlockTilePixels - 1) / kBlockTilePixels;
    ParallelFor(s.batch * tiles, 4, [&](int64_t task_begin, int64_t task_end) {
      float gx[kBlockTilePixels];
      float gy[kBlockTilePixels];
      for (int64_t task = task_begin; task < task_end; ++task) {
        const int64_t n = task / tiles;
        const int64_t begin = (task - n * tiles) * kBlockTilePixels;
        const int64_t end = std::min(begin + kBlockTilePixels, pixels);
        const int64_t count = end - begin;
        std::fill(gx, gx + count, 0.0f);
        std::fill(gy, gy + count, 0.0f);
        if (gather) {
          for (int64_t b = 0; b < blocks; ++b) {
            const float* partial = partials + ((b * s.batch + n) * pixels + begin) * 2;
            for (int64_t q = 0; q < count; ++q) {
              gx[q] += partial[2 * q];
              gy[q] += partial[2 * q + 1];
            }
          }
        }
        StoreGridGradFloat(p, n, begin, end, gx, gy);
      }
    });
  }

}

}  // namespace

void RunForwardBlockedPath(const ForwardParams& p, void* workspace) {
  switch (p.modes.interpolation) {
    case Interpolation::kNearest:
      return RunForwardBlocked<1>(p, workspace);
    case Interpolation::kBicubic:
      return RunForwardBlocked<4>(p, workspace);
    default:
      return RunForwardBlocked<2>(p, workspace);
  }
}

void RunBackwardBlockedPath(const BackwardParams& p, void* workspace) {
  switch (p.modes.interpolation) {
    case Interpolation::kNearest:
      return RunBackwardBlocked<1>(p, workspace);
    case Interpolation::kBicubic:
      return RunBackwardBlocked<4>(p, workspace);
    default:
      return RunBackwardBlocked<2>(p, workspace);
  }
}

}  // namespace pacl::grid_sampler2d
