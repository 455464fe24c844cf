// NOTE [NsaSelectedAttention on the CPU]
//
// Problem. Layout "TND": query (T1, N1, Dqk), key (T2, N2, Dqk), value (T2, N2, Dv), the sequences back to back
// (the actual-length arrays: cumulative ends; sequence b owns query tokens [qs_b, qe_b) and key/value tokens
// [ks_b, ke_b), ke_b - ks_b a multiple of the block size bs). Query head n uses key/value head h = n / G. For a query
// token t of sequence b (position u = t - qs_b) and KV head h, topkIndices[t, h, :] names selectedBlockCount key
// blocks of its sequence; block i is key tokens ks_b + i * bs + j, j < bs. An index outside [0, (ke_b - ks_b) / bs)
// (negative, too large: device data is never trusted) selects nothing: the slot contributes no key. A repeated index
// selects its block again (the Gather of the formula: its keys count twice in the softmax). With sparseMode 2 and a
// mask (causal), key position i * bs + j is visible only when it is <= u: later blocks contribute nothing, the block
// holding u its first u - i * bs + 1 keys. The visible keys of a row, in slot order then j, are its key list K(t, h).
// Forward, for each query row (t, n): s_k = scale * (q . key_k) for k in K(t, h), m = max s, e_k = exp(s_k - m),
// l = sum e, out = (sum_k e_k value_k) / l; softmaxMax = m and softmaxSum = l, each written 8 times (CANN's layout).
// A row with an empty key list (every slot invalid or masked) gets out = 0, max = -inf, sum = 0. Backward (FlashAttention's),
// with m and l read back from softmaxMax / softmaxSum (lane 0 of 8): p_k = exp(s_k - m) / l, dp_k = dout . value_k,
// delta = dout . out (attentionOut as given), ds_k = p_k (dp_k - delta); dq = scale * sum_k ds_k key_k,
// dkey_k += scale * ds_k q and dvalue_k += p_k dout over every row whose list holds k (once per occurrence).
//
// Arithmetic (the same bits on every SIMD target and thread count). Inputs are widened exactly to fp32, every output
// element is rounded once. A dot product (q . key, dout . value, dout . out) is a canonical sum of fused multiply-adds
// (pacl/canonical_math-inl.h: 16 partial sums, a fixed tree), then one multiplication by scale (rounded once); the
// row statistics: m exact, e by pacl::Exp, l the canonical sum of the e in key-list order; weighted sums of rows
// (sum e value, sum ds key, and the backward's sums over rows) are one fused multiply-add chain per output element in a
// fixed term order, with vector lanes across the output's elements, so no vector width changes them. Then out = acc /
// l, dq = acc * scale, dk = acc * scale (one rounding each).
//
// Forward. Tasks: chunks of (KV head, query token) items, the head outermost, so that the threads work on one head's
// keys and values at a time (a head of a 32K-token sequence is 21 MB of FLOAT16, which the last-level cache holds).
// Per item: the G query rows of the group are widened into an fp32 buffer, the key list is built as row pointers into
// key and value (read in place where the rows have unit stride along D, else gathered into fp32 rows), then
// simd::Dot computes the G x |K| scores in tiles (4 x 4 on AVX-512: each key vector is loaded and widened once for
// four query heads, each query vector once for four keys), simd::SoftmaxRow turns each row into its e and (m, l),
// and simd::Accumulate sums e * value rows into G fp32 accumulators (4 heads x 64 channels per pass on AVX-512: each
// value vector loaded once for the four heads). No T x T (nor T x |K|) buffer: the scores of one item at most.
//
// Backward, three passes; nothing is scattered with atomics or races.
// 1. Query pass, chunks of (KV head, query token) items like the forward: delta of every row (kept in the workspace),
//    the scores and dout . value of the key list (two simd::Dot), p and ds (simd::GradRow), then dq = scale * sum ds
//    key (simd::Accumulate), rounded and written.
// 2. Index: per KV head, a counting sort of the (token, slot) pairs by the global key block they select (invalid and
//    fully masked slots left out): for each key block, the query tokens that selected it, ascending, a token twice
//    when it selected the block twice (workspace: offsets and entries).
// 3. Key pass, one task per (KV head, key block): the block's key and value rows are widened once into fp32, then
//    the tokens of its list are taken in batches of kKeyPassBatch (all G query rows of each): their query and dout
//    rows widened, the scores and dout . value against the block recomputed (simd::Dot), p and ds (simd::GradRow),
//    and dvalue_j += sum p dout, dkey_j += sum ds q accumulated for the block's rows j in fp32 (simd::Accumulate,
//    lanes across channels) - a token whose block is the causal diagonal one goes alone, with only its visible rows
//    as outputs. Each key row's sums therefore run over the list's tokens in ascending order (then the query heads
//    of the group ascending), in one chain per element: fixed by the indices, never by the thread count. Then the
//    block's rows are scaled (dk), rounded and written once; every key row lies in exactly one block, so every dk and
//    dv row is written (zeros for blocks nobody selected). Recomputing the scores in both passes costs two of the
//    seven matrix products (FlashAttention's backward has five); the alternative, per-task partial sums of dk and dv,
//    would need a copy of them per task.
//
// Files: this one holds the drivers; nsa_selected_attention_cpu_simd.cpp the vector loops, once per SIMD target;
// nsa_selected_attention_cpu_plan.cpp the backward's workspace plan.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "nsa_selected_attention/cpu/nsa_attention_rows.h"
#include "nsa_selected_attention/cpu/nsa_selected_attention_cpu_simd.h"
#include "nsa_selected_attention/nsa_selected_attention_params.h"
#include "nsa_selected_attention/nsa_selected_slots.h"
#include "pacl/convert.h"
#include "pacl/dtype.h"
#include "pacl/index.h"
#include "pacl/parallel.h"
#include "pacl/workspace_plan.h"

