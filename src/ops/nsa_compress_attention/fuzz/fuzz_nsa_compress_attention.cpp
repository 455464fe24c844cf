// libFuzzer harness: aclnnNsaCompressAttention.
// Input layout (one byte a field unless said; missing bytes read as 0, the plausible choice):
//   N2, G, D_qk, D_v, selectBlockCount, the window sizes' choice, sequence count, each sequence's query and compressed
//   key lengths, the three arrays' mutations, dtype, each mask's kind (none, BOOL, UINT8, other), the layout string,
//   scaleValue, the seven integer attributes (each with its mutation), then each tensor (fuzz::DecodeTensor; the
//   masks' fill is any byte: masked and visible entries), the out-pointer byte and phase 2's mode.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "aclnnop/aclnn_nsa_compress_attention.h"
#include "aclnnop/aclnn_nsa_selected_attention.h"
#include "fuzz_support.h"
#include "nsa_compress_attention/test/nsa_compress_attention_calls.h"

namespace {

constexpr const char* kName = "aclnnNsaCompressAttention";

// A mask argument: none (-1), or a tensor of the plausible shape in BOOL, UINT8 or (rarely) another dtype.
int AddMask(fuzz::Reader& r, fuzz::Call& call, const char* name, uint8_t kind, int64_t rows, int64_t cols) {
  if (kind < 100) return -1;
  const aclDataType dtype = kind < 200 ? ACL_BOOL : kind < 240 ? ACL_UINT8 : ACL_FLOAT;
  return call.Add(fuzz::DecodeTensor(r, name, false, {rows, cols}, fuzz::IntOf(dtype)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader r(data, size);
  fuzz::Call call(data, size);
  const int64_t kv_heads = 1 + static_cast<int64_t>(r.Below(2));
  const int64_t group = int64_t{1} << r.Below(3);
  const int64_t q_heads = kv_heads * group;
  const int64_t dim_qk = 16 * (1 + static_cast<int64_t>(r.Below(4)));
  const int64_t dim_v = r.Flag() ? dim_qk : 16;
  const int64_t plausible_count = 1 + static_cast<int64_t>(r.Below(2));
  // (l, d, l'): the document's sample, all equal, the largest.
  static const int64_t kWindows[3][3] = {{32, 16, 64}, {16, 16, 16}, {128, 64, 128}};
  const int64_t* window = kWindows[r.Below(3)];
  const int64_t per_block = window[2] / window[1];
  const size_t sequences = 1 + r.Below(3);
  fuzz::HostEnds q_ends, cmp_ends, sel_ends;
  int64_t t1 = 0, t2 = 0, sel = 0, max_q = 0, max_k = 0, max_sel = 0;
  for (size_t i = 0; i < sequences; ++i) {
    const int64_t q_length = static_cast<int64_t>(r.Below(6));
    const int64_t k_length = plausible_count * per_block + static_cast<int64_t>(r.Below(5));
    const int64_t s_length = (k_length + per_block - 1) / per_block;
    t1 += q_length;
    t2 += k_length;
    sel += s_length;
    max_q = std::max(max_q, q_length);
    max_k = std::max(max_k, k_length);
    max_sel = std::max(max_sel, s_length);
    q_ends.ends.push_back(t1);
    cmp_ends.ends.push_back(t2);
    sel_ends.ends.push_back(sel);
  }
  fuzz::MutateEnds(r, &q_ends);
  fuzz::MutateEnds(r, &cmp_ends);
  fuzz::MutateEnds(r, &sel_ends);
  constexpr aclDataType kDTypes[] = {ACL_FLOAT16, ACL_BF16};
  const aclDataType dtype = kDTypes[r.Below(2)];
  const uint8_t atten_kind = r.Byte();  // 0-99 none, 100-199 BOOL, 200-239 UINT8, else another dtype
  const uint8_t topk_kind = r.Byte();
  std::unique_ptr<char[]> layout = fuzz::DecodeTndLayout(r);
  const double scale = fuzz::DecodeScale(r, 0.125);
  const int64_t sparse_mode = fuzz::Attribute(r, atten_kind >= 100 && r.Flag() ? 1 : 0);
  const int64_t compress_block = fuzz::Attribute(r, window[0]);
  const int64_t compress_stride = fuzz::Attribute(r, window[1]);
  const int64_t select_block = fuzz::Attribute(r, window[2]);
  const int64_t select_count = fuzz::Attribute(r, plausible_count);
  const int64_t head_num = fuzz::Attribute(r, q_heads);

  const std::vector<int64_t> q_shape = {t1, q_heads, dim_qk}, k_shape = {t2, kv_heads, dim_qk};
  const std::vector<int64_t> v_shape = {t2, kv_heads, dim_v}, topk_shape = {t1, kv_heads, plausible_count};
  const std::vector<int64_t> out_shape = {t1, q_heads, dim_v}, stat_shape = {t1, q_heads, 8};
  const int query = call.Add(fuzz::DecodeTensor(r, "query", false, q_shape, dtype));
  const int key = call.Add(fuzz::DecodeTensor(r, "key", false, k_shape, dtype));
  const int value = call.Add(fuzz::DecodeTensor(r, "value", false, v_shape, dtype));
  const int atten_mask = AddMask(r, call, "attenMaskOptional", atten_kind, max_q, max_k);
  const int topk_mask = AddMask(r, call, "topkMaskOptional", topk_kind, max_q, max_sel);
  const int max = call.Add(fuzz::DecodeTensor(r, "softmaxMaxOut", true, stat_shape, fuzz::IntOf(ACL_FLOAT)));
  const int sum = call.Add(fuzz::DecodeTensor(r, "softmaxSumOut", true, stat_shape, fuzz::IntOf(ACL_FLOAT)));
  const int out = call.Add(fuzz::DecodeTensor(r, "attentionOutOut", true, out_shape, dtype));
  const int topk = call.Add(fuzz::DecodeTensor(r, "topkIndicesOut", true, topk_shape, fuzz::IntOf(ACL_INT32)));
  call.Materialize();
  call.DecodeOutPointers(r);

  aclIntArray* q_array = fuzz::MakeIntArray(q_ends);
  aclIntArray* cmp_array = fuzz::MakeIntArray(cmp_ends);
  aclIntArray* sel_array = fuzz::MakeIntArray(sel_ends);
  fuzz::Note("%s: sparseMode %lld, l %lld, d %lld, l' %lld, count %lld, headNum %lld, scale %g, layout %s, q ends %s, "
             "cmp ends %s, sel ends %s",
             kName, static_cast<long long>(sparse_mode), static_cast<long long>(compress_block),
             static_cast<long long>(compress_stride), static_cast<long long>(select_block),
             static_cast<long long>(select_count), static_cast<long long>(head_num), scale,
             layout == nullptr ? "null" : layout.get(), q_ends.null ? "null" : fuzz::DimsString(q_ends.ends).c_str(),
             cmp_ends.null ? "null" : fuzz::DimsString(cmp_ends.ends).c_str(),
             sel_ends.null ? "null" : fuzz::DimsString(sel_ends.ends).c_str());
  opcall::NsaCompressAttention c;
  c.query = call.tensor(query);
  c.key = call.tensor(key);
  c.value = call.tensor(value);
  c.atten_mask = atten_mask >= 0 ? call.tensor(atten_mask) : nullptr;
  c.topk_mask = topk_mask >= 0 ? call.tensor(topk_mask) : nullptr;
  c.actual_seq_q_len = q_array;
  c.actual_cmp_seq_kv_len = cmp_array;
  c.actual_sel_seq_kv_len = sel_array;
  c.scale_value = scale;
  c.head_num = head_num;
  c.input_layout = layout.get();
  c.sparse_mode = sparse_mode;
  c.compress_block_size = compress_block;
  c.compress_stride = compress_stride;
  c.select_block_size = select_block;
  c.select_block_count = select_count;
  c.softmax_max = call.tensor(max);
  c.softmax_sum = call.tensor(sum);
  c.attention_out = call.tensor(out);
  c.topk_indices = call.tensor(topk);
  const aclnnStatus status = opcall::GetWorkspaceSize(c, call.workspace_size_out(), call.executor_out());
  for (aclIntArray* array : {q_array, cmp_array, sel_array}) {
    if (array != nullptr) aclDestroyIntArray(array);
  }
  // A null mask is allowed (both are optional); every other argument is required. A mask passed as a tensor without
  // data is a null data pointer (161001) too.
  bool required_null = q_ends.null || cmp_ends.null || sel_ends.null || layout == nullptr;
  for (int index : {query, key, value, max, sum, out, topk}) required_null = required_null || call.PassedAsNull(index);
  for (int index : {atten_mask, topk_mask}) {
    required_null = required_null || (index >= 0 && call.PassedAsNull(index) && call.tensor(index) != nullptr);
  }
  if (!call.CheckPhase1(kName, status, required_null)) return 0;

  // Accepted: the documented rules hold.
  FUZZ_CHECK(layout != nullptr && std::strcmp(layout.get(), "TND") == 0, "%s accepted layout \"%s\"", kName,
             layout == nullptr ? "(null)" : layout.get());
  const auto multiple_of_16_to = [](int64_t v, int64_t most) { return v >= 16 && v <= most && v % 16 == 0; };
  FUZZ_CHECK(multiple_of_16_to(compress_block, 128) && multiple_of_16_to(compress_stride, 64) &&
                 multiple_of_16_to(select_block, 128) && compress_block >= compress_stride &&
                 select_block >= compress_block && select_block % compress_stride == 0 && select_count >= 1 &&
                 select_count <= 32,
             "%s accepted l %lld, d %lld, l' %lld, count %lld", kName, static_cast<long long>(compress_block),
             static_cast<long long>(compress_stride), static_cast<long long>(select_block),
             static_cast<long long>(select_count));
  FUZZ_CHECK(sparse_mode == 0 || (sparse_mode == 1 && c.atten_mask != nullptr), "%s accepted sparseMode %lld", kName,
             static_cast<long long>(sparse_mode));
  const fuzz::TensorSpec& q_spec = call.spec(query);
  fuzz::CheckAcceptedDType(kName, q_spec, {ACL_FLOAT16, ACL_BF16});
  const std::vector<int64_t>& qd = q_spec.dims;
  const std::vector<int64_t>& kd = call.spec(key).dims;
  const std::vector<int64_t>& vd = call.spec(value).dims;
  FUZZ_CHECK(qd.size() == 3 && kd.size() == 3 && vd.size() == 3, "%s accepted ranks %zu %zu %zu", kName, qd.size(),
             kd.size(), vd.size());
  const int64_t accepted_group = kd[1] >= 1 ? head_num / kd[1] : 0;
  FUZZ_CHECK(qd[1] == head_num && kd[1] >= 1 && head_num % kd[1] == 0 && accepted_group < 128 &&
                 128 % accepted_group == 0 && vd[1] == kd[1] && kd[0] == vd[0] && qd[2] == kd[2] &&
                 multiple_of_16_to(qd[2], INT64_MAX) && multiple_of_16_to(vd[2], INT64_MAX) && vd[2] <= qd[2],
             "%s accepted query %s, key %s, value %s, headNum %lld", kName, fuzz::DimsString(qd).c_str(),
             fuzz::DimsString(kd).c_str(), fuzz::DimsString(vd).c_str(), static_cast<long long>(head_num));
  FUZZ_CHECK(!q_ends.ends.empty() && q_ends.ends.size() == cmp_ends.ends.size() &&
                 q_ends.ends.size() == sel_ends.ends.size() && q_ends.ends.back() == qd[0] &&
                 cmp_ends.ends.back() == kd[0],
             "%s accepted arrays %s / %s / %s for T %lld / %lld", kName, fuzz::DimsString(q_ends.ends).c_str(),
             fuzz::DimsString(cmp_ends.ends).c_str(), fuzz::DimsString(sel_ends.ends).c_str(),
             static_cast<long long>(qd[0]), static_cast<long long>(kd[0]));
  int64_t accepted_max_q = 0, accepted_max_k = 0, accepted_max_sel = 0;
  for (size_t i = 0; i < q_ends.ends.size(); ++i) {
    const int64_t q_length = q_ends.ends[i] - (i == 0 ? 0 : q_ends.ends[i - 1]);
    const int64_t k_length = cmp_ends.ends[i] - (i == 0 ? 0 : cmp_ends.ends[i - 1]);
    const int64_t s_length = sel_ends.ends[i] - (i == 0 ? 0 : sel_ends.ends[i - 1]);
    const int64_t r_accepted = select_block / compress_stride;
    FUZZ_CHECK(q_length >= 0 && k_length >= 0 && k_length <= 14000 &&
                   s_length == (k_length + r_accepted - 1) / r_accepted && s_length >= select_count,
               "%s accepted sequence %zu of %lld / %lld / %lld tokens", kName, i, static_cast<long long>(q_length),
               static_cast<long long>(k_length), static_cast<long long>(s_length));
    accepted_max_q = std::max(accepted_max_q, q_length);
    accepted_max_k = std::max(accepted_max_k, k_length);
    accepted_max_sel = std::max(accepted_max_sel, s_length);
  }
  // (A mask decoded as a null tensor, or one aclCreateTensor refused, is passed as null: no mask.)
  if (c.atten_mask != nullptr) {
    fuzz::CheckAcceptedDims(kName, call.spec(atten_mask), {accepted_max_q, accepted_max_k});
  }
  if (c.topk_mask != nullptr) {
    fuzz::CheckAcceptedDims(kName, call.spec(topk_mask), {accepted_max_q, accepted_max_sel});
  }
  const std::vector<int64_t> accepted_out = {qd[0], qd[1], vd[2]}, accepted_stat = {qd[0], qd[1], 8};
  fuzz::CheckAcceptedDims(kName, call.spec(out), accepted_out);
  fuzz::CheckAcceptedDims(kName, call.spec(max), accepted_stat);
  fuzz::CheckAcceptedDims(kName, call.spec(sum), accepted_stat);
  fuzz::CheckAcceptedDims(kName, call.spec(topk), {qd[0], kd[1], select_count});
  for (int index : {key, value, out}) {
    FUZZ_CHECK(call.spec(index).dtype == q_spec.dtype, "%s accepted mixed dtypes", kName);
  }

  const uint64_t work = fuzz::SaturatingMul(fuzz::SaturatingMul(fuzz::Elements(qd), static_cast<uint64_t>(accepted_max_k)),
                                            3);
  call.RunPhase2(r, kName, aclnnNsaCompressAttention, aclnnNsaSelectedAttention, {max, sum, out, topk}, work);
  return 0;
}
