// libFuzzer harness: aclnnNsaCompressAttentionInfer.
// Input layout (one byte a field unless said; missing bytes read as 0, the plausible choice):
//   layout (TND, BSND, or null / another string), N2, G, D_qk, D_v, page size, selectBlockSize, selectBlockCount, B,
//   S, pages per entry, each entry's query and compressed lengths, the raw lengths' form (null, consistent, off by a
//   stride), the three length arrays' mutations, dtype, key rank, topKOutput's 3-D form, the two masks (none, or
//   any tensor: neither is read), scaleValue, the eight integer attributes (each with its mutation), then each
//   tensor (fuzz::DecodeTensor; blockTableOptional's fill is valid page numbers, or with a mutation raw bytes:
//   hostile device data), the out-pointer byte and phase 2's mode.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "aclnnop/aclnn_nsa_compress_attention_infer.h"
#include "aclnnop/aclnn_nsa_select_attention_infer.h"
#include "fuzz_support.h"
#include "nsa_compress_attention_infer/test/nsa_compress_attention_infer_calls.h"

namespace {

constexpr const char* kName = "aclnnNsaCompressAttentionInfer";
constexpr int64_t kBlock = 32, kStride = 16;  // the plausible compression

// The layout string in an exact-size allocation (reading past its terminator is an ASan report): TND or BSND
// usually, else null (which means BSND), empty or another string. *tnd: the layout the call means; *valid: whether
// the operator must accept the string.
std::unique_ptr<char[]> DecodeLayout(fuzz::Reader& r, bool* tnd, bool* valid) {
  const uint8_t choice = r.Byte();
  static const char* const kOthers[] = {"", "BSH", "tnd", "TN", "TNDX", "BNSD"};
  *valid = true;
  *tnd = false;
  if (choice >= 200 && choice < 215) return nullptr;  // null: BSND
  const char* text = nullptr;
  if (choice < 200) {
    *tnd = choice % 2 == 0;
    text = *tnd ? "TND" : "BSND";
  } else {
    *valid = false;
    text = kOthers[choice % 6];
  }
  const size_t length = std::strlen(text);
  std::unique_ptr<char[]> copy(new char[length + 1]);
  std::memcpy(copy.get(), text, length + 1);
  return copy;
}

long long LL(int64_t v) { return static_cast<long long>(v); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader r(data, size);
  fuzz::Call call(data, size);
  bool tnd = false, layout_valid = true;
  std::unique_ptr<char[]> layout_text = DecodeLayout(r, &tnd, &layout_valid);
  const int64_t kv_heads = 1 + static_cast<int64_t>(r.Below(2));
  const int64_t group = 1 + static_cast<int64_t>(r.Below(2));
  const int64_t q_heads = kv_heads * group;
  const int64_t dim_qk = 16 * (1 + static_cast<int64_t>(r.Below(2)));
  const int64_t dim_v = 16 * (1 + static_cast<int64_t>(r.Below(static_cast<uint64_t>(dim_qk / 16))));
  const int64_t page = 16 * (1 + static_cast<int64_t>(r.Below(2)));
  const int64_t plausible_select = r.Flag() ? 64 : 32;
  const int64_t plausible_count = 1 + static_cast<int64_t>(r.Below(2));
  const int64_t batch = 1 + static_cast<int64_t>(r.Below(3));
  const int64_t steps = tnd ? 1 : 1 + static_cast<int64_t>(r.Below(2));  // S of BSND
  const int64_t columns = 1 + static_cast<int64_t>(r.Below(3));
  // Compressed lengths that leave every entry enough select blocks for the count (or none), query lengths within S.
  const int64_t min_cmp = (plausible_count * plausible_select - kBlock) / kStride + 1;
  fuzz::HostEnds q_lengths, cmp_lengths, sel_lengths;  // lengths per entry
  int64_t tokens = 0;                                  // TND: T
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t q_length = tnd ? 1 + static_cast<int64_t>(r.Below(2)) : steps - static_cast<int64_t>(r.Below(2));
    const uint8_t pick = r.Byte();
    const int64_t room = std::max<int64_t>(columns * page - min_cmp + 1, 1);
    const int64_t cmp_length = pick < 16 ? 0 : std::min(min_cmp + pick % room, columns * page);
    q_lengths.ends.push_back(q_length);
    cmp_lengths.ends.push_back(cmp_length);
    tokens += q_length;
  }
  const uint8_t sel_form = r.Byte();  // < 100: null (single-token), < 220: consistent, else a stride off
  sel_lengths.null = sel_form < 100;
  for (int64_t b = 0; b < batch && !sel_lengths.null; ++b) {
    const int64_t cmp_length = cmp_lengths.ends[static_cast<size_t>(b)];
    const int64_t raw = cmp_length == 0 ? kBlock - 1 : (cmp_length - 1) * kStride + kBlock + sel_form % kStride;
    sel_lengths.ends.push_back(raw + (sel_form >= 220 ? kStride : 0));
  }
  // TND with one token per entry and BSND with every entry at S: the query lengths are optional (null half the time).
  bool all_default = true;
  for (int64_t q_length : q_lengths.ends) all_default = all_default && q_length == (tnd ? 1 : steps);
  if (all_default && r.Flag()) q_lengths.null = true;
  fuzz::MutateEnds(r, &q_lengths);
  fuzz::MutateEnds(r, &cmp_lengths);
  fuzz::MutateEnds(r, &sel_lengths);
  constexpr aclDataType kDTypes[] = {ACL_FLOAT16, ACL_BF16};
  const aclDataType dtype = kDTypes[r.Below(2)];
  const bool cache_4d = r.Flag();
  const bool topk_3d = !tnd && steps == 1 && r.Flag();
  const uint8_t mask_kind = r.Byte();       // 0-149 none, else a tensor of any dtype (not read)
  const uint8_t topk_mask_kind = r.Byte();  // likewise
  const double scale = fuzz::DecodeScale(r, 0.125);
  const int64_t num_heads = fuzz::Attribute(r, q_heads);
  const int64_t num_kv_heads = fuzz::Attribute(r, kv_heads);
  const int64_t select_size = fuzz::Attribute(r, plausible_select);
  const int64_t select_count = fuzz::Attribute(r, plausible_count);
  const int64_t block_size = fuzz::Attribute(r, kBlock);
  const int64_t stride = fuzz::Attribute(r, kStride);
  const int64_t page_block_size = fuzz::Attribute(r, page);
  const int64_t sparse_mode = fuzz::Attribute(r, 0);

