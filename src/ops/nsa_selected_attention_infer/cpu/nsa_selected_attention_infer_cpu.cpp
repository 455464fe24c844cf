// NOTE [NsaSelectedAttentionInfer on the CPU]
//
// Problem. Batch entry b has q_b query tokens, the last of a sequence of kv_b key/value positions held in a paged
// cache: position p lives in row p % pageBlockSize of page blockTable[b][p / pageBlockSize] of key and value. Query
// token i of b (position kv_b - q_b + i) and KV head h attend, through topkIndices[b, i, h, :], to selectBlockCount
// blocks of selectBlockSize positions: slot index j names positions [j bs, (j + 1) bs) clipped to the sequence
// (< kv_b) and to the token's past (<= its position); an index that is negative or starts past the sequence selects
// nothing, a repeated one counts its keys twice (as NsaSelectedAttention's Gather), and a position whose page number
// lies outside [0, blockNum) contributes nothing (device data is never trusted: the cache is never read out of
// bounds). The visible keys of (b, i, h), in slot order then position, are its key list. Each query head n of the
// group of h: s_k = scale * (q . key_k), out = sum_k exp(s_k - max s) value_k / sum_k exp(s_k - max s); a token with an
// empty list, and the padding rows of BSND and BSH (i >= q_b), get zeros.
//
// Arithmetic: NsaSelectedAttention's forward, the same vector loops (nsa_selected_attention_cpu_simd.h): inputs
// widened exactly to fp32, canonical dot products, pacl::Exp, the sum in key-list order, one fused multiply-add chain
// per output element, one rounding of each output element: the same bits on every SIMD target and thread count.
//
// Layout. The rows of query, output, key and value are read in place where they have unit stride along D, through
// the row maps of the parameters (any of the layouts BSND, BSH, TND; key/value 3-D or 4-D; any strides).
//
// Tasks: chunks of (KV head, row) items, the head outermost, rows numbered over the batch entries in order. No
// buffer beyond one item's scores: the workspace is 0 bytes.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "nsa_selected_attention/cpu/nsa_attention_rows.h"
#include "nsa_selected_attention/cpu/nsa_selected_attention_cpu_simd.h"
#include "nsa_selected_attention_infer/nsa_selected_attention_infer_params.h"
#include "pacl/convert.h"
#include "pacl/index.h"

namespace pacl::nsa_selected_attention_infer {
namespace {

using nsa_attention_rows::AttendKeyList;
using nsa_attention_rows::FinishRow;
using nsa_attention_rows::RowList;
using nsa_selected_attention::RowStatistics;

constexpr int64_t kItemsPerChunk = 8;

struct Item {
  const Params& params;

  struct Scratch {
    explicit Scratch(const Params& p)
        : stride(p.shape.block_count * p.shape.block_size + 16),
          q(static_cast<size_t>(p.shape.group * p.shape.dim_qk)),
          scores(static_cast<size_t>(p.shape.group * stride)),
          acc(static_cast<size_t>(p.shape.group * p.shape.dim_v)),
          row(static_cast<size_t>(p.shape.dim_v)),
          keys(p.key.t.dtype, p.key.d, p.key.dim, p.shape.block_count * p.shape.block_size),
          values(p.value.t.dtype, p.value.d, p.value.dim, p.shape.block_count * p.shape.block_size) {}
    int64_t stride;  // floats per row of scores (a line's padding, as NsaSelectedAttention's)
    std::vector<float> q, scores, acc, row;
    std::vector<RowStatistics> stats;
    RowList keys, values;
  };

  // The key list of (b, i, h) into x->keys and x->values.
  void ListKeys(int64_t b, const Batch& batch, int64_t i, int64_t h, Scratch* x) const {
    const InferShape& s = params.shape;
    x->keys.Clear();
    x->values.Clear();
    const int64_t position = batch.kv_length - batch.q_length + i;
    const int64_t visible_end = std::min(batch.kv_length, position + 1);
    const TopkMap& k = params.topk;
    const int64_t topk_row = k.First(b, batch.first_token, i, h);
    const TensorDesc& table = params.block_table;
    for (int64_t slot = 0; slot < s.block_count; ++slot) {
      const int64_t index = LoadIndex(k.t, topk_row + slot * k.slot);
      if (index < 0 || index >= (visible_end + s.block_size - 1) / s.block_size) continue;
      const int64_t first = index * s.block_size;
      const int64_t last = std::min(first + s.block_size, visible_end);
      for (int64_t p = first; p < last; ++p) {
        const int64_t page =
            LoadIndex(table, table.offset + b * table.strides[0] + (p / s.page_block_size) * table.strides[1]);
        if (page < 0 || page >= s.pages) continue;
        const int64_t row = p % s.page_block_size;
        x->keys.AddAddress(params.key.Row(page, row, h));
        x->values.AddAddress(params.value.Row(page, row, h));
      }
    }
  }

  void WriteOutputRow(int64_t b, const Batch& batch, int64_t i, int64_t n, const float* row) const {
    const RowMap& o = params.out;
    StoreFromFloat(row, o.t.dtype, const_cast<char*>(o.Row(b, batch.first_token, i, n)), o.dim, o.d);
  }

  void operator()(int64_t h, int64_t b, const Batch& batch, int64_t i, Scratch* x) const {
    const InferShape& s = params.shape;
    const int64_t g_count = s.group;
    if (i < batch.q_length) ListKeys(b, batch, i, h, x);
    const int64_t keys = i < batch.q_length ? x->keys.count() : 0;
    if (keys == 0) {
      std::fill(x->row.begin(), x->row.end(), 0.0f);
      for (int64_t g = 0; g < g_count; ++g) WriteOutputRow(b, batch, i, h * g_count + g, x->row.data());
      return;
    }
    const RowMap& q = params.query;
    for (int64_t g = 0; g < g_count; ++g) {
      LoadAsFloat(q.t.dtype, q.Row(b, batch.first_token, i, h * g_count + g), q.dim, x->q.data() + g * s.dim_qk,
                  s.dim_qk);
    }
    AttendKeyList(x->q.data(), g_count, s.dim_qk, s.dim_v, s.scale, x->keys, x->values, x->scores.data(), x->stride,
                  &x->stats, x->acc.data());
    for (int64_t g = 0; g < g_count; ++g) {
      FinishRow(x->stats[static_cast<size_t>(g)], x->acc.data() + g * s.dim_v, s.dim_v, x->row.data());
      WriteOutputRow(b, batch, i, h * g_count + g, x->row.data());
    }
  }
};

}  // namespace

aclnnStatus RunCpu(const Params& params, void* /*workspace*/) {
  nsa_attention_rows::ForEachHeadAndRow(Item{params}, params.shape.kv_heads, params.batches, params.total_rows,
                                        kItemsPerChunk);
  return ACLNN_SUCCESS;
}

}  // namespace pacl::nsa_selected_attention_infer
