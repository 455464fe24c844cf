// The aclnn entry points of NsaSelectedAttention (forward) and NsaSelectedAttentionGrad: phase 1 validates the
// arguments against every rule of CANN's documents (the actual-length arrays are host arrays and are read here; no
// tensor data is: topkIndices and attenMaskOptional are device data, never trusted), lists the sequences and binds
// plain-data parameters to the implementation for the current device (the first entry of its implementation list
// that fits: cpu/), which plans the workspace; phase 2 runs the executor on a stream.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_nsa_selected_attention.h"
#include "aclnnop/aclnn_nsa_selected_attention_grad.h"
#include "nsa_selected_attention/nsa_selected_attention_params.h"
#include "nsa_selected_attention/nsa_sequence_ends.h"
#include "pacl/op_glue.h"
#include "pacl/tensor.h"
#include "pacl/tensor_objects.h"

namespace pacl::nsa_selected_attention {
namespace {

// The documents' ranges.
constexpr int64_t kMaxHeads = 128;               // N1, N2: 1 to 128
constexpr int64_t kMaxGroup = 32;                // G = N1 / N2: 1 to 32
constexpr int64_t kMaxBlockSize = 128;           // selectedBlockSize: <= 128, a multiple of 16
constexpr int64_t kBlockSizeMultiple = 16;
constexpr int64_t kMaxBlockCount = 32;           // selectedBlockCount: <= 32
constexpr int64_t kMaxSequenceLength = 131072;   // S: 1 to 128K
constexpr int64_t kMaxForwardBatch = 1024;       // the forward's B: 1 to 1024
constexpr int64_t kMaxGradTokens = int64_t{2} << 20;  // the gradient's T1, T2 and B: 1 to 2M
constexpr int64_t kHeadDims[] = {128, 192};      // D: 192 or 128 (D_qk 192 / D_v 128 in the forward's document)

using NamedTensor = std::pair<const TensorDesc*, const char*>;

long long LL(int64_t v) { return static_cast<long long>(v); }

// query FLOAT16 or BFLOAT16; every tensor in `same` of query's dtype; plain formats.
bool CheckDataDTypes(OpChecker& check, const TensorDesc& query, std::initializer_list<NamedTensor> same) {
  if (!check.DType(query, "query", {ACL_FLOAT16, ACL_BF16}) || !check.PlainFormat(query, "query")) return false;
  for (const auto& [desc, param] : same) {
    if (!check.DType(*desc, param, {ACL_FLOAT16, ACL_BF16}) || !check.SameDType(query, "query", *desc, param) ||
        !check.PlainFormat(*desc, param)) {
      return false;
    }
  }
  return true;
}

// topkIndices INT32; softmaxMax / softmaxSum FLOAT; the mask BOOL or UINT8 and 2-D (its contents are never read).
bool CheckOtherDTypes(OpChecker& check, const TensorDesc& topk, const TensorDesc& max, const char* max_param,
                      const TensorDesc& sum, const char* sum_param, const aclTensor* mask) {
  if (!check.DType(topk, "topkIndices", {ACL_INT32}) || !check.PlainFormat(topk, "topkIndices") ||
      !check.DType(max, max_param, {ACL_FLOAT}) || !check.PlainFormat(max, max_param) ||
      !check.DType(sum, sum_param, {ACL_FLOAT}) || !check.PlainFormat(sum, sum_param)) {
    return false;
  }
  if (mask == nullptr) return true;
  return check.DType(mask->desc, "attenMaskOptional", {ACL_BOOL, ACL_UINT8}) &&
         check.PlainFormat(mask->desc, "attenMaskOptional") && check.Rank(mask->desc, "attenMaskOptional", 2);
}

bool IsHeadDim(int64_t d) {
  for (int64_t allowed : kHeadDims) {
    if (d == allowed) return true;
  }
  return false;
}

// The layout, the ranks of query, key and value, the attributes and the head structure. Fills the shape (all but
// the token counts' consistency with the arrays, which ListSequences checks).
bool CheckAttributesAndInputs(OpChecker& check, const TensorDesc& query, const TensorDesc& key,
                              const TensorDesc& value, const char* layout, double scale, int64_t head_num,
                              int64_t sparse_mode, int64_t block_size, int64_t block_count, bool has_mask,
                              AttentionShape* shape) {
  if (!check.Check(std::strcmp(layout, "TND") == 0, "inputLayout must be \"TND\" (the only layout), got \"%.16s\"",
                   layout) ||
      !check.Rank(query, "query", 3) || !check.Rank(key, "key", 3) || !check.Rank(value, "value", 3) ||
      !check.Check(sparse_mode == 0 || sparse_mode == 2,
                   "sparseMode must be 0 (no mask) or 2 (causal, aligned at the sequences' starts), got %lld",
                   LL(sparse_mode)) ||
      !check.Check(block_size >= kBlockSizeMultiple && block_size <= kMaxBlockSize &&
                       block_size % kBlockSizeMultiple == 0,
                   "selectedBlockSize must be a multiple of 16 in [16, 128], got %lld", LL(block_size)) ||
      !check.Check(block_count >= 1 && block_count <= kMaxBlockCount,
                   "selectedBlockCount must be in [1, 32], got %lld", LL(block_count)) ||
      !check.Check(head_num >= 1 && head_num <= kMaxHeads, "headNum must be in [1, 128], got %lld", LL(head_num)) ||
      !check.Check(query.shape[1] == head_num, "headNum must equal N of query (dim 1 of %s), got %lld",
                   query.ShapeString().c_str(), LL(head_num))) {
    return false;
  }
  const int64_t kv_heads = key.shape[1];
  if (!check.Check(kv_heads >= 1 && kv_heads <= kMaxHeads, "N of key (dim 1 of %s) must be in [1, 128], got %lld",
                   key.ShapeString().c_str(), LL(kv_heads)) ||
      !check.Check(value.shape[1] == kv_heads, "value's N (dim 1 of %s) must equal key's (dim 1 of %s)",
                   value.ShapeString().c_str(), key.ShapeString().c_str()) ||
      !check.Check(head_num % kv_heads == 0,
                   "N of query (%lld) must be a multiple of N of key and value (%lld): the query heads of a group "
                   "share a key/value head",
                   LL(head_num), LL(kv_heads)) ||
      !check.Check(head_num / kv_heads <= kMaxGroup,
                   "the group size G = N of query / N of key (%lld / %lld = %lld) must be at most 32", LL(head_num),
                   LL(kv_heads), LL(head_num / kv_heads)) ||
      !check.Check(key.shape[0] == value.shape[0], "key (%s) and value (%s) must have the same T (dim 0)",
                   key.ShapeString().c_str(), value.ShapeString().c_str()) ||
      !check.Check(query.shape[2] == key.shape[2], "query (%s) and key (%s) must have the same D (dim 2)",
                   query.ShapeString().c_str(), key.ShapeString().c_str()) ||
      !check.Check(IsHeadDim(query.shape[2]), "D of query and key (dim 2 of %s) must be 128 or 192, got %lld",
                   query.ShapeString().c_str(), LL(query.shape[2])) ||
      !check.Check(IsHeadDim(value.shape[2]), "D of value (dim 2 of %s) must be 128 or 192, got %lld",
                   value.ShapeString().c_str(), LL(value.shape[2])) ||
      !check.Check(value.shape[2] <= query.shape[2],
                   "D of value (%lld) must not exceed D of query and key (%lld) (D_q == D_k >= D_v)",
                   LL(value.shape[2]), LL(query.shape[2]))) {
    return false;
  }
  shape->q_tokens = query.shape[0];
  shape->kv_tokens = key.shape[0];
  shape->q_heads = head_num;
  shape->kv_heads = kv_heads;
  shape->group = head_num / kv_heads;
  shape->dim_qk = query.shape[2];
  shape->dim_v = value.shape[2];
  shape->block_size = block_size;
  shape->block_count = block_count;
  // "When attenMaskOptional is null, sparseMode has no effect: everything is computed."
  shape->causal = sparse_mode == 2 && has_mask;
  shape->scale = static_cast<float>(scale);
  return true;
}

using nsa_sequence_ends::CheckEnds;

// The actual-length arrays (host data, read here): one entry per sequence each, the same count (the batch size),
// every key/value sequence a multiple of selectedBlockSize long and at least selectedBlockSize * selectedBlockCount.
bool ListSequences(OpChecker& check, const aclIntArray& q_ends_array, const aclIntArray& kv_ends_array,
                   int64_t max_batch, const AttentionShape& s, std::vector<Sequence>* sequences) {
  const std::vector<int64_t>& q_ends = q_ends_array.values;
  const std::vector<int64_t>& kv_ends = kv_ends_array.values;
  const auto batch = static_cast<int64_t>(q_ends.size());
  if (!check.Check(batch >= 1 && batch <= max_batch,
                   "actualSeqQLenOptional must have one entry per sequence, 1 to %lld of them, got %lld",
                   LL(max_batch), LL(batch)) ||
      !check.Check(kv_ends.size() == q_ends.size(),
                   "actualSeqQLenOptional and actualSeqKvLenOptional must have the same length (the batch size), got "
                   "%zu and %zu",
                   q_ends.size(), kv_ends.size()) ||
      !CheckEnds(check, q_ends, "actualSeqQLenOptional", "query", s.q_tokens, kMaxSequenceLength) ||
      !CheckEnds(check, kv_ends, "actualSeqKvLenOptional", "key and value", s.kv_tokens, kMaxSequenceLength)) {
    return false;
  }
  const int64_t selected = s.block_size * s.block_count;
  int64_t q_start = 0, kv_start = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t kv_length = kv_ends[static_cast<size_t>(b)] - kv_start;
    if (!check.Check(kv_length % s.block_size == 0,
                     "key/value sequence %lld has %lld tokens (actualSeqKvLenOptional), not a multiple of "
                     "selectedBlockSize %lld",
                     LL(b), LL(kv_length), LL(s.block_size)) ||
        !check.Check(kv_length >= selected,
                     "key/value sequence %lld has %lld tokens (actualSeqKvLenOptional), fewer than selectedBlockSize "
                     "* selectedBlockCount = %lld * %lld = %lld",
                     LL(b), LL(kv_length), LL(s.block_size), LL(s.block_count), LL(selected))) {
      return false;
    }
    sequences->push_back({q_start, q_ends[static_cast<size_t>(b)], kv_start, kv_ends[static_cast<size_t>(b)]});
    q_start = q_ends[static_cast<size_t>(b)];
    kv_start = kv_ends[static_cast<size_t>(b)];
  }
  return true;
}

bool CheckTopkAndStatistics(OpChecker& check, const TensorDesc& topk, const TensorDesc& max, const char* max_param,
                            const TensorDesc& sum, const char* sum_param, const AttentionShape& s) {
  return check.Shape(topk, "topkIndices", {s.q_tokens, s.kv_heads, s.block_count},
                    "[T of query, N of key, selectedBlockCount]") &&
         check.Shape(max, max_param, {s.q_tokens, s.q_heads, kStatLanes}, "[T of query, N of query, 8]") &&
         check.Shape(sum, sum_param, {s.q_tokens, s.q_heads, kStatLanes}, "[T of query, N of query, 8]");
}

}  // namespace
}  // namespace pacl::nsa_selected_attention

