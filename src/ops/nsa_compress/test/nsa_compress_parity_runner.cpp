// The C++ half of the PyTorch parity test of NsaCompress (nsa_compress_parity.py is the other half): runs
// aclnnNsaCompress and aclnnNsaCompressGrad through the public API on cases written by the Python driver, and writes
// the results back as raw files.
//
//   nsa_compress_parity_runner DIR
//
// DIR/cases.txt has one case per line: "name dtype layout blockSize stride T N D blocks entries", dtype FLOAT16 or
// BFLOAT16, layout TND or null (a null layout string), blocks the total block count the driver expects (the shape of
// output and outputGrad) and entries the length of actSeqLen. Per case it reads DIR/name.input (T, N, D),
// name.weight (blockSize, N), name.output_grad (blocks, N, D) (dense row-major, native byte order, 2-byte elements)
// and name.act_seq_len (entries int64 values), and writes DIR/name.output, name.input_grad and name.weight_grad in
// the same form. Outputs are pre-filled with NaN, so an element the operator does not write shows. Exit status: 0
// when every call succeeded, 1 otherwise (with the reason on stderr).
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "nsa_compress/test/nsa_compress_calls.h"
#include "parity_runner_util.h"

namespace {

using parity::DeviceTensor;
using parity::RecentError;
using parity::RunCall;

struct ParityCase {
  std::string name;
  aclDataType dtype = ACL_FLOAT16;
  bool null_layout = false;
  int64_t block_size = 0, stride = 0, tokens = 0, heads = 0, dim = 0, blocks = 0, entries = 0;
};

// actSeqLen from DIR/name.act_seq_len; "" or what went wrong.
std::string LoadActSeqLen(const std::string& path, int64_t entries, std::vector<int64_t>* values) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) return "cannot open " + path;
  const std::streamoff bytes = file.tellg();
  if (bytes != static_cast<std::streamoff>(entries * static_cast<int64_t>(sizeof(int64_t)))) {
    return path + " holds " + std::to_string(static_cast<long long>(bytes)) + " bytes, expected " +
           std::to_string(entries) + " int64 values";
  }
  file.seekg(0);
  values->resize(static_cast<size_t>(entries));
  if (entries > 0 && !file.read(reinterpret_cast<char*>(values->data()), bytes)) return "cannot read " + path;
  return "";
}

std::string RunCase(const std::string& dir, const ParityCase& pc, aclrtStream stream) {
  const std::vector<int64_t> input_shape = {pc.tokens, pc.heads, pc.dim};
  const std::vector<int64_t> weight_shape = {pc.block_size, pc.heads};
  const std::vector<int64_t> output_shape = {pc.blocks, pc.heads, pc.dim};
  const std::string prefix = dir + "/" + pc.name;
  std::vector<int64_t> ends;
  std::string error = LoadActSeqLen(prefix + ".act_seq_len", pc.entries, &ends);
  if (!error.empty()) return error;
  aclIntArray* act_seq_len = aclCreateIntArray(ends.data(), ends.size());
  if (act_seq_len == nullptr) return "aclCreateIntArray failed: " + RecentError();
  struct ArrayOwner {
    aclIntArray* array;
    ~ArrayOwner() { aclDestroyIntArray(array); }
  } owner{act_seq_len};

  DeviceTensor input(input_shape, pc.dtype), weight(weight_shape, pc.dtype), output_grad(output_shape, pc.dtype);
  DeviceTensor output(output_shape, pc.dtype), input_grad(input_shape, pc.dtype), weight_grad(weight_shape, pc.dtype);
  for (const DeviceTensor* t : {&input, &weight, &output_grad, &output, &input_grad, &weight_grad}) {
    if (!t->error().empty()) return t->error();
  }
  const std::pair<DeviceTensor*, const char*> inputs[] = {
      {&input, ".input"}, {&weight, ".weight"}, {&output_grad, ".output_grad"}};
  for (const auto& [tensor, suffix] : inputs) {
    if (!(error = tensor->Load(prefix + suffix)).empty()) return error;
  }
  for (DeviceTensor* t : {&output, &input_grad, &weight_grad}) {
    if (!(error = t->FillNaN()).empty()) return error;
  }

  const char* layout = pc.null_layout ? nullptr : "TND";
  error = RunCall(opcall::NsaCompress{input.get(), weight.get(), act_seq_len, layout, pc.block_size, pc.stride, 0,
                                      output.get()},
                  stream);
  if (!error.empty()) return error;
  error = RunCall(opcall::NsaCompressGrad{output_grad.get(), input.get(), weight.get(), act_seq_len, pc.block_size,
                                          pc.stride, 0, layout, input_grad.get(), weight_grad.get()},
                  stream);
  if (!error.empty()) return error;

  if (!(error = output.Save(prefix + ".output")).empty()) return error;
  if (!(error = input_grad.Save(prefix + ".input_grad")).empty()) return error;
  return weight_grad.Save(prefix + ".weight_grad");
}

// Parses one line of cases.txt; "" or what is wrong with it.
std::string ParseCase(const std::string& line, ParityCase* pc) {
  std::istringstream fields(line);
  std::string dtype, layout;
  if (!(fields >> pc->name >> dtype >> layout >> pc->block_size >> pc->stride >> pc->tokens >> pc->heads >> pc->dim >>
        pc->blocks >> pc->entries)) {
    return "malformed case line: " + line;
  }
  if (!parity::ParseDType(dtype, {{"FLOAT16", ACL_FLOAT16}, {"BFLOAT16", ACL_BF16}}, &pc->dtype)) {
    return "unknown dtype " + dtype + " in: " + line;
  }
  if (layout != "TND" && layout != "null") return "layout must be TND or null in: " + line;
  pc->null_layout = layout == "null";
  for (int64_t v : {pc->block_size, pc->stride, pc->tokens, pc->heads, pc->dim, pc->blocks, pc->entries}) {
    if (v < 0 || v > 1000000) return "a size out of the runner's range in: " + line;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  return parity::RunParityCases<ParityCase>(argc, argv, "nsa_compress_parity_runner.cpp", ParseCase, RunCase);
}
