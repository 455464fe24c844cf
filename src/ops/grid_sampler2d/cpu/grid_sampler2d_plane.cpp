// The plane path of the CPU kernels (DOUBLE): see the NOTE in grid_sampler2d_cpu.cpp.
#include <algorithm>
#include <cstdint>
#include <memory>

#include "grid_sampler2d/cpu/grid_sampler2d_paths.h"
#include "grid_sampler2d/cpu/grid_sampler2d_taps.h"
#include "pacl/parallel.h"

namespace pacl::grid_sampler2d {
namespace {

// ---- Tile plans ----

template <int K>
constexpr int64_t TilePixels() {
  return K == 4 ? kBicubicTilePixels : kTilePixels;
}

// The K*K taps of each pixel of a tile, [tap][pixel]. A few hundred KiB: one per thread, on the heap (PlanFor).
// Offset: the element offset type (int64_t; the plane path serves DOUBLE only).
template <class T, int K, class Offset>
struct TilePlan {
  static constexpr int kTaps = K * K;
  static constexpr int64_t kPixels = TilePixels<K>();
  int64_t count = 0;
  int64_t padded = 0;                    // count rounded up to kPixelPadding
  uint8_t valid[kTaps][kPixels];         // invalid taps contribute nothing, whatever the values involved
  Offset input_offset[kTaps][kPixels];   // element offsets in an input plane
  int64_t acc_offset[kTaps][kPixels];    // element offsets in an inputGrad accumulator plane (backward)
  T weight[kTaps][kPixels];
  T grad_x_weight[kTaps][kPixels];  // backward with gridGrad
  T grad_y_weight[kTaps][kPixels];
};

// This thread's tile plan (allocated on first use, kept for the thread's life: no allocation per tile or call).
template <class T, int K, class Offset>
TilePlan<T, K, Offset>& PlanFor() {
  thread_local std::unique_ptr<TilePlan<T, K, Offset>> plan;
  if (!plan) plan.reset(new TilePlan<T, K, Offset>);
  return *plan;
}

// Strides (elements) of a channel plane: (H, W).
struct PlaneStrides {
  int64_t h = 0;
  int64_t w = 0;
};

// Reads grid[n, pixels [begin, end)] and fills the plan. Flags choose which arrays are needed.
template <class T, int K, class Offset>
void PlanTile(const SamplerShape& shape, const SamplerModes& modes, const SamplerOperand& grid, int64_t n,
              int64_t begin, int64_t end, bool want_input_offsets, PlaneStrides input_strides, bool want_acc_offsets,
              PlaneStrides acc_strides, bool want_grad_weights, TilePlan<T, K, Offset>* plan) {
  constexpr int kTaps = K * K;
  const int64_t count = end - begin;
  const int64_t padded = (count + kPixelPadding - 1) / kPixelPadding * kPixelPadding;
  plan->count = count;
  plan->padded = padded;
  T xs[TilePlan<T, K, Offset>::kPixels];
  T ys[TilePlan<T, K, Offset>::kPixels];
  const aclDataType dtype = grid.desc.dtype;
  ForEachRowSegment(begin, end, shape.out_width, [&](int64_t h, int64_t w, int64_t at, int64_t length) {
    LoadRow(dtype, ElementAt(grid, n, h, w, 0), grid.strides[2], xs + at, length);
    LoadRow(dtype, ElementAt(grid, n, h, w, 1), grid.strides[2], ys + at, length);
  });
  const Axis<T> x_axis(shape.in_width, modes);
  const Axis<T> y_axis(shape.in_height, modes);
  for (int64_t p = 0; p < count; ++p) {
    AxisTaps<T, K> tx, ty;
    ComputeTaps(x_axis, xs[p], &tx);
    ComputeTaps(y_axis, ys[p], &ty);
    for (int j = 0; j < K; ++j) {
      for (int i = 0; i < K; ++i) {
        const int k = j * K + i;
        plan->valid[k][p] = tx.valid[i] && ty.valid[j];
        if (want_input_offsets) {
          plan->input_offset[k][p] =
              static_cast<Offset>(ty.index[j] * input_strides.h + tx.index[i] * input_strides.w);
        }
        if (want_acc_offsets) plan->acc_offset[k][p] = ty.index[j] * acc_strides.h + tx.index[i] * acc_strides.w;
        plan->weight[k][p] = tx.weight[i] * ty.weight[j];
        if (want_grad_weights) {
          plan->grad_x_weight[k][p] = tx.dweight[i] * ty.weight[j];
          plan->grad_y_weight[k][p] = tx.weight[i] * ty.dweight[j];
        }
      }
    }
  }
  for (int k = 0; k < kTaps; ++k) {
    for (int64_t p = count; p < padded; ++p) {
      plan->valid[k][p] = 0;
      plan->input_offset[k][p] = 0;
      plan->acc_offset[k][p] = 0;
      plan->weight[k][p] = 0;
      plan->grad_x_weight[k][p] = 0;
      plan->grad_y_weight[k][p] = 0;
    }
  }
}

// The input as the kernels gather it: the caller's FLOAT/DOUBLE tensor, or the fp32 workspace copy.
template <class T>
struct InputView {
  const T* base = nullptr;
  int64_t strides[4] = {};
  const T* Plane(int64_t n, int64_t c) const { return base + n * strides[0] + c * strides[1]; }
  PlaneStrides Plane() const { return {strides[2], strides[3]}; }
};

// The inputGrad accumulators: the caller's FLOAT/DOUBLE tensor, or fp32 workspace planes.
template <class T>
struct AccView {
  T* base = nullptr;
  int64_t strides[4] = {};
  T* Plane(int64_t n, int64_t c) const { return base + n * strides[0] + c * strides[1]; }
  PlaneStrides Plane() const { return {strides[2], strides[3]}; }
};


void ContiguousStrides(const SamplerShape& s, int64_t* strides) {
  strides[3] = 1;
  strides[2] = s.in_width;
  strides[1] = s.in_height * s.in_width;
  strides[0] = s.channels * s.in_height * s.in_width;
}

// Converts an fp16/bf16 input into the fp32 workspace copy (contiguous), one (n, c) plane per chunk.
void CopyInputAsFloat(const SamplerShape& s, const SamplerOperand& input, float* copy) {
  const int64_t plane = s.in_height * s.in_width;
  ParallelFor(s.batch * s.channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t nc = begin; nc < end; ++nc) {
      const int64_t n = nc / s.channels;
      const int64_t c = nc - n * s.channels;
      for (int64_t h = 0; h < s.in_height; ++h) {
        LoadAsFloat(input.desc.dtype, ElementAt(input, n, c, h, 0), input.strides[3],
                    copy + nc * plane + h * s.in_width, s.in_width);
      }
    }
  });
}

