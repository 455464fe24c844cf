// Benchmark cases of aclnnNsaCompressWithCache.
//
// Case names: NsaCompressWithCache/<dtype>/<shape>, e.g. "NsaCompressWithCache/FLOAT16/B64_N4_D192".
// Shapes (paged input, pages of 128 shuffled through the cache, windows of 32 every 16 tokens, every entry having
// just completed a window: the step's most work):
// - B64_N4_D192: 64 sequences of 1024 to 2048 tokens, 4 KV heads of D 192 (NSA's key compression while decoding);
// - small_B4_N2_D64: 4 sequences of 128 to 256 tokens, 2 heads of 64, for the bench_smoke test.
// Bytes per call: each writing entry's window (32 rows of N x D) read once and its cache row written once, plus the
// index arrays: the operator gathers rows, so GB/s against the machine's triad bandwidth is its measure.
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "bench_common.h"
#include "nsa_compress_with_cache/test/nsa_compress_with_cache_calls.h"

namespace bench {
namespace {

struct CacheShape {
  std::string name;
  int64_t batch, heads, dim, min_length;
};

constexpr int64_t kPage = 128, kBlock = 32, kStride = 16;

const CacheShape kDecodeShape = {"B64_N4_D192", 64, 4, 192, 1024};
const CacheShape kSmallShape = {"small_B4_N2_D64", 4, 2, 64, 128};

struct CacheCase {
  aclDataType dtype;
  CacheShape shape;
};

std::vector<CacheCase> Cases() {
  std::vector<CacheCase> cases;
  for (const CacheShape& shape : {kDecodeShape, kSmallShape}) {
    for (aclDataType dtype : {ACL_FLOAT16, ACL_BF16}) cases.push_back({dtype, shape});
  }
  return cases;
}

std::string CaseName(const CacheCase& c) {
  return std::string("NsaCompressWithCache/") + DTypeName(c.dtype) + "/" + c.shape.name;
}

std::string Prepare(const CacheCase& c, PreparedCall* call) {
  const CacheShape& s = c.shape;
  const int64_t columns = 2 * s.min_length / kPage + 1, pages = s.batch * columns;
  const int64_t result_len = (pages * kPage - kBlock) / kStride + 1;  // the document's rule
  std::vector<int64_t> lengths, slots, table(static_cast<size_t>(pages));
  for (int64_t b = 0; b < s.batch; ++b) {
    lengths.push_back(s.min_length + ((b * 37) % (s.min_length / kStride)) * kStride);  // completes a window
    slots.push_back((b * 131 + 7) % result_len);
  }
  std::iota(table.begin(), table.end(), int64_t{0});
  uint64_t state = 13;  // a small LCG: the pages in a shuffled order
  for (size_t i = table.size(); i > 1; --i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    std::swap(table[i - 1], table[static_cast<size_t>((state >> 33) % i)]);
  }
  aclIntArray* length_array = aclCreateIntArray(lengths.data(), lengths.size());
  if (length_array == nullptr) return "aclCreateIntArray returned NULL: " + RecentErrorMessage();
  call->int_arrays.push_back(length_array);

  DeviceTensor input, weight, slot_tensor, table_tensor, cache;
  std::string error = AddRandomTensor(call, {pages, kPage, s.heads, s.dim}, c.dtype, -1.0, 1.0, 81, &input);
  if (error.empty()) error = AddRandomTensor(call, {kBlock, s.heads}, c.dtype, -1.0, 1.0, 82, &weight);
  if (error.empty()) error = AddRandomTensor(call, {result_len, s.heads, s.dim}, c.dtype, -1.0, 1.0, 83, &cache);
  if (!error.empty()) return error;
  error = CreateTensorFromBytes({s.batch}, ACL_INT32, Int32Bytes(slots), &slot_tensor);
  call->tensors.push_back(slot_tensor);
  if (!error.empty()) return error;
  error = CreateTensorFromBytes({s.batch, columns}, ACL_INT32, Int32Bytes(table), &table_tensor);
  call->tensors.push_back(table_tensor);
  if (!error.empty()) return error;

  opcall::NsaCompressWithCache op;
  op.input = input.tensor;
  op.weight = weight.tensor;
  op.slot_mapping = slot_tensor.tensor;
  op.act_seq_len = length_array;
  op.block_table = table_tensor.tensor;
  op.compress_block_size = kBlock;
  op.compress_stride = kStride;
  op.page_block_size = kPage;
  op.output_cache = cache.tensor;
  const aclnnStatus status = PlanCall(op, call);
  if (status != ACLNN_SUCCESS) return "phase 1 failed with " + std::to_string(status) + ": " + RecentErrorMessage();
  const double row_bytes = static_cast<double>(s.heads * s.dim * aclDataTypeSize(c.dtype));
  call->bytes =
      static_cast<double>(s.batch) * (kBlock + 1) * row_bytes + 4.0 * static_cast<double>(s.batch * (1 + columns));
  return "";
}

std::string ShapeText(const CacheShape& s) {
  return std::to_string(s.batch) + " sequences of " + std::to_string(s.min_length) + " to " +
         std::to_string(2 * s.min_length) + " tokens, pages of 128 x " + ShapeLabel({s.heads, s.dim}) +
         ", windows of 32 every 16, every entry writing";
}

void RegisterCases() {
  for (const CacheCase& c : Cases()) {
    const CaseInfo info = {CaseName(c), "NsaCompressWithCache", "aclnnNsaCompressWithCache", false,
                           c.dtype,     ShapeText(c.shape)};
    RegisterOperatorBenchmark(info, [c](PreparedCall* call) { return Prepare(c, call); });
  }
}

const CaseTableRegistration kRegistration("NsaCompressWithCache", RegisterCases);

}  // namespace
}  // namespace bench
