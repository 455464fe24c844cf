// NOTE [NsaCompress on the CPU]
//
// Problem. input (T, N, D) holds the tokens of several sequences back to back (actSeqLen: cumulative ends). Each
// sequence of length L has nb = (L - blockSize) / stride + 1 blocks (0 when L < blockSize); block k covers tokens
// s + k * stride + j, j < blockSize. Forward: out[block, n, :] = sum_j weight[j, n] * input[s + k*stride + j, n, :].
// Backward: inputGrad[t, n, :] = sum over the blocks covering t of weight[j, n] * outputGrad[block, n, :] (0 when
// none), weightGrad[j, n] = sum over blocks and d of outputGrad[block, n, d] * input[s + k*stride + j, n, d].
//
// Layout and vectors. Work is on rows of D channels, converted to fp32 in registers while they are used (fp16 via
// F16C where the CPU has it, bf16 by a shift): a row with unit stride along D is read in place, any other view is
// first gathered into an fp32 row (pacl::LoadAsFloat). fp32 accumulators, one rounding to nearest even per output
// element (in registers for unit-stride outputs, pacl::StoreFromFloat otherwise). weight is read once into an fp32
// table.
//
// Passes and memory traffic. Forward: tasks are chunks of kBlocksPerChunk consecutive blocks. When input rows are read
// in place and at most kMaxRegisterCover blocks cover a token (ceil(blockSize / stride), 2 for the usual
// blockSize = 2 * stride), each head's tokens are walked once in order (BlockSums): a row is loaded and widened once,
// in as few channel groups as the registers allow (a D = 192 row in one go on AVX-512), and multiply-added into the
// sums of every block covering it, held in registers; a block's sums leave when its last row is in. One walk per row
// keeps each row's bytes in one run of loads, which matters more than anything else here (the rows of one head lie
// N * D elements apart). Where a chunk's token rows of all heads lie together in at most kWholeRowPrefetchBytes, the
// first head's walk prefetches all of them and the other heads' walks read from L2. Otherwise (gathered rows, or many
// blocks per token) each block sums its blockSize rows directly (WeightedSum), the shared rows coming from cache the
// second time. Either way input is read once from memory and output written once (non-temporal stores when large).
// Backward: one walk over the tokens, which both outputs need (input rows for weightGrad, inputGrad rows to write).
// Tasks are chunks of kBackwardTokensPerChunk tokens; per chunk, sequence and head the outputGrad rows of the covering
// blocks are widened once into an fp32 buffer, then GradWalkRows walks the head's tokens in order, prefetching input
// rows ahead (PrefetchTokens; without it the walk took 1.8x as long): each token's inputGrad row sums weight *
// outputGrad row over its covering blocks in ascending block order in registers and is rounded and written once (zeros
// when no block covers it; non-temporal stores when large), and its weightGrad terms (outputGrad row . input row, one
// per covering block) are added into the chunk's partial sums (heads, block_size) in the workspace, four dot products
// at a time sharing each token's widened row; two consecutive tokens each covered by two blocks (the usual
// blockSize = 2 * stride) go in one pass over the channels (GradPairT), each 16 channels of their input and outputGrad
// rows loaded once for both outputs. Then the chunks' partials are added in ascending chunk order into weightGrad.
// Input is read once from memory and inputGrad written once.
//
// Determinism. Both forward paths start each block's sum at zero and add its rows in ascending j, so they give the
// same bits. Every sum has an order fixed by the shape and actSeqLen (blocks ascending, j ascending, a weightGrad
// partial's terms in token order - so blocks ascending - channels in the canonical order of
// pacl/canonical_math-inl.h - 16 partial sums and a fixed tree, whatever the vector width - chunks ascending),
// never by the thread count, and every multiply-add is fused on every target: results are bit-identical run to run,
// for any number of threads and on every SIMD target.
//
// Files: this one holds the drivers (chunks, sequences, rows, outputs); nsa_compress_cpu_simd.cpp the row loops,
// once per SIMD target; nsa_compress_cpu_plan.cpp the backward's workspace plan.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "hwy/cache_control.h"
#include "nsa_compress/nsa_compress_blocks.h"
#include "nsa_compress/cpu/nsa_compress_cpu_simd.h"
#include "nsa_compress/nsa_compress_params.h"
#include "pacl/convert.h"
#include "pacl/dtype.h"
#include "pacl/parallel.h"
#include "pacl/workspace_plan.h"

