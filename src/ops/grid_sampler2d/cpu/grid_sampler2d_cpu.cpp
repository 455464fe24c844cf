// NOTE [Grid sampler 2-D on the CPU]
//
// Problem (PyTorch's grid_sampler_2d). input (N, C, Hin, Win), grid (N, Hout, Wout, 2) holding (x, y) in [-1, 1],
// out / gradOutput (N, C, Hout, Wout). Output pixel (n, h, w) samples every channel of image n at the same place,
// so everything about a sample except the channel's values - which input elements it reads (the taps), their
// weights and the weights' derivatives - is computed once per output pixel and reused for all C channels.
//
// Taps. Each axis is handled on its own (the padding of x depends on x only): the grid coordinate is unnormalized
// (align_corners ? (c + 1) * (size - 1) / 2 : (c + 1) * size / 2 - 0.5) and gives K taps along the axis (K = 1
// nearest, 2 bilinear, 4 bicubic), each an index in [0, size) with a weight and the weight's derivative with
// respect to the grid coordinate. Bilinear and nearest pad the coordinate first (border: clip to [0, size-1];
// reflection: reflect over [0, size-1] or [-0.5, size-0.5], then clip), with PyTorch's gradient multipliers (0
// where clipped, a sign flip per reflection); bicubic pads each of its 4 integer tap indices instead (clip,
// reflect) and, as in PyTorch, its gradient carries only the unnormalization factor. Zeros padding marks a tap
// outside [0, size) invalid: it is neither read nor written (so a NaN or Inf elsewhere cannot leak into the
// result). A pixel's K*K taps are the products of its x and y taps: element offset y*strideH + x*strideW,
// weight wx*wy, d/dgx = wx'*wy, d/dgy = wx*wy'.
// Safety: no float is converted to an integer before it is known to lie in a small range: zeros/nearest check
// [-1, size) in floating point first (NaN fails), border clips in floating point, reflection reduces with an exact
// fmod, bicubic reduces (reflection) or clamps its floor to [-4, size+2] before converting. NaN coordinates, and
// +-Inf under zeros or reflection, make the sample contribute nothing (out 0, no gradient); +-Inf under border
// clips to the edge like any far-away coordinate. Index arithmetic is int64.
//
// Two paths share the taps. FLOAT, FLOAT16 and BFLOAT16 compute in fp32 on the channel-blocked path; DOUBLE keeps
// the plane path (scalar, below), which nobody needs fast.
//
// Channel-blocked fp32 path. In NCHW the C values a tap needs lie in C different cache lines, and a tile of output
// pixels re-reads scattered input lines once per channel. So the input is first copied into the workspace in the
// blocked layout [N][ceil(C/16)][Hin][Win][16] fp32 (16 channels of one pixel = one aligned 64-byte line; the
// channels past C are 0): one tap of one block is one vector load (1 AVX-512 vector, 2 AVX2, 4 SSE4). The copy
// reads each channel row once into a small buffer (pacl::LoadAsFloat: any dtype, any strides) and turns 16 such
// rows into lines (RowsToLines: 4 x 4 transposes of 128-bit vectors, which every SIMD target has). (Gathering
// straight from the 16 rows of the tensor was slower: rows one plane apart alias in L1 when the plane size is a
// multiple of 4 KiB, and vector gathers cost more than the transpose on the CPUs measured.)
// Work goes in tiles of kBlockTilePixels (256) consecutive output pixels of one image. A tile's taps are listed
// once, pixel-major, only the valid ones, in tap order (element offset into a blocked plane, weight, and for
// gridGrad the weight's x/y derivatives); an invalid tap is never read or written, so NaN/Inf elsewhere cannot leak.
// Forward: in passes of a few images (as many as fit in 8 MiB of blocked copy, at least one; fixed by the shape in
// phase 1): the pass's images are copied, then pacl::ParallelFor over (n, tile) of the pass. Per channel block:
// out line of pixel q = sum over its taps of weight * input line (SampleBlock, taps in order, starting from 0),
// into a [pixel][16] buffer that LinesToRows turns back into channel rows (4 x 4 transposes), copied out with
// pacl::StoreFromFloat, or with non-temporal stores into an out of at least kStreamMinBytes with unit stride
// along W (its lines are then not read first).
// Backward: inputGrad is a scatter. The work items are (n, channel block); each owns the blocked fp32 inputGrad
// plane of its block in the workspace. A ParallelFor task takes consecutive blocks of one image (several when
// there are at least 2 tasks per thread, so that they share the tap lists; which items a task takes changes no
// result). It zeros its planes, copies its blocks of the input (gridGrad only), then walks all tiles of image n in
// order: lists the tile's taps once, and per block turns the block's 16 gradOutput rows into lines and per pixel
// (BackwardBlock) adds weight * gradOutput line to each tap's line (a vector read-modify-write of one line per
// tap: lanes are channels, so no conflicts and no races), and for gridGrad accumulates gradOutput * (sum over taps
// of dweight * input line) across the lanes, reduced to one x and one y sum per pixel: the block's partial,
// written to the workspace ([block][n][pixel][x, y]). BackwardBlock prefetches the tap lines kPrefetchPixels
// pixels ahead: a smooth (warp) grid walks the planes along slanted lines that the hardware prefetchers do not
// follow, and without it the read-modify-writes wait for L3 or memory. At the end the task converts its planes to
// inputGrad's dtype and strides (LinesToRows, prefetching; then non-temporal stores for a large unit-stride FLOAT
// inputGrad, memcpy for a small one, else StoreFromFloat): fp16/bf16 are rounded once. A last ParallelFor over
// (n, tile) adds the blocks' partials in ascending block order and writes gridGrad (0 for nearest or C == 0).
// Every sum runs in an order fixed by the shape (taps in order, pixels ascending, a block's 16 lanes added by the
// fixed tree of pacl/canonical_math-inl.h, blocks ascending), never by the thread count, the grouping of blocks
// into tasks or the schedule, and every multiply-add is fused on every target (pacl::FusedMulAdd; the tap weights
// are computed once, in code compiled for the baseline): results are bit-identical run to run, for any number of
// threads and on every SIMD target, at no cost measurable against per-target lane reductions
// (docs/ops/grid_sampler2d.md).
// Workspace (fp32 path, sized in phase 1, overflow-safe): forward, the blocked copy of one pass of images;
// backward, the blocked input (with gridGrad) and blocked inputGrad (with inputGrad) of every (image, block) task,
// 2 * N * ceil(C/16) * 16 * Hin * Win * 4 bytes at most, plus partials (with gridGrad), ceil(C/16) * N * Hout *
// Wout * 8.
//
// Plane path (DOUBLE). Tiles of kTilePixels (2048; bicubic 512) consecutive output pixels of one image; a tile's
// taps go into [tap][pixel] arrays (one per thread on the heap); the channel loop runs outside, the pixel loop
// inside, so each channel plane is touched by the whole tile while it is hot. Forward: ParallelFor over (n, tile).
// Backward: tasks (n, block of channels_per_block channels, a block size fixed by the shape alone in phase 1)
// accumulate straight into inputGrad through its own strides (phase 1 checked its elements are distinct), pixels
// ascending, taps in order, and write per-block gridGrad sums ([block][n][pixel][x, y]) that a second ParallelFor
// adds in ascending block order (a single block writes gridGrad directly). Also bit-identical for any thread count,
// and on every SIMD target (it is scalar code compiled once; the build never fuses multiplies and adds).
//
// Files: grid_sampler2d_taps.h (tile sizes, addressing, the taps along an axis), grid_sampler2d_blocked.cpp (the
// channel-blocked fp32 path), grid_sampler2d_simd.cpp (its vector loops, per SIMD target), grid_sampler2d_plane.cpp
// (the DOUBLE plane path), cpu/grid_sampler2d_cpu_plan.cpp (the workspace plans of phase 1), and this file: the
// entry points.
#include "grid_sampler2d/cpu/grid_sampler2d_paths.h"
#include "grid_sampler2d/grid_sampler2d_params.h"

namespace pacl::grid_sampler2d {

aclnnStatus RunForwardCpu(const ForwardParams& params, void* workspace) {
  const SamplerShape& s = params.shape;
  if (s.batch * s.channels * s.out_height * s.out_width == 0) return ACLNN_SUCCESS;
  if (params.input.desc.dtype == ACL_DOUBLE) {
    RunForwardPlanePath(params, workspace);
  } else {
    RunForwardBlockedPath(params, workspace);
  }
  return ACLNN_SUCCESS;
}

aclnnStatus RunBackwardCpu(const BackwardParams& params, void* workspace) {
  if (!params.want_input_grad && !params.want_grid_grad) return ACLNN_SUCCESS;
  if (params.shape.batch == 0) return ACLNN_SUCCESS;
  if (params.input.desc.dtype == ACL_DOUBLE) {
    RunBackwardPlanePath(params, workspace);
  } else {
    RunBackwardBlockedPath(params, workspace);
  }
  return ACLNN_SUCCESS;
}


}  // namespace pacl::grid_sampler2d
