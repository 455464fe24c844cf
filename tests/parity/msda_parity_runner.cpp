// The C++ half of the PyTorch parity test of MultiScaleDeformableAttention (msda_parity.py is the other half): runs
// aclnnMultiScaleDeformableAttnFunction and aclnnMultiScaleDeformableAttentionGrad through the public API on cases
// written by the Python driver, and writes the results back as raw files.
//
//   msda_parity_runner DIR
//
// DIR/cases.txt has one case per line: "name dtype spatial_dtype start_dtype grad_rank bs nk nh c nl nq np", dtype
// FLOAT, FLOAT16 or BFLOAT16, spatial_dtype and start_dtype INT32 or INT64, grad_rank 3 or 4 (gradOutput (bs, nq,
// nh * c) or (bs, nq, nh, c)). Per case it reads DIR/name.value, name.spatial_shape, name.level_start_index,
// name.location, name.attn_weight and name.grad_output (dense row-major, native byte order, the dtype's element size)
// and writes DIR/name.output, name.grad_value, name.grad_location and name.grad_attn_weight in the same form.
// Outputs are pre-filled with NaN, so an element the operator does not write shows. Exit status: 0 when every call
// succeeded, 1 otherwise (with the reason on stderr).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_multi_scale_deformable_attention_grad.h"
#include "aclnnop/aclnn_multi_scale_deformable_attn_function.h"

namespace {

struct ParityCase {
  std::string name;
  aclDataType dtype = ACL_FLOAT;
  aclDataType spatial_dtype = ACL_INT64;
  aclDataType start_dtype = ACL_INT64;
  int grad_rank = 3;
  int64_t bs = 0, nk = 0, nh = 0, c = 0, nl = 0, nq = 0, np = 0;
};

std::string RecentError() {
  const char* message = aclGetRecentErrMsg();
  return message != nullptr ? message : "(no message)";
}

int64_t Count(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return count;
}

// A contiguous tensor in device memory; the storage holds at least one byte so that empty tensors have a
// non-null data pointer.
class Tensor {
 public:
  Tensor(const std::vector<int64_t>& shape, aclDataType dtype) : dtype_(dtype) {
    bytes_ = static_cast<size_t>(Count(shape)) * aclDataTypeSize(dtype);
    if (aclrtMalloc(&data_, bytes_ > 0 ? bytes_ : 1, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
      error_ = "aclrtMalloc failed: " + RecentError();
      return;
    }
    std::vector<int64_t> strides(shape.size(), 1);
    for (size_t d = shape.size(); d > 1; --d) strides[d - 2] = strides[d - 1] * shape[d - 1];
    tensor_ = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                              shape.size(), data_);
    if (tensor_ == nullptr) error_ = "aclCreateTensor failed: " + RecentError();
  }
  ~Tensor() {
    if (tensor_ != nullptr) aclDestroyTensor(tensor_);
    if (data_ != nullptr) aclrtFree(data_);
  }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  aclTensor* get() const { return tensor_; }
  const std::string& error() const { return error_; }

  // Reads the tensor's contents from a raw file of exactly the tensor's size.
  std::string Load(const std::string& path) {
    std::ifstream file(path, std::ios::binary | std::ios::ate);
    if (!file) return "cannot open " + path;
    if (static_cast<size_t>(file.tellg()) != bytes_) {
      return path + " holds " + std::to_string(static_cast<long long>(file.tellg())) + " bytes, expected " +
             std::to_string(bytes_);
    }
    file.seekg(0);
    std::vector<char> host(bytes_);
    if (!file.read(host.data(), static_cast<std::streamsize>(bytes_))) return "cannot read " + path;
    return CopyIn(host);
  }

  // Every element NaN (FLOAT, FLOAT16 or BFLOAT16).
  std::string FillNaN() {
    std::vector<char> host(bytes_);
    const size_t size = aclDataTypeSize(dtype_);
    for (size_t i = 0; i < bytes_; i += size) {
      if (dtype_ == ACL_FLOAT) {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        std::memcpy(&host[i], &nan, sizeof nan);
      } else {
        const uint16_t nan_bits = dtype_ == ACL_FLOAT16 ? 0x7E00 : 0x7FC0;
        std::memcpy(&host[i], &nan_bits, sizeof nan_bits);
      }
    }
    return CopyIn(host);
  }