template <class T>
InputView<T> MakeInputView(const SamplerShape& s, const SamplerOperand& input, void* workspace,
                           int64_t copy_offset) {
  InputView<T> view;
  if (copy_offset >= 0) {
    float* copy = WorkspaceArray<float>(workspace, copy_offset);
    CopyInputAsFloat(s, input, copy);
    view.base = reinterpret_cast<const T*>(copy);  // T is float whenever there is a copy
    ContiguousStrides(s, view.strides);
  } else {
    view.base = reinterpret_cast<const T*>(static_cast<const char*>(input.desc.data)) + input.desc.offset;
    for (int d = 0; d < 4; ++d) view.strides[d] = input.strides[d];
  }
  return view;
}
// ---- Forward ----

template <class T, int K, class Offset>
void ScalarGatherWeighted(const TilePlan<T, K, Offset>& plan, const T* plane, T* values) {
  constexpr int kTaps = K * K;
  for (int64_t q = 0; q < plan.count; ++q) {
    T sum = 0;
    for (int k = 0; k < kTaps; ++k) {
      const T v = plan.valid[k][q] ? plane[plan.input_offset[k][q]] : T(0);
      sum += plan.weight[k][q] * v;
    }
    values[q] = sum;
  }
}

template <class T, int K, class Offset>
void ForwardTile(const ForwardParams& p, const InputView<T>& input, int64_t n, int64_t begin, int64_t end) {
  using Plan = TilePlan<T, K, Offset>;
  Plan& plan = PlanFor<T, K, Offset>();
  PlanTile(p.shape, p.modes, p.grid, n, begin, end, true, input.Plane(), false, PlaneStrides{}, false, &plan);
  T values[Plan::kPixels];
  for (int64_t c = 0; c < p.shape.channels; ++c) {
    const T* plane = input.Plane(n, c);
    ScalarGatherWeighted(plan, plane, values);
    ForEachRowSegment(begin, end, p.shape.out_width, [&](int64_t h, int64_t w, int64_t at, int64_t length) {
      StoreRow(values + at, p.out.desc.dtype, ElementAt(p.out, n, c, h, w), p.out.strides[3], length);
    });
  }
}

