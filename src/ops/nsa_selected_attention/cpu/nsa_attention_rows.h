// Row access shared by the NSA attention kernels on the CPU (NsaSelectedAttention, NsaCompressAttention): rows of
// 3-D TND tensors read widened to fp32 or written rounded once, the softmax statistics' 8 lanes, lists of key/value
// row pointers for the vector loops (nsa_selected_attention_cpu_simd.h), and the sequence holding a query token.
#ifndef PACL_OPS_NSA_SELECTED_ATTENTION_CPU_NSA_ATTENTION_ROWS_H_
#define PACL_OPS_NSA_SELECTED_ATTENTION_CPU_NSA_ATTENTION_ROWS_H_

#include <cstdint>
#include <cstring>
#include <vector>

#include "nsa_selected_attention/cpu/nsa_selected_attention_cpu_simd.h"
#include "pacl/convert.h"
#include "pacl/tensor.h"

namespace pacl::nsa_attention_rows {

using nsa_selected_attention::kBFloat16Row;
using nsa_selected_attention::kFloatRow;
using nsa_selected_attention::kHalfRow;

// The row kind of FLOAT16 / BFLOAT16 data read in place.
inline int KindOf(aclDataType dtype) { return dtype == ACL_FLOAT16 ? kHalfRow : kBFloat16Row; }

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

// Row pointers of a list of key (or value) tokens of one head: in place where the rows have unit stride along D,
// else gathered into fp32 rows.
class RowList {
 public:
  RowList(const TensorDesc& t, int64_t max_rows)
      : t_(t), in_place_(t.strides[2] == 1), rows_(static_cast<size_t>(max_rows)),
        gathered_(in_place_ ? 0 : static_cast<size_t>(max_rows * t.shape[2])) {}
  int kind() const { return in_place_ ? KindOf(t_.dtype) : kFloatRow; }
  void Clear() { count_ = 0; }
  void Add(int64_t token, int64_t head) {
    if (in_place_) {
      rows_[static_cast<size_t>(count_)] = RowAddress(t_, token, head);
    } else {
      float* row = gathered_.data() + count_ * t_.shape[2];
      ReadRow(t_, token, head, row);
      rows_[static_cast<size_t>(count_)] = row;
    }
    ++count_;
  }
  const void* const* rows() const { return rows_.data(); }
  int64_t count() const { return count_; }

 private:
  const TensorDesc& t_;
  bool in_place_;
  std::vector<const void*> rows_;
  std::vector<float> gathered_;
  int64_t count_ = 0;
};

}  // namespace pacl::nsa_attention_rows

#endif  // PACL_OPS_NSA_SELECTED_ATTENTION_CPU_NSA_ATTENTION_ROWS_H_
