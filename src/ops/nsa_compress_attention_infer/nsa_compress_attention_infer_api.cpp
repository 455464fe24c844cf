// The aclnn entry points of NsaCompressAttentionInfer: phase 1 checks the arguments against CANN's document and the
// decisions of docs/ops/nsa_compress_attention_infer.md (the actual-length arrays are host arrays and are read here;
// no tensor data is: blockTableOptional is device data, never trusted), decides between the single-token and the
// multi-token forms as the document says, describes every tensor by where its rows are, and binds the implementation
// for the current device (cpu/); phase 2 runs the executor on a stream.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "aclnnop/aclnn_nsa_compress_attention_infer.h"
#include "nsa_compress_attention/nsa_block_rules.h"
#include "nsa_compress_attention_infer/nsa_compress_attention_infer_params.h"
#include "nsa_selected_attention_infer/nsa_paged_rules.h"
#include "pacl/op_glue.h"
#include "pacl/tensor.h"
#include "pacl/tensor_objects.h"

namespace pacl::nsa_compress_attention_infer {
namespace {

// The document's ranges.
constexpr int64_t kMaxBatch = 10000;        // B
constexpr int64_t kMaxQueryTokens = 4;      // S of query
constexpr int64_t kGroupDivides = 128;      // G <= 128 and 128 % G == 0
constexpr int64_t kDimMultiple = 16;        // D of query, key and value (NsaCompressAttention's rule)
constexpr int64_t kMaxDimQk = 192;          // D of query and key
constexpr int64_t kMaxDimV = 128;           // D of value and output
constexpr int64_t kMaxPageBlockSize = 128;  // a multiple of 16
constexpr int64_t kMaxCmpLength = 8192;     // S of key and value: actualCmpKvSeqLenOptional[b]
constexpr int64_t kMaxSelectBlocks = 4096;  // actualSelKvSeqLenCeil / selectBlockSize

long long LL(int64_t v) { return static_cast<long long>(v); }

bool ParseLayout(OpChecker& check, const char* text, bool* tnd) {
  if (text == nullptr || std::strcmp(text, "BSND") == 0) {
    *tnd = false;
  } else if (std::strcmp(text, "TND") == 0) {
    *tnd = true;
  } else {
    return check.Check(false, "layoutOptional must be \"BSND\" (the default, when null) or \"TND\", got \"%.16s\"",
                       text);
  }
  return true;
}

// The heads and pageBlockSize, then query's, key's and value's shapes; fills the shape and the row maps of query, key
// and value.
bool CheckShapes(OpChecker& check, bool tnd, const TensorDesc& query, const TensorDesc& key, const TensorDesc& value,
                 int64_t num_heads, int64_t num_kv_heads, int64_t page_block_size, Params* p) {
  InferShape& s = p->shape;
  if (!check.Check(num_heads >= 1, "numHeads must be at least 1, got %lld", LL(num_heads)) ||
      !check.Check(num_kv_heads >= 1, "numKeyValueHeads must be at least 1, got %lld", LL(num_kv_heads)) ||
      !check.Check(num_heads % num_kv_heads == 0,
                   "numHeads (%lld) must be a multiple of numKeyValueHeads (%lld): the query heads of a group share "
                   "a key/value head",
                   LL(num_heads), LL(num_kv_heads)) ||
      !check.Check(num_heads / num_kv_heads <= kGroupDivides && kGroupDivides % (num_heads / num_kv_heads) == 0,
                   "the group size numHeads / numKeyValueHeads (%lld / %lld = %lld) must divide 128", LL(num_heads),
                   LL(num_kv_heads), LL(num_heads / num_kv_heads)) ||
      !check.Check(page_block_size >= nsa_block_rules::kSizeMultiple && page_block_size <= kMaxPageBlockSize &&
                       page_block_size % nsa_block_rules::kSizeMultiple == 0,
                   "pageBlockSize must be a multiple of 16 in [16, 128], got %lld", LL(page_block_size)) ||
      !check.Rank(query, "query", tnd ? 3 : 4)) {
    return false;
  }
  // query: BSND (B, S, N1, D), TND (T, N1, D).
  const int64_t query_heads = query.shape[tnd ? 1 : 2], dim_qk = query.shape[tnd ? 2 : 3];
  p->query = tnd ? RowMap{query, 0, query.strides[0], query.strides[1], query.strides[2], dim_qk}
                 : RowMap{query, query.strides[0], query.strides[1], query.strides[2], query.strides[3], dim_qk};
  if (!check.Check(query_heads == num_heads, "numHeads must equal N of query (%s, layout %s), got %lld",
                   query.ShapeString().c_str(), tnd ? "TND" : "BSND", LL(num_heads)) ||
      !check.Check(dim_qk >= kDimMultiple && dim_qk <= kMaxDimQk && dim_qk % kDimMultiple == 0,
                   "D of query (%s) must be a multiple of 16 in [16, 192], got %lld", query.ShapeString().c_str(),
                   LL(dim_qk)) ||
      !nsa_paged_rules::CheckPages(check, key, value, page_block_size)) {
    return false;
  }
  if (!check.Check(nsa_paged_rules::MapPages(key, num_kv_heads, &p->key) && p->key.d == dim_qk,
                   "key (%s) must hold numKeyValueHeads = %lld heads of query's D = %lld per row (N * D = %lld)",
                   key.ShapeString().c_str(), LL(num_kv_heads), LL(dim_qk), LL(num_kv_heads * dim_qk)) ||
      !check.Check(nsa_paged_rules::MapPages(value, num_kv_heads, &p->value),
                   "value (%s) must hold numKeyValueHeads = %lld heads per row (N * D, D at least 1)",
                   value.ShapeString().c_str(), LL(num_kv_heads)) ||
      !check.Check(p->value.d % kDimMultiple == 0 && p->value.d <= kMaxDimV && p->value.d <= dim_qk,
                   "D of value (%lld, from %s) must be a multiple of 16, at most 128 and at most D of query and key "
                   "(%lld)",
                   LL(p->value.d), value.ShapeString().c_str(), LL(dim_qk))) {
    return false;
  }
  s.q_heads = num_heads;
  s.kv_heads = num_kv_heads;
  s.group = num_heads / num_kv_heads;
  s.dim_qk = dim_qk;
  s.dim_v = p->value.d;
  s.page_block_size = page_block_size;
  s.pages = key.shape[0];
  return true;
}

// Every entry of an optional per-entry array, or false (with the message) when its length is not B.
bool PerEntry(OpChecker& check, const aclIntArray* array, const char* param, int64_t batch,
              std::vector<int64_t>* values) {
  if (array == nullptr) return true;
  *values = array->values;
  return check.Check(static_cast<int64_t>(values->size()) == batch,
                     "%s must have one entry per batch entry (%lld, the rows of blockTableOptional), got %zu", param,
                     LL(batch), values->size());
}

// blockTableOptional, the actual-length arrays (host data, read here), the form of the call and the batches.
bool ListBatches(OpChecker& check, bool tnd, const TensorDesc& query, const TensorDesc& table,
                 const aclIntArray* q_array, const aclIntArray& cmp_array, const aclIntArray* sel_array, Params* p) {
  InferShape& s = p->shape;
  if (!check.Rank(table, "blockTableOptional", 2)) return false;
  const int64_t batch = table.shape[0], columns = table.shape[1];
  const int64_t capacity = std::min(kMaxCmpLength, nsa_paged_rules::PagedCapacity(columns, s.page_block_size));
  std::vector<int64_t> q_lengths, cmp_lengths, sel_lengths;
  if (!check.Check(batch >= 1 && batch <= kMaxBatch,
                   "blockTableOptional (%s) must have one row per batch entry, 1 to 10000 of them",
                   table.ShapeString().c_str()) ||
      !check.Check(columns >= 1, "blockTableOptional (%s) must name at least one page per batch entry",
                   table.ShapeString().c_str()) ||
      !PerEntry(check, &cmp_array, "actualCmpKvSeqLenOptional", batch, &cmp_lengths) ||
      !PerEntry(check, q_array, "actualQSeqLenOptional", batch, &q_lengths) ||
      !PerEntry(check, sel_array, "actualSelKvSeqLenOptional", batch, &sel_lengths)) {
    return false;
  }
  const int64_t s_len = tnd ? 0 : query.shape[1];
  if (!tnd &&
      (!check.Check(query.shape[0] == batch, "B of query (dim 0 of %s) must equal the rows of blockTableOptional (%s)",
                    query.ShapeString().c_str(), table.ShapeString().c_str()) ||
       !check.Check(s_len >= 1 && s_len <= kMaxQueryTokens, "S of query (dim 1 of %s) must be in [1, 4]",
                    query.ShapeString().c_str()))) {
    return false;
  }
  if (q_lengths.empty()) {
    if (tnd && !check.Check(query.shape[0] == batch,
                            "without actualQSeqLenOptional, layout TND has one query token per batch entry: T of "
                            "query (dim 0 of %s) must equal the rows of blockTableOptional (%lld)",
                            query.ShapeString().c_str(), LL(batch))) {
      return false;
    }
    q_lengths.assign(static_cast<size_t>(batch), tnd ? 1 : s_len);
  }
  // The multi-token form needs both query and raw lengths, consistent with the compressed ones (the document: else
  // the single-token form, where every query token sees all compressed tokens of its entry).
  bool multi_token = q_array != nullptr && sel_array != nullptr;
  const int64_t l = s.compress_block_size, d = s.compress_stride, l_select = s.select_per_cmp * d;
  int64_t tokens = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const size_t e = static_cast<size_t>(b);
    const int64_t q_length = q_lengths[e], cmp_length = cmp_lengths[e];
    const int64_t most = tnd ? kMaxQueryTokens : s_len;
    if (!check.Check(cmp_length >= 0 && cmp_length <= capacity,
                     "actualCmpKvSeqLenOptional[%lld] = %lld must be in [0, %lld] (at most 8192, and "
                     "blockTableOptional's %lld pages of pageBlockSize %lld)",
                     LL(b), LL(cmp_length), LL(capacity), LL(columns), LL(s.page_block_size)) ||
        !check.Check(q_length >= 0 && q_length <= most, "actualQSeqLenOptional[%lld] = %lld must be in [0, %lld]%s",
                     LL(b), LL(q_length), LL(most), tnd ? "" : " (S of query)")) {
      return false;
    }
    if (cmp_length >= 1) {
      // actualSelKvSeqLenCeil: the longest raw sequence with cmp_length compressed tokens.
      const int64_t ceil_blocks = ((cmp_length - 1) * d + l) / l_select;
      if (!check.Check(ceil_blocks <= kMaxSelectBlocks,
                       "actualCmpKvSeqLenOptional[%lld] = %lld covers %lld select blocks (((%lld - 1) * "
                       "compressBlockStride + compressBlockSize) / selectBlockSize), more than 4096",
                       LL(b), LL(cmp_length), LL(ceil_blocks), LL(cmp_length)) ||
          !check.Check(s.select_count <= ceil_blocks,
                       "selectBlockCount (%lld) must not exceed the %lld select blocks of entry %lld (((%lld - 1) * "
                       "compressBlockStride + compressBlockSize) / selectBlockSize)",
                       LL(s.select_count), LL(ceil_blocks), LL(b), LL(cmp_length))) {
        return false;
      }
    }
    if (multi_token) {
      const int64_t sel = sel_lengths[e];
      const int64_t compressed = sel >= l ? (sel - l) / d + 1 : 0;
      multi_token = sel >= 0 && compressed == cmp_length && q_length <= sel;
    }
    tokens += q_length;
  }
  if (tnd && !check.Check(tokens == query.shape[0],
                          "the entries of actualQSeqLenOptional must add up to T of query (dim 0 of %s), got %lld",
                          query.ShapeString().c_str(), LL(tokens))) {
    return false;
  }
  tokens = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const size_t e = static_cast<size_t>(b);
    Batch entry;
    entry.first_token = tnd ? tokens : 0;
    entry.q_length = q_lengths[e];
    entry.rows = tnd ? entry.q_length : s_len;
    entry.cmp_length = cmp_lengths[e];
    entry.first_position = multi_token ? sel_lengths[e] - entry.q_length : -1;
    entry.select_blocks = (entry.cmp_length + s.select_per_cmp - 1) / s.select_per_cmp;
    entry.first_item = p->total_rows;
    p->batches.push_back(entry);
    p->total_rows += entry.rows;
    p->max_cmp_length = std::max(p->max_cmp_length, entry.cmp_length);
    tokens += entry.q_length;
  }
  return true;
}