template <class T, int K, class Offset>
void RunForwardTiles(const ForwardParams& p, const InputView<T>& input) {
  const SamplerShape& s = p.shape;
  const int64_t pixels = s.out_height * s.out_width;
  constexpr int64_t kTile = TilePixels<K>();
  const int64_t tiles = (pixels + kTile - 1) / kTile;
  ParallelFor(s.batch * tiles, 1, [&](int64_t task_begin, int64_t task_end) {
    for (int64_t task = task_begin; task < task_end; ++task) {
      const int64_t n = task / tiles;
      const int64_t begin = (task - n * tiles) * kTile;
      ForwardTile<T, K, Offset>(p, input, n, begin, std::min(begin + kTile, pixels));
    }
  });
}

template <class T, int K>
void RunForward(const ForwardParams& p, void* workspace) {
  const InputView<T> input = MakeInputView<T>(p.shape, p.input, workspace, p.workspace.input_copy);
  RunForwardTiles<T, K, int64_t>(p, input);
}

// ---- Backward ----

template <class T>
struct BackwardContext {
  InputView<T> input;      // valid when gridGrad is computed (and not nearest)
  AccView<T> acc;          // valid when inputGrad is computed
  bool acc_in_workspace = false;
  T* grid_partials = nullptr;  // [block][n][pixel][2] when there are several blocks
  int64_t blocks = 0;
};

// Zeros the accumulator planes of channels [c0, c1) of image n.
template <class T>
void ZeroAccumulators(const SamplerShape& s, const AccView<T>& acc, int64_t n, int64_t c0, int64_t c1) {
  for (int64_t c = c0; c < c1; ++c) {
    T* plane = acc.Plane(n, c);
    if (acc.strides[3] == 1 && acc.strides[2] == s.in_width) {
      std::memset(static_cast<void*>(plane), 0, static_cast<size_t>(s.in_height * s.in_width) * sizeof(T));
      continue;
    }
    for (int64_t h = 0; h < s.in_height; ++h) {
      for (int64_t w = 0; w < s.in_width; ++w) plane[h * acc.strides[2] + w * acc.strides[3]] = 0;
    }
  }
}

// inputGrad += weight * gradOutput over the taps of one channel of a tile (pixels ascending, taps in order).
template <class T, int K, class Offset>
void ScatterChannel(const TilePlan<T, K, Offset>& plan, const T* grad, T* acc_plane) {
  constexpr int kTaps = K * K;
  for (int64_t q = 0; q < plan.count; ++q) {
    const T g = grad[q];
    for (int k = 0; k < kTaps; ++k) {
      if (plan.valid[k][q]) acc_plane[plan.acc_offset[k][q]] += plan.weight[k][q] * g;
    }
  }
}

// gx/gy += gradOutput * the derivative of the sample, for one channel of a tile.
template <class T, int K, class Offset>
void ScalarGatherGridGrad(const TilePlan<T, K, Offset>& plan, const T* grad, const T* input_plane, T* gx, T* gy) {
  constexpr int kTaps = K * K;
  for (int64_t q = 0; q < plan.count; ++q) {
    T sx = 0, sy = 0;
    for (int k = 0; k < kTaps; ++k) {
      const T v = plan.valid[k][q] ? input_plane[plan.input_offset[k][q]] : T(0);
      sx += plan.grad_x_weight[k][q] * v;
      sy += plan.grad_y_weight[k][q] * v;
    }
    gx[q] += sx * grad[q];
    gy[q] += sy * grad[q];
  }
}

// Writes gridGrad[n, pixels [begin, begin + count)] from x and y partial sums.
template <class T>
void StoreGridGrad(const BackwardParams& p, int64_t n, int64_t begin, int64_t end, const T* gx, const T* gy) {
  ForEachRowSegment(begin, end, p.shape.out_width, [&](int64_t h, int64_t w, int64_t at, int64_t length) {
    StoreRow(gx + at, p.grid_grad.desc.dtype, ElementAt(p.grid_grad, n, h, w, 0), p.grid_grad.strides[2], length);
    StoreRow(gy + at, p.grid_grad.desc.dtype, ElementAt(p.grid_grad, n, h, w, 1), p.grid_grad.strides[2], length);
  });
}

