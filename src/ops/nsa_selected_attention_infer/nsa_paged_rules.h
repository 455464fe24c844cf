// Phase 1's pieces shared by the paged NSA inference operators (NsaSelectedAttentionInfer, NsaCompressAttentionInfer):
// their dtypes, the pages of key and value and their page maps.
#ifndef PACL_OPS_NSA_SELECTED_ATTENTION_INFER_NSA_PAGED_RULES_H_
#define PACL_OPS_NSA_SELECTED_ATTENTION_INFER_NSA_PAGED_RULES_H_

#include <cstdint>
#include <utility>

#include "nsa_selected_attention_infer/nsa_selected_attention_infer_params.h"
#include "pacl/op_glue.h"
#include "pacl/tensor.h"

namespace pacl::nsa_paged_rules {

// query FLOAT16 or BFLOAT16; key, value and output of its dtype; the top-k indices (named topk_name) and
// blockTableOptional INT32; every one in a plain format.
inline bool CheckDTypes(OpChecker& check, const TensorDesc& query, const TensorDesc& key, const TensorDesc& value,
                        const TensorDesc& output, const TensorDesc& topk, const char* topk_name,
                        const TensorDesc& table) {
  if (!check.DType(query, "query", {ACL_FLOAT16, ACL_BF16}) || !check.PlainFormat(query, "query")) return false;
  for (const auto& [desc, param] :
       {std::make_pair(&key, "key"), std::make_pair(&value, "value"), std::make_pair(&output, "output")}) {
    if (!check.SameDType(query, "query", *desc, param) || !check.PlainFormat(*desc, param)) return false;
  }
  return check.DType(topk, topk_name, {ACL_INT32}) && check.PlainFormat(topk, topk_name) &&
         check.DType(table, "blockTableOptional", {ACL_INT32}) && check.PlainFormat(table, "blockTableOptional");
}

// The positions blockTableOptional's `columns` pages per entry hold, saturating at INT64_MAX (columns comes from a
// tensor's shape: any int64).
inline int64_t PagedCapacity(int64_t columns, int64_t page_block_size) {
  int64_t capacity = 0;
  return __builtin_mul_overflow(columns, page_block_size, &capacity) ? INT64_MAX : capacity;
}

// key 3-D (blockNum, pageBlockSize, N * D) or 4-D (blockNum, pageBlockSize, N, D) with at least one page of
// page_block_size rows; value of its rank with the same pages.
inline bool CheckPages(OpChecker& check, const TensorDesc& key, const TensorDesc& value, int64_t page_block_size) {
  return check.Check(key.rank == 3 || key.rank == 4,
                     "key must be 3-D (blockNum, pageBlockSize, N * D) or 4-D (blockNum, pageBlockSize, N, D), got %s",
                     key.ShapeString().c_str()) &&
         check.Check(value.rank == key.rank, "value (%s) must have key's rank (%s)", value.ShapeString().c_str(),
                     key.ShapeString().c_str()) &&
         check.Check(key.shape[1] == page_block_size, "dim 1 of key (%s) must equal pageBlockSize %lld",
                     key.ShapeString().c_str(), static_cast<long long>(page_block_size)) &&
         check.Check(key.shape[0] >= 1, "key (%s) must hold at least one page (dim 0)", key.ShapeString().c_str()) &&
         check.Check(value.shape[0] == key.shape[0] && value.shape[1] == key.shape[1],
                     "value (%s) must have key's pages (dims 0 and 1 of %s)", value.ShapeString().c_str(),
                     key.ShapeString().c_str());
}

// The page map of key or value, (blockNum, pageBlockSize, N2, D) or (blockNum, pageBlockSize, N2 * D): false when
// its heads are not num_kv_heads or D is not at least 1 (3-D: its last dim not a whole number of heads, map->d 0).
inline bool MapPages(const TensorDesc& t, int64_t num_kv_heads, nsa_selected_attention_infer::PageMap* map) {
  if (t.rank == 4) {
    *map = {t, t.strides[0], t.strides[1], t.strides[2], t.strides[3], t.shape[3]};
    return t.shape[2] == num_kv_heads && t.shape[3] >= 1;
  }
  const int64_t dim = t.shape[2] % num_kv_heads == 0 ? t.shape[2] / num_kv_heads : 0;
  *map = {t, t.strides[0], t.strides[1], dim * t.strides[2], t.strides[2], dim};
  return dim >= 1;
}

}  // namespace pacl::nsa_paged_rules

#endif  // PACL_OPS_NSA_SELECTED_ATTENTION_INFER_NSA_PAGED_RULES_H_