  std::string Save(const std::string& path) const {
    std::vector<char> host(bytes_);
    if (bytes_ > 0 && aclrtMemcpy(host.data(), host.size(), data_, bytes_, ACL_MEMCPY_DEVICE_TO_HOST) != ACL_SUCCESS) {
      return "aclrtMemcpy to the host failed: " + RecentError();
    }
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    if (!file.write(host.data(), static_cast<std::streamsize>(host.size()))) return "cannot write " + path;
    return "";
  }

 private:
  std::string CopyIn(const std::vector<char>& host) {
    if (bytes_ > 0 && aclrtMemcpy(data_, bytes_, host.data(), bytes_, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS) {
      return "aclrtMemcpy to the device failed: " + RecentError();
    }
    return "";
  }

  aclDataType dtype_;
  size_t bytes_ = 0;
  void* data_ = nullptr;
  aclTensor* tensor_ = nullptr;
  std::string error_;
};

using Phase2 = aclnnStatus (*)(void*, uint64_t, aclOpExecutor*, aclrtStream);

// Phase 2 with a workspace of the size phase 1 asked for, then waits for the stream.
std::string RunPhase2(const char* op, Phase2 run, uint64_t workspace_size, aclOpExecutor* executor,
                      aclrtStream stream) {
  void* workspace = nullptr;
  if (workspace_size > 0 && aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    return std::string(op) + ": aclrtMalloc of the workspace (" + std::to_string(workspace_size) +
           " bytes) failed: " + RecentError();
  }
  aclnnStatus status = run(workspace, workspace_size, executor, stream);
  std::string error;
  if (status != ACLNN_SUCCESS) {
    error = std::string(op) + " returned " + std::to_string(status) + ": " + RecentError();
  } else if (aclrtSynchronizeStream(stream) != ACL_SUCCESS) {
    error = std::string(op) + ": aclrtSynchronizeStream failed: " + RecentError();
  }
  if (workspace != nullptr) aclrtFree(workspace);
  return error;
}

std::string RunCase(const std::string& dir, const ParityCase& pc, aclrtStream stream) {
  const std::vector<int64_t> value_shape = {pc.bs, pc.nk, pc.nh, pc.c};
  const std::vector<int64_t> location_shape = {pc.bs, pc.nq, pc.nh, pc.nl, pc.np, 2};
  const std::vector<int64_t> attn_shape = {pc.bs, pc.nq, pc.nh, pc.nl, pc.np};
  const std::vector<int64_t> out_shape = {pc.bs, pc.nq, pc.nh * pc.c};
  const std::vector<int64_t> grad_output_shape =
      pc.grad_rank == 4 ? std::vector<int64_t>{pc.bs, pc.nq, pc.nh, pc.c} : out_shape;
  const std::string prefix = dir + "/" + pc.name;
  Tensor value(value_shape, pc.dtype), spatial_shape({pc.nl, 2}, pc.spatial_dtype),
      level_start({pc.nl}, pc.start_dtype), location(location_shape, pc.dtype), attn(attn_shape, pc.dtype),
      grad_output(grad_output_shape, pc.dtype);
  Tensor output(out_shape, pc.dtype), grad_value(value_shape, pc.dtype), grad_location(location_shape, pc.dtype),
      grad_attn(attn_shape, pc.dtype);
  for (const Tensor* t : {&value, &spatial_shape, &level_start, &location, &attn, &grad_output, &output, &grad_value,
                          &grad_location, &grad_attn}) {
    if (!t->error().empty()) return t->error();
  }
  std::string error;
  const std::pair<Tensor*, const char*> inputs[] = {{&value, ".value"},
                                                    {&spatial_shape, ".spatial_shape"},
                                                    {&level_start, ".level_start_index"},
                                                    {&location, ".location"},
                                                    {&attn, ".attn_weight"},
                                                    {&grad_output, ".grad_output"}};
  for (const auto& [tensor, suffix] : inputs) {
    if (!(error = tensor->Load(prefix + suffix)).empty()) return error;
  }
  for (Tensor* t : {&output, &grad_value, &grad_location, &grad_attn}) {
    if (!(error = t->FillNaN()).empty()) return error;
  }

  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus status = aclnnMultiScaleDeformableAttnFunctionGetWorkspaceSize(
      value.get(), spatial_shape.get(), level_start.get(), location.get(), attn.get(), output.get(), &workspace_size,
      &executor);
  if (status != ACLNN_SUCCESS) {
    return "aclnnMultiScaleDeformableAttnFunctionGetWorkspaceSize returned " + std::to_string(status) + ": " +
           RecentError();
  }
  error = RunPhase2("aclnnMultiScaleDeformableAttnFunction", aclnnMultiScaleDeformableAttnFunction, workspace_size,
                    executor, stream);
  if (!error.empty()) return error;

  status = aclnnMultiScaleDeformableAttentionGradGetWorkspaceSize(
      value.get(), spatial_shape.get(), level_start.get(), location.get(), attn.get(), grad_output.get(),
      grad_value.get(), grad_location.get(), grad_attn.get(), &workspace_size, &executor);
  if (status != ACLNN_SUCCESS) {
    return "aclnnMultiScaleDeformableAttentionGradGetWorkspaceSize returned " + std::to_string(status) + ": " +
           RecentError();
  }
  error = RunPhase2("aclnnMultiScaleDeformableAttentionGrad", aclnnMultiScaleDeformableAttentionGrad, workspace_size,
                    executor, stream);
  if (!error.empty()) return error;

  if (!(error = output.Save(prefix + ".output")).empty()) return error;
  if (!(error = grad_value.Save(prefix + ".grad_value")).empty()) return error;
  if (!(error = grad_location.Save(prefix + ".grad_location")).empty()) return error;
  return grad_attn.Save(prefix + ".grad_attn_weight");
}

// The dtype named text among the (name, dtype) pairs; false if none.
bool ParseDType(const std::string& text, std::initializer_list<std::pair<const char*, aclDataType>> known,
                aclDataType* dtype) {
  for (const auto& [name, value] : known) {
    if (text == name) {
      *dtype = value;
      return true;
    }
  }
  return false;
}

// Parses one line of cases.txt; "" or what is wrong with it.
std::string ParseCase(const std::string& line, ParityCase* pc) {
  std::istringstream fields(line);
  std::string dtype, spatial_dtype, start_dtype;
  if (!(fields >> pc->name >> dtype >> spatial_dtype >> start_dtype >> pc->grad_rank >> pc->bs >> pc->nk >> pc->nh >>
        pc->c >> pc->nl >> pc->nq >> pc->np)) {
    return "malformed case line: " + line;
  }
  if (!ParseDType(dtype, {{"FLOAT", ACL_FLOAT}, {"FLOAT16", ACL_FLOAT16}, {"BFLOAT16", ACL_BF16}}, &pc->dtype)) {
    return "unknown dtype " + dtype + " in: " + line;
  }
  for (const auto& [text, index_dtype] :
       {std::make_pair(spatial_dtype, &pc->spatial_dtype), std::make_pair(start_dtype, &pc->start_dtype)}) {
    if (!ParseDType(text, {{"INT32", ACL_INT32}, {"INT64", ACL_INT64}}, index_dtype)) {
      return "unknown index dtype " + text + " in: " + line;
    }
  }
  if (pc->grad_rank != 3 && pc->grad_rank != 4) return "grad_rank must be 3 or 4 in: " + line;
  for (int64_t d : {pc->bs, pc->nk, pc->nh, pc->c, pc->nl, pc->nq, pc->np}) {
    if (d < 0 || d > 100000) return "dimension out of the runner's range in: " + line;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR (see the top of msda_parity_runner.cpp)\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::ifstream list(dir + "/cases.txt");
  if (!list) {
    std::fprintf(stderr, "cannot open %s/cases.txt\n", dir.c_str());
    return 1;
  }
  if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) {
    std::fprintf(stderr, "runtime setup failed: %s\n", RecentError().c_str());
    return 1;
  }
  aclrtStream stream = nullptr;
  if (aclrtCreateStream(&stream) != ACL_SUCCESS) {
    std::fprintf(stderr, "aclrtCreateStream failed: %s\n", RecentError().c_str());
    aclrtResetDevice(0);
    aclFinalize();
    return 1;
  }
  // Every case runs, failing or not, so that one report lists all the failures.
  int failures = 0, cases = 0;
  std::string line;
  while (std::getline(list, line)) {
    if (line.empty()) continue;
    ParityCase pc;
    std::string error = ParseCase(line, &pc);
    if (error.empty()) error = RunCase(dir, pc, stream);
    ++cases;
    if (!error.empty()) {
      std::fprintf(stderr, "case %s: %s\n", pc.name.c_str(), error.c_str());
      ++failures;
    }
  }
  aclrtDestroyStream(stream);
  aclrtResetDevice(0);
  aclFinalize();
  std::printf("ran %d cases, %d failed\n", cases, failures);
  return failures == 0 ? 0 : 1;
}
