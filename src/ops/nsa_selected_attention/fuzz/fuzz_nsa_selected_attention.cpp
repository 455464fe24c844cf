// libFuzzer harness: aclnnNsaSelectedAttention and aclnnNsaSelectedAttentionGrad (first byte: which).
// Input layout (one byte a field unless said; missing bytes read as 0, the plausible choice):
//   direction, N2, G, D_qk, D_v, selectedBlockCount, sequence count, each sequence's query and key/value lengths,
//   the two arrays' mutations, dtype, the mask (none, BOOL, UINT8, other), the layout string, scaleValue, the four
//   integer attributes (each with its mutation), then each tensor (fuzz::DecodeTensor; topkIndices' fill is
//   valid block indices, or with a mutation raw bytes: out-of-range and negative indices), the out-pointer byte and
//   phase 2's mode.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "aclnnop/aclnn_nsa_selected_attention.h"
#include "aclnnop/aclnn_nsa_selected_attention_grad.h"
#include "fuzz_support.h"
#include "nsa_selected_attention/test/nsa_selected_attention_calls.h"

namespace {

constexpr const char* kForward = "aclnnNsaSelectedAttention";
constexpr const char* kBackward = "aclnnNsaSelectedAttentionGrad";
constexpr int64_t kBlockSize = 16;  // the plausible selectedBlockSize

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader r(data, size);
  fuzz::Call call(data, size);
  const bool backward = r.Flag();
  const int64_t kv_heads = 1 + static_cast<int64_t>(r.Below(2));
  const int64_t group = 1 + static_cast<int64_t>(r.Below(2));
  const int64_t q_heads = kv_heads * group;
  const int64_t dim_qk = r.Flag() ? 128 : 192;
  const int64_t dim_v = r.Flag() ? dim_qk : 128;
  const int64_t plausible_count = 1 + static_cast<int64_t>(r.Below(2));
  const size_t sequences = 1 + r.Below(3);
  fuzz::HostEnds q_ends, kv_ends;
  int64_t t1 = 0, t2 = 0;
  std::vector<int64_t> kv_blocks;  // per sequence, for the plausible indices
  for (size_t i = 0; i < sequences; ++i) {
    t1 += 1 + static_cast<int64_t>(r.Below(5));
    const int64_t blocks = plausible_count + static_cast<int64_t>(r.Below(3));
    t2 += blocks * kBlockSize;
    q_ends.ends.push_back(t1);
    kv_ends.ends.push_back(t2);
    kv_blocks.push_back(blocks);
  }
  fuzz::MutateEnds(r, &q_ends);
  fuzz::MutateEnds(r, &kv_ends);
  constexpr aclDataType kDTypes[] = {ACL_FLOAT16, ACL_BF16};
  const aclDataType dtype = kDTypes[r.Below(2)];
  const uint8_t mask_kind = r.Byte();  // 0-99 none, 100-199 BOOL, 200-239 UINT8, else another dtype
  std::unique_ptr<char[]> layout = fuzz::DecodeTndLayout(r);
  const double scale = fuzz::DecodeScale(r, 1.0 / 16.0);
  const int64_t sparse_mode = fuzz::Attribute(r, r.Flag() ? 2 : 0);
  const int64_t block_size = fuzz::Attribute(r, kBlockSize);
  const int64_t block_count = fuzz::Attribute(r, plausible_count);
  const int64_t head_num = fuzz::Attribute(r, q_heads);

