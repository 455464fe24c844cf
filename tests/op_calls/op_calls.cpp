#include "op_calls.h"

#include "aclnn/opdev/op_errno.h"

#include "aclnnop/aclnn_grid_sampler2d.h"
#include "aclnnop/aclnn_grid_sampler2d_backward.h"
#include "aclnnop/aclnn_multi_scale_deformable_attention_grad.h"
#include "aclnnop/aclnn_multi_scale_deformable_attn_function.h"
#include "aclnnop/aclnn_nsa_compress.h"
#include "aclnnop/aclnn_nsa_compress_grad.h"
#include "aclnnop/aclnn_scaled_masked_softmax.h"
#include "aclnnop/aclnn_scaled_masked_softmax_backward.h"

namespace opcall {
namespace {

// The API takes the optional layout string as char* but never writes it.
char* LayoutArgument(const char* layout) { return const_cast<char*>(layout); }

aclnnStatus Phase1(const ScaledMaskedSoftmax& a, uint64_t* size, aclOpExecutor** executor) {
  return aclnnScaledMaskedSoftmaxGetWorkspaceSize(a.x, a.mask, a.scale, a.fixed_triu_mask, a.y, size, executor);
}
aclnnStatus Phase1(const ScaledMaskedSoftmaxBackward& a, uint64_t* size, aclOpExecutor** executor) {
  return aclnnScaledMaskedSoftmaxBackwardGetWorkspaceSize(a.grad_output, a.y, a.mask, a.scale, a.fix_triu_mask, a.out,
                                                          size, executor);
}
aclnnStatus Phase1(const GridSampler2D& a, uint64_t* size, aclOpExecutor** executor) {
  return aclnnGridSampler2DGetWorkspaceSize(a.input, a.grid, a.interpolation_mode, a.padding_mode, a.align_corners,
                                            a.out, size, executor);
}
aclnnStatus Phase1(const GridSampler2DBackward& a, uint64_t* size, aclOpExecutor** executor) {
  return aclnnGridSampler2DBackwardGetWorkspaceSize(a.grad_output, a.input, a.grid, a.interpolation_mode,
                                                    a.padding_mode, a.align_corners, a.output_mask, a.input_grad,
                                                    a.grid_grad, size, executor);
}
aclnnStatus Phase1(const MultiScaleDeformableAttnFunction& a, uint64_t* size, aclOpExecutor** executor) {
  return aclnnMultiScaleDeformableAttnFunctionGetWorkspaceSize(a.value, a.spatial_shape, a.level_start_index,
                                                               a.location, a.attn_weight, a.output, size, executor);
}
aclnnStatus Phase1(const MultiScaleDeformableAttentionGrad& a, uint64_t* size, aclOpExecutor** executor) {
  return aclnnMultiScaleDeformableAttentionGradGetWorkspaceSize(a.value, a.spatial_shape, a.level_start_index,
                                                                a.location, a.attn_weight, a.grad_output, a.grad_value,
                                                                a.grad_location, a.grad_attn_weight, size, executor);
}
aclnnStatus Phase1(const NsaCompress& a, uint64_t* size, aclOpExecutor** executor) {
  return aclnnNsaCompressGetWorkspaceSize(a.input, a.weight, a.act_seq_len, LayoutArgument(a.layout),
                                          a.compress_block_size, a.compress_stride, a.act_seq_len_type, a.output, size,
                                          executor);
}
aclnnStatus Phase1(const NsaCompressGrad& a, uint64_t* size, aclOpExecutor** executor) {
  return aclnnNsaCompressGradGetWorkspaceSize(a.output_grad, a.input, a.weight, a.act_seq_len, a.compress_block_size,
                                              a.compress_stride, a.act_seq_len_type, LayoutArgument(a.layout),
                                              a.input_grad, a.weight_grad, size, executor);
}

}  // namespace

const char* OpName(OpKind op) {
  switch (op) {
    case OpKind::kScaledMaskedSoftmax:
      return "ScaledMaskedSoftmax";
    case OpKind::kScaledMaskedSoftmaxBackward:
      return "ScaledMaskedSoftmaxBackward";
    case OpKind::kGridSampler2D:
      return "GridSampler2D";
    case OpKind::kGridSampler2DBackward:
      return "GridSampler2DBackward";
    case OpKind::kMultiScaleDeformableAttnFunction:
      return "MultiScaleDeformableAttnFunction";
    case OpKind::kMultiScaleDeformableAttentionGrad:
      return "MultiScaleDeformableAttentionGrad";
    case OpKind::kNsaCompress:
      return "NsaCompress";
    case OpKind::kNsaCompressGrad:
      return "NsaCompressGrad";
  }
  return "?";
}

// The variant's alternatives are in kAllOps order.
OpKind KindOf(const OpCall& call) { return kAllOps[call.index()]; }

aclnnStatus GetWorkspaceSize(const OpCall& call, uint64_t* workspace_size, aclOpExecutor** executor) {
  return std::visit([&](const auto& args) { return Phase1(args, workspace_size, executor); }, call);
}

Phase2Function Phase2Of(OpKind op) {
  switch (op) {
    case OpKind::kScaledMaskedSoftmax:
      return aclnnScaledMaskedSoftmax;
    case OpKind::kScaledMaskedSoftmaxBackward:
      return aclnnScaledMaskedSoftmaxBackward;
    case OpKind::kGridSampler2D:
      return aclnnGridSampler2D;
    case OpKind::kGridSampler2DBackward:
      return aclnnGridSampler2DBackward;
    case OpKind::kMultiScaleDeformableAttnFunction:
      return aclnnMultiScaleDeformableAttnFunction;
    case OpKind::kMultiScaleDeformableAttentionGrad:
      return aclnnMultiScaleDeformableAttentionGrad;
    case OpKind::kNsaCompress:
      return aclnnNsaCompress;
    case OpKind::kNsaCompressGrad:
      return aclnnNsaCompressGrad;
  }
  return nullptr;
}

aclnnStatus RunPhase2(Phase2Function run, uint64_t workspace_size, aclOpExecutor* executor, aclrtStream stream) {
  void* workspace = nullptr;
  if (workspace_size > 0 && aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    return ACLNN_ERR_INNER;
  }
  aclnnStatus status = run(workspace, workspace_size, executor, stream);
  if (status == ACLNN_SUCCESS) status = aclrtSynchronizeStream(stream);
  if (workspace != nullptr) aclrtFree(workspace);
  return status;
}

aclnnStatus Run(const OpCall& call, aclrtStream stream) {
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus status = GetWorkspaceSize(call, &workspace_size, &executor);
  if (status != ACLNN_SUCCESS) return status;
  return RunPhase2(Phase2Of(KindOf(call)), workspace_size, executor, stream);
}

}  // namespace opcall