using pacl::OpChecker;
using pacl::TensorDesc;
namespace nsa = pacl::nsa_selected_attention;

extern "C" aclnnStatus aclnnNsaSelectedAttentionGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* topkIndices,
    const aclTensor* attenMaskOptional, const aclIntArray* actualSeqQLenOptional,
    const aclIntArray* actualSeqKvLenOptional, double scaleValue, int64_t headNum, char* inputLayout,
    int64_t sparseMode, int64_t selectedBlockSize, int64_t selectedBlockCount, const aclTensor* softmaxMaxOut,
    const aclTensor* softmaxSumOut, const aclTensor* attentionOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  OpChecker check(nsa::kForwardName);
  // The actual-length arrays are required with layout TND (the only one), despite their names.
  if (!check.Tensor(query, "query") || !check.Tensor(key, "key") || !check.Tensor(value, "value") ||
      !check.Tensor(topkIndices, "topkIndices") ||
      (attenMaskOptional != nullptr && !check.Tensor(attenMaskOptional, "attenMaskOptional")) ||
      !check.NotNull(actualSeqQLenOptional, "actualSeqQLenOptional") ||
      !check.NotNull(actualSeqKvLenOptional, "actualSeqKvLenOptional") || !check.NotNull(inputLayout, "inputLayout") ||
      !check.Tensor(softmaxMaxOut, "softmaxMaxOut") || !check.Tensor(softmaxSumOut, "softmaxSumOut") ||
      !check.Tensor(attentionOut, "attentionOut") || !check.OutPointers(workspaceSize, executor)) {
    return check.status();
  }
  nsa::ForwardParams params;
  const TensorDesc& q = query->desc;
  if (!nsa::CheckDataDTypes(check, q, {{&key->desc, "key"}, {&value->desc, "value"}, {&attentionOut->desc,
                                                                                      "attentionOut"}}) ||
      !nsa::CheckOtherDTypes(check, topkIndices->desc, softmaxMaxOut->desc, "softmaxMaxOut", softmaxSumOut->desc,
                             "softmaxSumOut", attenMaskOptional) ||
      !nsa::CheckAttributesAndInputs(check, q, key->desc, value->desc, inputLayout, scaleValue, headNum, sparseMode,
                                     selectedBlockSize, selectedBlockCount, attenMaskOptional != nullptr,
                                     &params.shape) ||
      !nsa::ListSequences(check, *actualSeqQLenOptional, *actualSeqKvLenOptional, nsa::kMaxForwardBatch,
                          params.shape, &params.sequences) ||
      !nsa::CheckTopkAndStatistics(check, topkIndices->desc, softmaxMaxOut->desc, "softmaxMaxOut", softmaxSumOut->desc,
                                   "softmaxSumOut", params.shape) ||
      !check.Shape(attentionOut->desc, "attentionOut",
                       {params.shape.q_tokens, params.shape.q_heads, params.shape.dim_v},
                       "[T of query, N of query, D of value]") ||
      !check.DistinctOutputElements(softmaxMaxOut->desc, "softmaxMaxOut") ||
      !check.DistinctOutputElements(softmaxSumOut->desc, "softmaxSumOut") ||
      !check.DistinctOutputElements(attentionOut->desc, "attentionOut")) {
    return check.status();
  }
  params.query = q;
  params.key = key->desc;
  params.value = value->desc;
  params.topk = topkIndices->desc;
  params.softmax_max = softmaxMaxOut->desc;
  params.softmax_sum = softmaxSumOut->desc;
  params.out = attentionOut->desc;
  return pacl::BindImplementation(nsa::kForwardName, q.dtype, params, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnNsaSelectedAttention(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                 const aclrtStream stream) {
  return pacl::RunExecutor(nsa::kForwardName, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnNsaSelectedAttentionGradGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* attentionOut,
    const aclTensor* attentionOutGrad, const aclTensor* softmaxMax, const aclTensor* softmaxSum,
    const aclTensor* topkIndices, const aclIntArray* actualSeqQLenOptional, const aclIntArray* actualSeqKvLenOptional,
    const aclTensor* attenMaskOptional, double scaleValue, int64_t selectedBlockSize, int64_t selectedBlockCount,
    int64_t headNum, char* inputLayout, int64_t sparseMode, const aclTensor* dqOut, const aclTensor* dkOut,
    const aclTensor* dvOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  OpChecker check(nsa::kBackwardName);
  if (!check.Tensor(query, "query") || !check.Tensor(key, "key") || !check.Tensor(value, "value") ||
      !check.Tensor(attentionOut, "attentionOut") || !check.Tensor(attentionOutGrad, "attentionOutGrad") ||
      !check.Tensor(softmaxMax, "softmaxMax") || !check.Tensor(softmaxSum, "softmaxSum") ||
      !check.Tensor(topkIndices, "topkIndices") || !check.NotNull(actualSeqQLenOptional, "actualSeqQLenOptional") ||
      !check.NotNull(actualSeqKvLenOptional, "actualSeqKvLenOptional") ||
      (attenMaskOptional != nullptr && !check.Tensor(attenMaskOptional, "attenMaskOptional")) ||
      !check.NotNull(inputLayout, "inputLayout") || !check.Tensor(dqOut, "dqOut") || !check.Tensor(dkOut, "dkOut") ||
      !check.Tensor(dvOut, "dvOut") || !check.OutPointers(workspaceSize, executor)) {
    return check.status();
  }
  nsa::BackwardParams params;
  const TensorDesc& q = query->desc;
  nsa::AttentionShape& s = params.shape;
  if (!nsa::CheckDataDTypes(check, q,
                            {{&key->desc, "key"},
                             {&value->desc, "value"},
                             {&attentionOut->desc, "attentionOut"},
                             {&attentionOutGrad->desc, "attentionOutGrad"},
                             {&dqOut->desc, "dqOut"},
                             {&dkOut->desc, "dkOut"},
                             {&dvOut->desc, "dvOut"}}) ||
      !nsa::CheckOtherDTypes(check, topkIndices->desc, softmaxMax->desc, "softmaxMax", softmaxSum->desc, "softmaxSum",
                             attenMaskOptional) ||
      !nsa::CheckAttributesAndInputs(check, q, key->desc, value->desc, inputLayout, scaleValue, headNum, sparseMode,
                                     selectedBlockSize, selectedBlockCount, attenMaskOptional != nullptr, &s) ||
      !check.Check(s.q_tokens <= nsa::kMaxGradTokens, "T of query (dim 0 of %s) must be at most 2M (2097152)",
                   q.ShapeString().c_str()) ||
      !check.Check(s.kv_tokens <= nsa::kMaxGradTokens, "T of key and value (dim 0 of %s) must be at most 2M (2097152)",
                   key->desc.ShapeString().c_str()) ||
      !nsa::ListSequences(check, *actualSeqQLenOptional, *actualSeqKvLenOptional, nsa::kMaxGradTokens, s,
                          &params.sequences) ||
      !nsa::CheckTopkAndStatistics(check, topkIndices->desc, softmaxMax->desc, "softmaxMax", softmaxSum->desc,
                                   "softmaxSum", s) ||
      !check.Shape(attentionOut->desc, "attentionOut", {s.q_tokens, s.q_heads, s.dim_v},
                       "[T of query, N of query, D of value]") ||
      !check.Shape(attentionOutGrad->desc, "attentionOutGrad", {s.q_tokens, s.q_heads, s.dim_v},
                       "[T of query, N of query, D of value]") ||
      !check.SameShape(q, "query", dqOut->desc, "dqOut") || !check.SameShape(key->desc, "key", dkOut->desc, "dkOut") ||
      !check.SameShape(value->desc, "value", dvOut->desc, "dvOut") ||
      !check.DistinctOutputElements(dqOut->desc, "dqOut") || !check.DistinctOutputElements(dkOut->desc, "dkOut") ||
      !check.DistinctOutputElements(dvOut->desc, "dvOut")) {
    return check.status();
  }
  params.query = q;
  params.key = key->desc;
  params.value = value->desc;
  params.out = attentionOut->desc;
  params.out_grad = attentionOutGrad->desc;
  params.softmax_max = softmaxMax->desc;
  params.softmax_sum = softmaxSum->desc;
  params.topk = topkIndices->desc;
  params.dq = dqOut->desc;
  params.dk = dkOut->desc;
  params.dv = dvOut->desc;
  return pacl::BindImplementation(nsa::kBackwardName, q.dtype, params, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnNsaSelectedAttentionGrad(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                     aclrtStream stream) {
  return pacl::RunExecutor(nsa::kBackwardName, workspace, workspaceSize, executor, stream);
}
