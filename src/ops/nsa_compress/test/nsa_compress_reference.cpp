#include "nsa_compress/test/nsa_compress_reference.h"

#include <cstddef>

namespace ref {
namespace {

size_t At(int64_t i) { return static_cast<size_t>(i); }

}  // namespace

std::vector<int64_t> NsaCompressBlockStarts(const std::vector<int64_t>& act_seq_len, int64_t block_size,
                                            int64_t stride) {
  std::vector<int64_t> starts;
  int64_t sequence_start = 0;
  for (int64_t sequence_end : act_seq_len) {
    for (int64_t first = sequence_start; first + block_size <= sequence_end; first += stride) starts.push_back(first);
    sequence_start = sequence_end;
  }
  return starts;
}

void NsaCompressForward(const double* input, const double* weight, const std::vector<int64_t>& block_starts,
                        const NsaCompressShape& s, double* output) {
  const int64_t row = s.heads * s.dim;  // elements of one token (or one block) across all heads
  for (size_t b = 0; b < block_starts.size(); ++b) {
    double* out = output + b * At(row);
    for (int64_t i = 0; i < row; ++i) out[i] = 0.0;
    for (int64_t j = 0; j < s.block_size; ++j) {
      const double* token = input + At((block_starts[b] + j) * row);
      for (int64_t n = 0; n < s.heads; ++n) {
        const double w = weight[At(j * s.heads + n)];
        for (int64_t d = 0; d < s.dim; ++d) out[At(n * s.dim + d)] += w * token[At(n * s.dim + d)];
      }
    }
  }
}

void NsaCompressBackward(const double* input, const double* weight, const double* output_grad,
                         const std::vector<int64_t>& block_starts, const NsaCompressShape& s, double* input_grad,
                         double* weight_grad) {
  const int64_t row = s.heads * s.dim;
  for (int64_t i = 0; i < s.tokens * row; ++i) input_grad[i] = 0.0;
  for (int64_t i = 0; i < s.block_size * s.heads; ++i) weight_grad[i] = 0.0;
  for (size_t b = 0; b < block_starts.size(); ++b) {
    const double* g = output_grad + b * At(row);
    for (int64_t j = 0; j < s.block_size; ++j) {
      const int64_t token = block_starts[b] + j;
      const double* x = input + At(token * row);
      double* gx = input_grad + At(token * row);
      for (int64_t n = 0; n < s.heads; ++n) {
        const double w = weight[At(j * s.heads + n)];
        double weight_sum = 0.0;
        for (int64_t d = 0; d < s.dim; ++d) {
          const size_t k = At(n * s.dim + d);
          gx[k] += w * g[k];
          weight_sum += g[k] * x[k];
        }
        weight_grad[At(j * s.heads + n)] += weight_sum;
      }
    }
  }
}

}  // namespace ref
