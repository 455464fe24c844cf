// NOTE [NsaCompressAttentionInfer on the CPU]
//
// Problem. Batch entry b has q_b query tokens and K_b compressed key/value tokens held in a paged cache: compressed
// token k lives in row k % pageBlockSize of page blockTable[b][k / pageBlockSize] of key and value. Query token i of
// b sees the compressed tokens k < V_bi: every one (V_bi = K_b) in a single-token call; in a multi-token call, those
// whose window of compressBlockSize raw positions ends at or before the token's raw position p = selLen_b - q_b + i
// (V_bi = min(K_b, floor((p + 1 - l) / d) + 1), 0 when p + 1 < l). A page number outside [0, blockNum) drops that
// token from the list (device data is never trusted: the cache is never read out of bounds). Each query head n of
// KV head h's group: s_k = scale * (q . key_k), out = sum_k exp(s_k - max s) value_k / sum_k exp(s_k - max s) -
// NsaCompressAttention's forward, row by row. Then, per (b, i, h), NsaCompressAttention's selection
// (nsa_compress_attention/cpu/nsa_block_selection.h): the group's probabilities summed per compressed token, each of
// the ceil(K_b / r) select blocks scored by CANN's formula, the selectBlockCount best (NaN first, then higher score,
// then lower index) into topKOutput[b, i, h, :], -1 past the candidates. A token with an empty list gets zeros and a
// selection of zero scores (the lowest blocks); the padding rows of BSND (i >= q_b) get zeros and -1.
//
// Arithmetic: NsaCompressAttention's, the same vector loops (nsa_selected_attention_cpu_simd.h) and the same
// selection sums: inputs widened exactly to fp32, one rounding of each output element: the same bits on every SIMD
// target and thread count (each (KV head, row) item is one task's, its sums in a fixed order).
//
// Layout. The rows of query, output, key and value are read in place where they have unit stride along D, through
// the row maps of the parameters (TND or BSND; key/value 3-D or 4-D; any strides).
//
// Tasks: chunks of (KV head, row) items, the head outermost, rows numbered over the batch entries in order. Per
// item: the G query rows in fp32, the key list (row pointers), the G x |list| scores, w and the selection: O(G * max
// K_b) floats per thread, no workspace.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "nsa_compress_attention/cpu/nsa_block_selection.h"
#include "nsa_compress_attention_infer/nsa_compress_attention_infer_params.h"
#include "nsa_selected_attention/cpu/nsa_attention_rows.h"
#include "nsa_selected_attention/cpu/nsa_selected_attention_cpu_simd.h"
#include "pacl/convert.h"
#include "pacl/index.h"

namespace pacl::nsa_compress_attention_infer {
namespace {

using nsa_attention_rows::AttendKeyList;
using nsa_attention_rows::FinishRow;
using nsa_attention_rows::RowList;
using nsa_block_selection::Candidate;
using nsa_selected_attention::RowStatistics;

constexpr int64_t kItemsPerChunk = 8;
// Floats after each row of scores (NsaCompressAttention's padding: rows of a power-of-two length would share cache
// sets).
constexpr int64_t kScoresPadding = 16;

// The compressed tokens query token i of the batch entry sees: [0, visible).
int64_t VisibleKeys(const InferShape& s, const Batch& batch, int64_t i) {
  if (batch.first_position < 0) return batch.cmp_length;
  const int64_t complete = batch.first_position + i + 1 - s.compress_block_size;
  if (complete < 0) return 0;
  return std::min(batch.cmp_length, complete / s.compress_stride + 1);
}

struct Item {
  const Params& params;

  struct Scratch {
    explicit Scratch(const Params& p)
        : stride(p.max_cmp_length + kScoresPadding),
          q(static_cast<size_t>(p.shape.group * p.shape.dim_qk)),
          scores(static_cast<size_t>(p.shape.group * stride)),
          acc(static_cast<size_t>(p.shape.group * p.shape.dim_v)),
          row(static_cast<size_t>(p.shape.dim_v)),
          weights(static_cast<size_t>(p.max_cmp_length)),
          key_of(static_cast<size_t>(p.max_cmp_length)),
          keys(p.key.t.dtype, p.key.d, p.key.dim, p.max_cmp_length),
          values(p.value.t.dtype, p.value.d, p.value.dim, p.max_cmp_length) {
      best.reserve(static_cast<size_t>(p.shape.select_count) + 1);
    }
    int64_t stride;
    std::vector<float> q, scores, acc, row, weights;
    std::vector<int64_t> key_of;  // list entry -> compressed token
    std::vector<RowStatistics> stats;
    std::vector<Candidate> best;
    RowList keys, values;
  };

