// Float64 reference of NsaCompress: the forward (aclnnNsaCompress) and its gradients (aclnnNsaCompressGrad),
// written from the spec (section 2, "NsaCompress") independently of src/: the yardstick of the operator tests.
//
// Semantics: actSeqLen holds cumulative sequence ends; sequence i spans tokens [start_i, end_i) with start_0 = 0 and
// start_i = end_{i-1} (so a leading 0 is an empty first sequence). A sequence holds a compression block at every
// offset s + k * stride (k = 0, 1, ...) whose blockSize tokens all lie inside the sequence; the blocks of all sequences
// are numbered in order. With block b starting at token s_b:
// - forward:  output[b, n, d] = sum_j weight[j, n] * input[s_b + j, n, d]             (j in [0, blockSize))
// - backward: inputGrad[t, n, d] = sum over (b, j) with s_b + j = t of weight[j, n] * outputGrad[b, n, d]
//             (0 for tokens no block covers); weightGrad[j, n] = sum over b, d of outputGrad[b, n, d] * input[s_b + j,
//             n, d].
#ifndef PACL_TESTS_REFERENCE_NSA_COMPRESS_REFERENCE_H_
#define PACL_TESTS_REFERENCE_NSA_COMPRESS_REFERENCE_H_

#include <cstdint>
#include <vector>

namespace ref {

// The first token of every compression block, in output order. Walks each sequence block by block (no closed-form
// count), so it is independent of the floor((L - blockSize) / stride) + 1 formula the operator may use.
// act_seq_len must be valid (non-negative, non-decreasing); block_size and stride positive.
std::vector<int64_t> NsaCompressBlockStarts(const std::vector<int64_t>& act_seq_len, int64_t block_size,
                                            int64_t stride);

struct NsaCompressShape {
  int64_t tokens, heads, dim, block_size;  // T, N, D, compressBlockSize
};

// Dense row-major float64 arrays: input (T, N, D), weight (blockSize, N), output (blocks, N, D) with
// blocks = block_starts.size(); output is written whole.
void NsaCompressForward(const double* input, const double* weight, const std::vector<int64_t>& block_starts,
                        const NsaCompressShape& shape, double* output);

// output_grad (blocks, N, D); input_grad (T, N, D) and weight_grad (blockSize, N) are written whole.
void NsaCompressBackward(const double* input, const double* weight, const double* output_grad,
                         const std::vector<int64_t>& block_starts, const NsaCompressShape& shape, double* input_grad,
                         double* weight_grad);

}  // namespace ref

#endif  // PACL_TESTS_REFERENCE_NSA_COMPRESS_REFERENCE_H_
