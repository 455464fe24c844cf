// Straightforward float64 loops over rows; the reductions use plain left-to-right sums (accurate enough in float64
// for rows of at most a few thousand elements, which is all the tests use).
#include "scaled_masked_softmax/test/scaled_masked_softmax_reference.h"

#include <cmath>
#include <vector>

namespace ref {
namespace {

// Offset of the mask row that row (b, n, s1) of a (B, N, S1, S2) tensor uses.
int64_t MaskRowOffset(int64_t b, int64_t n, int64_t s1, int64_t S1, int64_t S2, int64_t maskB, int64_t maskN) {
  const int64_t mb = maskB == 1 ? 0 : b;
  const int64_t mn = maskN == 1 ? 0 : n;
  return ((mb * maskN + mn) * S1 + s1) * S2;
}

}  // namespace

void ScaledMaskedSoftmaxForward(const double* x, const uint8_t* mask, int64_t B, int64_t N, int64_t S1, int64_t S2,
                                int64_t maskB, int64_t maskN, double scale, double* y) {
  std::vector<double> logits(static_cast<size_t>(S2));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t s1 = 0; s1 < S1; ++s1) {
        const int64_t row = ((b * N + n) * S1 + s1) * S2;
        const uint8_t* mask_row = mask + MaskRowOffset(b, n, s1, S1, S2, maskB, maskN);
        double max_logit = -INFINITY;
        for (int64_t k = 0; k < S2; ++k) {
          logits[k] = mask_row[k] != 0 ? -10000.0 : x[row + k] * scale;
          if (logits[k] > max_logit) max_logit = logits[k];
        }
        double sum = 0.0;
        for (int64_t k = 0; k < S2; ++k) {
          logits[k] = std::exp(logits[k] - max_logit);
          sum += logits[k];
        }
        for (int64_t k = 0; k < S2; ++k) y[row + k] = logits[k] / sum;
      }
    }
  }
}

void ScaledMaskedSoftmaxBackward(const double* gradOutput, const double* y, const uint8_t* mask, int64_t B, int64_t N,
                                 int64_t S1, int64_t S2, int64_t maskB, int64_t maskN, double scale, double* out) {
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t s1 = 0; s1 < S1; ++s1) {
        const int64_t row = ((b * N + n) * S1 + s1) * S2;
        const uint8_t* mask_row = mask + MaskRowOffset(b, n, s1, S1, S2, maskB, maskN);
        double dot = 0.0;
        for (int64_t k = 0; k < S2; ++k) dot += gradOutput[row + k] * y[row + k];
        for (int64_t k = 0; k < S2; ++k) {
          out[row + k] = mask_row[k] != 0 ? 0.0 : scale * (gradOutput[row + k] * y[row + k] - dot * y[row + k]);
        }
      }
    }
  }
}

}  // namespace ref