namespace pacl::nsa_selected_attention {

namespace {

// (KV head, query token) items per chunk of the forward and the query pass.
constexpr int64_t kItemsPerChunk = 8;
// Query tokens per batch of the key pass.
constexpr int64_t kKeyPassBatch = 8;
// Floats after each row of scores: the rows start one 64-byte line past a multiple of the key count, so that the G
// rows of an item do not all map to the same cache sets when the key count is a large power of two.
constexpr int64_t kScoresPadding = 16;

constexpr float kInf = std::numeric_limits<float>::infinity();

using nsa_attention_rows::MakeAccumulate;
using nsa_attention_rows::MakeDot;
using nsa_attention_rows::ReadRow;
using nsa_attention_rows::ReadStatistic;
using nsa_attention_rows::RowList;
using nsa_attention_rows::SequenceOfToken;
using nsa_attention_rows::WriteRow;
using nsa_attention_rows::WriteStatistic;

// The keys slot `slot` of (token t, KV head h) selects (nsa_selected_slots.h).
SlotKeys SlotOf(const TensorDesc& topk, const AttentionShape& s, const Sequence& seq, int64_t t, int64_t h,
                int64_t slot) {
  const int64_t index =
      LoadIndex(topk, topk.offset + t * topk.strides[0] + h * topk.strides[1] + slot * topk.strides[2]);
  return SelectedKeys(index, seq, t - seq.q_start, s.block_size, s.causal);
}

// The key list of (token t, KV head h) into keys and values.
void ListKeys(const TensorDesc& topk, const AttentionShape& s, const Sequence& seq, int64_t t, int64_t h,
              RowList* keys, RowList* values) {
  keys->Clear();
  if (values != nullptr) values->Clear();
  for (int64_t slot = 0; slot < s.block_count; ++slot) {
    const SlotKeys selected = SlotOf(topk, s, seq, t, h, slot);
    for (int64_t j = 0; j < selected.keys; ++j) {
      keys->Add(selected.first_key + j, h);
      if (values != nullptr) values->Add(selected.first_key + j, h);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Forward.

struct ForwardItem {
  const ForwardParams& params;

  struct Scratch {
    explicit Scratch(const AttentionShape& s)
        : stride(s.block_count * s.block_size + kScoresPadding),
          q(static_cast<size_t>(s.group * s.dim_qk)),
          scores(static_cast<size_t>(s.group * stride)),
          acc(static_cast<size_t>(s.group * s.dim_v)),
          row(static_cast<size_t>(s.dim_v)) {}
    int64_t stride;
    std::vector<float> q, scores, acc, row;
    std::vector<RowStatistics> stats;
    RowList* keys = nullptr;
    RowList* values = nullptr;
  };

  void operator()(int64_t h, int64_t t, const Sequence& seq, Scratch* scratch) const;
};

void ForwardItem::operator()(int64_t h, int64_t t, const Sequence& seq, Scratch* x) const {
  const AttentionShape& s = params.shape;
  const int64_t g_count = s.group;
  ListKeys(params.topk, s, seq, t, h, x->keys, x->values);
  const int64_t keys = x->keys->count();
  if (keys == 0) {
    std::fill(x->row.begin(), x->row.end(), 0.0f);
    for (int64_t g = 0; g < g_count; ++g) {
      const int64_t n = h * g_count + g;
      WriteRow(params.out, t, n, x->row.data());
      WriteStatistic(params.softmax_max, t, n, -kInf);
      WriteStatistic(params.softmax_sum, t, n, 0.0f);
    }
    return;
  }
  for (int64_t g = 0; g < g_count; ++g) ReadRow(params.query, t, h * g_count + g, x->q.data() + g * s.dim_qk);
  nsa_attention_rows::AttendKeyList(x->q.data(), g_count, s.dim_qk, s.dim_v, s.scale, *x->keys, *x->values,
                                    x->scores.data(), x->stride, &x->stats, x->acc.data());
  for (int64_t g = 0; g < g_count; ++g) {
    const RowStatistics& st = x->stats[static_cast<size_t>(g)];
    nsa_attention_rows::FinishRow(st, x->acc.data() + g * s.dim_v, s.dim_v, x->row.data());
    const int64_t n = h * g_count + g;
    WriteRow(params.out, t, n, x->row.data());
    WriteStatistic(params.softmax_max, t, n, st.max);
    WriteStatistic(params.softmax_sum, t, n, st.sum);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Backward, pass 1: delta and dq.

struct QueryPassItem {
  const BackwardParams& params;
  float* delta;  // (q_tokens, q_heads)

  struct Scratch {
    explicit Scratch(const AttentionShape& s)
        : stride(s.block_count * s.block_size + kScoresPadding),
          q(static_cast<size_t>(s.group * s.dim_qk)),
          dout(static_cast<size_t>(s.group * s.dim_v)),
          out(static_cast<size_t>(s.dim_v)),
          scores(static_cast<size_t>(s.group * stride)),
          dp(static_cast<size_t>(s.group * stride)),
          p(static_cast<size_t>(stride)),
          ds(static_cast<size_t>(s.group * stride)),
          acc(static_cast<size_t>(s.group * s.dim_qk)) {}
    int64_t stride;
    std::vector<float> q, dout, out, scores, dp, p, ds, acc;
    RowList* keys = nullptr;
    RowList* values = nullptr;
  };

  void operator()(int64_t h, int64_t t, const Sequence& seq, Scratch* scratch) const;
};

void QueryPassItem::operator()(int64_t h, int64_t t, const Sequence& seq, Scratch* x) const {
  const AttentionShape& s = params.shape;
  const int64_t g_count = s.group;
  for (int64_t g = 0; g < g_count; ++g) {
    const int64_t n = h * g_count + g;
    float* dout = x->dout.data() + g * s.dim_v;
    ReadRow(params.out_grad, t, n, dout);
    ReadRow(params.out, t, n, x->out.data());
    const void* out_row = x->out.data();
    DotJob job;
    job.a = dout;
    job.a_count = 1;
    job.b = &out_row;
    job.b_kind = kFloatRow;
    job.b_count = 1;
    job.dim = s.dim_v;
    job.out = delta + t * s.q_heads + n;
    simd::Dot(job);
  }
  ListKeys(params.topk, s, seq, t, h, x->keys, x->values);
  const int64_t keys = x->keys->count();
  std::fill(x->acc.begin(), x->acc.end(), 0.0f);
  if (keys > 0) {
    for (int64_t g = 0; g < g_count; ++g) ReadRow(params.query, t, h * g_count + g, x->q.data() + g * s.dim_qk);
    simd::Dot(MakeDot(x->q.data(), s.dim_qk, g_count, *x->keys, s.dim_qk, s.scale, x->scores.data(), x->stride));
    simd::Dot(MakeDot(x->dout.data(), s.dim_v, g_count, *x->values, s.dim_v, 1.0f, x->dp.data(), x->stride));
    for (int64_t g = 0; g < g_count; ++g) {
      const int64_t n = h * g_count + g;
      simd::GradRow(x->scores.data() + g * x->stride, x->dp.data() + g * x->stride, keys,
                    ReadStatistic(params.softmax_max, t, n), ReadStatistic(params.softmax_sum, t, n),
                    delta[t * s.q_heads + n], x->p.data(), x->ds.data() + g * x->stride);
    }
    simd::Accumulate(MakeAccumulate(x->acc.data(), s.dim_qk, g_count, x->ds.data(), x->stride, 1, x->keys->rows(),
                                    x->keys->kind(), keys, s.dim_qk));
    for (float& v : x->acc) v *= s.scale;
  }
  for (int64_t g = 0; g < g_count; ++g) WriteRow(params.dq, t, h * g_count + g, x->acc.data() + g * s.dim_qk);
}

// An item's scratch with row lists sized for a full key list.
template <class Item>
struct ItemScratch : Item::Scratch {
  ItemScratch(const AttentionShape& s, const TensorDesc& key, const TensorDesc& value)
      : Item::Scratch(s), key_list(key, s.block_count * s.block_size), value_list(value, s.block_count * s.block_size) {
    this->keys = &key_list;
    this->values = &value_list;
  }
  RowList key_list, value_list;
};

// Calls item(h, t, sequence, scratch) for every (KV head, query token), in chunks of kItemsPerChunk with the head
// outermost.
template <class Item>
void RunItems(const AttentionShape& s, const std::vector<Sequence>& sequences, const TensorDesc& key,
              const TensorDesc& value, const Item& item) {
  if (s.q_tokens == 0) return;
  ParallelFor(s.kv_heads * s.q_tokens, kItemsPerChunk, [&](int64_t begin, int64_t end) {
    ItemScratch<Item> scratch(s, key, value);
    size_t seq = SequenceOfToken(sequences, begin % s.q_tokens);
    for (int64_t i = begin; i < end; ++i) {
      const int64_t h = i / s.q_tokens;
      const int64_t t = i % s.q_tokens;
      if (t < sequences[seq].q_start || t >= sequences[seq].q_end) seq = SequenceOfToken(sequences, t);
      item(h, t, sequences[seq], &scratch);
    }
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Backward, pass 2: for each (KV head, key block), the query tokens that selected it.

void BuildIndex(const BackwardParams& params, int64_t* offsets, uint32_t* entries) {
  const AttentionShape& s = params.shape;
  const int64_t blocks = s.kv_tokens / s.block_size;
  const int64_t capacity = s.q_tokens * s.block_count;
  ParallelFor(s.kv_heads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t h = begin; h < end; ++h) {
      int64_t* offset = offsets + h * (blocks + 1);
      uint32_t* entry = entries + h * capacity;
      std::fill(offset, offset + blocks + 1, int64_t{0});
      // Counts, at offset[block + 1].
      for (const Sequence& seq : params.sequences) {
        for (int64_t t = seq.q_start; t < seq.q_end; ++t) {
          for (int64_t slot = 0; slot < s.block_count; ++slot) {
            const SlotKeys selected = SlotOf(params.topk, s, seq, t, h, slot);
            if (selected.keys > 0) ++offset[selected.first_key / s.block_size + 1];
          }
        }
      }
      for (int64_t b = 0; b < blocks; ++b) offset[b + 1] += offset[b];
      // Fill in ascending (token, slot) order; offset[block] moves to the block's end ...
      for (const Sequence& seq : params.sequences) {
        for (int64_t t = seq.q_start; t < seq.q_end; ++t) {
          for (int64_t slot = 0; slot < s.block_count; ++slot) {
            const SlotKeys selected = SlotOf(params.topk, s, seq, t, h, slot);
            if (selected.keys > 0) entry[offset[selected.first_key / s.block_size]++] = static_cast<uint32_t>(t);
          }
        }
      }
      // ... which is the next block's start.
      for (int64_t b = blocks; b > 0; --b) offset[b] = offset[b - 1];
      offset[0] = 0;
    }
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Backward, pass 3: dk and dv, one key block at a time.

struct KeyPassScratch {
  explicit KeyPassScratch(const AttentionShape& s)
      : rows(kKeyPassBatch * s.group),
        key(static_cast<size_t>(s.block_size * s.dim_qk)),
        value(static_cast<size_t>(s.block_size * s.dim_v)),
        dk(static_cast<size_t>(s.block_size * s.dim_qk)),
        dv(static_cast<size_t>(s.block_size * s.dim_v)),
        q(static_cast<size_t>(rows * s.dim_qk)),
        dout(static_cast<size_t>(rows * s.dim_v)),
        scores(static_cast<size_t>(rows * s.block_size)),
        dp(static_cast<size_t>(rows * s.block_size)),
        p(static_cast<size_t>(rows * s.block_size)),
        ds(static_cast<size_t>(rows * s.block_size)),
        max(static_cast<size_t>(rows)),
        sum(static_cast<size_t>(rows)),
        delta(static_cast<size_t>(rows)),
        key_rows(static_cast<size_t>(s.block_size)),
        value_rows(static_cast<size_t>(s.block_size)),
        q_rows(static_cast<size_t>(rows)),
        dout_rows(static_cast<size_t>(rows)) {
    for (int64_t j = 0; j < s.block_size; ++j) {
      key_rows[static_cast<size_t>(j)] = key.data() + j * s.dim_qk;
      value_rows[static_cast<size_t>(j)] = value.data() + j * s.dim_v;
    }
    for (int64_t r = 0; r < rows; ++r) {
      q_rows[static_cast<size_t>(r)] = q.data() + r * s.dim_qk;
      dout_rows[static_cast<size_t>(r)] = dout.data() + r * s.dim_v;
    }
  }
  int64_t rows;
  std::vector<float> key, value, dk, dv, q, dout, scores, dp, p, ds, max, sum, delta;
  std::vector<const void*> key_rows, value_rows, q_rows, dout_rows;
};

// Adds the contributions of the query rows in the scratch (`tokens` tokens' G rows each) to the block's dk and dv
// rows j < visible.
void AddBatch(const AttentionShape& s, int64_t tokens, int64_t visible, KeyPassScratch* x) {
  const int64_t rows = tokens * s.group;
  const int64_t bs = s.block_size;
  DotJob job;
  job.a = x->q.data();
  job.a_stride = s.dim_qk;
  job.a_count = rows;
  job.b = x->key_rows.data();
  job.b_kind = kFloatRow;
  job.b_count = visible;
  job.dim = s.dim_qk;
  job.multiplier = s.scale;
  job.out = x->scores.data();
  job.out_stride = bs;
  simd::Dot(job);
  job.a = x->dout.data();
  job.a_stride = s.dim_v;
  job.b = x->value_rows.data();
  job.dim = s.dim_v;
  job.multiplier = 1.0f;
  job.out = x->dp.data();
  simd::Dot(job);
  for (int64_t r = 0; r < rows; ++r) {
    const size_t i = static_cast<size_t>(r);
    simd::GradRow(x->scores.data() + r * bs, x->dp.data() + r * bs, visible, x->max[i], x->sum[i], x->delta[i],
                  x->p.data() + r * bs, x->ds.data() + r * bs);
  }
  simd::Accumulate(MakeAccumulate(x->dv.data(), s.dim_v, visible, x->p.data(), 1, bs, x->dout_rows.data(), kFloatRow,
                                  rows, s.dim_v));
  simd::Accumulate(MakeAccumulate(x->dk.data(), s.dim_qk, visible, x->ds.data(), 1, bs, x->q_rows.data(), kFloatRow,
                                  rows, s.dim_qk));
}

void KeyPass(const BackwardParams& params, const float* delta, const int64_t* offsets, const uint32_t* entries) {
  const AttentionShape& s = params.shape;
  const int64_t blocks = s.kv_tokens / s.block_size;
  const int64_t capacity = s.q_tokens * s.block_count;
  const int64_t bs = s.block_size;
  ParallelFor(s.kv_heads * blocks, 1, [&](int64_t begin, int64_t end) {
    KeyPassScratch x(s);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t h = item / blocks;
      const int64_t block = item % blocks;
      const Sequence& seq = params.sequences[static_cast<size_t>(
          SequenceOfKeyBlock(params.sequences.data(), static_cast<int64_t>(params.sequences.size()), block, bs))];
      const int64_t first_key = block * bs;
      std::fill(x.dk.begin(), x.dk.end(), 0.0f);
      std::fill(x.dv.begin(), x.dv.end(), 0.0f);
      const int64_t list_begin = offsets[h * (blocks + 1) + block];
      const int64_t list_end = offsets[h * (blocks + 1) + block + 1];
      if (list_end > list_begin) {
        for (int64_t j = 0; j < bs; ++j) {
          ReadRow(params.key, first_key + j, h, x.key.data() + j * s.dim_qk);
          ReadRow(params.value, first_key + j, h, x.value.data() + j * s.dim_v);
        }
      }
      int64_t pending = 0;  // tokens in the batch
      for (int64_t e = list_begin; e < list_end; ++e) {
        const int64_t t = entries[h * capacity + e];
        // Visible keys of the block for this token (>= 1: the index left out fully masked blocks).
        const int64_t visible = s.causal ? std::min(bs, t - seq.q_start - (first_key - seq.kv_start) + 1) : bs;
        if (visible < bs && pending > 0) {
          AddBatch(s, pending, bs, &x);
          pending = 0;
        }
        for (int64_t g = 0; g < s.group; ++g) {
          const int64_t n = h * s.group + g;
          const int64_t r = pending * s.group + g;
          ReadRow(params.query, t, n, x.q.data() + r * s.dim_qk);
          ReadRow(params.out_grad, t, n, x.dout.data() + r * s.dim_v);
          x.max[static_cast<size_t>(r)] = ReadStatistic(params.softmax_max, t, n);
          x.sum[static_cast<size_t>(r)] = ReadStatistic(params.softmax_sum, t, n);
          x.delta[static_cast<size_t>(r)] = delta[t * s.q_heads + n];
        }
        ++pending;
        if (visible < bs) {
          AddBatch(s, pending, visible, &x);
          pending = 0;
        } else if (pending == kKeyPassBatch) {
          AddBatch(s, pending, bs, &x);
          pending = 0;
        }
      }
      if (pending > 0) AddBatch(s, pending, bs, &x);
      for (float& v : x.dk) v *= s.scale;
      for (int64_t j = 0; j < bs; ++j) {
        WriteRow(params.dk, first_key + j, h, x.dk.data() + j * s.dim_qk);
        WriteRow(params.dv, first_key + j, h, x.dv.data() + j * s.dim_v);
      }
    }
  });
}

}  // namespace

aclnnStatus RunForwardCpu(const ForwardParams& params, void* /*workspace*/) {
  RunItems(params.shape, params.sequences, params.key, params.value, ForwardItem{params});
  return ACLNN_SUCCESS;
}

aclnnStatus RunBackwardCpu(const BackwardParams& params, void* workspace) {
  const AttentionShape& s = params.shape;
  char* base = AlignedWorkspace(workspace);
  float* delta = params.workspace.delta >= 0 ? reinterpret_cast<float*>(base + params.workspace.delta) : nullptr;
  auto* offsets = reinterpret_cast<int64_t*>(base + params.workspace.offsets);
  auto* entries = params.workspace.entries >= 0 ? reinterpret_cast<uint32_t*>(base + params.workspace.entries) : nullptr;
  RunItems(s, params.sequences, params.key, params.value, QueryPassItem{params, delta});
  BuildIndex(params, offsets, entries);
  KeyPass(params, delta, offsets, entries);
  return ACLNN_SUCCESS;
}

}  // namespace pacl::nsa_selected_attention
