// Float64 reference of ScaledMaskedSoftmax (forward) and ScaledMaskedSoftmaxBackward, written from the spec
// independently of src/: the yardstick of the operator tests and the demo.
#ifndef PACL_TESTS_REFERENCE_SCALED_MASKED_SOFTMAX_REFERENCE_H_
#define PACL_TESTS_REFERENCE_SCALED_MASKED_SOFTMAX_REFERENCE_H_

#include <cstdint>

namespace ref {

// Dense row-major float64. x/gradOutput/y/out: B*N*S1*S2. mask: maskB*maskN*S1*S2 bytes (nonzero = masked),
// maskB in {1,B}, maskN in {1,N}.
//
// Forward: y = softmax over the last dim of (x * scale, with masked positions replaced by -10000).
void ScaledMaskedSoftmaxForward(const double* x, const uint8_t* mask, int64_t B, int64_t N, int64_t S1, int64_t S2,
                                int64_t maskB, int64_t maskN, double scale, double* y);
// Backward: out = scale * (gradOutput*y - sum_lastdim(gradOutput*y) * y) where the mask is 0, exactly 0 where it
// is nonzero.
void ScaledMaskedSoftmaxBackward(const double* gradOutput, const double* y, const uint8_t* mask, int64_t B, int64_t N,
                                 int64_t S1, int64_t S2, int64_t maskB, int64_t maskN, double scale, double* out);

}  // namespace ref

#endif  // PACL_TESTS_REFERENCE_SCALED_MASKED_SOFTMAX_REFERENCE_H_