  const int64_t pages = batch * columns + static_cast<int64_t>(r.Below(2));
  const std::vector<int64_t> q_shape =
      tnd ? std::vector<int64_t>{tokens, q_heads, dim_qk} : std::vector<int64_t>{batch, steps, q_heads, dim_qk};
  const std::vector<int64_t> out_shape =
      tnd ? std::vector<int64_t>{tokens, q_heads, dim_v} : std::vector<int64_t>{batch, steps, q_heads, dim_v};
  std::vector<int64_t> topk_shape = {tokens, kv_heads, plausible_count};
  if (!tnd) {
    topk_shape = topk_3d ? std::vector<int64_t>{batch, kv_heads, plausible_count}
                         : std::vector<int64_t>{batch, steps, kv_heads, plausible_count};
  }
  const std::vector<int64_t> k_shape = cache_4d ? std::vector<int64_t>{pages, page, kv_heads, dim_qk}
                                                : std::vector<int64_t>{pages, page, kv_heads * dim_qk};
  const std::vector<int64_t> v_shape = cache_4d ? std::vector<int64_t>{pages, page, kv_heads, dim_v}
                                                : std::vector<int64_t>{pages, page, kv_heads * dim_v};
  // Plausible device data: each entry's pages, a rotation of the cache.
  std::vector<int64_t> table_values;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t c = 0; c < columns; ++c) table_values.push_back((b * columns + c + 1) % pages);
  }
  const int query = call.Add(fuzz::DecodeTensor(r, "query", false, q_shape, dtype));
  const int key = call.Add(fuzz::DecodeTensor(r, "key", false, k_shape, dtype));
  const int value = call.Add(fuzz::DecodeTensor(r, "value", false, v_shape, dtype));
  fuzz::TensorSpec table_spec =
      fuzz::DecodeTensor(r, "blockTableOptional", false, {batch, columns}, fuzz::IntOf(ACL_INT32));
  table_spec.int_values = table_values;
  const int table = call.Add(table_spec);
  const int mask =
      mask_kind >= 150
          ? call.Add(fuzz::DecodeTensor(r, "attentionMaskOptional", false, {1, 8}, fuzz::DecodeDataType(r)))
          : -1;
  const int topk_mask =
      topk_mask_kind >= 150
          ? call.Add(fuzz::DecodeTensor(r, "topKMaskOptional", false, {2, 4}, fuzz::DecodeDataType(r)))
          : -1;
  const int out = call.Add(fuzz::DecodeTensor(r, "output", true, out_shape, dtype));
  const int topk = call.Add(fuzz::DecodeTensor(r, "topKOutput", true, topk_shape, fuzz::IntOf(ACL_INT32)));
  call.Materialize();
  call.DecodeOutPointers(r);

  aclIntArray* q_array = fuzz::MakeIntArray(q_lengths);
  aclIntArray* cmp_array = fuzz::MakeIntArray(cmp_lengths);
  aclIntArray* sel_array = fuzz::MakeIntArray(sel_lengths);
  fuzz::Note(
      "%s: layout %s, numHeads %lld, numKeyValueHeads %lld, selectBlockSize %lld, selectBlockCount %lld, "
      "compressBlockSize %lld, compressBlockStride %lld, pageBlockSize %lld, scale %g, q lengths %s, cmp lengths %s, "
      "sel lengths %s",
      kName, layout_text == nullptr ? "null" : layout_text.get(), LL(num_heads), LL(num_kv_heads), LL(select_size),
      LL(select_count), LL(block_size), LL(stride), LL(page_block_size), scale,
      q_lengths.null ? "null" : fuzz::DimsString(q_lengths.ends).c_str(),
      cmp_lengths.null ? "null" : fuzz::DimsString(cmp_lengths.ends).c_str(),
      sel_lengths.null ? "null" : fuzz::DimsString(sel_lengths.ends).c_str());
  opcall::NsaCompressAttentionInfer c;
  c.query = call.tensor(query);
  c.key = call.tensor(key);
  c.value = call.tensor(value);
  c.attention_mask = mask >= 0 ? call.tensor(mask) : nullptr;
  c.block_table = call.tensor(table);
  c.actual_q_seq_len = q_array;
  c.actual_cmp_kv_seq_len = cmp_array;
  c.actual_sel_kv_seq_len = sel_array;
  c.topk_mask = topk_mask >= 0 ? call.tensor(topk_mask) : nullptr;
  c.num_heads = num_heads;
  c.num_key_value_heads = num_kv_heads;
  c.select_block_size = select_size;
  c.select_block_count = select_count;
  c.compress_block_size = block_size;
  c.compress_block_stride = stride;
  c.scale_value = scale;
  c.layout = layout_text.get();
  c.page_block_size = page_block_size;
  c.sparse_mode = sparse_mode;
  c.output = call.tensor(out);
  c.topk_output = call.tensor(topk);
  const aclnnStatus status = opcall::GetWorkspaceSize(c, call.workspace_size_out(), call.executor_out());
  for (aclIntArray* array : {q_array, cmp_array, sel_array}) {
    if (array != nullptr) aclDestroyIntArray(array);
  }
  // The masks (never read, any tensor or null) and the query and raw lengths are optional; the rest is required.
  bool required_null = cmp_lengths.null;
  for (int index : {query, key, value, table, out, topk}) required_null = required_null || call.PassedAsNull(index);
  if (!call.CheckPhase1(kName, status, required_null)) return 0;

  // Accepted: the documented rules hold.
  FUZZ_CHECK(layout_valid, "%s accepted layout \"%s\"", kName, layout_text.get());
  const int64_t g = num_kv_heads >= 1 ? num_heads / num_kv_heads : 0;
  FUZZ_CHECK(num_heads >= 1 && num_kv_heads >= 1 && num_heads % num_kv_heads == 0 && g <= 128 && 128 % g == 0 &&
                 page_block_size >= 16 && page_block_size <= 128 && page_block_size % 16 == 0,
             "%s accepted numHeads %lld, numKeyValueHeads %lld, pageBlockSize %lld", kName, LL(num_heads),
             LL(num_kv_heads), LL(page_block_size));
  FUZZ_CHECK(block_size >= 16 && block_size <= 128 && block_size % 16 == 0 && stride >= 16 && stride <= 64 &&
                 stride % 16 == 0 && block_size >= stride && select_size >= block_size && select_size <= 128 &&
                 select_size % 16 == 0 && select_size % stride == 0 && select_count >= 1,
             "%s accepted compressBlockSize %lld, compressBlockStride %lld, selectBlockSize %lld, "
             "selectBlockCount %lld",
             kName, LL(block_size), LL(stride), LL(select_size), LL(select_count));
  const fuzz::TensorSpec& q_spec = call.spec(query);
  fuzz::CheckAcceptedDType(kName, q_spec, {ACL_FLOAT16, ACL_BF16});
  for (int index : {key, value, out}) {
    FUZZ_CHECK(call.spec(index).dtype == q_spec.dtype, "%s accepted mixed dtypes", kName);
  }
  FUZZ_CHECK(call.spec(topk).dtype == fuzz::IntOf(ACL_INT32) && call.spec(table).dtype == fuzz::IntOf(ACL_INT32),
             "%s accepted index dtypes %d / %d", kName, call.spec(topk).dtype, call.spec(table).dtype);
  const std::vector<int64_t>& qd = q_spec.dims;
  const std::vector<int64_t>& kd = call.spec(key).dims;
  const std::vector<int64_t>& vd = call.spec(value).dims;
  const std::vector<int64_t>& td = call.spec(table).dims;
  const size_t q_rank = tnd ? 3 : 4;
  FUZZ_CHECK(qd.size() == q_rank && qd[q_rank - 2] == num_heads && qd[q_rank - 1] >= 16 && qd[q_rank - 1] <= 192 &&
                 qd[q_rank - 1] % 16 == 0,
             "%s accepted query %s for numHeads %lld", kName, fuzz::DimsString(qd).c_str(), LL(num_heads));
  const int64_t d_qk = qd[q_rank - 1];
  FUZZ_CHECK((kd.size() == 3 || kd.size() == 4) && vd.size() == kd.size() && kd[0] >= 1 && vd[0] == kd[0] &&
                 kd[1] == page_block_size && vd[1] == kd[1],
             "%s accepted key %s, value %s", kName, fuzz::DimsString(kd).c_str(), fuzz::DimsString(vd).c_str());
  int64_t d_v = 0;
  if (kd.size() == 4) {
    FUZZ_CHECK(kd[2] == num_kv_heads && kd[3] == d_qk && vd[2] == num_kv_heads, "%s accepted key %s, value %s", kName,
               fuzz::DimsString(kd).c_str(), fuzz::DimsString(vd).c_str());
    d_v = vd[3];
  } else {
    FUZZ_CHECK(kd[2] == num_kv_heads * d_qk && vd[2] % num_kv_heads == 0, "%s accepted key %s, value %s", kName,
               fuzz::DimsString(kd).c_str(), fuzz::DimsString(vd).c_str());
    d_v = vd[2] / num_kv_heads;
  }
  FUZZ_CHECK(d_v >= 16 && d_v <= 128 && d_v % 16 == 0 && d_v <= d_qk, "%s accepted D_v %lld for D_qk %lld", kName,
             LL(d_v), LL(d_qk));
  // The batch: the table's rows, the arrays' entries, each entry's lengths.
  FUZZ_CHECK(td.size() == 2 && td[0] >= 1 && td[0] <= 10000 && td[1] >= 1, "%s accepted blockTableOptional %s", kName,
             fuzz::DimsString(td).c_str());
  // (Saturating: the table's columns come from its shape, any int64.)
  const int64_t columns_capacity = td[1] > INT64_MAX / page_block_size ? INT64_MAX : td[1] * page_block_size;
  const int64_t b_count = td[0], capacity = std::min<int64_t>(8192, columns_capacity);
  FUZZ_CHECK(static_cast<int64_t>(cmp_lengths.ends.size()) == b_count &&
                 (q_lengths.null || static_cast<int64_t>(q_lengths.ends.size()) == b_count) &&
                 (sel_lengths.null || static_cast<int64_t>(sel_lengths.ends.size()) == b_count),
             "%s accepted %zu compressed, %zu query and %zu raw lengths for %lld entries", kName,
             cmp_lengths.ends.size(), q_lengths.ends.size(), sel_lengths.ends.size(), LL(b_count));
  if (!tnd) {
    FUZZ_CHECK(qd[0] == b_count && qd[1] >= 1 && qd[1] <= 4, "%s accepted query %s for %lld entries", kName,
               fuzz::DimsString(qd).c_str(), LL(b_count));
  }
  int64_t total = 0;
  for (int64_t b = 0; b < b_count; ++b) {
    const int64_t cmp_length = cmp_lengths.ends[static_cast<size_t>(b)];
    const int64_t q_length = q_lengths.null ? (tnd ? 1 : qd[1]) : q_lengths.ends[static_cast<size_t>(b)];
    FUZZ_CHECK(cmp_length >= 0 && cmp_length <= capacity && q_length >= 0 && q_length <= (tnd ? 4 : qd[1]),
               "%s accepted entry %lld of %lld query and %lld compressed tokens", kName, LL(b), LL(q_length),
               LL(cmp_length));
    if (cmp_length >= 1) {
      const int64_t blocks = ((cmp_length - 1) * stride + block_size) / select_size;
      FUZZ_CHECK(blocks <= 4096 && select_count <= blocks, "%s accepted selectBlockCount %lld for entry %lld (%lld)",
                 kName, LL(select_count), LL(b), LL(cmp_length));
    }
    total += q_length;
  }
  FUZZ_CHECK(!tnd || total == qd[0], "%s accepted %lld query tokens for T %lld", kName, LL(total), LL(qd[0]));
  // topKOutput and output in the layout.
  if (tnd) {
    fuzz::CheckAcceptedDims(kName, call.spec(topk), {qd[0], num_kv_heads, select_count});
    fuzz::CheckAcceptedDims(kName, call.spec(out), {qd[0], num_heads, d_v});
  } else {
    if (call.spec(topk).dims.size() == 3) {
      FUZZ_CHECK(qd[1] == 1, "%s accepted a 3-D topKOutput for S %lld", kName, LL(qd[1]));
      fuzz::CheckAcceptedDims(kName, call.spec(topk), {qd[0], num_kv_heads, select_count});
    } else {
      fuzz::CheckAcceptedDims(kName, call.spec(topk), {qd[0], qd[1], num_kv_heads, select_count});
    }
    fuzz::CheckAcceptedDims(kName, call.spec(out), {qd[0], qd[1], num_heads, d_v});
  }

  // Work: every output row over the longest entry's compressed tokens, plus the block scores.
  int64_t longest = 0;
  for (int64_t length : cmp_lengths.ends) longest = std::max(longest, length);
  const uint64_t per_row = static_cast<uint64_t>(longest) * static_cast<uint64_t>(d_qk + d_v + 8);
  const uint64_t work = fuzz::SaturatingMul(fuzz::Elements(call.spec(out).dims) / static_cast<uint64_t>(d_v), per_row);
  call.RunPhase2(r, kName, aclnnNsaCompressAttentionInfer, aclnnNsaSelectedAttentionInfer, {out, topk}, work);
  return 0;
}
