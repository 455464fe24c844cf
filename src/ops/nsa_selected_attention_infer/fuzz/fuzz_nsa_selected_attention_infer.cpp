// libFuzzer harness: aclnnNsaSelectedAttentionInfer.
// Input layout (one byte a field unless said; missing bytes read as 0, the plausible choice):
//   layout (BSND, BSH, TND, or null / another string), N2, G, page size, selectBlockSize, selectBlockCount, B, S,
//   pages per entry, each entry's query and cached lengths, the two length arrays' mutations, dtype, key rank,
//   topkIndices' 3-D form, the mask (none, or any tensor: it is not read), scaleValue, the five integer attributes
//   and sparseMode (each with its mutation), then each tensor (fuzz::DecodeTensor; blockTableOptional's and
//   topkIndices' fills are valid page numbers and block indices, or with a mutation raw bytes: hostile device data),
//   the out-pointer byte and phase 2's mode.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "aclnnop/aclnn_nsa_select_attention_infer.h"
#include "aclnnop/aclnn_nsa_selected_attention.h"
#include "fuzz_support.h"
#include "nsa_selected_attention_infer/test/nsa_selected_attention_infer_calls.h"

namespace {

constexpr const char* kName = "aclnnNsaSelectedAttentionInfer";
constexpr int64_t kDimQk = 192;
constexpr int64_t kDimV = 128;

enum class Layout { kBSND, kBSH, kTND };

// The layout string in an exact-size allocation (reading past its terminator is an ASan report): one of the three
// usually, else null (which means BSND), empty or another string. *layout: the layout the call means (BSND for a
// string the operator must refuse: the harness checks the refusal through `valid`).
std::unique_ptr<char[]> DecodeLayout(fuzz::Reader& r, Layout* layout, bool* valid) {
  const uint8_t choice = r.Byte();
  static const char* const kValid[] = {"BSND", "BSH", "TND"};
  static const char* const kOthers[] = {"", "BNSD", "bsnd", "TN", "BSNDX", "SBH"};
  *valid = true;
  *layout = Layout::kBSND;
  if (choice >= 200 && choice < 215) return nullptr;  // null: BSND
  const char* text = nullptr;
  if (choice < 200) {
    *layout = static_cast<Layout>(choice % 3);
    text = kValid[choice % 3];
  } else {
    *valid = false;
    text = kOthers[choice % 6];
  }
  const size_t length = std::strlen(text);
  std::unique_ptr<char[]> copy(new char[length + 1]);
  std::memcpy(copy.get(), text, length + 1);
  return copy;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader r(data, size);
  fuzz::Call call(data, size);
  Layout layout = Layout::kBSND;
  bool layout_valid = true;
  std::unique_ptr<char[]> layout_text = DecodeLayout(r, &layout, &layout_valid);
  const int64_t kv_heads = 1 + static_cast<int64_t>(r.Below(2));
  const int64_t group = 1 + static_cast<int64_t>(r.Below(2));
  const int64_t q_heads = kv_heads * group;
  const int64_t page = r.Flag() ? 128 : 64;
  const int64_t plausible_block = r.Flag() ? 32 : 16;
  const int64_t plausible_count = 1 + static_cast<int64_t>(r.Below(2));
  const int64_t batch = 1 + static_cast<int64_t>(r.Below(3));
  const bool padded = layout != Layout::kTND;
  const int64_t steps = padded ? 1 + static_cast<int64_t>(r.Below(2)) : 1;  // S of BSND / BSH
  const int64_t columns = 1 + static_cast<int64_t>(r.Below(2));
  fuzz::HostEnds q_lengths, kv_lengths;  // lengths per entry (HostEnds: any int64 list)
  int64_t tokens = 0;                    // TND: T
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t q_length = padded ? steps - static_cast<int64_t>(r.Below(2)) : 1 + static_cast<int64_t>(r.Below(2));
    const int64_t kv_length = q_length + static_cast<int64_t>(r.Below(256)) % (columns * page - q_length + 1);
    q_lengths.ends.push_back(q_length);
    kv_lengths.ends.push_back(kv_length);
    tokens += q_length;
  }
  // BSND / BSH with every entry at S tokens: the query-length array is optional (null half the time).
  bool all_full = true;
  for (int64_t q_length : q_lengths.ends) all_full = all_full && q_length == steps;
  if (padded && all_full && r.Flag()) q_lengths.null = true;
  fuzz::MutateEnds(r, &q_lengths);
  fuzz::MutateEnds(r, &kv_lengths);
  constexpr aclDataType kDTypes[] = {ACL_FLOAT16, ACL_BF16};
  const aclDataType dtype = kDTypes[r.Below(2)];
  const bool cache_4d = r.Flag();
  const bool topk_3d = padded && steps == 1 && r.Flag();
  const uint8_t mask_kind = r.Byte();  // 0-149 none, else a tensor of any dtype (not read)
  const double scale = fuzz::DecodeScale(r, 1.0 / 16.0);
  const int64_t num_heads = fuzz::Attribute(r, q_heads);
  const int64_t num_kv_heads = fuzz::Attribute(r, kv_heads);
  const int64_t block_size = fuzz::Attribute(r, plausible_block);
  const int64_t block_count = fuzz::Attribute(r, plausible_count);
  const int64_t page_block_size = fuzz::Attribute(r, page);
  const int64_t sparse_mode = fuzz::Attribute(r, 0);

