// The aclnn entry points of NsaCompressWithCache: phase 1 checks the arguments against CANN's document and the
// decisions of docs/ops/nsa_compress_with_cache.md (actSeqLenOptional is a host array and is read here; slotMapping
// and blockTableOptional are device data, read only by the kernel, never trusted) and binds the implementation for
// the current device (cpu/); phase 2 runs the executor on a stream.
#include <cstdint>
#include <cstring>
#include <vector>

#include "aclnnop/aclnn_nsa_compress_with_cache.h"
#include "nsa_compress_with_cache/nsa_compress_with_cache_params.h"
#include "nsa_selected_attention_infer/nsa_paged_rules.h"
#include "pacl/op_glue.h"
#include "pacl/tensor.h"
#include "pacl/tensor_objects.h"

namespace pacl::nsa_compress_with_cache {
namespace {

// The document's ranges.
constexpr int64_t kMaxHeads = 64;      // N <= 64, even above 50
constexpr int64_t kMaxDim = 256;       // D: a multiple of 16 up to 256
constexpr int64_t kMaxBlockSize = 64;  // compressBlockSize: a multiple of 16 up to 64

long long LL(int64_t v) { return static_cast<long long>(v); }

bool CheckDTypes(OpChecker& check, const TensorDesc& input, const TensorDesc& weight, const TensorDesc& slots,
                 const aclTensor* table, const TensorDesc& cache) {
  if (!check.DType(input, "input", {ACL_FLOAT16, ACL_BF16}) || !check.PlainFormat(input, "input") ||
      !check.SameDType(input, "input", weight, "weight") || !check.PlainFormat(weight, "weight") ||
      !check.SameDType(input, "input", cache, "outputCache") || !check.PlainFormat(cache, "outputCache") ||
      !check.DType(slots, "slotMapping", {ACL_INT32}) || !check.PlainFormat(slots, "slotMapping")) {
    return false;
  }
  return table == nullptr || (check.DType(table->desc, "blockTableOptional", {ACL_INT32}) &&
                              check.PlainFormat(table->desc, "blockTableOptional"));
}

bool CheckAttributes(OpChecker& check, int64_t act_seq_len_type, const aclTensor* table, const char* layout,
                     int64_t block_size, int64_t stride, int64_t page_block_size) {
  return check.Check(act_seq_len_type == 1,
                     "actSeqLenType must be 1 (actSeqLenOptional holds each batch entry's length; 0, cumulative "
                     "ends, is not supported), got %lld",
                     LL(act_seq_len_type)) &&
         check.Check(table != nullptr || (layout != nullptr && std::strcmp(layout, "TND") == 0),
                     "layoutOptional must be \"TND\" when blockTableOptional is null (input (T, N, D)), got %s%.16s%s",
                     layout == nullptr ? "null" : "\"", layout == nullptr ? "" : layout,
                     layout == nullptr ? "" : "\"") &&
         check.Check(block_size >= 16 && block_size <= kMaxBlockSize && block_size % 16 == 0,
                     "compressBlockSize must be a multiple of 16 in [16, 64], got %lld", LL(block_size)) &&
         check.Check(stride == 16 || stride == 32 || stride == 48 || stride == 64,
                     "compressStride must be 16, 32, 48 or 64, got %lld", LL(stride)) &&
         check.Check(block_size >= stride, "compressBlockSize (%lld) must be at least compressStride (%lld)",
                     LL(block_size), LL(stride)) &&
         check.Check(page_block_size == 64 || page_block_size == 128, "pageBlockSize must be 64 or 128, got %lld",
                     LL(page_block_size));
}

// input, weight, outputCache, slotMapping and blockTableOptional; fills the shape and B (*batch).
bool CheckShapes(OpChecker& check, const TensorDesc& input, const TensorDesc& weight, const TensorDesc& slots,
                 const aclTensor* table, const TensorDesc& cache, int64_t page_block_size, Params* p, int64_t* batch) {
  CacheShape& s = p->shape;
  s.paged = table != nullptr;
  if (!check.Rank(input, "input", s.paged ? 4 : 3)) return false;
  if (s.paged && (!check.Check(input.shape[1] == page_block_size,
                               "dim 1 of input (%s) must equal pageBlockSize %lld (input holds pages of the cache)",
                               input.ShapeString().c_str(), LL(page_block_size)) ||
                  !check.Check(input.shape[0] >= 1, "input (%s) must hold at least one page (dim 0)",
                               input.ShapeString().c_str()))) {
    return false;
  }
  s.heads = input.shape[input.rank - 2];
  s.dim = input.shape[input.rank - 1];
  if (!check.Check(input.shape[0] >= 1, "input (%s) must not be empty", input.ShapeString().c_str()) ||
      !check.Check(s.heads >= 1 && s.heads <= kMaxHeads && (s.heads <= 50 || s.heads % 2 == 0),
                   "N of input (%s) must be in [1, 64] and even when above 50, got %lld", input.ShapeString().c_str(),
                   LL(s.heads)) ||
      !check.Check(s.dim >= 16 && s.dim <= kMaxDim && s.dim % 16 == 0,
                   "D of input (%s) must be a multiple of 16 in [16, 256], got %lld", input.ShapeString().c_str(),
                   LL(s.dim)) ||
      !check.Shape(weight, "weight", {s.block_size, s.heads}, "[compressBlockSize, N of input]") ||
      !check.Rank(cache, "outputCache", 3) ||
      !check.Check(cache.shape[1] == s.heads && cache.shape[2] == s.dim,
                   "outputCache (%s) must have input's N and D (%lld, %lld) in dims 1 and 2",
                   cache.ShapeString().c_str(), LL(s.heads), LL(s.dim)) ||
      !check.Check(cache.shape[0] >= 1, "outputCache (%s) must have at least one row", cache.ShapeString().c_str())) {
    return false;
  }
  s.result_len = cache.shape[0];
  if (s.paged) {
    s.page_block_size = page_block_size;
    s.pages = input.shape[0];
    const int64_t most = (s.pages * page_block_size - s.block_size) / s.stride;
    if (!check.Check(s.result_len > most,
                     "resultLen (dim 0 of outputCache %s) must exceed (blockNum * pageBlockSize - compressBlockSize) / "
                     "compressStride = (%lld * %lld - %lld) / %lld = %lld",
                     cache.ShapeString().c_str(), LL(s.pages), LL(page_block_size), LL(s.block_size), LL(s.stride),
                     LL(most))) {
      return false;
    }
  }
  if (!check.Rank(slots, "slotMapping", 1) ||
      !check.Check(slots.shape[0] >= 1, "slotMapping (%s) must have one entry per batch entry, at least one",
                   slots.ShapeString().c_str())) {
    return false;
  }
  *batch = slots.shape[0];
  if (s.paged) {
    const TensorDesc& t = table->desc;
    if (!check.Rank(t, "blockTableOptional", 2) ||
        !check.Check(t.shape[0] == *batch && t.shape[1] >= 1,
                     "blockTableOptional (%s) must have a row per batch entry (B = %lld, slotMapping's) and at least "
                     "one page per row",
                     t.ShapeString().c_str(), LL(*batch))) {
      return false;
    }
  }
  return true;
}

// actSeqLenOptional (host data): B lengths, each within its entry's pages (paged) or adding up to T (TND).
bool ListEntries(OpChecker& check, const aclIntArray& lengths, const TensorDesc& input, const aclTensor* table,
                 int64_t batch, Params* p) {
  const std::vector<int64_t>& values = lengths.values;
  if (!check.Check(static_cast<int64_t>(values.size()) == batch,
                   "actSeqLenOptional must have one entry per batch entry (%lld, slotMapping's), got %zu", LL(batch),
                   values.size())) {
    return false;
  }
  const CacheShape& s = p->shape;
  const int64_t capacity =
      s.paged ? nsa_paged_rules::PagedCapacity(table->desc.shape[1], s.page_block_size) : input.shape[0];
  int64_t total = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t length = values[static_cast<size_t>(b)];
    if (s.paged && !check.Check(length >= 0 && length <= capacity,
                                "actSeqLenOptional[%lld] = %lld must be in [0, %lld] (blockTableOptional's %lld pages "
                                "of pageBlockSize %lld)",
                                LL(b), LL(length), LL(capacity), LL(table->desc.shape[1]), LL(s.page_block_size))) {
      return false;
    }
    if (!s.paged && !check.Check(length >= 0 && length <= capacity - total,
                                 "actSeqLenOptional[%lld] = %lld must be in [0, %lld] (the tokens of T = %lld left "
                                 "after the entries before it)",
                                 LL(b), LL(length), LL(capacity - total), LL(capacity))) {
      return false;
    }
    p->entries.push_back({length, s.paged ? 0 : total});
    total += length;
  }
  return s.paged || check.Check(total == capacity,
                                "the entries of actSeqLenOptional must add up to T of input (dim 0 of %s), got %lld",
                                input.ShapeString().c_str(), LL(total));
}

}  // namespace
}  // namespace pacl::nsa_compress_with_cache

