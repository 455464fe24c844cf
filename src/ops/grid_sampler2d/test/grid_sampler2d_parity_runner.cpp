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
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "grid_sampler2d/test/grid_sampler2d_calls.h"
#include "parity_runner_util.h"

namespace {

using parity::DeviceTensor;
using parity::RecentError;
using parity::RunCall;

struct ParityCase {
  std::string name;
  aclDataType dtype = ACL_FLOAT;
  int64_t interpolation = 0;
  int64_t padding = 0;
  bool align_corners = false;
  int64_t n = 0, c = 0, in_height = 0, in_width = 0, out_height = 0, out_width = 0;
};

std::string RunCase(const std::string& dir, const ParityCase& pc, aclrtStream stream) {
  const std::vector<int64_t> input_shape = {pc.n, pc.c, pc.in_height, pc.in_width};
  const std::vector<int64_t> grid_shape = {pc.n, pc.out_height, pc.out_width, 2};
  const std::vector<int64_t> out_shape = {pc.n, pc.c, pc.out_height, pc.out_width};
  const std::string prefix = dir + "/" + pc.name;
  DeviceTensor input(input_shape, pc.dtype), grid(grid_shape, pc.dtype), grad_output(out_shape, pc.dtype);
  DeviceTensor out(out_shape, pc.dtype), input_grad(input_shape, pc.dtype), grid_grad(grid_shape, pc.dtype);
  for (const DeviceTensor* t : {&input, &grid, &grad_output, &out, &input_grad, &grid_grad}) {
    if (!t->error().empty()) return t->error();
  }
  std::string error;
  if (!(error = input.Load(prefix + ".input")).empty()) return error;
  if (!(error = grid.Load(prefix + ".grid")).empty()) return error;
  if (!(error = grad_output.Load(prefix + ".grad_output")).empty()) return error;
  for (DeviceTensor* t : {&out, &input_grad, &grid_grad}) {
    if (!(error = t->FillNaN()).empty()) return error;
  }

  error = RunCall(opcall::GridSampler2D{input.get(), grid.get(), pc.interpolation, pc.padding, pc.align_corners,
                                        out.get()},
                  stream);
  if (!error.empty()) return error;

  const bool both[2] = {true, true};
  aclBoolArray* output_mask = aclCreateBoolArray(both, 2);
  if (output_mask == nullptr) return "aclCreateBoolArray failed: " + RecentError();
  error = RunCall(opcall::GridSampler2DBackward{grad_output.get(), input.get(), grid.get(), pc.interpolation,
                                                pc.padding, pc.align_corners, output_mask, input_grad.get(),
                                                grid_grad.get()},
                  stream);
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
  if (!parity::ParseDType(dtype, {{"FLOAT", ACL_FLOAT}, {"DOUBLE", ACL_DOUBLE}}, &pc->dtype)) {
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
  return parity::RunParityCases<ParityCase>(argc, argv, "grid_sampler2d_parity_runner.cpp", ParseCase, RunCase);
}
