// Plain-data parameters of aclnnNsaSelectedAttentionInfer, filled by phase 1 (nsa_selected_attention_infer_api.cpp)
// and consumed by the kernel (cpu/). Every tensor is described by where its rows are, whatever the layout.
#ifndef PACL_OPS_NSA_SELECTED_ATTENTION_INFER_NSA_SELECTED_ATTENTION_INFER_PARAMS_H_
#define PACL_OPS_NSA_SELECTED_ATTENTION_INFER_NSA_SELECTED_ATTENTION_INFER_PARAMS_H_

#include <cstdint>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "pacl/tensor.h"

namespace pacl::nsa_selected_attention_infer {

// Row (b, i, n) of query or output - token i of batch b, head n - begins at element
// t.offset + b * batch + (first token of b + i) * token + n * head, its D elements `dim` apart. BSND and BSH: batch
// is dim 0's stride and a batch's first token is 0; TND: batch is 0 and the first tokens are cumulative.
struct RowMap {
  TensorDesc t;
  int64_t batch = 0, token = 0, head = 0, dim = 0;
  int64_t d = 0;  // D
  // Row (b, i, n) of a batch entry whose first token is first_token.
  const char* Row(int64_t b, int64_t first_token, int64_t i, int64_t n) const {
    return t.ElementAt(t.offset + b * batch + (first_token + i) * token + n * head);
  }
};

// Row (page, r, h) of key or value: element t.offset + page * page_stride + r * row + h * head, D elements `dim`
// apart (the 3-D form (blockNum, pageBlockSize, N * D) and the 4-D form (blockNum, pageBlockSize, N, D)).
struct PageMap {
  TensorDesc t;
  int64_t page_stride = 0, row = 0, head = 0, dim = 0;
  int64_t d = 0;
  const char* Row(int64_t page, int64_t r, int64_t h) const {
    return t.ElementAt(t.offset + page * page_stride + r * row + h * head);
  }
};

// topkIndices element (b, i, h, slot): t.offset + b * batch + (first token of b + i) * token + h * head + slot * slot.
struct TopkMap {
  TensorDesc t;
  int64_t batch = 0, token = 0, head = 0, slot = 0;
  // The element index of slot 0 of (b, i, h) for a batch entry whose first token is first_token.
  int64_t First(int64_t b, int64_t first_token, int64_t i, int64_t h) const {
    return t.offset + b * batch + (first_token + i) * token + h * head;
  }
};

struct InferShape {
  int64_t q_heads = 0;          // N1 (numHeads)
  int64_t kv_heads = 0;         // N2 (numKeyValueHeads)
  int64_t group = 0;            // G = N1 / N2
  int64_t dim_qk = 0;           // D of query and key
  int64_t dim_v = 0;            // D of value and output
  int64_t block_size = 0;       // selectBlockSize
  int64_t block_count = 0;      // selectBlockCount
  int64_t page_block_size = 0;  // pageBlockSize: key/value rows per page
  int64_t pages = 0;            // blockNum: pages in the cache
  int64_t table_columns = 0;    // pages per sequence in blockTableOptional
  float scale = 0.0f;           // scaleValue rounded once to float
};

// One batch entry: its query tokens (rows written: `rows`, of which the first q_length are real; BSND and BSH pad a
// batch to S rows, which get zeros) and its key/value length.
struct Batch {
  int64_t first_token = 0;  // TND: where its tokens begin in query and output; BSND, BSH: 0
  int64_t rows = 0;
  int64_t q_length = 0;
  int64_t kv_length = 0;
  int64_t first_item = 0;  // rows of the batches before it (the kernel's item numbering)
};

struct Params {
  InferShape shape;
  std::vector<Batch> batches;
  int64_t total_rows = 0;
  RowMap query, out;
  PageMap key, value;
  TopkMap topk;
  TensorDesc block_table;  // INT32 (B, table_columns)
};

inline constexpr const char* kName = "aclnnNsaSelectedAttentionInfer";

aclnnStatus RunCpu(const Params& params, void* workspace);

}  // namespace pacl::nsa_selected_attention_infer

#endif  // PACL_OPS_NSA_SELECTED_ATTENTION_INFER_NSA_SELECTED_ATTENTION_INFER_PARAMS_H_
