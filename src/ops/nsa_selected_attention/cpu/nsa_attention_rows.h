// Row access shared by the NSA attention kernels on the CPU (NsaSelectedAttention, NsaCompressAttention): rows of
// 3-D TND tensors read widened to fp32 or written rounded once, the softmax statistics' 8 lanes, lists of key/value
// row pointers for the vector loops (nsa_selected_attention_cpu_simd.h), and the sequence holding a query token.
#ifndef PACL_OPS_NSA_SELECTED_ATTENTION_CPU_NSA_ATTENTION_ROWS_H_
#define PACL_OPS_NSA_SELECTED_ATTENTION_CPU_NSA_ATTENTION_ROWS_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "nsa_selected_attention/cpu/nsa_selected_attention_cpu_simd.h"
#include "pacl/convert.h"
#include "pacl/parallel.h"
#include "pacl/tensor.h"

namespace pacl::nsa_attention_rows {

using nsa_selected_attention::AccumulateJob;
using nsa_selected_attention::DotJob;
using nsa_selected_attention::RowStatistics;

// Element (i0, i1, 0) of a 3-D tensor.
inline const char* RowAddress(const TensorDesc& t, int64_t i0, int64_t i1) {
  return t.ElementAt(t.offset + i0 * t.strides[0] + i1 * t.strides[1]);
}

// Row (i0, i1, :) widened to fp32.
inline void ReadRow(const TensorDesc& t, int64_t i0, int64_t i1, float* dst) {
  LoadAsFloat(t.dtype, RowAddress(t, i0, i1), t.strides[2], dst, t.shape[2]);
}

// Row (i0, i1, :) rounded once from fp32.
inline void WriteRow(const TensorDesc& t, int64_t i0, int64_t i1, const float* src) {
  StoreFromFloat(src, t.dtype, const_cast<char*>(RowAddress(t, i0, i1)), t.strides[2], t.shape[2]);
}

// Lane 0 of a FLOAT statistic (token, head, 8 lanes).
inline float ReadStatistic(const TensorDesc& t, int64_t token, int64_t head) {
  float value;
  std::memcpy(&value, t.ElementAt(t.offset + token * t.strides[0] + head * t.strides[1]), sizeof value);
  return value;
}

// value in every lane of a FLOAT statistic (token, head, :) (CANN's layout repeats each row's value).
inline void WriteStatistic(const TensorDesc& t, int64_t token, int64_t head, float value) {
  for (int64_t lane = 0; lane < t.shape[2]; ++lane) {
    std::memcpy(t.ElementAt(t.offset + token * t.strides[0] + head * t.strides[1] + lane * t.strides[2]), &value,
                sizeof value);
  }
}

// The sequence holding query token t: sequences sorted by q_start (Sequence has q_start and q_end), empty ones
// skipped.
template <class Sequence>
size_t SequenceOfToken(const std::vector<Sequence>& sequences, int64_t t) {
  size_t lo = 0, hi = sequences.size();
  while (hi - lo > 1) {
    const size_t mid = (lo + hi) / 2;
    if (sequences[mid].q_start <= t) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  while (lo + 1 < sequences.size() && sequences[lo].q_end <= t) ++lo;
  return lo;
}

// The batch entry holding item row r of an inference kernel: batches sorted by first_item (Batch has first_item and
// rows), empty ones skipped.
template <class Batch>
size_t BatchOfRow(const std::vector<Batch>& batches, int64_t r) {
  const auto after = std::upper_bound(batches.begin(), batches.end(), r,
                                      [](int64_t row, const Batch& batch) { return row < batch.first_item; });
  size_t b = static_cast<size_t>(after - batches.begin()) - 1;
  while (batches[b].rows == 0 || r >= batches[b].first_item + batches[b].rows) ++b;
  return b;
}

// The inference kernels' task loop: (KV head, row) items, the head outermost, rows numbered over the batch entries in
// order, in chunks of items_per_chunk; each chunk has its own Item::Scratch and calls item(h, b, batch, i, &scratch)
// for row i of batch entry b.
template <class Item, class Batch>
void ForEachHeadAndRow(const Item& item, int64_t kv_heads, const std::vector<Batch>& batches, int64_t rows,
                       int64_t items_per_chunk) {
  if (rows == 0) return;
  ParallelFor(kv_heads * rows, items_per_chunk, [&](int64_t begin, int64_t end) {
    typename Item::Scratch scratch(item.params);
    for (int64_t it = begin; it < end; ++it) {
      const int64_t h = it / rows, r = it % rows;
      const size_t b = BatchOfRow(batches, r);
      const Batch& batch = batches[b];
      item(h, static_cast<int64_t>(b), batch, r - batch.first_item, &scratch);
    }
  });
}

// Row pointers of a list of key (or value) rows: in place where the rows have unit stride along D, else gathered into
// fp32 rows.
class RowList {
 public:
  // Rows (token, head, :) of a 3-D tensor (Add).
  RowList(const TensorDesc& t, int64_t max_rows) : RowList(t.dtype, t.shape[2], t.strides[2], max_rows) { t_ = &t; }
  // Rows of `dim` elements of dtype, dim_stride elements apart, given by their first element's address (AddAddress).
  RowList(aclDataType dtype, int64_t dim, int64_t dim_stride, int64_t max_rows)
      : dtype_(dtype), dim_(dim), dim_stride_(dim_stride), in_place_(dim_stride == 1),
        rows_(static_cast<size_t>(max_rows)), gathered_(in_place_ ? 0 : static_cast<size_t>(max_rows * dim)) {}
  int kind() const { return in_place_ ? HalfWidthRowKind(dtype_) : kFloatRow; }
  void Clear() { count_ = 0; }
  void Add(int64_t token, int64_t head) { AddAddress(RowAddress(*t_, token, head)); }
  void AddAddress(const char* row) {
    if (in_place_) {
      rows_[static_cast<size_t>(count_)] = row;
    } else {
      float* gathered = gathered_.data() + count_ * dim_;
      LoadAsFloat(dtype_, row, dim_stride_, gathered, dim_);
      rows_[static_cast<size_t>(count_)] = gathered;
    }
    ++count_;
  }
  const void* const* rows() const { return rows_.data(); }
  int64_t count() const { return count_; }

 private:
  const TensorDesc* t_ = nullptr;
  aclDataType dtype_;
  int64_t dim_;
  int64_t dim_stride_;
  bool in_place_;
  std::vector<const void*> rows_;
  std::vector<float> gathered_;
  int64_t count_ = 0;
};

// The vector loops' jobs: a.b_c dot products of fp32 rows against a row list (DotJob), weighted sums of rows
// (AccumulateJob); nsa_selected_attention_cpu_simd.h says what each computes.
inline DotJob MakeDot(const float* a, int64_t a_stride, int64_t a_count, const RowList& b, int64_t dim,
                      float multiplier, float* out, int64_t out_stride) {
  DotJob job;
  job.a = a;
  job.a_stride = a_stride;
  job.a_count = a_count;
  job.b = b.rows();
  job.b_kind = b.kind();
  job.b_count = b.count();
  job.dim = dim;
  job.multiplier = multiplier;
  job.out = out;
  job.out_stride = out_stride;
  return job;
}

inline AccumulateJob MakeAccumulate(float* out, int64_t out_stride, int64_t out_count, const float* weights,
                                    int64_t weight_out_stride, int64_t weight_term_stride, const void* const* rows,
                                    int row_kind, int64_t term_count, int64_t dim) {
  AccumulateJob job;
  job.out = out;
  job.out_stride = out_stride;
  job.out_count = out_count;
  job.weights = weights;
  job.weight_out_stride = weight_out_stride;
  job.weight_term_stride = weight_term_stride;
  job.rows = rows;
  job.row_kind = row_kind;
  job.term_count = term_count;
  job.dim = dim;
  return job;
}

// The attention of g_count query rows over one key list (keys and values of the same count, at least 1): q holds the
// rows in fp32, dim_qk apart. On return each row g of scores (stride apart) holds e = exp(s - max) of its scaled dot
// products (simd::SoftmaxRow), (*stats)[g] its max and sum, and row g of acc (g_count x dim_v) the sum of e * value.
inline void AttendKeyList(const float* q, int64_t g_count, int64_t dim_qk, int64_t dim_v, float scale,
                          const RowList& keys, const RowList& values, float* scores, int64_t stride,
                          std::vector<RowStatistics>* stats, float* acc) {
  nsa_selected_attention::simd::Dot(MakeDot(q, dim_qk, g_count, keys, dim_qk, scale, scores, stride));
  stats->resize(static_cast<size_t>(g_count));
  for (int64_t g = 0; g < g_count; ++g) {
    (*stats)[static_cast<size_t>(g)] = nsa_selected_attention::simd::SoftmaxRow(scores + g * stride, keys.count());
  }
  std::fill(acc, acc + g_count * dim_v, 0.0f);
  nsa_selected_attention::simd::Accumulate(MakeAccumulate(acc, dim_v, g_count, scores, stride, 1, values.rows(),
                                                        values.kind(), values.count(), dim_v));
}

// An output row from its sum of e * value and its statistics: 0 when no key carries weight (every score -inf), NaN
// when a score is NaN or +inf, else acc / sum (one rounding each).
inline void FinishRow(const RowStatistics& st, const float* acc, int64_t dim_v, float* row) {
  if (st.max == -std::numeric_limits<float>::infinity()) {
    std::fill(row, row + dim_v, 0.0f);
  } else if (!(st.max < std::numeric_limits<float>::infinity())) {
    std::fill(row, row + dim_v, std::numeric_limits<float>::quiet_NaN());
  } else {
    for (int64_t i = 0; i < dim_v; ++i) row[i] = acc[i] / st.sum;
  }
}

}  // namespace pacl::nsa_attention_rows

#endif  // PACL_OPS_NSA_SELECTED_ATTENTION_CPU_NSA_ATTENTION_ROWS_H_
