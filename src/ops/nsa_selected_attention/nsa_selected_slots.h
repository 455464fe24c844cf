// Which keys a slot of topkIndices selects, and which sequence holds a query token or a key block: the index rules
// of NsaSelectedAttention(Grad) shared by the CPU kernels (cpu/) and the CUDA kernels (cuda/), host-device
// (pacl/host_device.h), so the CPU tests check what the GPU computes.
#ifndef PACL_OPS_NSA_SELECTED_ATTENTION_NSA_SELECTED_SLOTS_H_
#define PACL_OPS_NSA_SELECTED_ATTENTION_NSA_SELECTED_SLOTS_H_

#include <cstdint>

#include "nsa_selected_attention/nsa_selected_attention_params.h"
#include "pacl/host_device.h"

namespace pacl::nsa_selected_attention {

// The visible keys of one slot: the global token of the block's first key, and how many of its keys are visible
// (0: the slot selects nothing).
struct SlotKeys {
  int64_t first_key = 0;
  int64_t keys = 0;
};

// The keys selected by block index `index` (device data, never trusted) for the query token at position `position`
// of sequence `seq`: nothing when the index is outside [0, the sequence's key blocks); with a causal mask, the keys
// at positions <= `position` of the block (nothing when the block starts after it).
PACL_HOST_DEVICE_INLINE SlotKeys SelectedKeys(int64_t index, const Sequence& seq, int64_t position, int64_t block_size,
                                              bool causal) {
  SlotKeys selected;
  const int64_t blocks = (seq.kv_end - seq.kv_start) / block_size;
  if (index < 0 || index >= blocks) return selected;
  const int64_t first = index * block_size;
  int64_t keys = block_size;
  if (causal) {
    if (first > position) return selected;
    keys = hd::Min(keys, position - first + 1);
  }
  selected.first_key = seq.kv_start + first;
  selected.keys = keys;
  return selected;
}

// The index of the sequence holding query token t (the first whose query tokens end past t), or count when none does.
// (Any sequence type with q_end: NsaCompressAttention's too.)
template <class AnySequence>
PACL_HOST_DEVICE_INLINE int64_t SequenceOfQueryToken(const AnySequence* sequences, int64_t count, int64_t t) {
  int64_t low = 0;
  int64_t high = count;
  while (low < high) {
    const int64_t mid = low + (high - low) / 2;
    if (sequences[mid].q_end <= t) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  return low;
}

// The index of the sequence holding global key block `block` (key tokens [block * block_size, + block_size)): the
// first whose key tokens end past its first token, or count when none does.
PACL_HOST_DEVICE_INLINE int64_t SequenceOfKeyBlock(const Sequence* sequences, int64_t count, int64_t block,
                                                   int64_t block_size) {
  const int64_t token = block * block_size;
  int64_t low = 0;
  int64_t high = count;
  while (low < high) {
    const int64_t mid = low + (high - low) / 2;
    if (sequences[mid].kv_end <= token) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  return low;
}

}  // namespace pacl::nsa_selected_attention

#endif  // PACL_OPS_NSA_SELECTED_ATTENTION_NSA_SELECTED_SLOTS_H_