// topKOutput and output: their shapes in the layout; fills their maps.
bool CheckOutputs(OpChecker& check, bool tnd, const TensorDesc& query, const TensorDesc& topk, const TensorDesc& output,
                  Params* p) {
  const InferShape& s = p->shape;
  const int64_t n2 = s.kv_heads, count = s.select_count;
  TopkMap& k = p->topk;
  if (tnd) {
    const int64_t t = query.shape[0];
    if (!check.Shape(topk, "topKOutput", {t, n2, count}, "[T of query, numKeyValueHeads, selectBlockCount]") ||
        !check.Shape(output, "output", {t, s.q_heads, s.dim_v}, "[T of query, numHeads, D of value]")) {
      return false;
    }
    k = {topk, 0, topk.strides[0], topk.strides[1], topk.strides[2]};
    p->out = {output, 0, output.strides[0], output.strides[1], output.strides[2], s.dim_v};
  } else {
    const int64_t b = query.shape[0], s_len = query.shape[1];
    if (topk.rank == 3 && s_len == 1) {
      if (!check.Shape(topk, "topKOutput", {b, n2, count}, "[B, numKeyValueHeads, selectBlockCount] (S of query 1)")) {
        return false;
      }
      k = {topk, topk.strides[0], 0, topk.strides[1], topk.strides[2]};
    } else {
      if (!check.Shape(topk, "topKOutput", {b, s_len, n2, count}, "[B, S, numKeyValueHeads, selectBlockCount]")) {
        return false;
      }
      k = {topk, topk.strides[0], topk.strides[1], topk.strides[2], topk.strides[3]};
    }
    if (!check.Shape(output, "output", {b, s_len, s.q_heads, s.dim_v}, "[B, S, numHeads, D of value]")) return false;
    p->out = {output, output.strides[0], output.strides[1], output.strides[2], output.strides[3], s.dim_v};
  }
  return check.DistinctOutputElements(output, "output") && check.DistinctOutputElements(topk, "topKOutput");
}

}  // namespace
}  // namespace pacl::nsa_compress_attention_infer

