// The aclnn entry points of NsaSelectedAttentionInfer: phase 1 checks the arguments against CANN's document and the
// decisions of docs/ops/nsa_selected_attention_infer.md (the actual-length arrays are host arrays and are read here;
// no tensor data is: topkIndices and blockTableOptional are device data, never trusted), describes every tensor by
// where its rows are (nsa_selected_attention_infer_params.h), and binds the implementation for the current device
// (cpu/); phase 2 runs the executor on a stream.
#include <cstdint>
#include <cstring>
#include <vector>

#include "aclnnop/aclnn_nsa_select_attention_infer.h"
#include "nsa_selected_attention_infer/nsa_paged_rules.h"
#include "nsa_selected_attention_infer/nsa_selected_attention_infer_params.h"
#include "pacl/op_glue.h"
#include "pacl/tensor.h"
#include "pacl/tensor_objects.h"

namespace pacl::nsa_selected_attention_infer {
namespace {

// The document's ranges.
constexpr int64_t kMaxKvHeads = 256;       // N of key and value
constexpr int64_t kMaxGroup = 16;          // G = numHeads / numKeyValueHeads
constexpr int64_t kDimQk = 192;            // D of query and key
constexpr int64_t kDimV = 128;             // D of value and output
constexpr int64_t kMaxBatch = 3072;        // B
constexpr int64_t kMaxQueryTokens = 4;     // S of a batch (1, or up to 4 with several tokens)
constexpr int64_t kBlockSizeMultiple = 16;  // selectBlockSize: a multiple of 16 up to 128
constexpr int64_t kMaxBlockSize = 128;
constexpr int64_t kMaxBlockCount = 32;     // selectBlockCount: as NsaSelectedAttention (docs: the decision)

enum class Layout { kBSND, kBSH, kTND };

long long LL(int64_t v) { return static_cast<long long>(v); }

bool ParseLayout(OpChecker& check, const char* text, Layout* layout) {
  if (text == nullptr || std::strcmp(text, "BSND") == 0) {
    *layout = Layout::kBSND;
  } else if (std::strcmp(text, "BSH") == 0) {
    *layout = Layout::kBSH;
  } else if (std::strcmp(text, "TND") == 0) {
    *layout = Layout::kTND;
  } else {
    return check.Check(false, "layoutOptional must be \"BSND\" (the default, when null), \"BSH\" or \"TND\", got "
                              "\"%.16s\"", text);
  }
  return true;
}

// The attributes, then query's, key's and value's shapes; fills the shape and the row maps of query, key and value.
bool CheckShapes(OpChecker& check, Layout layout, const TensorDesc& query, const TensorDesc& key,
                 const TensorDesc& value, int64_t num_heads, int64_t num_kv_heads, int64_t block_size,
                 int64_t block_count, int64_t page_block_size, Params* p) {
  InferShape& s = p->shape;
  if (!check.Check(num_heads >= 1, "numHeads must be at least 1, got %lld", LL(num_heads)) ||
      !check.Check(num_kv_heads >= 1 && num_kv_heads <= kMaxKvHeads, "numKeyValueHeads must be in [1, 256], got %lld",
                   LL(num_kv_heads)) ||
      !check.Check(num_heads % num_kv_heads == 0,
                   "numHeads (%lld) must be a multiple of numKeyValueHeads (%lld): the query heads of a group share "
                   "a key/value head",
                   LL(num_heads), LL(num_kv_heads)) ||
      !check.Check(num_heads / num_kv_heads <= kMaxGroup,
                   "the group size numHeads / numKeyValueHeads (%lld / %lld = %lld) must be at most 16",
                   LL(num_heads), LL(num_kv_heads), LL(num_heads / num_kv_heads)) ||
      !check.Check(block_size >= kBlockSizeMultiple && block_size <= kMaxBlockSize &&
                       block_size % kBlockSizeMultiple == 0,
                   "selectBlockSize must be a multiple of 16 in [16, 128], got %lld", LL(block_size)) ||
      !check.Check(block_count >= 1 && block_count <= kMaxBlockCount, "selectBlockCount must be in [1, 32], got %lld",
                   LL(block_count)) ||
      !check.Check(page_block_size == 64 || page_block_size == 128, "pageBlockSize must be 64 or 128, got %lld",
                   LL(page_block_size))) {
    return false;
  }
  // query: BSND (B, S, N1, D), BSH (B, S, N1 * D), TND (T, N1, D).
  const int query_rank = layout == Layout::kBSND ? 4 : 3;
  if (!check.Rank(query, "query", query_rank)) return false;
  int64_t query_heads = 0, dim_qk = 0;
  RowMap& q = p->query;
  if (layout == Layout::kBSH) {
    if (!check.Check(query.shape[2] % num_heads == 0, "H of query (dim 2 of %s) must be numHeads (%lld) * D",
                     query.ShapeString().c_str(), LL(num_heads))) {
      return false;
    }
    query_heads = num_heads;
    dim_qk = query.shape[2] / num_heads;
    q = {query, query.strides[0], query.strides[1], dim_qk * query.strides[2], query.strides[2], dim_qk};
  } else if (layout == Layout::kBSND) {
    query_heads = query.shape[2];
    dim_qk = query.shape[3];
    q = {query, query.strides[0], query.strides[1], query.strides[2], query.strides[3], dim_qk};
  } else {
    query_heads = query.shape[1];
    dim_qk = query.shape[2];
    q = {query, 0, query.strides[0], query.strides[1], query.strides[2], dim_qk};
  }
  if (!check.Check(query_heads == num_heads, "numHeads must equal N of query (%s, layout %s), got %lld",
                   query.ShapeString().c_str(),
                   layout == Layout::kBSND  ? "BSND"
                   : layout == Layout::kBSH ? "BSH"
                                            : "TND",
                   LL(num_heads)) ||
      !check.Check(dim_qk == kDimQk, "D of query (%s) must be 192, got %lld", query.ShapeString().c_str(),
                   LL(dim_qk)) ||
      !nsa_paged_rules::CheckPages(check, key, value, page_block_size)) {
    return false;
  }
  // key and value pages: (blockNum, pageBlockSize, N2 * D) or (blockNum, pageBlockSize, N2, D).
  const auto page_map = [&](const TensorDesc& t, const char* param, int64_t want_dim, PageMap* map) {
    return check.Check(nsa_paged_rules::MapPages(t, num_kv_heads, map) && map->d == want_dim,
                       "%s (%s) must hold numKeyValueHeads = %lld heads of D = %lld per row (N * D = %lld)", param,
                       t.ShapeString().c_str(), LL(num_kv_heads), LL(want_dim), LL(num_kv_heads * want_dim));
  };
  if (!page_map(key, "key", kDimQk, &p->key) || !page_map(value, "value", kDimV, &p->value)) return false;
  s.q_heads = num_heads;
  s.kv_heads = num_kv_heads;
  s.group = num_heads / num_kv_heads;
  s.dim_qk = kDimQk;
  s.dim_v = kDimV;
  s.block_size = block_size;
  s.block_count = block_count;
  s.page_block_size = page_block_size;
  s.pages = key.shape[0];
  return true;
}

// blockTableOptional, the actual-length arrays (host data, read here) and the batches. BSND/BSH: B and S of query;
// TND: T of query.
bool ListBatches(OpChecker& check, Layout layout, const TensorDesc& query, const TensorDesc& table,
                 const aclIntArray* q_lengths_array, const aclIntArray& kv_lengths_array, Params* p) {
  if (!check.Rank(table, "blockTableOptional", 2)) return false;
  const int64_t batch = table.shape[0], columns = table.shape[1];
  const int64_t capacity = nsa_paged_rules::PagedCapacity(columns, p->shape.page_block_size);
  if (!check.Check(batch >= 1 && batch <= kMaxBatch,
                   "blockTableOptional (%s) must have one row per batch entry, 1 to 3072 of them",
                   table.ShapeString().c_str()) ||
      !check.Check(columns >= 1, "blockTableOptional (%s) must name at least one page per batch entry",
                   table.ShapeString().c_str())) {
    return false;
  }
  const bool padded = layout != Layout::kTND;  // BSND, BSH: (B, S, ...)
  const int64_t s_len = padded ? query.shape[1] : 0;
  if (padded && (!check.Check(query.shape[0] == batch,
                              "B of query (dim 0 of %s) must equal the rows of blockTableOptional (%s)",
                              query.ShapeString().c_str(), table.ShapeString().c_str()) ||
                 !check.Check(s_len >= 1 && s_len <= kMaxQueryTokens, "S of query (dim 1 of %s) must be in [1, 4]",
                              query.ShapeString().c_str()))) {
    return false;
  }
  const std::vector<int64_t>& kv_lengths = kv_lengths_array.values;
  if (!check.Check(static_cast<int64_t>(kv_lengths.size()) == batch,
                   "actualKvSeqLenOptional must have one entry per batch entry (%lld, the rows of "
                   "blockTableOptional), got %zu",
                   LL(batch), kv_lengths.size())) {
    return false;
  }
  std::vector<int64_t> q_lengths;
  if (q_lengths_array != nullptr) {
    q_lengths = q_lengths_array->values;
    if (!check.Check(static_cast<int64_t>(q_lengths.size()) == batch,
                     "actualQSeqLenOptional must have one entry per batch entry (%lld), got %zu", LL(batch),
                     q_lengths.size())) {
      return false;
    }
  } else if (padded) {
    q_lengths.assign(static_cast<size_t>(batch), s_len);
  } else {
    if (!check.Check(query.shape[0] == batch,
                     "without actualQSeqLenOptional, layout TND has one query token per batch entry: T of query (dim "
                     "0 of %s) must equal the rows of blockTableOptional (%lld)",
                     query.ShapeString().c_str(), LL(batch))) {
      return false;
    }
    q_lengths.assign(static_cast<size_t>(batch), 1);
  }
  int64_t tokens = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t q_length = q_lengths[static_cast<size_t>(b)], kv_length = kv_lengths[static_cast<size_t>(b)];
    const int64_t most = padded ? s_len : kMaxQueryTokens;
    if (!check.Check(kv_length >= 0 && kv_length <= capacity,
                     "actualKvSeqLenOptional[%lld] = %lld must be in [0, %lld] (blockTableOptional's %lld pages of "
                     "pageBlockSize %lld)",
                     LL(b), LL(kv_length), LL(capacity), LL(columns), LL(p->shape.page_block_size)) ||
        !check.Check(q_length >= 0 && q_length <= most, "actualQSeqLenOptional[%lld] = %lld must be in [0, %lld]%s",
                     LL(b), LL(q_length), LL(most), padded ? " (S of query)" : "") ||
        !check.Check(q_length <= kv_length,
                     "actualQSeqLenOptional[%lld] = %lld must not exceed actualKvSeqLenOptional[%lld] = %lld (the "
                     "query tokens are the last of their sequence)",
                     LL(b), LL(q_length), LL(b), LL(kv_length))) {
      return false;
    }
    const int64_t rows = padded ? s_len : q_length;
    p->batches.push_back({padded ? 0 : tokens, rows, q_length, kv_length, p->total_rows});
    p->total_rows += rows;
    tokens += q_length;
  }
  if (!padded && !check.Check(tokens == query.shape[0],
                              "the entries of actualQSeqLenOptional must add up to T of query (dim 0 of %s), got "
                              "%lld",
                              query.ShapeString().c_str(), LL(tokens))) {
    return false;
  }
  p->shape.table_columns = columns;
  return true;
}

// topkIndices and output: their shapes in the layout; fills their maps.
bool CheckTopkAndOutput(OpChecker& check, Layout layout, const TensorDesc& query, const TensorDesc& topk,
                        const TensorDesc& output, Params* p) {
  const InferShape& s = p->shape;
  const int64_t n2 = s.kv_heads, count = s.block_count;
  TopkMap& k = p->topk;
  if (layout == Layout::kTND) {
    const int64_t t = query.shape[0];
    if (!check.Shape(topk, "topkIndices", {t, n2, count}, "[T of query, numKeyValueHeads, selectBlockCount]") ||
        !check.Shape(output, "output", {t, s.q_heads, s.dim_v}, "[T of query, numHeads, D of value]")) {
      return false;
    }
    k = {topk, 0, topk.strides[0], topk.strides[1], topk.strides[2]};
    p->out = {output, 0, output.strides[0], output.strides[1], output.strides[2], s.dim_v};
    return check.DistinctOutputElements(output, "output");
  }
  const int64_t b = query.shape[0], s_len = query.shape[1];
  if (topk.rank == 3 && s_len == 1) {
    if (!check.Shape(topk, "topkIndices", {b, n2, count}, "[B, numKeyValueHeads, selectBlockCount] (S of query 1)")) {
      return false;
    }
    k = {topk, topk.strides[0], 0, topk.strides[1], topk.strides[2]};
  } else {
    if (!check.Shape(topk, "topkIndices", {b, s_len, n2, count}, "[B, S, numKeyValueHeads, selectBlockCount]")) {
      return false;
    }
    k = {topk, topk.strides[0], topk.strides[1], topk.strides[2], topk.strides[3]};
  }
  if (layout == Layout::kBSND) {
    if (!check.Shape(output, "output", {b, s_len, s.q_heads, s.dim_v}, "[B, S, numHeads, D of value]")) return false;
    p->out = {output, output.strides[0], output.strides[1], output.strides[2], output.strides[3], s.dim_v};
  } else {
    if (!check.Shape(output, "output", {b, s_len, s.q_heads * s.dim_v}, "[B, S, numHeads * D of value]")) {
      return false;
    }
    p->out = {output, output.strides[0], output.strides[1], s.dim_v * output.strides[2], output.strides[2],
              s.dim_v};
  }
  return check.DistinctOutputElements(output, "output");
}

}  // namespace
}  // namespace pacl::nsa_selected_attention_infer