namespace pacl::nsa_compress {

namespace {

// Rows (i0, i1, :) of a 3-D FLOAT16/BFLOAT16 tensor as the row loops read them.
class RowReader {
 public:
  explicit RowReader(const TensorDesc& t) : t_(t), in_place_(t.strides[2] == 1) {}
  // The row's kind: the tensor's, or fp32 when it is gathered into a buffer.
  int kind() const { return in_place_ ? HalfWidthRowKind(t_.dtype) : kFloatRow; }
  // True when rows are gathered into buffers.
  bool gathers() const { return !in_place_; }
  // The row, in place, or gathered into buffer (dim floats).
  const void* Row(int64_t i0, int64_t i1, float* buffer) const {
    const char* address = Address(i0, i1);
    if (in_place_) return address;
    LoadAsFloat(t_.dtype, address, t_.strides[2], buffer, t_.shape[2]);
    return buffer;
  }
  // rows[r] = Row(first + r, i1) for r < count; buffers holds count * dim floats for gathered rows (and may be
  // null for rows read in place, so it is offset only when gathering).
  void Rows(int64_t first, int64_t count, int64_t i1, float* buffers, const void** rows) const {
    for (int64_t r = 0; r < count; ++r) rows[r] = Row(first + r, i1, in_place_ ? nullptr : buffers + r * t_.shape[2]);
  }