// Task (n, channel block): see the NOTE.
template <class T, int K, class Offset, bool kScatter, bool kGather>
void BackwardTask(const BackwardParams& p, const BackwardContext<T>& ctx, int64_t n, int64_t block) {
  using Plan = TilePlan<T, K, Offset>;
  const SamplerShape& s = p.shape;
  const int64_t c0 = block * p.channels_per_block;
  const int64_t c1 = std::min(s.channels, c0 + p.channels_per_block);
  if (kScatter) ZeroAccumulators(s, ctx.acc, n, c0, c1);

  const int64_t pixels = s.out_height * s.out_width;
  constexpr int64_t kTile = Plan::kPixels;
  Plan& plan = PlanFor<T, K, Offset>();
  T grad[kTile];
  T gx[kTile];
  T gy[kTile];
  for (int64_t begin = 0; begin < pixels; begin += kTile) {
    const int64_t end = std::min(begin + kTile, pixels);
    const int64_t count = end - begin;
    PlanTile(s, p.modes, p.grid, n, begin, end, kGather, ctx.input.Plane(), kScatter, ctx.acc.Plane(), kGather,
             &plan);
    const int64_t padded = plan.padded;
    std::fill(grad + count, grad + padded, T(0));
    if (kGather) {
      std::fill(gx, gx + padded, T(0));
      std::fill(gy, gy + padded, T(0));
    }
    for (int64_t c = c0; c < c1; ++c) {
      ForEachRowSegment(begin, end, s.out_width, [&](int64_t h, int64_t w, int64_t at, int64_t length) {
        LoadRow(p.grad_output.desc.dtype, ElementAt(p.grad_output, n, c, h, w), p.grad_output.strides[3],
                grad + at, length);
      });
      if (kScatter) ScatterChannel(plan, grad, ctx.acc.Plane(n, c));
      if (kGather) {
        const T* input_plane = ctx.input.Plane(n, c);
        ScalarGatherGridGrad(plan, grad, input_plane, gx, gy);
      }
    }
    if (kGather) {
      if (ctx.blocks == 1) {
        StoreGridGrad(p, n, begin, end, gx, gy);
      } else {
        T* partial = ctx.grid_partials + ((block * s.batch + n) * pixels + begin) * 2;
        for (int64_t q = 0; q < count; ++q) {
          partial[2 * q] = gx[q];
          partial[2 * q + 1] = gy[q];
        }
      }
    }
  }

  if (kScatter && ctx.acc_in_workspace) {
    // fp16/bf16 inputGrad: round the fp32 sums once.
    for (int64_t c = c0; c < c1; ++c) {
      const T* plane = ctx.acc.Plane(n, c);
      for (int64_t h = 0; h < s.in_height; ++h) {
        StoreRow(plane + h * s.in_width, p.input_grad.desc.dtype, ElementAt(p.input_grad, n, c, h, 0),
                 p.input_grad.strides[3], s.in_width);
      }
    }
  }
}

// gridGrad = the sum of the blocks' partial sums in ascending block order (0 when there is nothing to sum: nearest,
// or C == 0), over (n, tile) chunks.
template <class T>
void FinishGridGrad(const BackwardParams& p, const BackwardContext<T>& ctx, bool zeros) {
  const SamplerShape& s = p.shape;
  const int64_t pixels = s.out_height * s.out_width;
  const int64_t tiles = (pixels + kTilePixels - 1) / kTilePixels;
  ParallelFor(s.batch * tiles, 1, [&](int64_t task_begin, int64_t task_end) {
    T gx[kTilePixels];
    T gy[kTilePixels];
    for (int64_t task = task_begin; task < task_end; ++task) {
      const int64_t n = task / tiles;
      const int64_t begin = (task - n * tiles) * kTilePixels;
      const int64_t end = std::min(begin + kTilePixels, pixels);
      const int64_t count = end - begin;
      std::fill(gx, gx + count, T(0));
      std::fill(gy, gy + count, T(0));
      if (!zeros) {
        for (int64_t block = 0; block < ctx.blocks; ++block) {
          const T* partial = ctx.grid_partials + ((block * s.batch + n) * pixels + begin) * 2;
          for (int64_t q = 0; q < count; ++q) {
            gx[q] += partial[2 * q];
            gy[q] += partial[2 * q + 1];
          }
        }
      }
      StoreGridGrad(p, n, begin, end, gx, gy);
    }
  });
}