using pacl::OpChecker;
using pacl::TensorDesc;
namespace infer = pacl::nsa_selected_attention_infer;

extern "C" aclnnStatus aclnnNsaSelectedAttentionInferGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* topkIndices,
    const aclTensor* /*attenMaskOptional: reserved, not read*/, const aclTensor* blockTableOptional,
    const aclIntArray* actualQSeqLenOptional, const aclIntArray* actualKvSeqLenOptional, char* layoutOptional,
    int64_t numHeads, int64_t numKeyValueHeads, int64_t selectBlockSize, int64_t selectBlockCount,
    int64_t pageBlockSize, double scaleValue, int64_t /*sparseMode: reserved*/, aclTensor* output,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  OpChecker check(infer::kName);
  // Paged attention only: blockTableOptional and actualKvSeqLenOptional are required despite their names.
  if (!check.Tensor(query, "query") || !check.Tensor(key, "key") || !check.Tensor(value, "value") ||
      !check.Tensor(topkIndices, "topkIndices") || !check.Tensor(blockTableOptional, "blockTableOptional") ||
      !check.NotNull(actualKvSeqLenOptional, "actualKvSeqLenOptional") || !check.Tensor(output, "output") ||
      !check.OutPointers(workspaceSize, executor)) {
    return check.status();
  }
  infer::Params params;
  infer::Layout layout = infer::Layout::kBSND;
  const TensorDesc& q = query->desc;
  if (!pacl::nsa_paged_rules::CheckDTypes(check, q, key->desc, value->desc, output->desc, topkIndices->desc,
                                          "topkIndices", blockTableOptional->desc) ||
      !infer::ParseLayout(check, layoutOptional, &layout) ||
      !infer::CheckShapes(check, layout, q, key->desc, value->desc, numHeads, numKeyValueHeads, selectBlockSize,
                          selectBlockCount, pageBlockSize, &params) ||
      !infer::ListBatches(check, layout, q, blockTableOptional->desc, actualQSeqLenOptional, *actualKvSeqLenOptional,
                          &params) ||
      !infer::CheckTopkAndOutput(check, layout, q, topkIndices->desc, output->desc, &params)) {
    return check.status();
  }
  params.block_table = blockTableOptional->desc;
  params.shape.scale = static_cast<float>(scaleValue);
  return pacl::BindImplementation(infer::kName, q.dtype, params, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnNsaSelectedAttentionInfer(void* workspace, uint64_t workspaceSize,
                                                      aclOpExecutor* executor, const aclrtStream stream) {
  return pacl::RunExecutor(infer::kName, workspace, workspaceSize, executor, stream);
}
