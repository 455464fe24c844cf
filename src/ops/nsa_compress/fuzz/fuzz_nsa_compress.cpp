// libFuzzer harness: aclnnNsaCompress and aclnnNsaCompressGrad (first byte: which).
// Input layout (one byte a field unless said; missing bytes read as 0, the plausible choice):
//   direction, N, D, compressBlockSize / 16, compressStride / 16, sequence count, a leading 0 or not, each
//   sequence's length, the actSeqLen mutation, dtype, layout string, the three attributes (each with its
//   mutation), then each tensor (fuzz::DecodeTensor), the out-pointer byte and phase 2's mode.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "aclnnop/aclnn_nsa_compress.h"
#include "aclnnop/aclnn_nsa_compress_grad.h"
#include "fuzz_support.h"
#include "nsa_compress/test/nsa_compress_calls.h"

namespace {

constexpr const char* kForward = "aclnnNsaCompress";
constexpr const char* kBackward = "aclnnNsaCompressGrad";

// actSeqLen as the caller passes it: cumulative sequence ends, usually consistent; sometimes null, empty, or with
// an entry replaced by an edge value, dropped or added.
struct SeqLens {
  std::vector<int64_t> ends;
  bool null = false;
};

void MutateSeqLens(fuzz::Reader& r, SeqLens* seq) {
  const uint8_t choice = r.Byte();
  if (choice < 200) return;
  if (choice < 220) {
    if (!seq->ends.empty()) {
      int64_t& entry = seq->ends[r.Below(seq->ends.size())];
      entry = fuzz::EdgeValue(r, entry);
    }
  } else if (choice < 230) {
    seq->ends.clear();
  } else if (choice < 240) {
    seq->null = true;
  } else if (choice < 248) {
    if (!seq->ends.empty()) seq->ends.erase(seq->ends.begin() + static_cast<long>(r.Below(seq->ends.size())));
  } else {
    seq->ends.insert(seq->ends.begin() + static_cast<long>(r.Below(seq->ends.size() + 1)), fuzz::EdgeValue(r, 0));
  }
}

// The layout string in an exact-size allocation (reading past its terminator is an ASan report), or null.
std::unique_ptr<char[]> DecodeLayout(fuzz::Reader& r) {
  const uint8_t choice = r.Byte();
  if (choice >= 200 && choice < 220) return nullptr;
  static const char* const kOthers[] = {"", "BSND", "TNDX", "tnd", "TN", "BNSD"};
  const char* text = choice < 200 ? "TND" : kOthers[choice % 6];
  const size_t length = std::strlen(text);
  std::unique_ptr<char[]> copy(new char[length + 1]);
  std::memcpy(copy.get(), text, length + 1);
  return copy;
}

// Blocks of the sequences under the (accepted) attributes, by this harness's own reading of the rule.
int64_t CountBlocks(const std::vector<int64_t>& ends, int64_t block_size, int64_t stride) {
  int64_t blocks = 0;
  int64_t start = 0;
  for (int64_t end : ends) {
    const int64_t length = end - start;
    if (length >= block_size) blocks += (length - block_size) / stride + 1;
    start = end;
  }
  return blocks;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader r(data, size);
  fuzz::Call call(data, size);
  const bool backward = r.Flag();
  const int64_t heads = 1 + static_cast<int64_t>(r.Below(3));
  const int64_t dim = 1 + static_cast<int64_t>(r.Below(40));
  const int64_t plausible_block = 16 * (2 + static_cast<int64_t>(r.Below(3)));
  const uint64_t strides_below_block = static_cast<uint64_t>(plausible_block / 16 - 1);
  const int64_t plausible_stride = 16 * (1 + static_cast<int64_t>(r.Below(strides_below_block)));
  SeqLens seq;
  const size_t sequences = 1 + r.Below(4);
  if (r.Flag()) seq.ends.push_back(0);
  int64_t tokens = 0;
  for (size_t i = 0; i < sequences; ++i) {
    tokens += static_cast<int64_t>(r.Below(static_cast<uint64_t>(3 * plausible_block)));
    seq.ends.push_back(tokens);
  }
  const int64_t plausible_blocks = CountBlocks(seq.ends, plausible_block, plausible_stride);
  MutateSeqLens(r, &seq);
  constexpr aclDataType kDTypes[] = {ACL_FLOAT16, ACL_BF16};
  const aclDataType dtype = kDTypes[r.Below(2)];
  std::unique_ptr<char[]> layout = DecodeLayout(r);
  const int64_t block_size = fuzz::Attribute(r, plausible_block);
  const int64_t stride = fuzz::Attribute(r, plausible_stride);
  const int64_t seq_len_type = fuzz::Attribute(r, 0);

  const std::vector<int64_t> input_shape = {tokens, heads, dim};
  const std::vector<int64_t> weight_shape = {plausible_block, heads};
  const std::vector<int64_t> blocks_shape = {plausible_blocks, heads, dim};
  int output_grad = -1;
  if (backward) output_grad = call.Add(fuzz::DecodeTensor(r, "outputGrad", false, blocks_shape, dtype));
  const int input = call.Add(fuzz::DecodeTensor(r, "input", false, input_shape, dtype));
  const int weight = call.Add(fuzz::DecodeTensor(r, "weight", false, weight_shape, dtype));
  int output = -1;
  int input_grad = -1;
  int weight_grad = -1;
  if (backward) {
    input_grad = call.Add(fuzz::DecodeTensor(r, "inputGrad", true, input_shape, dtype));
    weight_grad = call.Add(fuzz::DecodeTensor(r, "weightGrad", true, weight_shape, dtype));
  } else {
    output = call.Add(fuzz::DecodeTensor(r, "output", true, blocks_shape, dtype));
  }
  call.Materialize();
  call.DecodeOutPointers(r);

  aclIntArray* act_seq_len = nullptr;
  if (!seq.null) {
    // An exact-size copy, so that reading past the given size is an ASan report.
    std::unique_ptr<int64_t[]> ends(new int64_t[seq.ends.size() + 1]);
    for (size_t i = 0; i < seq.ends.size(); ++i) ends[i] = seq.ends[i];
    act_seq_len = aclCreateIntArray(seq.ends.empty() ? nullptr : ends.get(), seq.ends.size());
    FUZZ_CHECK(act_seq_len != nullptr, "aclCreateIntArray failed: %s", fuzz::TakeRecentError().c_str());
  }

  const char* name = backward ? kBackward : kForward;
  fuzz::Note("%s: compressBlockSize %lld, compressStride %lld, actSeqLenType %lld, layout %s, actSeqLen %s", name,
             static_cast<long long>(block_size), static_cast<long long>(stride),
             static_cast<long long>(seq_len_type), layout == nullptr ? "null" : layout.get(),
             seq.null ? "null" : fuzz::DimsString(seq.ends).c_str());
  aclnnStatus status;
  if (backward) {
    status = opcall::GetWorkspaceSize(
        opcall::NsaCompressGrad{call.tensor(output_grad), call.tensor(input), call.tensor(weight), act_seq_len,
                                block_size, stride, seq_len_type, layout.get(), call.tensor(input_grad),
                                call.tensor(weight_grad)},
        call.workspace_size_out(), call.executor_out());
  } else {
    status = opcall::GetWorkspaceSize(opcall::NsaCompress{call.tensor(input), call.tensor(weight), act_seq_len,
                                                          layout.get(), block_size, stride, seq_len_type,
                                                          call.tensor(output)},
                                      call.workspace_size_out(), call.executor_out());
  }
  if (act_seq_len != nullptr) aclDestroyIntArray(act_seq_len);
  if (!call.CheckPhase1(name, status, call.AnyPassedAsNull() || seq.null)) return 0;

  // Accepted: the documented rules hold.
  // blockSize >= stride for the forward, > for the gradient.
  FUZZ_CHECK(block_size > 0 && block_size % 16 == 0 && stride > 0 && stride % 16 == 0 &&
                 (backward ? block_size > stride : block_size >= stride) &&
                 seq_len_type == 0 && (layout == nullptr || std::strcmp(layout.get(), "TND") == 0),
             "%s accepted compressBlockSize %lld, compressStride %lld, actSeqLenType %lld, layout \"%s\"", name,
             static_cast<long long>(block_size), static_cast<long long>(stride),
             static_cast<long long>(seq_len_type), layout == nullptr ? "(null)" : layout.get());
  const fuzz::TensorSpec& input_spec = call.spec(input);
  fuzz::CheckAcceptedDType(name, input_spec, {ACL_FLOAT16, ACL_BF16});
  const std::vector<int64_t>& in = input_spec.dims;
  FUZZ_CHECK(in.size() == 3, "%s accepted input dims %s", name, fuzz::DimsString(in).c_str());
  FUZZ_CHECK(!seq.ends.empty() && seq.ends.back() == in[0], "%s accepted actSeqLen ending at %lld for T = %lld", name,
             static_cast<long long>(seq.ends.empty() ? -1 : seq.ends.back()), static_cast<long long>(in[0]));
  for (size_t i = 0; i < seq.ends.size(); ++i) {
    FUZZ_CHECK(seq.ends[i] >= (i == 0 ? 0 : seq.ends[i - 1]), "%s accepted actSeqLen decreasing at index %zu", name,
               i);
  }
  const std::vector<int64_t> accepted_blocks = {CountBlocks(seq.ends, block_size, stride), in[1], in[2]};
  fuzz::CheckAcceptedDims(name, call.spec(weight), {block_size, in[1]});
  std::vector<int> written;
  if (backward) {
    fuzz::CheckAcceptedDims(name, call.spec(output_grad), accepted_blocks);
    fuzz::CheckAcceptedDims(name, call.spec(input_grad), in);
    fuzz::CheckAcceptedDims(name, call.spec(weight_grad), call.spec(weight).dims);
    written = {input_grad, weight_grad};
  } else {
    fuzz::CheckAcceptedDims(name, call.spec(output), accepted_blocks);
    written = {output};
  }
  for (int index : {output_grad, weight, output, input_grad, weight_grad}) {
    FUZZ_CHECK(index < 0 || call.spec(index).dtype == input_spec.dtype, "%s accepted mixed dtypes", name);
  }

  const uint64_t work = fuzz::SaturatingMul(fuzz::Elements(accepted_blocks), static_cast<uint64_t>(block_size));
  call.RunPhase2(r, name, backward ? aclnnNsaCompressGrad : aclnnNsaCompress,
                 backward ? aclnnNsaCompress : aclnnNsaCompressGrad, written,
                 fuzz::SaturatingMul(work, backward ? 2 : 1));
  return 0;
}
