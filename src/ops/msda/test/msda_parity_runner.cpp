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
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "msda/test/msda_calls.h"
#include "parity_runner_util.h"

namespace {

using parity::DeviceTensor;
using parity::ParseDType;
using parity::RecentError;
using parity::RunCall;

struct ParityCase {
  std::string name;
  aclDataType dtype = ACL_FLOAT;
  aclDataType spatial_dtype = ACL_INT64;
  aclDataType start_dtype = ACL_INT64;
  int grad_rank = 3;
  int64_t bs = 0, nk = 0, nh = 0, c = 0, nl = 0, nq = 0, np = 0;
};

std::string RunCase(const std::string& dir, const ParityCase& pc, aclrtStream stream) {
  const std::vector<int64_t> value_shape = {pc.bs, pc.nk, pc.nh, pc.c};
  const std::vector<int64_t> location_shape = {pc.bs, pc.nq, pc.nh, pc.nl, pc.np, 2};
  const std::vector<int64_t> attn_shape = {pc.bs, pc.nq, pc.nh, pc.nl, pc.np};
  const std::vector<int64_t> out_shape = {pc.bs, pc.nq, pc.nh * pc.c};
  const std::vector<int64_t> grad_output_shape =
      pc.grad_rank == 4 ? std::vector<int64_t>{pc.bs, pc.nq, pc.nh, pc.c} : out_shape;
  const std::string prefix = dir + "/" + pc.name;
  DeviceTensor value(value_shape, pc.dtype), spatial_shape({pc.nl, 2}, pc.spatial_dtype),
      level_start({pc.nl}, pc.start_dtype), location(location_shape, pc.dtype), attn(attn_shape, pc.dtype),
      grad_output(grad_output_shape, pc.dtype);
  DeviceTensor output(out_shape, pc.dtype), grad_value(value_shape, pc.dtype),
      grad_location(location_shape, pc.dtype), grad_attn(attn_shape, pc.dtype);
  for (const DeviceTensor* t : {&value, &spatial_shape, &level_start, &location, &attn, &grad_output, &output,
                                &grad_value, &grad_location, &grad_attn}) {
    if (!t->error().empty()) return t->error();
  }
  std::string error;
  const std::pair<DeviceTensor*, const char*> inputs[] = {{&value, ".value"},
                                                          {&spatial_shape, ".spatial_shape"},
                                                          {&level_start, ".level_start_index"},
                                                          {&location, ".location"},
                                                          {&attn, ".attn_weight"},
                                                          {&grad_output, ".grad_output"}};
  for (const auto& [tensor, suffix] : inputs) {
    if (!(error = tensor->Load(prefix + suffix)).empty()) return error;
  }
  for (DeviceTensor* t : {&output, &grad_value, &grad_location, &grad_attn}) {
    if (!(error = t->FillNaN()).empty()) return error;
  }

  error = RunCall(opcall::MultiScaleDeformableAttnFunction{value.get(), spatial_shape.get(), level_start.get(),
                                                           location.get(), attn.get(), output.get()},
                  stream);
  if (!error.empty()) return error;
  error = RunCall(opcall::MultiScaleDeformableAttentionGrad{value.get(), spatial_shape.get(), level_start.get(),
                                                            location.get(), attn.get(), grad_output.get(),
                                                            grad_value.get(), grad_location.get(), grad_attn.get()},
                  stream);
  if (!error.empty()) return error;

  if (!(error = output.Save(prefix + ".output")).empty()) return error;
  if (!(error = grad_value.Save(prefix + ".grad_value")).empty()) return error;
  if (!(error = grad_location.Save(prefix + ".grad_location")).empty()) return error;
  return grad_attn.Save(prefix + ".grad_attn_weight");
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
  return parity::RunParityCases<ParityCase>(argc, argv, "msda_parity_runner.cpp", ParseCase, RunCase);
}
