// The aclnn entry points of NsaCompress (forward) and NsaCompressGrad: phase 1 validates the arguments (actSeqLen is a
// host array and is read here; no tensor data is), lists the sequences and their blocks and binds plain-data parameters
// to the implementation for the current device (the first entry of its implementation list that fits: cpu/, cuda/),
// which plans the workspace; phase 2 runs the executor on a stream.
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_nsa_compress.h"
#include "aclnnop/aclnn_nsa_compress_grad.h"
#include "nsa_compress/nsa_compress_params.h"
#include "pacl/op_glue.h"
#include "pacl/tensor.h"
#include "pacl/tensor_objects.h"

namespace pacl::nsa_compress {
namespace {

constexpr int64_t kSizeMultiple = 16;

using NamedTensor = std::pair<const TensorDesc*, const char*>;

long long LL(int64_t v) { return static_cast<long long>(v); }

// Every tensor FLOAT16 or BFLOAT16, all of input's dtype; plain formats.
bool CheckDTypesAndFormats(OpChecker& check, const TensorDesc& input, std::initializer_list<NamedTensor> others) {
  if (!check.DType(input, "input", {ACL_FLOAT16, ACL_BF16}) || !check.PlainFormat(input, "input")) return false;
  for (const auto& [desc, param] : others) {
    if (!check.DType(*desc, param, {ACL_FLOAT16, ACL_BF16}) || !check.SameDType(input, "input", *desc, param) ||
        !check.PlainFormat(*desc, param)) {
      return false;
    }
  }
  return true;
}

// The attributes, the ranks of input and weight and weight's shape. Fills the shape's first five fields. blockSize
// >= stride for the forward (CANN's forward documentation and example use blockSize == stride), > for the gradient
// (its seed's rule).
bool CheckAttributesAndInputs(OpChecker& check, const TensorDesc& input, const TensorDesc& weight, int64_t block_size,
                              int64_t stride, int64_t seq_len_type, const char* layout, bool gradient,
                              NsaShape* shape) {
  if (!check.Rank(input, "input", 3) || !check.Rank(weight, "weight", 2) ||
      !check.Check(block_size > 0 && block_size % kSizeMultiple == 0,
                   "compressBlockSize must be a positive multiple of 16, got %lld", LL(block_size)) ||
      !check.Check(stride > 0 && stride % kSizeMultiple == 0,
                   "compressStride must be a positive multiple of 16, got %lld", LL(stride)) ||
      !check.Check(block_size >= stride, "compressBlockSize must be at least compressStride, got %lld and %lld",
                   LL(block_size), LL(stride)) ||
      !check.Check(!gradient || block_size > stride,
                   "compressBlockSize must be greater than compressStride, got %lld and %lld", LL(block_size),
                   LL(stride)) ||
      !check.Check(seq_len_type == 0, "actSeqLenType must be 0 (cumulative sequence ends), got %lld",
                   LL(seq_len_type)) ||
      !check.Check(layout == nullptr || std::strcmp(layout, "TND") == 0,
                   "layout must be \"TND\" (or null, meaning \"TND\"), got \"%.16s\"",
                   layout == nullptr ? "" : layout) ||
      !check.Check(weight.shape[0] == block_size && weight.shape[1] == input.shape[1],
                   "weight must have shape [compressBlockSize, N] = [%lld, %lld] (input shape %s), got %s",
                   LL(block_size), LL(input.shape[1]), input.ShapeString().c_str(), weight.ShapeString().c_str())) {
    return false;
  }
  shape->tokens = input.shape[0];
  shape->heads = input.shape[1];
  shape->dim = input.shape[2];
  shape->block_size = block_size;
  shape->stride = stride;
  return true;
}

// actSeqLen: cumulative sequence ends (a leading 0 is an empty first sequence), non-decreasing, the last == T.
// Fills the sequences and the total block count.
bool ListSequences(OpChecker& check, const aclIntArray& ends, NsaShape* shape, std::vector<Sequence>* sequences) {
  const std::vector<int64_t>& v = ends.values;
  if (!check.Check(!v.empty(), "actSeqLen must have at least one entry (the cumulative sequence ends)")) return false;
  int64_t start = 0;
  int64_t blocks = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i == 0 && !check.Check(v[0] >= 0, "actSeqLen[0] (the first sequence end) must be >= 0, got %lld", LL(v[0]))) {
      return false;
    }
    if (!check.Check(v[i] >= start,
                     "actSeqLen must be non-decreasing (cumulative sequence ends), got actSeqLen[%zu] = %lld after "
                     "actSeqLen[%zu] = %lld",
                     i, LL(v[i]), i - 1, LL(start))) {
      return false;
    }
    const int64_t length = v[i] - start;
    const int64_t count = length >= shape->block_size ? (length - shape->block_size) / shape->stride + 1 : 0;
    sequences->push_back({start, v[i], blocks, count});
    blocks += count;
    start = v[i];
  }
  if (!check.Check(start == shape->tokens, "the last entry of actSeqLen must equal T (dim 0 of input) = %lld, got %lld",
                   LL(shape->tokens), LL(start))) {
    return false;
  }
  shape->blocks = blocks;
  return true;
}

