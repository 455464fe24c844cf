// NsaSelectedAttention's slot and sequence rules: the per-element code the CPU and CUDA kernels share (the
// host-device header nsa_selected_slots.h), checked against brute force, so a machine without a GPU tests what a GPU
// computes. (The operator tests check them again, through the CPU kernels, against the float64 references.) An
// internal test: it is compiled into base_tests, which sees the libraries' private headers.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "nsa_selected_attention/nsa_selected_slots.h"

namespace {

using pacl::nsa_selected_attention::Sequence;

// Random sequences back to back (some empty on either side), key lengths multiples of block_size.
std::vector<Sequence> RandomSequences(std::mt19937_64& rng, int64_t block_size) {
  const int count = std::uniform_int_distribution<int>(1, 6)(rng);
  std::vector<Sequence> sequences;
  int64_t q = 0, kv = 0;
  for (int i = 0; i < count; ++i) {
    Sequence seq;
    seq.q_start = q;
    seq.kv_start = kv;
    q +=
        std::uniform_int_distribution<int64_t>(0, 3)(rng) == 0 ? 0 : std::uniform_int_distribution<int64_t>(1, 90)(rng);
    kv += block_size * std::uniform_int_distribution<int64_t>(0, 5)(rng);
    seq.q_end = q;
    seq.kv_end = kv;
    sequences.push_back(seq);
  }
  return sequences;
}

TEST(SharedMath, NsaSelectedKeysMatchBruteForce) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t block_size = 16 * std::uniform_int_distribution<int64_t>(1, 8)(rng);
    const bool causal = trial % 2 == 1;
    const std::vector<Sequence> sequences = RandomSequences(rng, block_size);
    for (const Sequence& seq : sequences) {
      const int64_t blocks = (seq.kv_end - seq.kv_start) / block_size;
      for (int64_t position = 0; position < seq.q_end - seq.q_start; position += 7) {
        for (int64_t index :
             {int64_t{-1}, int64_t{0}, blocks / 2, blocks - 1, blocks, blocks + 3,
              int64_t{std::numeric_limits<int32_t>::max()}, int64_t{std::numeric_limits<int32_t>::min()}}) {
          // Brute force: the block's keys one by one, each visible when the index is in range and (causal) its
          // position within the sequence is at most the query's.
          int64_t first = -1, count = 0;
          for (int64_t j = 0; j < block_size; ++j) {
            const int64_t key_position = index * block_size + j;
            const bool visible = index >= 0 && index < blocks && (!causal || key_position <= position);
            if (!visible) continue;
            if (first < 0) first = seq.kv_start + key_position;
            EXPECT_EQ(seq.kv_start + key_position, first + count) << "visible keys are consecutive from the first";
            ++count;
          }
          const pacl::nsa_selected_attention::SlotKeys selected =
              pacl::nsa_selected_attention::SelectedKeys(index, seq, position, block_size, causal);
          ASSERT_EQ(selected.keys, count) << "index " << index << " position " << position << " block " << block_size;
          if (count > 0) {
            EXPECT_EQ(selected.first_key, first);
          }
        }
      }
    }
  }
}

TEST(SharedMath, NsaSelectedSequenceLookupsMatchLinearScan) {
  std::mt19937_64 rng(12);
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t block_size = 16 * std::uniform_int_distribution<int64_t>(1, 4)(rng);
    const std::vector<Sequence> sequences = RandomSequences(rng, block_size);
    const auto count = static_cast<int64_t>(sequences.size());
    for (int64_t t = 0; t <= sequences.back().q_end; ++t) {
      int64_t expected = count;
      for (int64_t i = 0; i < count && expected == count; ++i) {
        if (sequences[i].q_start <= t && t < sequences[i].q_end) expected = i;
      }
      EXPECT_EQ(pacl::nsa_selected_attention::SequenceOfQueryToken(sequences.data(), count, t), expected) << t;
    }
    for (int64_t block = 0; block <= sequences.back().kv_end / block_size; ++block) {
      int64_t expected = count;
      for (int64_t i = 0; i < count && expected == count; ++i) {
        if (sequences[i].kv_start <= block * block_size && block * block_size < sequences[i].kv_end) expected = i;
      }
      EXPECT_EQ(pacl::nsa_selected_attention::SequenceOfKeyBlock(sequences.data(), count, block, block_size), expected)
          << block;
    }
  }
}

}  // namespace
