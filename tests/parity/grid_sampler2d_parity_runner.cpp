// The C++ half of the PyTorch parity test of GridSampler2D (grid_sampler2d_parity.py is the other half): runs
// aclnnGridSampler2D and aclnnGridSampler2DBackward (outputMask [true, true]) through the public API on cases
// written by the Python driver, and writes the results back as raw files.
//
//   grid_sampler2d_parity_runner DIR
//
// DIR/cases.txt has one case per line: "name dtype interpolation padding align N C Hin Win Hout Wout", dtype
// FLOAT or DOUBLE, align 0 or 1. Per case it reads DIR/name.input, name.grid and name.grad_output (dense
// row-major, native byte order, dtype's element size) and writes DIR/name.out, name.input_grad and name.grid_grad
// in the same form. Outputs are pre-filled with NaN, so an element the operator does not write shows. Exit status:
// 0 when every call succeeded, 1 otherwise (with the reason on stderr).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_grid_sampler2d.h"
#include "aclnnop/aclnn_grid_sampler2d_backward.h"

namespace {

struct ParityCase {
  std::string name;
  aclDataType dtype = ACL_FLOAT;
  int64_t interpolation = 0;
  int64_t padding = 0;
  bool align_corners = false;
  int64_t n = 0, c = 0, in_height = 0, in_width = 0, out_height = 0, out_width = 0;
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
  Tensor(const std::vector<int64_t>& shape, aclDataType dtype) : shape_(shape), dtype_(dtype) {
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

  // Every element NaN.
  std::string FillNaN() {
    std::vector<char> host(bytes_);
    const size_t size = aclDataTypeSize(dtype_);
    for (size_t i = 0; i < bytes_; i += size) {
      if (dtype_ == ACL_DOUBLE) {
        const double nan = std::numeric_limits<double>::quiet_NaN();
        std::memcpy(&host[i], &nan, sizeof nan);
      } else {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        std::memcpy(&host[i], &nan, sizeof nan);
      }
    }
    return CopyIn(host);
  }

  std::string Save(const std::string& path) const {
    std::vector<char> host(bytes_);
    if (bytes_ > 0 &&
        aclrtMemcpy(host.data(), host.size(), data_, bytes_, ACL_MEMCPY_DEVICE_TO_HOST) != ACL_SUCCESS) {
      return "aclrtMemcpy to the host failed: " + RecentError();
    }
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    if (!file.write(host.data(), static_cast<std::streamsize>(host.size()))) return "cannot write " + path;
    return "";
  }

 private:
  std::string CopyIn(const std::vector<char>& host) {
    if (bytes_ > 0 &&
        aclrtMemcpy(data_, bytes_, host.data(), bytes_, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS) {
      return "aclrtMemcpy to the device failed: " + RecentError();
    }
    return "";
  }

  std::vector<int64_t> shape_;
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
  const std::vector<int64_t> input_shape = {pc.n, pc.c, pc.in_height, pc.in_width};
  const std::vector<int64_t> grid_shape = {pc.n, pc.out_height, pc.out_width, 2};
  const std::vector<int64_t> out_shape = {pc.n, pc.c, pc.out_height, pc.out_width};
  const std::string prefix = dir + "/" + pc.name;
  Tensor input(input_shape, pc.dtype), grid(grid_shape, pc.dtype), grad_output(out_shape, pc.dtype);
  Tensor out(out_shape, pc.dtype), input_grad(input_shape, pc.dtype), grid_grad(grid_shape, pc.dtype);
  for (const Tensor* t : {&input, &grid, &grad_output, &out, &input_grad, &grid_grad}) {
    if (!t->error().empty()) return t->error();
  }
  std::string error;
  if (!(error = input.Load(prefix + ".input")).empty()) return error;
  if (!(error = grid.Load(prefix + ".grid")).empty()) return error;
  if (!(error = grad_output.Load(prefix + ".grad_output")).empty()) return error;
  for (Tensor* t : {&out, &input_grad, &grid_grad}) {
    if (!(error = t->FillNaN()).empty()) return error;
  }

  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus status = aclnnGridSampler2DGetWorkspaceSize(input.get(), grid.get(), pc.interpolation, pc.padding,
                                                          pc.align_corners, out.get(), &workspace_size, &executor);
  if (status != ACLNN_SUCCESS) {
    return "aclnnGridSampler2DGetWorkspaceSize returned " + std::to_string(status) + ": " + RecentError();
  }
  if (!(error = RunPhase2("aclnnGridSampler2D", aclnnGridSampler2D, workspace_size, executor, stream)).empty()) {
    return error;
  }

  const bool both[2] = {true, true};
  aclBoolArray* output_mask = aclCreateBoolArray(both, 2);
  if (output_mask == nullptr) return "aclCreateBoolArray failed: " + RecentError();
  status = aclnnGridSampler2DBackwardGetWorkspaceSize(grad_output.get(), input.get(), grid.get(), pc.interpolation,
                                                      pc.padding, pc.align_corners, output_mask, input_grad.get(),
                                                      grid_grad.get(), &workspace_size, &executor);
  if (status != ACLNN_SUCCESS) {
    error = "aclnnGridSampler2DBackwardGetWorkspaceSize returned " + std::to_string(status) + ": " + RecentError();
  } else {
    error = RunPhase2("aclnnGridSampler2DBackward", aclnnGridSampler2DBackward, workspace_size, executor, stream);
  }
  aclDestroyBoolArray(output_mask);
  if (!error.empty()) return error;

  if (!(error = out.Save(prefix + ".out")).empty()) return error;
  if (!(error = input_grad.Save(prefix + ".input_grad")).empty()) return error;
  return grid_grad.Save(prefix + ".grid_grad");
}

// Parses one line of cases.txt; "" or what is wrong with it.
std::string ParseCase(const std::string& line, ParityCase* pc) {
  std::istringstream fields(line);
  std::string dtype;
  int align = 0;
  if (!(fields >> pc->name >> dtype >> pc->interpolation >> pc->padding >> align >> pc->n >> pc->c >>
        pc->in_height >> pc->in_width >> pc->out_height >> pc->out_width)) {
    return "malformed case line: " + line;
  }
  if (dtype == "FLOAT") {
    pc->dtype = ACL_FLOAT;
  } else if (dtype == "DOUBLE") {
    pc->dtype = ACL_DOUBLE;
  } else {
    return "unknown dtype " + dtype + " in: " + line;
  }
  pc->align_corners = align != 0;
  for (int64_t d : {pc->n, pc->c, pc->in_height, pc->in_width, pc->out_height, pc->out_width}) {
    if (d < 0 || d > 4096) return "dimension out of the runner's range in: " + line;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR (see the top of grid_sampler2d_parity_runner.cpp)\n", argv[0]);
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