  // Plausible indices: per (token, KV head) slot, a block of the token's sequence (cycled through the view).
  std::vector<int64_t> indices;
  {
    size_t seq = 0;
    for (int64_t t = 0; t < t1; ++t) {
      while (seq + 1 < sequences && q_ends.ends.size() == sequences && t >= q_ends.ends[seq]) ++seq;
      for (int64_t h = 0; h < kv_heads; ++h) {
        for (int64_t c = 0; c < plausible_count; ++c) indices.push_back((t + h + c) % kv_blocks[seq]);
      }
    }
  }
  const std::vector<int64_t> q_shape = {t1, q_heads, dim_qk}, k_shape = {t2, kv_heads, dim_qk};
  const std::vector<int64_t> v_shape = {t2, kv_heads, dim_v}, topk_shape = {t1, kv_heads, plausible_count};
  const std::vector<int64_t> out_shape = {t1, q_heads, dim_v}, stat_shape = {t1, q_heads, 8};
  const int query = call.Add(fuzz::DecodeTensor(r, "query", false, q_shape, dtype));
  const int key = call.Add(fuzz::DecodeTensor(r, "key", false, k_shape, dtype));
  const int value = call.Add(fuzz::DecodeTensor(r, "value", false, v_shape, dtype));
  fuzz::TensorSpec topk_spec = fuzz::DecodeTensor(r, "topkIndices", false, topk_shape, fuzz::IntOf(ACL_INT32));
  topk_spec.int_values = indices;
  const int topk = call.Add(topk_spec);
  int mask = -1;
  if (mask_kind >= 100) {
    const aclDataType mask_dtype = mask_kind < 200 ? ACL_BOOL : mask_kind < 240 ? ACL_UINT8 : ACL_FLOAT;
    mask = call.Add(fuzz::DecodeTensor(r, "attenMaskOptional", false, {8, 8}, fuzz::IntOf(mask_dtype)));
  }
  int out = -1, out_grad = -1, max = -1, sum = -1, dq = -1, dk = -1, dv = -1;
  if (backward) {
    out = call.Add(fuzz::DecodeTensor(r, "attentionOut", false, out_shape, dtype));
    out_grad = call.Add(fuzz::DecodeTensor(r, "attentionOutGrad", false, out_shape, dtype));
    max = call.Add(fuzz::DecodeTensor(r, "softmaxMax", false, stat_shape, fuzz::IntOf(ACL_FLOAT)));
    sum = call.Add(fuzz::DecodeTensor(r, "softmaxSum", false, stat_shape, fuzz::IntOf(ACL_FLOAT), {true, 4}));
    dq = call.Add(fuzz::DecodeTensor(r, "dqOut", true, q_shape, dtype));
    dk = call.Add(fuzz::DecodeTensor(r, "dkOut", true, k_shape, dtype));
    dv = call.Add(fuzz::DecodeTensor(r, "dvOut", true, v_shape, dtype));
  } else {
    max = call.Add(fuzz::DecodeTensor(r, "softmaxMaxOut", true, stat_shape, fuzz::IntOf(ACL_FLOAT)));
    sum = call.Add(fuzz::DecodeTensor(r, "softmaxSumOut", true, stat_shape, fuzz::IntOf(ACL_FLOAT)));
    out = call.Add(fuzz::DecodeTensor(r, "attentionOut", true, out_shape, dtype));
  }
  call.Materialize();
  call.DecodeOutPointers(r);

  aclIntArray* q_array = fuzz::MakeIntArray(q_ends);
  aclIntArray* kv_array = fuzz::MakeIntArray(kv_ends);
  const char* name = backward ? kBackward : kForward;
  fuzz::Note("%s: sparseMode %lld, selectedBlockSize %lld, selectedBlockCount %lld, headNum %lld, scale %g, layout %s, "
             "q ends %s, kv ends %s",
             name, static_cast<long long>(sparse_mode), static_cast<long long>(block_size),
             static_cast<long long>(block_count), static_cast<long long>(head_num), scale,
             layout == nullptr ? "null" : layout.get(), q_ends.null ? "null" : fuzz::DimsString(q_ends.ends).c_str(),
             kv_ends.null ? "null" : fuzz::DimsString(kv_ends.ends).c_str());
  aclTensor* mask_tensor = mask >= 0 ? call.tensor(mask) : nullptr;
  aclnnStatus status;
  if (backward) {
    opcall::NsaSelectedAttentionGrad c;
    c.query = call.tensor(query);
    c.key = call.tensor(key);
    c.value = call.tensor(value);
    c.attention_out = call.tensor(out);
    c.attention_out_grad = call.tensor(out_grad);
    c.softmax_max = call.tensor(max);
    c.softmax_sum = call.tensor(sum);
    c.topk_indices = call.tensor(topk);
    c.actual_seq_q_len = q_array;
    c.actual_seq_kv_len = kv_array;
    c.atten_mask = mask_tensor;
    c.scale_value = scale;
    c.selected_block_size = block_size;
    c.selected_block_count = block_count;
    c.head_num = head_num;
    c.input_layout = layout.get();
    c.sparse_mode = sparse_mode;
    c.dq = call.tensor(dq);
    c.dk = call.tensor(dk);
    c.dv = call.tensor(dv);
    status = opcall::GetWorkspaceSize(c, call.workspace_size_out(), call.executor_out());
  } else {
    opcall::NsaSelectedAttention c;
    c.query = call.tensor(query);
    c.key = call.tensor(key);
    c.value = call.tensor(value);
    c.topk_indices = call.tensor(topk);
    c.atten_mask = mask_tensor;
    c.actual_seq_q_len = q_array;
    c.actual_seq_kv_len = kv_array;
    c.scale_value = scale;
    c.head_num = head_num;
    c.input_layout = layout.get();
    c.sparse_mode = sparse_mode;
    c.selected_block_size = block_size;
    c.selected_block_count = block_count;
    c.softmax_max = call.tensor(max);
    c.softmax_sum = call.tensor(sum);
    c.attention_out = call.tensor(out);
    status = opcall::GetWorkspaceSize(c, call.workspace_size_out(), call.executor_out());
  }
  if (q_array != nullptr) aclDestroyIntArray(q_array);
  if (kv_array != nullptr) aclDestroyIntArray(kv_array);
  // A null mask is allowed (it is optional); every other argument is required.
  bool required_null = q_ends.null || kv_ends.null || layout == nullptr;
  for (int index : {query, key, value, topk, out, out_grad, max, sum, dq, dk, dv}) {
    required_null = required_null || (index >= 0 && call.PassedAsNull(index));
  }
  const bool mask_null_data = mask >= 0 && call.PassedAsNull(mask) && call.tensor(mask) != nullptr;
  if (!call.CheckPhase1(name, status, required_null || mask_null_data)) return 0;

