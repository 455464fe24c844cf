#include "grid_sampler2d/test/grid_sampler2d_calls.h"

#include "aclnnop/aclnn_grid_sampler2d.h"
#include "aclnnop/aclnn_grid_sampler2d_backward.h"

namespace opcall {

const OpInfo& GridSampler2D::Info() {
  static const OpInfo info{"GridSampler2D", aclnnGridSampler2D};
  return info;
}

aclnnStatus GridSampler2D::Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const {
  return aclnnGridSampler2DGetWorkspaceSize(input, grid, interpolation_mode, padding_mode, align_corners, out,
                                            workspace_size, executor);
}

const OpInfo& GridSampler2DBackward::Info() {
  static const OpInfo info{"GridSampler2DBackward", aclnnGridSampler2DBackward};
  return info;
}

aclnnStatus GridSampler2DBackward::Phase1(uint64_t* workspace_size, aclOpExecutor** executor) const {
  return aclnnGridSampler2DBackwardGetWorkspaceSize(grad_output, input, grid, interpolation_mode, padding_mode,
                                                    align_corners, output_mask, input_grad, grid_grad, workspace_size,
                                                    executor);
}

namespace {

const Registration kRegistration({&GridSampler2D::Info(), &GridSampler2DBackward::Info()});

}  // namespace
}  // namespace opcall
