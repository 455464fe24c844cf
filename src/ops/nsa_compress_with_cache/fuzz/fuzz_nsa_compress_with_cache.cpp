// libFuzzer harness: aclnnNsaCompressWithCache.
// Input layout (one byte a field unless said; missing bytes read as 0, the plausible choice):
//   paged or TND, N, D, compressBlockSize / stride choice, B, pages per entry, each entry's length, the length
//   array's mutation, dtype, the layout string, the four integer attributes (each with its mutation), then each
//   tensor (fuzz::DecodeTensor; slotMapping's and blockTableOptional's fills are valid slots and page numbers, or
//   with a mutation raw bytes: hostile device data), the out-pointer byte and phase 2's mode.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "aclnnop/aclnn_nsa_compress.h"
#include "aclnnop/aclnn_nsa_compress_with_cache.h"
#include "fuzz_support.h"
#include "nsa_compress_with_cache/test/nsa_compress_with_cache_calls.h"

namespace {

constexpr const char* kName = "aclnnNsaCompressWithCache";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader r(data, size);
  fuzz::Call call(data, size);
  const bool paged = !r.Flag();
  const int64_t heads = 1 + static_cast<int64_t>(r.Below(3));
  const int64_t dim = 16 * (1 + static_cast<int64_t>(r.Below(4)));
  const int64_t kSizes[][2] = {{32, 16}, {16, 16}, {64, 48}, {48, 32}};
  const int64_t* plausible_sizes = kSizes[r.Below(4)];
  const int64_t page = 64;
  const int64_t batch = 1 + static_cast<int64_t>(r.Below(3));
  const int64_t columns = 1 + static_cast<int64_t>(r.Below(2));
  fuzz::HostEnds lengths;  // per entry (HostEnds: any int64 list)
  int64_t tokens = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t length = static_cast<int64_t>(r.Below(static_cast<uint64_t>(columns * page + 1)));
    lengths.ends.push_back(length);
    tokens += length;
  }
  fuzz::MutateEnds(r, &lengths);
  constexpr aclDataType kDTypes[] = {ACL_FLOAT16, ACL_BF16};
  const aclDataType dtype = kDTypes[r.Below(2)];
  std::unique_ptr<char[]> layout = fuzz::DecodeTndLayout(r);
  const int64_t block_size = fuzz::Attribute(r, plausible_sizes[0]);
  const int64_t stride = fuzz::Attribute(r, plausible_sizes[1]);
  const int64_t length_type = fuzz::Attribute(r, 1);
  const int64_t page_block_size = fuzz::Attribute(r, page);

  const int64_t pages = paged ? batch * columns + static_cast<int64_t>(r.Below(2)) : 0;
  const int64_t most = paged ? (pages * page - plausible_sizes[0]) / plausible_sizes[1] : 0;
  const int64_t result_len = std::max<int64_t>(most + 1, batch) + static_cast<int64_t>(r.Below(3));
  std::vector<int64_t> slot_values, table_values;
  for (int64_t b = 0; b < batch; ++b) slot_values.push_back((b * 3) % result_len);
  for (int64_t i = 0; i < batch * columns; ++i) table_values.push_back((i + 1) % std::max<int64_t>(pages, 1));
  const std::vector<int64_t> input_shape =
      paged ? std::vector<int64_t>{pages, page, heads, dim} : std::vector<int64_t>{tokens, heads, dim};
  const int input = call.Add(fuzz::DecodeTensor(r, "input", false, input_shape, dtype));
  const int weight = call.Add(fuzz::DecodeTensor(r, "weight", false, {plausible_sizes[0], heads}, dtype));
  fuzz::TensorSpec slot_spec = fuzz::DecodeTensor(r, "slotMapping", false, {batch}, fuzz::IntOf(ACL_INT32));
  slot_spec.int_values = slot_values;
  const int slots = call.Add(slot_spec);
  int table = -1;
  if (paged) {
    fuzz::TensorSpec table_spec =
        fuzz::DecodeTensor(r, "blockTableOptional", false, {batch, columns}, fuzz::IntOf(ACL_INT32));
    table_spec.int_values = table_values;
    table = call.Add(table_spec);
  }
  const int cache = call.Add(fuzz::DecodeTensor(r, "outputCache", true, {result_len, heads, dim}, dtype));
  call.Materialize();
  call.DecodeOutPointers(r);

  aclIntArray* length_array = fuzz::MakeIntArray(lengths);
  fuzz::Note(
      "%s: %s, compressBlockSize %lld, compressStride %lld, actSeqLenType %lld, pageBlockSize %lld, layout %s, "
      "lengths %s",
      kName, paged ? "paged" : "TND", static_cast<long long>(block_size), static_cast<long long>(stride),
      static_cast<long long>(length_type), static_cast<long long>(page_block_size),
      layout == nullptr ? "null" : layout.get(), lengths.null ? "null" : fuzz::DimsString(lengths.ends).c_str());
  opcall::NsaCompressWithCache c;
  c.input = call.tensor(input);
  c.weight = call.tensor(weight);
  c.slot_mapping = call.tensor(slots);
  c.act_seq_len = length_array;
  c.block_table = table >= 0 ? call.tensor(table) : nullptr;
  c.layout = layout.get();
  c.compress_block_size = block_size;
  c.compress_stride = stride;
  c.act_seq_len_type = length_type;
  c.page_block_size = page_block_size;
  c.output_cache = call.tensor(cache);
  const aclnnStatus status = opcall::GetWorkspaceSize(c, call.workspace_size_out(), call.executor_out());
  if (length_array != nullptr) aclDestroyIntArray(length_array);
  // A null block table means TND (it is optional); a block table whose tensor aclCreateTensor refused is passed as
  // null too. Every other argument is required.
  const bool table_null_data = table >= 0 && call.PassedAsNull(table) && call.tensor(table) != nullptr;
  bool required_null = lengths.null || table_null_data;
  for (int index : {input, weight, slots, cache}) required_null = required_null || call.PassedAsNull(index);
  if (!call.CheckPhase1(kName, status, required_null)) return 0;

  // Accepted: the documented rules hold.
  const bool table_passed = c.block_table != nullptr;
  FUZZ_CHECK(length_type == 1 && (table_passed || (layout != nullptr && std::strcmp(layout.get(), "TND") == 0)),
             "%s accepted actSeqLenType %lld, layout %s", kName, static_cast<long long>(length_type),
             layout == nullptr ? "null" : layout.get());
  FUZZ_CHECK(block_size >= 16 && block_size <= 64 && block_size % 16 == 0 &&
                 (stride == 16 || stride == 32 || stride == 48 || stride == 64) && block_size >= stride &&
                 (page_block_size == 64 || page_block_size == 128),
             "%s accepted compressBlockSize %lld, compressStride %lld, pageBlockSize %lld", kName,
             static_cast<long long>(block_size), static_cast<long long>(stride),
             static_cast<long long>(page_block_size));
  const fuzz::TensorSpec& in_spec = call.spec(input);
  fuzz::CheckAcceptedDType(kName, in_spec, {ACL_FLOAT16, ACL_BF16});
  FUZZ_CHECK(call.spec(weight).dtype == in_spec.dtype && call.spec(cache).dtype == in_spec.dtype,
             "%s accepted mixed dtypes", kName);
  const std::vector<int64_t>& id = in_spec.dims;
  FUZZ_CHECK(id.size() == (table_passed ? 4u : 3u) && id[0] >= 1, "%s accepted input %s", kName,
             fuzz::DimsString(id).c_str());
  const int64_t n = id[id.size() - 2], d = id[id.size() - 1];
  FUZZ_CHECK(n >= 1 && n <= 64 && (n <= 50 || n % 2 == 0) && d >= 16 && d <= 256 && d % 16 == 0 &&
                 (!table_passed || id[1] == page_block_size),
             "%s accepted input %s", kName, fuzz::DimsString(id).c_str());
  fuzz::CheckAcceptedDims(kName, call.spec(weight), {block_size, n});
  const std::vector<int64_t>& cd = call.spec(cache).dims;
  FUZZ_CHECK(cd.size() == 3 && cd[0] >= 1 && cd[1] == n && cd[2] == d, "%s accepted outputCache %s", kName,
             fuzz::DimsString(cd).c_str());
  if (table_passed) {
    FUZZ_CHECK(cd[0] > (id[0] * page_block_size - block_size) / stride, "%s accepted resultLen %lld for %lld pages",
               kName, static_cast<long long>(cd[0]), static_cast<long long>(id[0]));
  }
  const std::vector<int64_t>& sd = call.spec(slots).dims;
  FUZZ_CHECK(sd.size() == 1 && sd[0] >= 1 && static_cast<int64_t>(lengths.ends.size()) == sd[0],
             "%s accepted slotMapping %s with %zu lengths", kName, fuzz::DimsString(sd).c_str(), lengths.ends.size());
  int64_t total = 0;
  for (int64_t length : lengths.ends) {
    if (table_passed) {
      const std::vector<int64_t>& td = call.spec(table).dims;
      FUZZ_CHECK(td.size() == 2 && td[0] == sd[0] && td[1] >= 1 && length >= 0 &&
                     (td[1] > INT64_MAX / page_block_size || length <= td[1] * page_block_size),
                 "%s accepted length %lld for blockTableOptional %s", kName, static_cast<long long>(length),
                 fuzz::DimsString(td).c_str());
    } else {
      FUZZ_CHECK(length >= 0, "%s accepted length %lld", kName, static_cast<long long>(length));
      total += length;
    }
  }
  FUZZ_CHECK(table_passed || total == id[0], "%s accepted lengths adding up to %lld for T %lld", kName,
             static_cast<long long>(total), static_cast<long long>(id[0]));

  const uint64_t work =
      fuzz::SaturatingMul(fuzz::SaturatingMul(static_cast<uint64_t>(sd[0]), static_cast<uint64_t>(block_size)),
                          fuzz::SaturatingMul(static_cast<uint64_t>(n), static_cast<uint64_t>(d)));
  call.RunPhase2(r, kName, aclnnNsaCompressWithCache, aclnnNsaCompress, {cache}, work);
  return 0;
}