  // Accepted: the documented rules hold.
  FUZZ_CHECK(layout != nullptr && std::strcmp(layout.get(), "TND") == 0, "%s accepted layout \"%s\"", name,
             layout == nullptr ? "(null)" : layout.get());
  FUZZ_CHECK((sparse_mode == 0 || sparse_mode == 2) && block_size >= 16 && block_size <= 128 && block_size % 16 == 0 &&
                 block_count >= 1 && block_count <= 32,
             "%s accepted sparseMode %lld, selectedBlockSize %lld, selectedBlockCount %lld", name,
             static_cast<long long>(sparse_mode), static_cast<long long>(block_size),
             static_cast<long long>(block_count));
  const fuzz::TensorSpec& q_spec = call.spec(query);
  fuzz::CheckAcceptedDType(name, q_spec, {ACL_FLOAT16, ACL_BF16});
  const std::vector<int64_t>& qd = q_spec.dims;
  const std::vector<int64_t>& kd = call.spec(key).dims;
  const std::vector<int64_t>& vd = call.spec(value).dims;
  FUZZ_CHECK(qd.size() == 3 && kd.size() == 3 && vd.size() == 3, "%s accepted ranks %zu %zu %zu", name, qd.size(),
             kd.size(), vd.size());
  FUZZ_CHECK(qd[1] == head_num && kd[1] >= 1 && head_num % kd[1] == 0 && head_num / kd[1] <= 32 && vd[1] == kd[1] &&
                 kd[0] == vd[0] && qd[2] == kd[2] && (qd[2] == 128 || qd[2] == 192) &&
                 (vd[2] == 128 || vd[2] == 192) && vd[2] <= qd[2],
             "%s accepted query %s, key %s, value %s, headNum %lld", name, fuzz::DimsString(qd).c_str(),
             fuzz::DimsString(kd).c_str(), fuzz::DimsString(vd).c_str(), static_cast<long long>(head_num));
  FUZZ_CHECK(!q_ends.ends.empty() && q_ends.ends.size() == kv_ends.ends.size() && q_ends.ends.back() == qd[0] &&
                 kv_ends.ends.back() == kd[0],
             "%s accepted arrays %s / %s for T %lld / %lld", name, fuzz::DimsString(q_ends.ends).c_str(),
             fuzz::DimsString(kv_ends.ends).c_str(), static_cast<long long>(qd[0]), static_cast<long long>(kd[0]));
  for (size_t i = 0; i < kv_ends.ends.size(); ++i) {
    const int64_t q_length = q_ends.ends[i] - (i == 0 ? 0 : q_ends.ends[i - 1]);
    const int64_t kv_length = kv_ends.ends[i] - (i == 0 ? 0 : kv_ends.ends[i - 1]);
    FUZZ_CHECK(q_length >= 0 && kv_length % block_size == 0 && kv_length >= block_size * block_count,
               "%s accepted sequence %zu of %lld / %lld tokens", name, i, static_cast<long long>(q_length),
               static_cast<long long>(kv_length));
  }
  fuzz::CheckAcceptedDims(name, call.spec(topk), {qd[0], kd[1], block_count});
  const std::vector<int64_t> accepted_out = {qd[0], qd[1], vd[2]}, accepted_stat = {qd[0], qd[1], 8};
  fuzz::CheckAcceptedDims(name, call.spec(out), accepted_out);
  fuzz::CheckAcceptedDims(name, call.spec(max), accepted_stat);
  fuzz::CheckAcceptedDims(name, call.spec(sum), accepted_stat);
  std::vector<int> written;
  if (backward) {
    fuzz::CheckAcceptedDims(name, call.spec(out_grad), accepted_out);
    fuzz::CheckAcceptedDims(name, call.spec(dq), qd);
    fuzz::CheckAcceptedDims(name, call.spec(dk), kd);
    fuzz::CheckAcceptedDims(name, call.spec(dv), vd);
    written = {dq, dk, dv};
  } else {
    written = {max, sum, out};
  }
  for (int index : {key, value, out, out_grad, dq, dk, dv}) {
    FUZZ_CHECK(index < 0 || call.spec(index).dtype == q_spec.dtype, "%s accepted mixed dtypes", name);
  }

  const uint64_t keys = fuzz::SaturatingMul(static_cast<uint64_t>(block_count), static_cast<uint64_t>(block_size));
  const uint64_t work = fuzz::SaturatingMul(fuzz::SaturatingMul(fuzz::Elements(accepted_out), keys),
                                            static_cast<uint64_t>(backward ? 8 : 3));
  call.RunPhase2(r, name, backward ? aclnnNsaSelectedAttentionGrad : aclnnNsaSelectedAttention,
                 backward ? aclnnNsaSelectedAttention : aclnnNsaSelectedAttentionGrad, written, work);
  return 0;
}