  const int64_t pages = batch * columns + static_cast<int64_t>(r.Below(2));
  std::vector<int64_t> q_shape, topk_shape, out_shape;
  if (layout == Layout::kBSND) {
    q_shape = {batch, steps, q_heads, kDimQk};
    out_shape = {batch, steps, q_heads, kDimV};
  } else if (layout == Layout::kBSH) {
    q_shape = {batch, steps, q_heads * kDimQk};
    out_shape = {batch, steps, q_heads * kDimV};
  } else {
    q_shape = {tokens, q_heads, kDimQk};
    out_shape = {tokens, q_heads, kDimV};
  }
  const int64_t rows = padded ? batch * steps : tokens;
  if (layout == Layout::kTND) {
    topk_shape = {tokens, kv_heads, plausible_count};
  } else if (topk_3d) {
    topk_shape = {batch, kv_heads, plausible_count};
  } else {
    topk_shape = {batch, steps, kv_heads, plausible_count};
  }
  const std::vector<int64_t> k_shape = cache_4d ? std::vector<int64_t>{pages, page, kv_heads, kDimQk}
                                                : std::vector<int64_t>{pages, page, kv_heads * kDimQk};
  const std::vector<int64_t> v_shape = cache_4d ? std::vector<int64_t>{pages, page, kv_heads, kDimV}
                                                : std::vector<int64_t>{pages, page, kv_heads * kDimV};
  // Plausible device data: each entry's pages (a rotation of the cache), and per (row, KV head) slot a block of
  // the entry's cache (cycled through the view).
  std::vector<int64_t> table_values, topk_values;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t c = 0; c < columns; ++c) table_values.push_back((b * columns + c + 1) % pages);
  }
  const int64_t blocks = std::max<int64_t>(1, columns * page / plausible_block);
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t h = 0; h < kv_heads; ++h) {
      for (int64_t c = 0; c < plausible_count; ++c) topk_values.push_back((row * 3 + h + c) % blocks);
    }
  }
  const int query = call.Add(fuzz::DecodeTensor(r, "query", false, q_shape, dtype));
  const int key = call.Add(fuzz::DecodeTensor(r, "key", false, k_shape, dtype));
  const int value = call.Add(fuzz::DecodeTensor(r, "value", false, v_shape, dtype));
  fuzz::TensorSpec topk_spec = fuzz::DecodeTensor(r, "topkIndices", false, topk_shape, fuzz::IntOf(ACL_INT32));
  topk_spec.int_values = topk_values;
  const int topk = call.Add(topk_spec);
  fuzz::TensorSpec table_spec =
      fuzz::DecodeTensor(r, "blockTableOptional", false, {batch, columns}, fuzz::IntOf(ACL_INT32));
  table_spec.int_values = table_values;
  const int table = call.Add(table_spec);
  const int mask = mask_kind >= 150
                       ? call.Add(fuzz::DecodeTensor(r, "attenMaskOptional", false, {1, 8}, fuzz::DecodeDataType(r)))
                       : -1;
  const int out = call.Add(fuzz::DecodeTensor(r, "output", true, out_shape, dtype));
  call.Materialize();
  call.DecodeOutPointers(r);

  aclIntArray* q_array = fuzz::MakeIntArray(q_lengths);
  aclIntArray* kv_array = fuzz::MakeIntArray(kv_lengths);
  fuzz::Note(
      "%s: layout %s, numHeads %lld, numKeyValueHeads %lld, selectBlockSize %lld, selectBlockCount %lld, "
      "pageBlockSize %lld, scale %g, q lengths %s, kv lengths %s",
      kName, layout_text == nullptr ? "null" : layout_text.get(), static_cast<long long>(num_heads),
      static_cast<long long>(num_kv_heads), static_cast<long long>(block_size), static_cast<long long>(block_count),
      static_cast<long long>(page_block_size), scale,
      q_lengths.null ? "null" : fuzz::DimsString(q_lengths.ends).c_str(),
      kv_lengths.null ? "null" : fuzz::DimsString(kv_lengths.ends).c_str());
  opcall::NsaSelectedAttentionInfer c;
  c.query = call.tensor(query);
  c.key = call.tensor(key);
  c.value = call.tensor(value);
  c.topk_indices = call.tensor(topk);
  c.atten_mask = mask >= 0 ? call.tensor(mask) : nullptr;
  c.block_table = call.tensor(table);
  c.actual_q_seq_len = q_array;
  c.actual_kv_seq_len = kv_array;
  c.layout = layout_text.get();
  c.num_heads = num_heads;
  c.num_key_value_heads = num_kv_heads;
  c.select_block_size = block_size;
  c.select_block_count = block_count;
  c.page_block_size = page_block_size;
  c.scale_value = scale;
  c.sparse_mode = sparse_mode;
  c.output = call.tensor(out);
  const aclnnStatus status = opcall::GetWorkspaceSize(c, call.workspace_size_out(), call.executor_out());
  if (q_array != nullptr) aclDestroyIntArray(q_array);
  if (kv_array != nullptr) aclDestroyIntArray(kv_array);
  // The mask (reserved: never read, any tensor or null) and the query lengths are optional; the rest is required.
  bool required_null = kv_lengths.null;
  for (int index : {query, key, value, topk, table, out}) required_null = required_null || call.PassedAsNull(index);
  if (!call.CheckPhase1(kName, status, required_null)) return 0;

  // Accepted: the documented rules hold.
  FUZZ_CHECK(layout_valid, "%s accepted layout \"%s\"", kName, layout_text.get());
  FUZZ_CHECK(num_heads >= 1 && num_kv_heads >= 1 && num_kv_heads <= 256 && num_heads % num_kv_heads == 0 &&
                 num_heads / num_kv_heads <= 16 && block_size >= 16 && block_size <= 128 && block_size % 16 == 0 &&
                 block_count >= 1 && block_count <= 32 && (page_block_size == 64 || page_block_size == 128),
             "%s accepted numHeads %lld, numKeyValueHeads %lld, selectBlockSize %lld, selectBlockCount %lld, "
             "pageBlockSize %lld",
             kName, static_cast<long long>(num_heads), static_cast<long long>(num_kv_heads),
             static_cast<long long>(block_size), static_cast<long long>(block_count),
             static_cast<long long>(page_block_size));
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
  // query: its heads and D 192 in the layout.
  const size_t q_rank = layout == Layout::kBSND ? 4 : 3;
  FUZZ_CHECK(qd.size() == q_rank, "%s accepted query %s", kName, fuzz::DimsString(qd).c_str());
  const int64_t q_row = layout == Layout::kBSH ? qd[2] : qd[q_rank - 2] * qd[q_rank - 1];
  FUZZ_CHECK(q_row == num_heads * kDimQk && (layout == Layout::kBSH || qd[q_rank - 2] == num_heads),
             "%s accepted query %s for numHeads %lld", kName, fuzz::DimsString(qd).c_str(),
             static_cast<long long>(num_heads));
  // key and value: pages of pageBlockSize rows of numKeyValueHeads heads of 192 / 128.
  FUZZ_CHECK((kd.size() == 3 || kd.size() == 4) && vd.size() == kd.size() && kd[0] >= 1 && vd[0] == kd[0] &&
                 kd[1] == page_block_size && vd[1] == kd[1],
             "%s accepted key %s, value %s", kName, fuzz::DimsString(kd).c_str(), fuzz::DimsString(vd).c_str());
  if (kd.size() == 4) {
    FUZZ_CHECK(kd[2] == num_kv_heads && kd[3] == kDimQk && vd[2] == num_kv_heads && vd[3] == kDimV,
               "%s accepted key %s, value %s", kName, fuzz::DimsString(kd).c_str(), fuzz::DimsString(vd).c_str());
  } else {
    FUZZ_CHECK(kd[2] == num_kv_heads * kDimQk && vd[2] == num_kv_heads * kDimV, "%s accepted key %s, value %s", kName,
               fuzz::DimsString(kd).c_str(), fuzz::DimsString(vd).c_str());
  }
  // The batch: the table's rows, the arrays' entries, each entry's lengths.
  FUZZ_CHECK(td.size() == 2 && td[0] >= 1 && td[0] <= 3072 && td[1] >= 1, "%s accepted blockTableOptional %s", kName,
             fuzz::DimsString(td).c_str());
  // (Saturating: the table's columns come from its shape, any int64.)
  const int64_t b_count = td[0], capacity = td[1] > INT64_MAX / page_block_size ? INT64_MAX : td[1] * page_block_size;
  FUZZ_CHECK(static_cast<int64_t>(kv_lengths.ends.size()) == b_count &&
                 (q_lengths.null || static_cast<int64_t>(q_lengths.ends.size()) == b_count),
             "%s accepted %zu kv and %zu query lengths for %lld entries", kName, kv_lengths.ends.size(),
             q_lengths.ends.size(), static_cast<long long>(b_count));
  if (padded) {
    FUZZ_CHECK(qd[0] == b_count && qd[1] >= 1 && qd[1] <= 4, "%s accepted query %s for %lld entries", kName,
               fuzz::DimsString(qd).c_str(), static_cast<long long>(b_count));
  }
  int64_t total = 0;
  for (int64_t b = 0; b < b_count; ++b) {
    const int64_t kv_length = kv_lengths.ends[static_cast<size_t>(b)];
    const int64_t q_length = q_lengths.null ? (padded ? qd[1] : 1) : q_lengths.ends[static_cast<size_t>(b)];
    FUZZ_CHECK(kv_length >= 0 && kv_length <= capacity && q_length >= 0 && q_length <= (padded ? qd[1] : 4) &&
                   q_length <= kv_length,
               "%s accepted entry %lld of %lld query and %lld cached tokens", kName, static_cast<long long>(b),
               static_cast<long long>(q_length), static_cast<long long>(kv_length));
    total += q_length;
  }
  FUZZ_CHECK(padded || total == qd[0], "%s accepted %lld query tokens for T %lld", kName, static_cast<long long>(total),
             static_cast<long long>(qd[0]));
  // topkIndices and output in the layout.
  const std::vector<int64_t>& topk_dims = call.spec(topk).dims;
  if (layout == Layout::kTND) {
    fuzz::CheckAcceptedDims(kName, call.spec(topk), {qd[0], num_kv_heads, block_count});
    fuzz::CheckAcceptedDims(kName, call.spec(out), {qd[0], num_heads, kDimV});
  } else {
    if (topk_dims.size() == 3) {
      FUZZ_CHECK(qd[1] == 1, "%s accepted a 3-D topkIndices for S %lld", kName, static_cast<long long>(qd[1]));
      fuzz::CheckAcceptedDims(kName, call.spec(topk), {qd[0], num_kv_heads, block_count});
    } else {
      fuzz::CheckAcceptedDims(kName, call.spec(topk), {qd[0], qd[1], num_kv_heads, block_count});
    }
    fuzz::CheckAcceptedDims(kName, call.spec(out),
                            layout == Layout::kBSND ? std::vector<int64_t>{qd[0], qd[1], num_heads, kDimV}
                                                    : std::vector<int64_t>{qd[0], qd[1], num_heads * kDimV});
  }

  const uint64_t keys = fuzz::SaturatingMul(static_cast<uint64_t>(block_count), static_cast<uint64_t>(block_size));
  const uint64_t work = fuzz::SaturatingMul(fuzz::SaturatingMul(fuzz::Elements(call.spec(out).dims), keys), 3);
  call.RunPhase2(r, kName, aclnnNsaSelectedAttentionInfer, aclnnNsaSelectedAttention, {out}, work);
  return 0;
}