bool CheckBlockTensor(OpChecker& check, const TensorDesc& t, const char* param, const NsaShape& s) {
  return check.Rank(t, param, 3) &&
         check.Check(t.shape[0] == s.blocks && t.shape[1] == s.heads && t.shape[2] == s.dim,
                     "%s must have shape [blocks, N, D] = [%lld, %lld, %lld] (%lld blocks from actSeqLen, "
                     "compressBlockSize %lld and compressStride %lld), got %s",
                     param, LL(s.blocks), LL(s.heads), LL(s.dim), LL(s.blocks), LL(s.block_size), LL(s.stride),
                     t.ShapeString().c_str());
}


}  // namespace
}  // namespace pacl::nsa_compress

using pacl::OpChecker;
using pacl::TensorDesc;
namespace nsa = pacl::nsa_compress;

extern "C" aclnnStatus aclnnNsaCompressGetWorkspaceSize(const aclTensor* input, const aclTensor* weight,
                                                        const aclIntArray* actSeqLenOptional, char* layoutOptional,
                                                        int64_t compressBlockSize, int64_t compressStride,
                                                        int64_t actSeqLenType, aclTensor* output,
                                                        uint64_t* workspaceSize, aclOpExecutor** executor) {
  OpChecker check(nsa::kForwardName);
  if (!check.Tensor(input, "input") || !check.Tensor(weight, "weight") ||
      !check.NotNull(actSeqLenOptional, "actSeqLen") || !check.Tensor(output, "output") ||
      !check.OutPointers(workspaceSize, executor)) {
    return check.status();
  }
  nsa::ForwardParams params;
  if (!nsa::CheckDTypesAndFormats(check, input->desc, {{&weight->desc, "weight"}, {&output->desc, "output"}}) ||
      !nsa::CheckAttributesAndInputs(check, input->desc, weight->desc, compressBlockSize, compressStride, actSeqLenType,
                                     layoutOptional, /*gradient=*/false, &params.shape) ||
      !nsa::ListSequences(check, *actSeqLenOptional, &params.shape, &params.sequences) ||
      !nsa::CheckBlockTensor(check, output->desc, "output", params.shape) ||
      !check.DistinctOutputElements(output->desc, "output")) {
    return check.status();
  }
  params.input = input->desc;
  params.weight = weight->desc;
  params.output = output->desc;
  return pacl::BindImplementation(nsa::kForwardName, params.input.dtype, params, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnNsaCompress(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                        aclrtStream stream) {
  return pacl::RunExecutor(nsa::kForwardName, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnNsaCompressGradGetWorkspaceSize(
    const aclTensor* outputGrad, const aclTensor* input, const aclTensor* weight,
    const aclIntArray* actSeqLenOptionalOptional, int64_t compressBlockSize, int64_t compressStride,
    int64_t actSeqLenType, char* layoutOptionalOptional, const aclTensor* inputGradOut, const aclTensor* weightGradOut,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  OpChecker check(nsa::kBackwardName);
  if (!check.Tensor(outputGrad, "outputGrad") || !check.Tensor(input, "input") || !check.Tensor(weight, "weight") ||
      !check.NotNull(actSeqLenOptionalOptional, "actSeqLen") || !check.Tensor(inputGradOut, "inputGradOut") ||
      !check.Tensor(weightGradOut, "weightGradOut") || !check.OutPointers(workspaceSize, executor)) {
    return check.status();
  }
  nsa::BackwardParams params;
  const TensorDesc& input_desc = input->desc;
  if (!nsa::CheckDTypesAndFormats(check, input_desc,
                                  {{&outputGrad->desc, "outputGrad"},
                                   {&weight->desc, "weight"},
                                   {&inputGradOut->desc, "inputGradOut"},
                                   {&weightGradOut->desc, "weightGradOut"}}) ||
      !nsa::CheckAttributesAndInputs(check, input_desc, weight->desc, compressBlockSize, compressStride, actSeqLenType,
                                     layoutOptionalOptional, /*gradient=*/true, &params.shape) ||
      !nsa::ListSequences(check, *actSeqLenOptionalOptional, &params.shape, &params.sequences) ||
      !nsa::CheckBlockTensor(check, outputGrad->desc, "outputGrad", params.shape) ||
      !check.SameShape(input_desc, "input", inputGradOut->desc, "inputGradOut") ||
      !check.SameShape(weight->desc, "weight", weightGradOut->desc, "weightGradOut") ||
      !check.DistinctOutputElements(inputGradOut->desc, "inputGradOut") ||
      !check.DistinctOutputElements(weightGradOut->desc, "weightGradOut")) {
    return check.status();
  }
  params.output_grad = outputGrad->desc;
  params.input = input_desc;
  params.weight = weight->desc;
  params.input_grad = inputGradOut->desc;
  params.weight_grad = weightGradOut->desc;
  return pacl::BindImplementation(nsa::kBackwardName, params.input.dtype, params, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnNsaCompressGrad(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                            aclrtStream stream) {
  return pacl::RunExecutor(nsa::kBackwardName, workspace, workspaceSize, executor, stream);
}
