// NsaCompress's block cover and sequence lookup: the per-element rules the CPU and CUDA kernels share (the host-device header nsa_compress_blocks.h),
// checked against brute force and exact integer arithmetic, so a machine without a GPU tests what a GPU computes.
// (The operator tests check them again, through the CPU kernels, against the float64 references.) An internal
// test: it is compiled into base_tests, which sees the libraries' private headers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "nsa_compress/nsa_compress_blocks.h"

namespace {

TEST(SharedMath, NsaBlocksCoveringMatchBruteForce) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    const int64_t stride = std::uniform_int_distribution<int64_t>(1, 40)(rng);
    const int64_t block_size = stride * std::uniform_int_distribution<int64_t>(1, 5)(rng) +
                               std::uniform_int_distribution<int64_t>(0, stride - 1)(rng) * (trial % 2);
    const int64_t blocks = std::uniform_int_distribution<int64_t>(0, 12)(rng);
    const int64_t length = blocks > 0 ? (blocks - 1) * stride + block_size + (trial % 7) : (trial % 9);
    for (int64_t u = 0; u < length; ++u) {
      int64_t first = -1;
      int64_t count = 0;
      for (int64_t k = 0; k < blocks; ++k) {
        if (k * stride <= u && u < k * stride + block_size) {
          if (first < 0) first = k;
          ++count;
        }
      }
      const pacl::nsa_compress::CoveringBlocks covering =
          pacl::nsa_compress::BlocksCovering(u, block_size, stride, blocks);
      ASSERT_EQ(covering.count, count) << "u " << u << " block " << block_size << " stride " << stride;
      if (count > 0) {
        ASSERT_EQ(covering.first, first) << "u " << u;
      }
    }
  }
}

TEST(SharedMath, NsaSequenceLookupMatchesBruteForce) {
  // Lengths with empty sequences among them; blocks of 4 tokens, stride 2.
  const std::vector<int64_t> lengths = {0, 5, 0, 0, 9, 3, 1, 0, 12};
  std::vector<pacl::nsa_compress::Sequence> sequences;
  int64_t start = 0;
  int64_t first_block = 0;
  for (int64_t length : lengths) {
    const int64_t blocks = length >= 4 ? (length - 4) / 2 + 1 : 0;
    sequences.push_back({start, start + length, first_block, blocks});
    start += length;
    first_block += blocks;
  }
  const int64_t count = static_cast<int64_t>(sequences.size());
  for (int64_t t = 0; t < start + 2; ++t) {
    int64_t expected = count;
    for (int64_t q = 0; q < count; ++q) {
      if (sequences[q].start <= t && t < sequences[q].end) {
        expected = q;
        break;
      }
    }
    EXPECT_EQ(pacl::nsa_compress::SequenceOfToken(sequences.data(), count, t), expected) << "token " << t;
  }
  for (int64_t block = 0; block < first_block + 2; ++block) {
    int64_t expected = count;
    for (int64_t q = 0; q < count; ++q) {
      if (sequences[q].first_block <= block && block < sequences[q].first_block + sequences[q].blocks) {
        expected = q;
        break;
      }
    }
    EXPECT_EQ(pacl::nsa_compress::SequenceOfBlock(sequences.data(), count, block), expected) << "block " << block;
  }
}

}  // namespace
