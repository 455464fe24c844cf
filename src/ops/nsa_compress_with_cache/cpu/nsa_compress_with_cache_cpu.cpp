// NOTE [NsaCompressWithCache on the CPU]
//
// Problem. Batch entry b holds a sequence of s_b = actSeqLen[b] tokens: paged, position p in row p % pageBlockSize
// of page blockTable[b][p / pageBlockSize] of input; TND, token first_b + p of input. When the sequence has just
// completed a compression window - s_b >= compressBlockSize (bs) and (s_b - bs) % compressStride == 0 - its newest
// window, positions [s_b - bs, s_b), is compressed into row slotMapping[b] of outputCache, per head n and channel d:
//   outputCache[slot, n, d] = sum_{j < bs} weight[j, n] * input[position s_b - bs + j, n, d],
// NsaCompress's block (window index (s_b - bs) / stride) of the same sequence. Entries that completed no window
// leave the cache as it was, as does every row no entry writes. Device data is never trusted: a slot outside
// [0, resultLen), or a window touching a page number outside [0, blockNum), writes nothing; when several entries
// name one slot, the last of them in batch order writes it (CANN calls the result of repeated slots unstable). Slot
// and page numbers are read once, before the first write: outputCache may share storage with them.
//
// Arithmetic: NsaCompress's forward loop (nsa_compress/cpu/nsa_compress_cpu_simd.h, simd::WeightedSum): inputs
// widened exactly to fp32, the sum over j ascending from zero, one rounding of each output element: the same bits as
// NsaCompress's output row for that window, on every SIMD target and thread count (each (entry, head) is one task's).
//
// Layout. Input rows with unit stride along D are read in place; others are gathered into fp32 first (exact, so the
// bits do not change). Any strides of every tensor. No workspace.
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "nsa_compress/cpu/nsa_compress_cpu_simd.h"
#include "nsa_compress_with_cache/nsa_compress_with_cache_params.h"
#include "pacl/convert.h"
#include "pacl/index.h"
#include "pacl/parallel.h"

namespace pacl::nsa_compress_with_cache {
namespace {

constexpr int64_t kItemsPerChunk = 8;

// One entry's write: the window's first position, the cache row and, paged, where its pages are in Plan::pages.
struct Write {
  int64_t entry = 0;
  int64_t first_position = 0;
  int64_t slot = 0;
  size_t first_page = 0;
};

// The entries that write, in batch order, each slot written once (by the last entry naming it), and the page numbers
// of their windows. Every index element of device data is read here, once: the kernel then writes outputCache, which
// may share storage with slotMapping or blockTable, and a number read again after a write could be anything.
struct Plan {
  std::vector<Write> writes;
  std::vector<int64_t> pages;  // paged: per write, the pages of columns first_position / pageBlockSize onwards
};

Plan ListWrites(const Params& p) {
  const CacheShape& s = p.shape;
  Plan plan;
  std::unordered_set<int64_t> claimed;
  for (int64_t b = static_cast<int64_t>(p.entries.size()) - 1; b >= 0; --b) {
    const int64_t length = p.entries[static_cast<size_t>(b)].length;
    if (length < s.block_size || (length - s.block_size) % s.stride != 0) continue;
    const TensorDesc& slots = p.slot_mapping;
    const int64_t slot = LoadIndex(slots, slots.offset + b * slots.strides[0]);
    if (slot < 0 || slot >= s.result_len || claimed.count(slot) != 0) continue;
    const int64_t first = length - s.block_size;
    const size_t first_page = plan.pages.size();
    bool pages_valid = true;
    if (s.paged) {
      const TensorDesc& table = p.block_table;
      for (int64_t column = first / s.page_block_size; column <= (length - 1) / s.page_block_size; ++column) {
        const int64_t page = LoadIndex(table, table.offset + b * table.strides[0] + column * table.strides[1]);
        pages_valid = pages_valid && page >= 0 && page < s.pages;
        plan.pages.push_back(page);
      }
    }
    if (!pages_valid) {
      plan.pages.resize(first_page);
      continue;
    }
    claimed.insert(slot);
    plan.writes.push_back({b, first, slot, first_page});
  }
  return plan;
}

// The element index of input's row (position `position` of write w's entry, head n).
int64_t InputRow(const Params& p, const Plan& plan, const Write& w, int64_t position, int64_t n) {
  const TensorDesc& in = p.input;
  if (!p.shape.paged) {
    return in.offset + (p.entries[static_cast<size_t>(w.entry)].first_token + position) * in.strides[0] +
           n * in.strides[1];
  }
  const int64_t page_block_size = p.shape.page_block_size;
  const int64_t column = position / page_block_size - w.first_position / page_block_size;
  const int64_t page = plan.pages[w.first_page + static_cast<size_t>(column)];
  return in.offset + page * in.strides[0] + (position % page_block_size) * in.strides[1] + n * in.strides[2];
}

}  // namespace

aclnnStatus RunCpu(const Params& params, void* /*workspace*/) {
  const Plan plan = ListWrites(params);
  const std::vector<Write>& writes = plan.writes;
  const CacheShape& s = params.shape;
  const TensorDesc& in = params.input;
  const int64_t dim_stride = in.strides[in.rank - 1];
  const bool in_place = dim_stride == 1;
  const int kind = HalfWidthRowKind(in.dtype);
  ParallelFor(static_cast<int64_t>(writes.size()) * s.heads, kItemsPerChunk, [&](int64_t begin, int64_t end) {
    std::vector<const void*> rows(static_cast<size_t>(s.block_size));
    std::vector<float> gathered(in_place ? 0 : static_cast<size_t>(s.block_size * s.dim));
    std::vector<float> weights(static_cast<size_t>(s.block_size)), sums(static_cast<size_t>(s.dim));
    for (int64_t item = begin; item < end; ++item) {
      const Write& w = writes[static_cast<size_t>(item / s.heads)];
      const int64_t n = item % s.heads;
      for (int64_t j = 0; j < s.block_size; ++j) {
        const char* row = in.ElementAt(InputRow(params, plan, w, w.first_position + j, n));
        if (in_place) {
          rows[static_cast<size_t>(j)] = row;
        } else {
          float* dst = gathered.data() + j * s.dim;
          LoadAsFloat(in.dtype, row, dim_stride, dst, s.dim);
          rows[static_cast<size_t>(j)] = dst;
        }
      }
      const TensorDesc& wt = params.weight;
      LoadAsFloat(wt.dtype, wt.ElementAt(wt.offset + n * wt.strides[1]), wt.strides[0], weights.data(), s.block_size);
      nsa_compress::simd::WeightedSum(in_place ? kind : kFloatRow, rows.data(), weights.data(),
                                      s.block_size, s.dim, sums.data());
      const TensorDesc& out = params.output_cache;
      char* dst = const_cast<char*>(out.ElementAt(out.offset + w.slot * out.strides[0] + n * out.strides[1]));
      StoreFromFloat(sums.data(), out.dtype, dst, out.strides[2], s.dim);
    }
  });
  return ACLNN_SUCCESS;
}

}  // namespace pacl::nsa_compress_with_cache
