// Plain-data parameters of aclnnNsaSelectedAttention (forward) and aclnnNsaSelectedAttentionGrad, filled by phase 1
// (nsa_selected_attention_api.cpp) and consumed by the kernels (cpu/).
#ifndef PACL_OPS_NSA_SELECTED_ATTENTION_NSA_SELECTED_ATTENTION_PARAMS_H_
#define PACL_OPS_NSA_SELECTED_ATTENTION_NSA_SELECTED_ATTENTION_PARAMS_H_

#include <cstdint>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "aclnn/acl_meta.h"
#include "pacl/tensor.h"

namespace pacl::nsa_selected_attention {

// query (q_tokens, q_heads, dim_qk), key (kv_tokens, kv_heads, dim_qk), value (kv_tokens, kv_heads, dim_v), layout
// "TND"; topkIndices (q_tokens, kv_heads, block_count); attentionOut (q_tokens, q_heads, dim_v); softmaxMax / Sum
// (q_tokens, q_heads, kStatLanes). Query head n belongs to KV head n / group.
struct AttentionShape {
  int64_t q_tokens = 0;     // T1
  int64_t kv_tokens = 0;    // T2
  int64_t q_heads = 0;      // N1 (headNum)
  int64_t kv_heads = 0;     // N2
  int64_t group = 0;        // G = N1 / N2
  int64_t dim_qk = 0;       // D of query and key
  int64_t dim_v = 0;        // D of value and attentionOut
  int64_t block_size = 0;   // selectedBlockSize
  int64_t block_count = 0;  // selectedBlockCount
  bool causal = false;      // sparseMode 2 with a mask: key position <= query position within the sequence
  float scale = 0.0f;       // scaleValue rounded once to float
};

// One sequence of the actual-length arrays: query tokens [q_start, q_end), key/value tokens [kv_start, kv_end).
// kv_start and the kv length are multiples of block_size (phase 1's rules), so key block b of the sequence is the
// global block kv_start / block_size + b.
struct Sequence {
  int64_t q_start = 0;
  int64_t q_end = 0;
  int64_t kv_start = 0;
  int64_t kv_end = 0;
};

// The last dim of softmaxMax / softmaxSum: each row's value repeated 8 times (CANN's layout).
inline constexpr int64_t kStatLanes = 8;

// Where the backward's arrays live in the workspace (byte offsets from its 64-byte aligned start; -1: not needed).
struct WorkspacePlan {
  int64_t delta = -1;    // fp32 (q_tokens, q_heads): rowsum(attentionOutGrad * attentionOut)
  int64_t offsets = -1;  // int64 (kv_heads, kv_blocks + 1): where each key block's list of queries begins
  int64_t entries = -1;  // uint32 (kv_heads, q_tokens * block_count): the query tokens selecting each key block
  uint64_t bytes = 0;
};

struct ForwardParams {
  AttentionShape shape;
  std::vector<Sequence> sequences;  // in the arrays' order, empty ones included
  TensorDesc query;
  TensorDesc key;
  TensorDesc value;
  TensorDesc topk;
  TensorDesc softmax_max;
  TensorDesc softmax_sum;
  TensorDesc out;
};

struct BackwardParams {
  AttentionShape shape;
  std::vector<Sequence> sequences;
  TensorDesc query;
  TensorDesc key;
  TensorDesc value;
  TensorDesc out;
  TensorDesc out_grad;
  TensorDesc softmax_max;
  TensorDesc softmax_sum;
  TensorDesc topk;
  TensorDesc dq;
  TensorDesc dk;
  TensorDesc dv;
  WorkspacePlan workspace;
};

inline constexpr const char* kForwardName = "aclnnNsaSelectedAttention";
inline constexpr const char* kBackwardName = "aclnnNsaSelectedAttentionGrad";

// The CPU implementation's workspace plan of the backward (cpu/nsa_selected_attention_cpu_plan.cpp).
WorkspacePlan PlanBackwardWorkspace(const AttentionShape& s);

aclnnStatus RunForwardCpu(const ForwardParams& params, void* workspace);
aclnnStatus RunBackwardCpu(const BackwardParams& params, void* workspace);

}  // namespace pacl::nsa_selected_attention

#endif  // PACL_OPS_NSA_SELECTED_ATTENTION_NSA_SELECTED_ATTENTION_PARAMS_H_