using pacl::OpChecker;
using pacl::TensorDesc;
namespace cache = pacl::nsa_compress_with_cache;

extern "C" aclnnStatus aclnnNsaCompressWithCacheGetWorkspaceSize(
    const aclTensor* input, const aclTensor* weight, const aclTensor* slotMapping, const aclIntArray* actSeqLenOptional,
    const aclTensor* blockTableOptional, char* layoutOptional, int64_t compressBlockSize, int64_t compressStride,
    int64_t actSeqLenType, int64_t pageBlockSize, aclTensor* outputCache, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  OpChecker check(cache::kName);
  // actSeqLenOptional is required despite its name: the entries' lengths say which ones completed a window.
  if (!check.Tensor(input, "input") || !check.Tensor(weight, "weight") || !check.Tensor(slotMapping, "slotMapping") ||
      !check.NotNull(actSeqLenOptional, "actSeqLenOptional") ||
      (blockTableOptional != nullptr && !check.Tensor(blockTableOptional, "blockTableOptional")) ||
      !check.Tensor(outputCache, "outputCache") || !check.OutPointers(workspaceSize, executor)) {
    return check.status();
  }
  cache::Params params;
  params.shape.block_size = compressBlockSize;
  params.shape.stride = compressStride;
  int64_t batch = 0;
  if (!cache::CheckDTypes(check, input->desc, weight->desc, slotMapping->desc, blockTableOptional, outputCache->desc) ||
      !cache::CheckAttributes(check, actSeqLenType, blockTableOptional, layoutOptional, compressBlockSize,
                              compressStride, pageBlockSize) ||
      !cache::CheckShapes(check, input->desc, weight->desc, slotMapping->desc, blockTableOptional, outputCache->desc,
                          pageBlockSize, &params, &batch) ||
      !cache::ListEntries(check, *actSeqLenOptional, input->desc, blockTableOptional, batch, &params) ||
      !check.DistinctOutputElements(outputCache->desc, "outputCache")) {
    return check.status();
  }
  params.input = input->desc;
  params.weight = weight->desc;
  params.slot_mapping = slotMapping->desc;
  if (blockTableOptional != nullptr) params.block_table = blockTableOptional->desc;
  params.output_cache = outputCache->desc;
  return pacl::BindImplementation(cache::kName, input->desc.dtype, params, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnNsaCompressWithCache(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                 aclrtStream stream) {
  return pacl::RunExecutor(cache::kName, workspace, workspaceSize, executor, stream);
}
