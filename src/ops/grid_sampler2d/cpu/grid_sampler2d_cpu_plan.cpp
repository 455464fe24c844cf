// Phase-1 planning of the CPU kernels: the backward's channel blocks and both workspace layouts (see the NOTE in
// grid_sampler2d_cpu.cpp). Computed from the shapes, dtype and modes only, never from the thread count.
#include <algorithm>
#include <cstdint>

#include "grid_sampler2d/grid_sampler2d_params.h"
#include "pacl/workspace_plan.h"

namespace pacl::grid_sampler2d {
namespace {

// The forward copies this many bytes of blocked input at most per pass (unless one image is larger): small
// enough to stay in a server's last-level cache between the copy and the sampling.
constexpr uint64_t kForwardPassBytes = uint64_t{8} << 20;

// Elements of the blocked fp32 layout [images][ceil(C / 16)][Hin][Win][16] of the fp32 path.
uint64_t BlockedElements(const SamplerShape& s, int64_t images) {
  const uint64_t blocks = static_cast<uint64_t>((s.channels + kFloatChannelsPerBlock - 1) / kFloatChannelsPerBlock);
  uint64_t elements = SaturatingMul(static_cast<uint64_t>(images), blocks);
  elements = SaturatingMul(elements, static_cast<uint64_t>(s.in_height));
  elements = SaturatingMul(elements, static_cast<uint64_t>(s.in_width));
  return SaturatingMul(elements, static_cast<uint64_t>(kFloatChannelsPerBlock));
}

}  // namespace

int64_t BackwardChannelsPerBlock(const SamplerShape& shape, aclDataType dtype) {
  // The fp32 path works on blocks of 16 channels (one cache line of fp32, see the NOTE in cpu/grid_sampler2d_cpu.cpp).
  if (dtype != ACL_DOUBLE) return kFloatChannelsPerBlock;
  // Fixed by the shape alone (never by the thread count), so the gridGrad reduction order is fixed. Every task
  // recomputes the taps of all pixels of its image, so blocks are as large as possible (up to 32 channels) while
  // the problem still splits into at least 8 tasks (N * blocks) to share among the threads; never below 2.
  int64_t block = 32;
  while (block > 2 && shape.batch * ((shape.channels + block - 1) / block) < 8) block /= 2;
  return block;
}

WorkspacePlan PlanForwardWorkspace(const ForwardParams& params) {
  const SamplerShape& s = params.shape;
  WorkspacePlan plan;
  WorkspaceLayout layout;
  const bool writes_output = s.batch * s.channels * s.out_height * s.out_width > 0;
  if (params.input.desc.dtype != ACL_DOUBLE && writes_output) {
    // The fp32 path samples a blocked fp32 copy of the input, a pass of images at a time.
    const uint64_t image_bytes = SaturatingMul(BlockedElements(s, 1), sizeof(float));
    const uint64_t images = image_bytes == 0 ? 1 : std::max<uint64_t>(1, kForwardPassBytes / image_bytes);
    plan.images_per_pass = static_cast<int64_t>(std::min<uint64_t>(images, static_cast<uint64_t>(s.batch)));
    plan.input_copy = layout.Reserve(SaturatingMul(image_bytes, static_cast<uint64_t>(plan.images_per_pass)));
  }
  plan.bytes = layout.TotalBytes();
  return plan;
}

WorkspacePlan PlanBackwardWorkspace(const BackwardParams& params) {
  const SamplerShape& s = params.shape;
  WorkspacePlan plan;
  WorkspaceLayout layout;
  const uint64_t pixels = static_cast<uint64_t>(s.batch * s.out_height * s.out_width);
  const bool nearest = params.modes.interpolation == Interpolation::kNearest;
  // The input's values are only needed for gridGrad, which nearest does not use.
  const bool reads_input = params.want_grid_grad && !nearest && pixels > 0;
  if (params.input.desc.dtype != ACL_DOUBLE) {
    // The fp32 path (FLOAT, FLOAT16, BFLOAT16): a blocked fp32 copy of the input (gridGrad), blocked fp32
    // inputGrad sums, and per-block gridGrad partial sums.
    const uint64_t blocked_bytes = SaturatingMul(BlockedElements(s, s.batch), sizeof(float));
    if (reads_input && s.channels > 0) {
      plan.input_copy = layout.Reserve(blocked_bytes);
      const uint64_t blocks = static_cast<uint64_t>((s.channels + kFloatChannelsPerBlock - 1) / kFloatChannelsPerBlock);
      plan.grid_partials = layout.Reserve(SaturatingMul(SaturatingMul(blocks, pixels), 2 * sizeof(float)));
    }
    if (params.want_input_grad && s.channels > 0) plan.input_grad_acc = layout.Reserve(blocked_bytes);
    plan.bytes = layout.TotalBytes();
    return plan;
  }
  // DOUBLE (the plane path) needs only the per-block gridGrad partial sums, when there is more than one block.
  const int64_t blocks = s.channels > 0 ? (s.channels + params.channels_per_block - 1) / params.channels_per_block : 0;
  if (reads_input && blocks > 1) {
    plan.grid_partials =
        layout.Reserve(SaturatingMul(SaturatingMul(static_cast<uint64_t>(blocks), pixels), 2 * sizeof(double)));
  }
  plan.bytes = layout.TotalBytes();
  return plan;
}

}  // namespace pacl::grid_sampler2d
