// Float64 reference of NsaSelectedAttentionInfer (aclnnNsaSelectedAttentionInfer), written from CANN's document's
// formula and docs/ops/nsa_selected_attention_infer.md's decisions, independently of src/: the yardstick of the
// operator tests. It sees the key/value cache as each batch entry's positions in order (the tests page them).
//
// Batch entry b: q_b query tokens, the last of its kv_b positions (token i at position kv_b - q_b + i). Token i and
// KV head h attend, through the slot indices topk[t, h, :] (t: the token's index over all entries), to the positions
// [j bs, (j + 1) bs) of each index j, clipped to [0, kv_b) and to <= the token's position; a negative index, or one
// whose block starts past that, selects nothing; a repeated index counts twice; positions marked missing (their page
// number invalid) count nothing. Query head n (KV head n / G): out = softmax(scale * q . k) v over that list; 0 when
// the list is empty.
#ifndef PACL_OPS_NSA_SELECTED_ATTENTION_INFER_TEST_NSA_SELECTED_ATTENTION_INFER_REFERENCE_H_
#define PACL_OPS_NSA_SELECTED_ATTENTION_INFER_TEST_NSA_SELECTED_ATTENTION_INFER_REFERENCE_H_

#include <cstdint>
#include <vector>

namespace ref {

struct NsaSelectedInferShape {
  int64_t q_heads = 0, kv_heads = 0;  // N1, N2
  int64_t dim_qk = 0, dim_v = 0;
  int64_t block_size = 0, block_count = 0;
  double scale = 1.0;
  std::vector<int64_t> q_lengths, kv_lengths;  // per batch entry
  int64_t QTokens() const;                     // sum of q_lengths
  int64_t KvPositions() const;                 // sum of kv_lengths
};

// query (QTokens, N1, Dqk); key (KvPositions, N2, Dqk), value (KvPositions, N2, Dv): each entry's positions in order,
// the entries back to back; topk (QTokens, N2, block_count) as stored; missing: empty, or KvPositions flags.
// out: (QTokens, N1, Dv).
void NsaSelectedAttentionInfer(const double* query, const double* key, const double* value,
                               const std::vector<int64_t>& topk, const std::vector<uint8_t>& missing,
                               const NsaSelectedInferShape& s, double* out);

// How the tests lay the logical data out (the operator tests and the conformance cases share it).
// The cache: (pages, page_block_size, row_size) with position p of entry b at row p % page_block_size of page
// table[b * columns + p / page_block_size] (a page number outside [0, pages) stores nothing), every other row NaN.
// rows: (KvPositions, row_size) logical.
std::vector<double> PagedCache(const std::vector<double>& rows, int64_t row_size, const NsaSelectedInferShape& s,
                               const std::vector<int64_t>& table, int64_t columns, int64_t pages,
                               int64_t page_block_size);
// The positions whose page number is invalid (the reference's `missing`).
std::vector<uint8_t> MissingPositions(const NsaSelectedInferShape& s, const std::vector<int64_t>& table,
                                      int64_t columns, int64_t pages, int64_t page_block_size);
// Logical (QTokens, row_size) rows padded to s_len rows per entry (BSND, BSH), padding rows `fill`.
std::vector<double> PadRows(const std::vector<double>& rows, int64_t row_size, const NsaSelectedInferShape& s,
                            int64_t s_len, double fill);

}  // namespace ref

#endif  // PACL_OPS_NSA_SELECTED_ATTENTION_INFER_TEST_NSA_SELECTED_ATTENTION_INFER_REFERENCE_H_
