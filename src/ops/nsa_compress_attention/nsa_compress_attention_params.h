// Plain-data parameters of aclnnNsaCompressAttention, filled by phase 1 (nsa_compress_attention_api.cpp) and
// consumed by the kernel (cpu/).
#ifndef PACL_OPS_NSA_COMPRESS_ATTENTION_NSA_COMPRESS_ATTENTION_PARAMS_H_
#define PACL_OPS_NSA_COMPRESS_ATTENTION_NSA_COMPRESS_ATTENTION_PARAMS_H_

#include <cstdint>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "aclnn/acl_meta.h"
#include "pacl/tensor.h"

namespace pacl::nsa_compress_attention {

// query (q_tokens, q_heads, dim_qk), compressed key (kv_tokens, kv_heads, dim_qk) and value (kv_tokens, kv_heads,
// dim_v), layout "TND"; attentionOut (q_tokens, q_heads, dim_v); softmaxMax / Sum (q_tokens, q_heads, kStatLanes);
// topkIndices (q_tokens, kv_heads, select_count). Query head n belongs to KV head n / group.
struct AttentionShape {
  int64_t q_tokens = 0;       // T1
  int64_t kv_tokens = 0;      // T2: compressed key/value tokens of all sequences
  int64_t q_heads = 0;        // N1 (headNum)
  int64_t kv_heads = 0;       // N2
  int64_t group = 0;          // G = N1 / N2
  int64_t dim_qk = 0;         // D of query and key
  int64_t dim_v = 0;          // D of value and attentionOut
  int64_t select_per_cmp = 0; // l' / d: compressed keys per select block step (the formula's first sum)
  int64_t cmp_per_stride = 0; // l / d: the formula's second sum
  int64_t select_count = 0;   // selectBlockCount
  float scale = 0.0f;         // scaleValue rounded once to float
};

// One sequence of the actual-length arrays: query tokens [q_start, q_end), compressed key/value tokens
// [kv_start, kv_end), select_blocks = ceil((kv_end - kv_start) / select_per_cmp) candidate blocks.
struct Sequence {
  int64_t q_start = 0;
  int64_t q_end = 0;
  int64_t kv_start = 0;
  int64_t kv_end = 0;
  int64_t select_blocks = 0;
};

// The last dim of softmaxMax / softmaxSum: each row's value repeated 8 times (CANN's layout).
inline constexpr int64_t kStatLanes = 8;

struct ForwardParams {
  AttentionShape shape;
  std::vector<Sequence> sequences;  // in the arrays' order, empty ones included
  int64_t max_kv_length = 0;        // the longest sequence's compressed key count (scratch sizes)
  int64_t max_select_blocks = 0;
  TensorDesc query;
  TensorDesc key;
  TensorDesc value;
  bool has_atten_mask = false;  // (max S_q, max CmpS_kv), nonzero = masked
  TensorDesc atten_mask;
  bool has_topk_mask = false;  // (max S_q, max SelS_kv), nonzero = masked
  TensorDesc topk_mask;
  TensorDesc softmax_max;
  TensorDesc softmax_sum;
  TensorDesc out;
  TensorDesc topk;
};

inline constexpr const char* kForwardName = "aclnnNsaCompressAttention";

aclnnStatus RunForwardCpu(const ForwardParams& params, void* workspace);

}  // namespace pacl::nsa_compress_attention

#endif  // PACL_OPS_NSA_COMPRESS_ATTENTION_NSA_COMPRESS_ATTENTION_PARAMS_H_