using pacl::OpChecker;
using pacl::TensorDesc;
namespace infer = pacl::nsa_compress_attention_infer;

extern "C" aclnnStatus aclnnNsaCompressAttentionInferGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value,
    const aclTensor* /*attentionMaskOptional: not read (docs: the multi-token form's causal rule)*/,
    const aclTensor* blockTableOptional, const aclIntArray* actualQSeqLenOptional,
    const aclIntArray* actualCmpKvSeqLenOptional, const aclIntArray* actualSelKvSeqLenOptional,
    const aclTensor* /*topKMaskOptional: reserved, not read*/, int64_t numHeads, int64_t numKeyValueHeads,
    int64_t selectBlockSize, int64_t selectBlockCount, int64_t compressBlockSize, int64_t compressBlockStride,
    double scaleValue, char* layoutOptional, int64_t pageBlockSize, int64_t /*sparseMode: not read*/,
    const aclTensor* output, const aclTensor* topKOutput, uint64_t* workspaceSize, aclOpExecutor** executor) {
  OpChecker check(infer::kName);
  // Paged attention only: blockTableOptional and actualCmpKvSeqLenOptional are required despite their names.
  if (!check.Tensor(query, "query") || !check.Tensor(key, "key") || !check.Tensor(value, "value") ||
      !check.Tensor(blockTableOptional, "blockTableOptional") ||
      !check.NotNull(actualCmpKvSeqLenOptional, "actualCmpKvSeqLenOptional") || !check.Tensor(output, "output") ||
      !check.Tensor(topKOutput, "topKOutput") || !check.OutPointers(workspaceSize, executor)) {
    return check.status();
  }
  infer::Params params;
  infer::InferShape& s = params.shape;
  bool tnd = false;
  const TensorDesc& q = query->desc;
  if (!pacl::nsa_paged_rules::CheckDTypes(check, q, key->desc, value->desc, output->desc, topKOutput->desc,
                                          "topKOutput", blockTableOptional->desc) ||
      !infer::ParseLayout(check, layoutOptional, &tnd) ||
      !pacl::nsa_block_rules::CheckBlocks(check, compressBlockSize, compressBlockStride, "compressBlockStride",
                                          selectBlockSize, selectBlockCount, infer::kMaxSelectBlocks) ||
      !infer::CheckShapes(check, tnd, q, key->desc, value->desc, numHeads, numKeyValueHeads, pageBlockSize, &params)) {
    return check.status();
  }
  s.compress_block_size = compressBlockSize;
  s.compress_stride = compressBlockStride;
  s.select_per_cmp = selectBlockSize / compressBlockStride;
  s.cmp_per_stride = compressBlockSize / compressBlockStride;
  s.select_count = selectBlockCount;
  s.scale = static_cast<float>(scaleValue);
  if (!infer::ListBatches(check, tnd, q, blockTableOptional->desc, actualQSeqLenOptional, *actualCmpKvSeqLenOptional,
                          actualSelKvSeqLenOptional, &params) ||
      !infer::CheckOutputs(check, tnd, q, topKOutput->desc, output->desc, &params)) {
    return check.status();
  }
  params.block_table = blockTableOptional->desc;
  return pacl::BindImplementation(infer::kName, q.dtype, params, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnNsaCompressAttentionInfer(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                      const aclrtStream stream) {
  return pacl::RunExecutor(infer::kName, workspace, workspaceSize, executor, stream);
}
