// The importance scores and top-k selection of NSA's compress attention, shared by NsaCompressAttention and
// NsaCompressAttentionInfer on the CPU: each visible compressed key's probability summed over a KV head's group into
// w, each select block's score from w by CANN's formula, and the selectBlockCount best blocks.
//
// Arithmetic (the same bits on every SIMD target and thread count): P = e / sum, one fp32 division per element,
// added to w in query-head order; a block's score is the scalar fp32 sum written in ScoreOf, m outer, n inner, both
// ascending.
#ifndef PACL_OPS_NSA_COMPRESS_ATTENTION_CPU_NSA_BLOCK_SELECTION_H_
#define PACL_OPS_NSA_COMPRESS_ATTENTION_CPU_NSA_BLOCK_SELECTION_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "nsa_compress_attention/nsa_block_scores.h"
#include "nsa_selected_attention/cpu/nsa_selected_attention_cpu_simd.h"

namespace pacl::nsa_block_selection {

// A candidate select block and its score.
struct Candidate {
  float score = 0.0f;
  int64_t block = 0;
};

// The selection order (nsa_block_scores.h).
inline bool Before(const Candidate& a, const Candidate& b) { return RanksBefore(a.score, a.block, b.score, b.block); }

// Adds one query head's probabilities e[k] / sum to w[key_of[k]] for its keys k < count: NaN throughout when a score
// is NaN or +inf; nothing when no key carries weight (every score -inf).
inline void AddProbabilities(const nsa_selected_attention::RowStatistics& st, const float* e, int64_t count,
                             const int64_t* key_of, float* w) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  if (st.max == -kInf) return;
  const bool finite = st.max < kInf;
  for (int64_t k = 0; k < count; ++k) {
    w[key_of[k]] += finite ? e[k] / st.sum : std::numeric_limits<float>::quiet_NaN();
  }
}

// Block j's score (nsa_block_scores.h).
inline float ScoreOf(const float* w, int64_t keys, int64_t r, int64_t c, int64_t j) {
  return BlockScore(w, keys, r, c, j);
}

// The `count` best of blocks [0, blocks) for which is_candidate(j) holds, best first, into *best (fewer when fewer
// are candidates).
template <class IsCandidate>
void SelectBlocks(const float* w, int64_t keys, int64_t r, int64_t c, int64_t blocks, int64_t count,
                  IsCandidate&& is_candidate, std::vector<Candidate>* best) {
  best->clear();
  for (int64_t j = 0; j < blocks; ++j) {
    if (!is_candidate(j)) continue;
    const Candidate candidate{ScoreOf(w, keys, r, c, j), j};
    if (static_cast<int64_t>(best->size()) == count && !Before(candidate, best->back())) continue;
    best->insert(std::upper_bound(best->begin(), best->end(), candidate, Before), candidate);
    if (static_cast<int64_t>(best->size()) > count) best->pop_back();
  }
}

// Slot `slot` of a selection: its block, or -1 past the candidates (read by the selected attention as "selects
// nothing").
inline int32_t SlotIndex(const std::vector<Candidate>& best, int64_t slot) {
  return slot < static_cast<int64_t>(best.size()) ? static_cast<int32_t>(best[static_cast<size_t>(slot)].block) : -1;
}

}  // namespace pacl::nsa_block_selection

#endif  // PACL_OPS_NSA_COMPRESS_ATTENTION_CPU_NSA_BLOCK_SELECTION_H_