  // The key list of (b, i, h): compressed tokens [0, visible) on valid pages.
  void ListKeys(int64_t b, int64_t visible, int64_t h, Scratch* x) const {
    const InferShape& s = params.shape;
    const TensorDesc& table = params.block_table;
    x->keys.Clear();
    x->values.Clear();
    for (int64_t k = 0; k < visible; ++k) {
      const int64_t page =
          LoadIndex(table, table.offset + b * table.strides[0] + (k / s.page_block_size) * table.strides[1]);
      if (page < 0 || page >= s.pages) continue;
      const int64_t row = k % s.page_block_size;
      x->key_of[static_cast<size_t>(x->keys.count())] = k;
      x->keys.AddAddress(params.key.Row(page, row, h));
      x->values.AddAddress(params.value.Row(page, row, h));
    }
  }

  void WriteOutputRow(int64_t b, const Batch& batch, int64_t i, int64_t n, const float* row) const {
    const RowMap& o = params.out;
    StoreFromFloat(row, o.t.dtype, const_cast<char*>(o.Row(b, batch.first_token, i, n)), o.dim, o.d);
  }

  void WriteSelection(int64_t b, const Batch& batch, int64_t i, int64_t h, const std::vector<Candidate>& best) const {
    const TopkMap& k = params.topk;
    const int64_t first = k.First(b, batch.first_token, i, h);
    for (int64_t slot = 0; slot < params.shape.select_count; ++slot) {
      const int32_t index = nsa_block_selection::SlotIndex(best, slot);
      std::memcpy(k.t.ElementAt(first + slot * k.slot), &index, sizeof index);
    }
  }

  void operator()(int64_t h, int64_t b, const Batch& batch, int64_t i, Scratch* x) const {
    const InferShape& s = params.shape;
    const int64_t g_count = s.group;
    if (i >= batch.q_length) {  // a padding row of BSND
      std::fill(x->row.begin(), x->row.end(), 0.0f);
      for (int64_t g = 0; g < g_count; ++g) WriteOutputRow(b, batch, i, h * g_count + g, x->row.data());
      x->best.clear();
      WriteSelection(b, batch, i, h, x->best);
      return;
    }
    ListKeys(b, VisibleKeys(s, batch, i), h, x);
    const int64_t keys = x->keys.count();
    std::fill(x->weights.begin(), x->weights.begin() + batch.cmp_length, 0.0f);
    if (keys == 0) {
      std::fill(x->row.begin(), x->row.end(), 0.0f);
      for (int64_t g = 0; g < g_count; ++g) WriteOutputRow(b, batch, i, h * g_count + g, x->row.data());
    } else {
      const RowMap& q = params.query;
      for (int64_t g = 0; g < g_count; ++g) {
        LoadAsFloat(q.t.dtype, q.Row(b, batch.first_token, i, h * g_count + g), q.dim, x->q.data() + g * s.dim_qk,
                    s.dim_qk);
      }
      AttendKeyList(x->q.data(), g_count, s.dim_qk, s.dim_v, s.scale, x->keys, x->values, x->scores.data(), x->stride,
                    &x->stats, x->acc.data());
      for (int64_t g = 0; g < g_count; ++g) {
        const RowStatistics& st = x->stats[static_cast<size_t>(g)];
        FinishRow(st, x->acc.data() + g * s.dim_v, s.dim_v, x->row.data());
        nsa_block_selection::AddProbabilities(st, x->scores.data() + g * x->stride, keys, x->key_of.data(),
                                              x->weights.data());
        WriteOutputRow(b, batch, i, h * g_count + g, x->row.data());
      }
    }
    nsa_block_selection::SelectBlocks(
        x->weights.data(), batch.cmp_length, s.select_per_cmp, s.cmp_per_stride, batch.select_blocks, s.select_count,
        [](int64_t) { return true; }, &x->best);
    WriteSelection(b, batch, i, h, x->best);
  }
};

}  // namespace

aclnnStatus RunCpu(const Params& params, void* /*workspace*/) {
  nsa_attention_rows::ForEachHeadAndRow(Item{params}, params.shape.kv_heads, params.batches, params.total_rows,
                                        kItemsPerChunk);
  return ACLNN_SUCCESS;
}

}  // namespace pacl::nsa_compress_attention_infer
