// Plain-data parameters of aclnnNsaCompressAttentionInfer, filled by phase 1 (nsa_compress_attention_infer_api.cpp)
// and consumed by the kernel (cpu/). Query, output, key, value and topKOutput are described by where their rows are
// (NsaSelectedAttentionInfer's row maps), whatever the layout.
#ifndef PACL_OPS_NSA_COMPRESS_ATTENTION_INFER_NSA_COMPRESS_ATTENTION_INFER_PARAMS_H_
#define PACL_OPS_NSA_COMPRESS_ATTENTION_INFER_NSA_COMPRESS_ATTENTION_INFER_PARAMS_H_

#include <cstdint>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "nsa_selected_attention_infer/nsa_selected_attention_infer_params.h"
#include "pacl/tensor.h"

namespace pacl::nsa_compress_attention_infer {

using nsa_selected_attention_infer::PageMap;
using nsa_selected_attention_infer::RowMap;
using nsa_selected_attention_infer::TopkMap;

struct InferShape {
  int64_t q_heads = 0;   // N1 (numHeads)
  int64_t kv_heads = 0;  // N2 (numKeyValueHeads)
  int64_t group = 0;     // G = N1 / N2
  int64_t dim_qk = 0;    // D of query and key
  int64_t dim_v = 0;     // D of value and output
  int64_t compress_block_size = 0;
  int64_t compress_stride = 0;
  int64_t select_per_cmp = 0;   // r = selectBlockSize / compressBlockStride (the formula's first sum)
  int64_t cmp_per_stride = 0;   // c = compressBlockSize / compressBlockStride (its second sum)
  int64_t select_count = 0;     // selectBlockCount
  int64_t page_block_size = 0;  // pageBlockSize: compressed key/value rows per page
  int64_t pages = 0;            // blockNum
  float scale = 0.0f;           // scaleValue rounded once to float
};

// One batch entry: its query rows (`rows` written, the first q_length real; BSND pads an entry to S rows, which get
// zeros and -1), its compressed key/value length, and the raw position of its first query token when the call is a
// multi-token one (each token then sees only the compressed blocks complete at its position).
struct Batch {
  int64_t first_token = 0;  // TND: where its tokens begin in query, output and topKOutput; BSND: 0
  int64_t rows = 0;
  int64_t q_length = 0;
  int64_t cmp_length = 0;       // actualCmpKvSeqLenOptional[b]
  int64_t first_position = -1;  // multi-token: actualSelKvSeqLen[b] - q_length; single-token: -1 (every key)
  int64_t select_blocks = 0;    // ceil(cmp_length / r): the candidate select blocks
  int64_t first_item = 0;       // rows of the entries before it (the kernel's item numbering)
};

struct Params {
  InferShape shape;
  std::vector<Batch> batches;
  int64_t total_rows = 0;
  int64_t max_cmp_length = 0;  // scratch sizes
  RowMap query, out;
  PageMap key, value;
  TopkMap topk;
  TensorDesc block_table;  // INT32 (B, pages per entry)
};

inline constexpr const char* kName = "aclnnNsaCompressAttentionInfer";

aclnnStatus RunCpu(const Params& params, void* workspace);

}  // namespace pacl::nsa_compress_attention_infer

#endif  // PACL_OPS_NSA_COMPRESS_ATTENTION_INFER_NSA_COMPRESS_ATTENTION_INFER_PARAMS_H_