 private:
  const char* Address(int64_t i0, int64_t i1) const {
    return static_cast<const char*>(t_.data) + (t_.offset + i0 * t_.strides[0] + i1 * t_.strides[1]) * 2;
  }
  const TensorDesc& t_;
  bool in_place_;
};

// Stores an fp32 row as row (i0, i1, :) of a 3-D FLOAT16/BFLOAT16 tensor, rounded once (stream: see NarrowRow).
void StoreRow(const TensorDesc& t, int64_t i0, int64_t i1, const float* acc, bool stream = false) {
  char* address = static_cast<char*>(t.data) + (t.offset + i0 * t.strides[0] + i1 * t.strides[1]) * 2;
  if (t.strides[2] == 1) {
    simd::NarrowRow(HalfWidthRowKind(t.dtype), acc, t.shape[2], reinterpret_cast<uint16_t*>(address), stream);
  } else {
    StoreFromFloat(acc, t.dtype, address, t.strides[2], t.shape[2]);
  }
}

// weight (block_size, heads) as fp32, by head: [n * block_size + j].
std::vector<float> ReadWeights(const TensorDesc& weight) {
  const int64_t rows = weight.shape[0];
  const int64_t heads = weight.shape[1];
  std::vector<float> table(static_cast<size_t>(rows * heads));
  for (int64_t j = 0; j < rows; ++j) {
    for (int64_t n = 0; n < heads; ++n) {
      table[static_cast<size_t>(n * rows + j)] = LoadFloatElement(
          weight.dtype, weight.ElementAt(weight.offset + j * weight.strides[0] + n * weight.strides[1]));
    }
  }
  return table;
}

// The first token of every block, in block order.
std::vector<int64_t> BlockFirstTokens(const std::vector<Sequence>& sequences, const NsaShape& s) {
  std::vector<int64_t> first(static_cast<size_t>(s.blocks));
  for (const Sequence& seq : sequences) {
    for (int64_t k = 0; k < seq.blocks; ++k) first[static_cast<size_t>(seq.first_block + k)] = seq.start + k * s.stride;
  }
  return first;
}

// Forward on in-place input rows when at most kMaxRegisterCover blocks cover a token: per chunk, sequence and
// head, one walk over the tokens (BlockSums), then the chunk's rows are rounded out.
void ForwardWalks(const ForwardParams& params, const std::vector<float>& weights, int cover) {
  const NsaShape& s = params.shape;
  const TensorDesc& in = params.input;
  const RowReader input(in);  // reads in place: the caller checked the unit stride along D
  const bool stream = WorthStreaming(params.output);
  ParallelFor(s.blocks, kBlocksPerChunk, [&](int64_t begin, int64_t end) {
    std::vector<float> sums(static_cast<size_t>((end - begin) * s.dim));
    // The sequences holding blocks [begin, end): from the first whose blocks end past `begin`.
    auto seq = params.sequences.begin() +
               SequenceOfBlock(params.sequences.data(), static_cast<int64_t>(params.sequences.size()), begin);
    for (; seq != params.sequences.end() && seq->first_block < end; ++seq) {
      const int64_t first_block = std::max(begin, seq->first_block);
      const int64_t last_block = std::min(end, seq->first_block + seq->blocks);
      if (first_block >= last_block) continue;
      const int64_t first_token = seq->start + (first_block - seq->first_block) * s.stride;
      // Where every head's rows of a token lie together and the chunk's tokens fit in a core's L2 with room to
      // spare, the first head's walk prefetches all heads' rows, in address order, and the other heads' walks
      // find them in cache; otherwise each walk prefetches its own head's rows (1/N of the bytes, N * D apart).
      const int64_t chunk_tokens = (last_block - first_block - 1) * s.stride + s.block_size;
      const bool whole_rows = in.strides[1] == s.dim && in.strides[0] == s.heads * s.dim &&
                              chunk_tokens * in.strides[0] * 2 <= kWholeRowPrefetchBytes;
      for (int64_t n = 0; n < s.heads; ++n) {
        BlockWalk walk;
        walk.first_row = static_cast<const char*>(input.Row(first_token, n, nullptr));
        walk.row_step = in.strides[0] * 2;
        walk.blocks = last_block - first_block;
        walk.block_size = s.block_size;
        walk.stride = s.stride;
        walk.dim = s.dim;
        walk.weights = &weights[static_cast<size_t>(n * s.block_size)];
        walk.sums = sums.data();
        walk.prefetch_bytes = !whole_rows ? s.dim * 2 : n == 0 ? s.heads * s.dim * 2 : 0;
        simd::BlockSums(HalfWidthRowKind(in.dtype), cover, walk);
        for (int64_t b = first_block; b < last_block; ++b) {
          StoreRow(params.output, b, n, sums.data() + (b - first_block) * s.dim, stream);
        }
      }
    }
    if (stream) hwy::FlushStream();
  });
}

// The backward's one walk (see the NOTE): per chunk of kBackwardTokensPerChunk tokens, each sequence's part of it
// and each head, the outputGrad rows of the blocks covering those tokens are widened once, then GradWalkRows walks
// the tokens. Input rows that are not read in place are gathered into fp32 rows first, and inputGrad rows without
// unit stride along D are stored from fp32 rows after.
void BackwardWalks(const BackwardParams& params, const std::vector<float>& weights, float* partials) {
  const NsaShape& s = params.shape;
  const RowReader input(params.input);
  const TensorDesc& dy = params.output_grad;
  const TensorDesc& dx = params.input_grad;
  const bool stream = WorthStreaming(dx);
  const bool store_rows = dx.strides[2] != 1;
  const int64_t per_chunk = s.block_size * s.heads;
  const int64_t max_cover = (s.block_size + s.stride - 1) / s.stride;
  // Blocks k covering tokens [u0, u1] of a sequence satisfy (u0 - block_size) / stride < k <= u1 / stride.
  const int64_t max_blocks =
      std::max<int64_t>(0, std::min(s.blocks, (kBackwardTokensPerChunk - 1 + s.block_size) / s.stride + 2));
  const auto chunk_rows = static_cast<size_t>(kBackwardTokensPerChunk * s.dim);
  ParallelFor(s.tokens, kBackwardTokensPerChunk, [&](int64_t begin, int64_t end) {
    float* partial = partials == nullptr ? nullptr : partials + begin / kBackwardTokensPerChunk * per_chunk;
    if (partial != nullptr) std::fill(partial, partial + per_chunk, 0.0f);
    std::vector<float> grads(static_cast<size_t>(max_blocks * s.dim));
    std::vector<float> gathered(input.gathers() ? chunk_rows : 0);
    std::vector<float> out_rows(store_rows ? chunk_rows : 0);
    std::vector<const float*> grad_rows(static_cast<size_t>(max_cover));
    std::vector<float> grad_weights(static_cast<size_t>(max_cover));
    GradWalk walk;
    walk.row_kind = input.kind();
    walk.prefetch = !input.gathers();
    walk.block_size = s.block_size;
    walk.stride = s.stride;
    walk.grads = grads.data();
    walk.dim = s.dim;
    walk.out_kind = HalfWidthRowKind(dx.dtype);
    walk.out_step = dx.strides[0];
    walk.stream = stream;
    walk.out_rows = store_rows ? out_rows.data() : nullptr;
    walk.grad_rows = grad_rows.data();
    walk.grad_weights = grad_weights.data();
    auto seq = params.sequences.begin() +
               SequenceOfToken(params.sequences.data(), static_cast<int64_t>(params.sequences.size()), begin);
    for (int64_t t0 = begin; t0 < end;) {
      while (seq != params.sequences.end() && seq->end <= t0) ++seq;
      const bool in_sequence = seq != params.sequences.end();
      const int64_t t1 = in_sequence ? std::min(end, seq->end) : end;
      walk.tokens = t1 - t0;
      walk.first_u = in_sequence ? t0 - seq->start : 0;
      walk.blocks = in_sequence ? seq->blocks : 0;
      // The blocks covering the walk's tokens: [first_k, last_k] (none when last_k < first_k).
      walk.first_k = walk.first_u >= s.block_size ? (walk.first_u - s.block_size) / s.stride + 1 : 0;
      const int64_t last_k = std::min((walk.first_u + walk.tokens - 1) / s.stride, walk.blocks - 1);
      if (last_k < walk.first_k) walk.blocks = 0;  // the walk's tokens are past the sequence's last block
      for (int64_t n = 0; n < s.heads; ++n) {
        for (int64_t k = walk.first_k; walk.blocks > 0 && k <= last_k; ++k) {
          LoadAsFloat(dy.dtype,
                      static_cast<const char*>(dy.data) +
                          (dy.offset + (seq->first_block + k) * dy.strides[0] + n * dy.strides[1]) * 2,
                      dy.strides[2], grads.data() + (k - walk.first_k) * s.dim, s.dim);
        }
        walk.weights = &weights[static_cast<size_t>(n * s.block_size)];
        walk.partial = partial == nullptr || walk.blocks == 0 ? nullptr : partial + n * s.block_size;
        if (input.gathers()) {
          for (int64_t i = 0; walk.partial != nullptr && i < walk.tokens; ++i) {
            input.Row(t0 + i, n, gathered.data() + i * s.dim);
          }
          walk.first_row = reinterpret_cast<const char*>(gathered.data());
          walk.row_step = s.dim * static_cast<int64_t>(sizeof(float));
        } else {
          walk.first_row = static_cast<const char*>(input.Row(t0, n, nullptr));
          walk.row_step = params.input.strides[0] * 2;
        }
        walk.out = reinterpret_cast<uint16_t*>(static_cast<char*>(dx.data) +
                                               (dx.offset + t0 * dx.strides[0] + n * dx.strides[1]) * 2);
        simd::GradWalkRows(walk);
        for (int64_t i = 0; store_rows && i < walk.tokens; ++i) StoreRow(dx, t0 + i, n, out_rows.data() + i * s.dim);
      }
      t0 = t1;
    }
    if (stream) hwy::FlushStream();
  });
}

}  // namespace

aclnnStatus RunForwardCpu(const ForwardParams& params, void* /*workspace*/) {
  const NsaShape& s = params.shape;
  if (s.blocks == 0 || s.heads == 0 || s.dim == 0) return ACLNN_SUCCESS;
  const std::vector<float> weights = ReadWeights(params.weight);
  const int64_t cover = (s.block_size + s.stride - 1) / s.stride;
  if (params.input.strides[2] == 1 && cover <= kMaxRegisterCover) {
    ForwardWalks(params, weights, static_cast<int>(cover));
    return ACLNN_SUCCESS;
  }
  const std::vector<int64_t> first_token = BlockFirstTokens(params.sequences, s);
  const RowReader input(params.input);
  ParallelFor(s.blocks, kBlocksPerChunk, [&](int64_t begin, int64_t end) {
    std::vector<float> acc(static_cast<size_t>(s.dim));
    std::vector<float> buffers(input.gathers() ? static_cast<size_t>(s.block_size * s.dim) : 0);
    std::vector<const void*> rows(static_cast<size_t>(s.block_size));
    for (int64_t block = begin; block < end; ++block) {
      for (int64_t n = 0; n < s.heads; ++n) {
        input.Rows(first_token[static_cast<size_t>(block)], s.block_size, n, buffers.data(), rows.data());
        simd::WeightedSum(input.kind(), rows.data(), &weights[static_cast<size_t>(n * s.block_size)], s.block_size, s.dim, acc.data());
        StoreRow(params.output, block, n, acc.data());
      }
    }
  });
  return ACLNN_SUCCESS;
}

aclnnStatus RunBackwardCpu(const BackwardParams& params, void* workspace) {
  const NsaShape& s = params.shape;
  const std::vector<float> weights = ReadWeights(params.weight);
  const int64_t per_chunk = s.block_size * s.heads;
  float* partials = params.workspace.weight_grad_partials >= 0
                        ? reinterpret_cast<float*>(AlignedWorkspace(workspace) + params.workspace.weight_grad_partials)
                        : nullptr;
  BackwardWalks(params, weights, partials);

  // Pass 3: weightGrad = the chunks' partials in ascending chunk order.
  const int64_t chunks = (s.tokens + kBackwardTokensPerChunk - 1) / kBackwardTokensPerChunk;
  const TensorDesc& wg = params.weight_grad;
  for (int64_t j = 0; j < s.block_size; ++j) {
    for (int64_t n = 0; n < s.heads; ++n) {
      float sum = 0.0f;
      if (partials != nullptr) {
        for (int64_t c = 0; c < chunks; ++c) sum += partials[c * per_chunk + n * s.block_size + j];
      }
      StoreFloatElement(wg.dtype, wg.ElementAt(wg.offset + j * wg.strides[0] + n * wg.strides[1]), sum);
    }
  }
  return ACLNN_SUCCESS;
}

}  // namespace pacl::nsa_compress
