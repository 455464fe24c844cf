// The aclnn entry points of NsaCompressAttention: phase 1 validates the arguments against every rule of CANN's
// document (the actual-length arrays are host arrays and are read here; no tensor data is: the masks are device data,
// read by the kernel), lists the sequences and binds plain-data parameters to the implementation for the current
// device (cpu/); phase 2 runs the executor on a stream.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_nsa_compress_attention.h"
#include "nsa_compress_attention/nsa_block_rules.h"
#include "nsa_compress_attention/nsa_compress_attention_params.h"
#include "nsa_selected_attention/nsa_sequence_ends.h"
#include "pacl/op_glue.h"
#include "pacl/tensor.h"
#include "pacl/tensor_objects.h"

namespace pacl::nsa_compress_attention {
namespace {

// The document's ranges.
constexpr int64_t kSizeMultiple = 16;  // compressBlockSize, compressStride, selectBlockSize, D
constexpr int64_t kMaxSelectBlockCount = 32;
constexpr int64_t kMaxCmpKvLength = 14000;        // CmpS_kv of each sequence
constexpr int64_t kGroupDivides = 128;            // G < 128 and 128 % G == 0

long long LL(int64_t v) { return static_cast<long long>(v); }

bool CheckDTypes(OpChecker& check, const ::aclTensor* query, const ::aclTensor* key, const ::aclTensor* value,
                 const ::aclTensor* atten_mask, const ::aclTensor* topk_mask, const ::aclTensor* max,
                 const ::aclTensor* sum, const ::aclTensor* out, const ::aclTensor* topk) {
  const TensorDesc& q = query->desc;
  if (!check.DType(q, "query", {ACL_FLOAT16, ACL_BF16}) || !check.PlainFormat(q, "query")) return false;
  for (const auto& [t, param] : {std::pair<const ::aclTensor*, const char*>{key, "key"},
                                 {value, "value"},
                                 {out, "attentionOutOut"}}) {
    if (!check.DType(t->desc, param, {ACL_FLOAT16, ACL_BF16}) || !check.SameDType(q, "query", t->desc, param) ||
        !check.PlainFormat(t->desc, param)) {
      return false;
    }
  }
  for (const auto& [t, param] : {std::pair<const ::aclTensor*, const char*>{atten_mask, "attenMaskOptional"},
                                 {topk_mask, "topkMaskOptional"}}) {
    if (t != nullptr && (!check.DType(t->desc, param, {ACL_BOOL, ACL_UINT8}) || !check.PlainFormat(t->desc, param) ||
                         !check.Rank(t->desc, param, 2))) {
      return false;
    }
  }
  return check.DType(max->desc, "softmaxMaxOut", {ACL_FLOAT}) && check.PlainFormat(max->desc, "softmaxMaxOut") &&
         check.DType(sum->desc, "softmaxSumOut", {ACL_FLOAT}) && check.PlainFormat(sum->desc, "softmaxSumOut") &&
         check.DType(topk->desc, "topkIndicesOut", {ACL_INT32}) && check.PlainFormat(topk->desc, "topkIndicesOut");
}

// The layout, the ranks and shapes of query, key and value, the attributes and the head structure.
bool CheckInputs(OpChecker& check, const TensorDesc& query, const TensorDesc& key, const TensorDesc& value,
                 const char* layout, double scale, int64_t head_num, int64_t sparse_mode, bool has_atten_mask,
                 AttentionShape* shape) {
  if (!check.Check(std::strcmp(layout, "TND") == 0, "inputLayout must be \"TND\" (the only layout), got \"%.16s\"",
                   layout) ||
      !check.Rank(query, "query", 3) || !check.Rank(key, "key", 3) || !check.Rank(value, "value", 3) ||
      !check.Check(sparse_mode == 0 || sparse_mode == 1,
                   "sparseMode must be 0 (attenMaskOptional applied when given) or 1 (attenMaskOptional required), "
                   "got %lld",
                   LL(sparse_mode)) ||
      !check.Check(sparse_mode == 0 || has_atten_mask,
                   "sparseMode 1 (allMask) needs attenMaskOptional, got a null one") ||
      !check.Check(head_num >= 1, "headNum must be at least 1, got %lld", LL(head_num)) ||
      !check.Check(query.shape[1] == head_num, "headNum must equal N of query (dim 1 of %s), got %lld",
                   query.ShapeString().c_str(), LL(head_num))) {
    return false;
  }
  const int64_t kv_heads = key.shape[1];
  const int64_t group = kv_heads >= 1 ? head_num / kv_heads : 0;
  if (!check.Check(kv_heads >= 1, "N of key (dim 1 of %s) must be at least 1", key.ShapeString().c_str()) ||
      !check.Check(value.shape[1] == kv_heads, "value's N (dim 1 of %s) must equal key's (dim 1 of %s)",
                   value.ShapeString().c_str(), key.ShapeString().c_str()) ||
      !check.Check(head_num % kv_heads == 0,
                   "N of query (%lld) must be a multiple of N of key and value (%lld): the query heads of a group "
                   "share a key/value head",
                   LL(head_num), LL(kv_heads)) ||
      !check.Check(group < kGroupDivides && kGroupDivides % group == 0,
                   "the group size G = N of query / N of key (%lld / %lld = %lld) must divide 128 and be less than "
                   "128",
                   LL(head_num), LL(kv_heads), LL(group)) ||
      !check.Check(key.shape[0] == value.shape[0], "key (%s) and value (%s) must have the same T (dim 0)",
                   key.ShapeString().c_str(), value.ShapeString().c_str()) ||
      !check.Check(query.shape[2] == key.shape[2], "query (%s) and key (%s) must have the same D (dim 2)",
                   query.ShapeString().c_str(), key.ShapeString().c_str()) ||
      !check.Check(query.shape[2] >= kSizeMultiple && query.shape[2] % kSizeMultiple == 0,
                   "D of query and key (dim 2 of %s) must be a positive multiple of 16, got %lld",
                   query.ShapeString().c_str(), LL(query.shape[2])) ||
      !check.Check(value.shape[2] >= kSizeMultiple && value.shape[2] % kSizeMultiple == 0,
                   "D of value (dim 2 of %s) must be a positive multiple of 16, got %lld",
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
  shape->group = group;
  shape->dim_qk = query.shape[2];
  shape->dim_v = value.shape[2];
  shape->scale = static_cast<float>(scale);
  return true;
}

using nsa_sequence_ends::CheckEnds;
constexpr int64_t kNoLimit = -1;  // CheckEnds: no sequence length limit (checked below), or no T to match

// The three actual-length arrays (host data, read here): one entry per sequence each, the same count; each
// compressed key/value sequence at most 14000 tokens; its select-block count ceil(CmpS_kv / (l' / d)), at least
// selectBlockCount.
bool ListSequences(OpChecker& check, const aclIntArray& q_array, const aclIntArray& cmp_array,
                   const aclIntArray& sel_array, const AttentionShape& s, ForwardParams* params) {
  const std::vector<int64_t>& q_ends = q_array.values;
  const std::vector<int64_t>& cmp_ends = cmp_array.values;
  const std::vector<int64_t>& sel_ends = sel_array.values;
  if (!check.Check(!q_ends.empty(), "actualSeqQLenOptional must have one entry per sequence, got none") ||
      !check.Check(cmp_ends.size() == q_ends.size() && sel_ends.size() == q_ends.size(),
                   "actualSeqQLenOptional, actualCmpSeqKvLenOptional and actualSelSeqKvLenOptional must have the same "
                   "length (the batch size), got %zu, %zu and %zu",
                   q_ends.size(), cmp_ends.size(), sel_ends.size()) ||
      !CheckEnds(check, q_ends, "actualSeqQLenOptional", "query", s.q_tokens, kNoLimit) ||
      !CheckEnds(check, cmp_ends, "actualCmpSeqKvLenOptional", "key and value", s.kv_tokens, kNoLimit) ||
      !CheckEnds(check, sel_ends, "actualSelSeqKvLenOptional", "", kNoLimit, kNoLimit)) {
    return false;
  }
  Sequence seq;
  int64_t sel_start = 0;
  for (size_t b = 0; b < q_ends.size(); ++b) {
    seq.q_end = q_ends[b];
    seq.kv_end = cmp_ends[b];
    const int64_t cmp_length = seq.kv_end - seq.kv_start;
    const int64_t sel_length = sel_ends[b] - sel_start;
    seq.select_blocks = (cmp_length + s.select_per_cmp - 1) / s.select_per_cmp;
    if (!check.Check(cmp_length <= kMaxCmpKvLength,
                     "compressed key/value sequence %zu has %lld tokens (actualCmpSeqKvLenOptional), more than 14000",
                     b, LL(cmp_length)) ||
        !check.Check(sel_length == seq.select_blocks,
                     "sequence %zu: actualSelSeqKvLenOptional gives %lld select blocks, but CeilDiv(CmpS_kv, "
                     "selectBlockSize / compressStride) = CeilDiv(%lld, %lld) = %lld",
                     b, LL(sel_length), LL(cmp_length), LL(s.select_per_cmp), LL(seq.select_blocks)) ||
        !check.Check(sel_length >= s.select_count,
                     "sequence %zu has %lld select blocks (actualSelSeqKvLenOptional), fewer than selectBlockCount "
                     "%lld (selectBlockCount <= min(SelS_kv))",
                     b, LL(sel_length), LL(s.select_count))) {
      return false;
    }
    params->sequences.push_back(seq);
    params->max_kv_length = std::max(params->max_kv_length, cmp_length);
    params->max_select_blocks = std::max(params->max_select_blocks, sel_length);
    seq.q_start = seq.q_end;
    seq.kv_start = seq.kv_end;
    sel_start = sel_ends[b];
  }
  return true;
}

int64_t LongestQuerySequence(const std::vector<Sequence>& sequences) {
  int64_t longest = 0;
  for (const Sequence& seq : sequences) longest = std::max(longest, seq.q_end - seq.q_start);
  return longest;
}

}  // namespace
}  // namespace pacl::nsa_compress_attention

using pacl::OpChecker;
using pacl::TensorDesc;
namespace nca = pacl::nsa_compress_attention;

extern "C" aclnnStatus aclnnNsaCompressAttentionGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* attenMaskOptional,
    const aclTensor* topkMaskOptional, const aclIntArray* actualSeqQLenOptional,
    const aclIntArray* actualCmpSeqKvLenOptional, const aclIntArray* actualSelSeqKvLenOptional, double scaleValue,
    int64_t headNum, char* inputLayout, int64_t sparseMode, int64_t compressBlockSize, int64_t compressStride,
    int64_t selectBlockSize, int64_t selectBlockCount, const aclTensor* softmaxMaxOut, const aclTensor* softmaxSumOut,
    const aclTensor* attentionOutOut, const aclTensor* topkIndicesOut, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  OpChecker check(nca::kForwardName);
  // The actual-length arrays are required with layout TND (the only one), despite their names.
  if (!check.Tensor(query, "query") || !check.Tensor(key, "key") || !check.Tensor(value, "value") ||
      (attenMaskOptional != nullptr && !check.Tensor(attenMaskOptional, "attenMaskOptional")) ||
      (topkMaskOptional != nullptr && !check.Tensor(topkMaskOptional, "topkMaskOptional")) ||
      !check.NotNull(actualSeqQLenOptional, "actualSeqQLenOptional") ||
      !check.NotNull(actualCmpSeqKvLenOptional, "actualCmpSeqKvLenOptional") ||
      !check.NotNull(actualSelSeqKvLenOptional, "actualSelSeqKvLenOptional") ||
      !check.NotNull(inputLayout, "inputLayout") || !check.Tensor(softmaxMaxOut, "softmaxMaxOut") ||
      !check.Tensor(softmaxSumOut, "softmaxSumOut") || !check.Tensor(attentionOutOut, "attentionOutOut") ||
      !check.Tensor(topkIndicesOut, "topkIndicesOut") || !check.OutPointers(workspaceSize, executor)) {
    return check.status();
  }
  nca::ForwardParams params;
  nca::AttentionShape& s = params.shape;
  if (!nca::CheckDTypes(check, query, key, value, attenMaskOptional, topkMaskOptional, softmaxMaxOut, softmaxSumOut,
                        attentionOutOut, topkIndicesOut) ||
      !pacl::nsa_block_rules::CheckBlocks(check, compressBlockSize, compressStride, "compressStride", selectBlockSize,
                                          selectBlockCount, nca::kMaxSelectBlockCount) ||
      !nca::CheckInputs(check, query->desc, key->desc, value->desc, inputLayout, scaleValue, headNum, sparseMode,
                        attenMaskOptional != nullptr, &s)) {
    return check.status();
  }
  s.select_per_cmp = selectBlockSize / compressStride;
  s.cmp_per_stride = compressBlockSize / compressStride;
  s.select_count = selectBlockCount;
  if (!nca::ListSequences(check, *actualSeqQLenOptional, *actualCmpSeqKvLenOptional, *actualSelSeqKvLenOptional, s,
                          &params)) {
    return check.status();
  }
  const int64_t max_q_length = nca::LongestQuerySequence(params.sequences);
  if (!check.Shape(softmaxMaxOut->desc, "softmaxMaxOut", {s.q_tokens, s.q_heads, nca::kStatLanes},
                       "[T of query, N of query, 8]") ||
      !check.Shape(softmaxSumOut->desc, "softmaxSumOut", {s.q_tokens, s.q_heads, nca::kStatLanes},
                       "[T of query, N of query, 8]") ||
      !check.Shape(attentionOutOut->desc, "attentionOutOut", {s.q_tokens, s.q_heads, s.dim_v},
                       "[T of query, N of query, D of value]") ||
      !check.Shape(topkIndicesOut->desc, "topkIndicesOut", {s.q_tokens, s.kv_heads, s.select_count},
                       "[T of query, N of key, selectBlockCount]") ||
      (attenMaskOptional != nullptr &&
       !check.Shape(attenMaskOptional->desc, "attenMaskOptional", {max_q_length, params.max_kv_length},
                        "[max S_q, max CmpS_kv] of the actual-length arrays")) ||
      (topkMaskOptional != nullptr &&
       !check.Shape(topkMaskOptional->desc, "topkMaskOptional", {max_q_length, params.max_select_blocks},
                        "[max S_q, max SelS_kv] of the actual-length arrays")) ||
      !check.DistinctOutputElements(softmaxMaxOut->desc, "softmaxMaxOut") ||
      !check.DistinctOutputElements(softmaxSumOut->desc, "softmaxSumOut") ||
      !check.DistinctOutputElements(attentionOutOut->desc, "attentionOutOut") ||
      !check.DistinctOutputElements(topkIndicesOut->desc, "topkIndicesOut")) {
    return check.status();
  }
  params.query = query->desc;
  params.key = key->desc;
  params.value = value->desc;
  params.has_atten_mask = attenMaskOptional != nullptr;
  if (params.has_atten_mask) params.atten_mask = attenMaskOptional->desc;
  params.has_topk_mask = topkMaskOptional != nullptr;
  if (params.has_topk_mask) params.topk_mask = topkMaskOptional->desc;
  params.softmax_max = softmaxMaxOut->desc;
  params.softmax_sum = softmaxSumOut->desc;
  params.out = attentionOutOut->desc;
  params.topk = topkIndicesOut->desc;
  return pacl::BindImplementation(nca::kForwardName, query->desc.dtype, params, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnNsaCompressAttention(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                 const aclrtStream stream) {
  return pacl::RunExecutor(nca::kForwardName, workspace, workspaceSize, executor, stream);
}