template <class T, int K, class Offset, bool kScatter, bool kGather>
void RunBackwardTasks(const BackwardParams& p, const BackwardContext<T>& ctx) {
  const int64_t tasks = p.shape.batch * ctx.blocks;
  ParallelFor(tasks, 1, [&](int64_t task_begin, int64_t task_end) {
    for (int64_t task = task_begin; task < task_end; ++task) {
      const int64_t n = task / ctx.blocks;
      BackwardTask<T, K, Offset, kScatter, kGather>(p, ctx, n, task - n * ctx.blocks);
    }
  });
}

template <class T, int K, class Offset>
void RunBackwardWithOffsets(const BackwardParams& p, const BackwardContext<T>& ctx, bool scatter, bool gather) {
  if (scatter && gather) {
    RunBackwardTasks<T, K, Offset, true, true>(p, ctx);
  } else if (scatter) {
    RunBackwardTasks<T, K, Offset, true, false>(p, ctx);
  } else if (gather) {
    RunBackwardTasks<T, K, Offset, false, true>(p, ctx);
  }
}

template <class T, int K>
void RunBackward(const BackwardParams& p, void* workspace) {
  const SamplerShape& s = p.shape;
  const bool nearest = p.modes.interpolation == Interpolation::kNearest;
  const int64_t pixels = s.out_height * s.out_width;
  BackwardContext<T> ctx;
  ctx.blocks = s.channels > 0 ? (s.channels + p.channels_per_block - 1) / p.channels_per_block : 0;
  // Gathering the input is needed for gridGrad only, and nearest's gridGrad is 0.
  const bool gather = p.want_grid_grad && !nearest && pixels > 0 && ctx.blocks > 0;
  const bool scatter = p.want_input_grad;
  if (gather) ctx.input = MakeInputView<T>(s, p.input, workspace, p.workspace.input_copy);
  if (scatter) {
    if (p.workspace.input_grad_acc >= 0) {
      ctx.acc.base = reinterpret_cast<T*>(WorkspaceArray<float>(workspace, p.workspace.input_grad_acc));
      ContiguousStrides(s, ctx.acc.strides);
      ctx.acc_in_workspace = true;
    } else {
      ctx.acc.base = reinterpret_cast<T*>(static_cast<char*>(p.input_grad.desc.data)) + p.input_grad.desc.offset;
      for (int d = 0; d < 4; ++d) ctx.acc.strides[d] = p.input_grad.strides[d];
    }
  }
  if (gather && ctx.blocks > 1) ctx.grid_partials = WorkspaceArray<T>(workspace, p.workspace.grid_partials);

  RunBackwardWithOffsets<T, K, int64_t>(p, ctx, scatter, gather);
  if (p.want_grid_grad && pixels > 0 && (!gather || ctx.blocks > 1)) FinishGridGrad(p, ctx, !gather);
}

template <class T>
void RunForwardTyped(const ForwardParams& p, void* workspace) {
  switch (p.modes.interpolation) {
    case Interpolation::kNearest:
      return RunForward<T, 1>(p, workspace);
    case Interpolation::kBicubic:
      return RunForward<T, 4>(p, workspace);
    default:
      return RunForward<T, 2>(p, workspace);
  }
}

template <class T>
void RunBackwardTyped(const BackwardParams& p, void* workspace) {
  switch (p.modes.interpolation) {
    case Interpolation::kNearest:
      return RunBackward<T, 1>(p, workspace);
    case Interpolation::kBicubic:
      return RunBackward<T, 4>(p, workspace);
    default:
      return RunBackward<T, 2>(p, workspace);
  }
}

}  // namespace

void RunForwardPlanePath(const ForwardParams& p, void* workspace) { RunForwardTyped<double>(p, workspace); }

void RunBackwardPlanePath(const BackwardParams& p, void* workspace) { RunBackwardTyped<double>(p, workspace); }

}  // namespace pacl::grid_sampler2d
