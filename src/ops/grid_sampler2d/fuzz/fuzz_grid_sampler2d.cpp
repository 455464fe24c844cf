// libFuzzer harness: aclnnGridSampler2D and aclnnGridSampler2DBackward (first byte: which).
// Input layout (one byte a field unless said; missing bytes read as 0, the plausible choice):
//   direction, N, C, Hin, Win, Hout, Wout, dtype, interpolationMode (+ attribute mutation), paddingMode
//   (+ mutation), alignCorners, [backward: outputMask kind], then each tensor (fuzz::DecodeTensor), the
//   out-pointer byte and phase 2's mode.
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "aclnnop/aclnn_grid_sampler2d.h"
#include "aclnnop/aclnn_grid_sampler2d_backward.h"
#include "fuzz_support.h"
#include "grid_sampler2d/test/grid_sampler2d_calls.h"

namespace {

constexpr const char* kForward = "aclnnGridSampler2D";
constexpr const char* kBackward = "aclnnGridSampler2DBackward";

// The outputMask argument: {true, true} by default; one output, none, null, or a wrong length.
struct OutputMask {
  aclBoolArray* array = nullptr;
  size_t length = 0;
  bool want_input_grad = false;
  bool want_grid_grad = false;

  ~OutputMask() {
    if (array != nullptr) aclDestroyBoolArray(array);
  }
};

void DecodeOutputMask(fuzz::Reader& r, OutputMask* mask) {
  const uint8_t kind = r.Byte() % 8;
  if (kind == 4) return;  // null: nothing to compute
  mask->length = kind == 5 ? r.Below(5) : 2;
  // The bytes as a caller might pass them (any nonzero byte is true), in an exact-size allocation.
  std::unique_ptr<unsigned char[]> bytes(new unsigned char[mask->length == 0 ? 1 : mask->length]);
  for (size_t i = 0; i < mask->length; ++i) bytes[i] = kind == 5 ? r.Byte() : 1;
  if (kind == 1 || kind == 3) bytes[1] = 0;
  if (kind == 2 || kind == 3) bytes[0] = 0;
  if (kind == 6) bytes[0] = 0x80;  // true, though not 1
  mask->array = aclCreateBoolArray(reinterpret_cast<const bool*>(bytes.get()), mask->length);
  FUZZ_CHECK(mask->array != nullptr, "aclCreateBoolArray failed: %s", fuzz::TakeRecentError().c_str());
  if (mask->length == 2) {
    mask->want_input_grad = bytes[0] != 0;
    mask->want_grid_grad = bytes[1] != 0;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader r(data, size);
  fuzz::Call call(data, size);
  const bool backward = r.Flag();
  const int64_t batch = 1 + static_cast<int64_t>(r.Below(2));
  const int64_t channels = 1 + static_cast<int64_t>(r.Below(20));  // across the 16-channel blocks
  const int64_t in_height = 1 + static_cast<int64_t>(r.Below(8));
  const int64_t in_width = 1 + static_cast<int64_t>(r.Below(8));
  const int64_t out_height = 1 + static_cast<int64_t>(r.Below(6));
  const int64_t out_width = 1 + static_cast<int64_t>(r.Below(6));
  constexpr aclDataType kDTypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE};
  const aclDataType dtype = kDTypes[r.Below(4)];
  const int64_t interpolation = fuzz::Attribute(r, static_cast<int64_t>(r.Below(3)));
  const int64_t padding = fuzz::Attribute(r, static_cast<int64_t>(r.Below(3)));
  const bool align_corners = r.Flag();
  OutputMask mask;
  if (backward) DecodeOutputMask(r, &mask);

  const std::vector<int64_t> input_shape = {batch, channels, in_height, in_width};
  const std::vector<int64_t> grid_shape = {batch, out_height, out_width, 2};
  const std::vector<int64_t> out_shape = {batch, channels, out_height, out_width};
  const fuzz::ValueRange grid_values{false, 1};  // |x|, |y| < 2: inside and outside [-1, 1]
  int grad_output = -1;
  if (backward) grad_output = call.Add(fuzz::DecodeTensor(r, "gradOutput", false, out_shape, dtype));
  const int input = call.Add(fuzz::DecodeTensor(r, "input", false, input_shape, dtype));
  const int grid = call.Add(fuzz::DecodeTensor(r, "grid", false, grid_shape, dtype, grid_values));
  int out = -1;
  int input_grad = -1;
  int grid_grad = -1;
  if (backward) {
    input_grad = call.Add(fuzz::DecodeTensor(r, "inputGrad", true, input_shape, dtype));
    grid_grad = call.Add(fuzz::DecodeTensor(r, "gridGrad", true, grid_shape, dtype));
  } else {
    out = call.Add(fuzz::DecodeTensor(r, "out", true, out_shape, dtype));
  }
  call.Materialize();
  call.DecodeOutPointers(r);

  const char* name = backward ? kBackward : kForward;
  fuzz::Note("%s: interpolationMode %lld, paddingMode %lld, alignCorners %d, outputMask %s (length %zu: %d, %d)",
             name, static_cast<long long>(interpolation), static_cast<long long>(padding), align_corners ? 1 : 0,
             mask.array == nullptr ? "null" : "given", mask.length, mask.want_input_grad ? 1 : 0,
             mask.want_grid_grad ? 1 : 0);
  aclnnStatus status;
  if (backward) {
    status = opcall::GetWorkspaceSize(
        opcall::GridSampler2DBackward{call.tensor(grad_output), call.tensor(input), call.tensor(grid), interpolation,
                                      padding, align_corners, mask.array, call.tensor(input_grad),
                                      call.tensor(grid_grad)},
        call.workspace_size_out(), call.executor_out());
  } else {
    status = opcall::GetWorkspaceSize(opcall::GridSampler2D{call.tensor(input), call.tensor(grid), interpolation,
                                                            padding, align_corners, call.tensor(out)},
                                      call.workspace_size_out(), call.executor_out());
  }
  if (!call.CheckPhase1(name, status, call.AnyPassedAsNull())) return 0;

  // Accepted: the documented rules hold.
  FUZZ_CHECK(interpolation >= 0 && interpolation <= 2 && padding >= 0 && padding <= 2,
             "%s accepted interpolationMode %lld, paddingMode %lld", name, static_cast<long long>(interpolation),
             static_cast<long long>(padding));
  const fuzz::TensorSpec& input_spec = call.spec(input);
  fuzz::CheckAcceptedDType(name, input_spec, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE});
  const std::vector<int64_t>& in = input_spec.dims;
  const std::vector<int64_t>& g = call.spec(grid).dims;
  FUZZ_CHECK(in.size() == 4 && g.size() == 4 && in[2] != 0 && in[3] != 0 && g[0] == in[0] && g[3] == 2,
             "%s accepted input dims %s and grid dims %s", name, fuzz::DimsString(in).c_str(),
             fuzz::DimsString(g).c_str());
  const std::vector<int64_t> accepted_out = {in[0], in[1], g[1], g[2]};
  std::vector<int> written;
  if (backward) {
    fuzz::CheckAcceptedDims(name, call.spec(grad_output), accepted_out);
    fuzz::CheckAcceptedDims(name, call.spec(input_grad), in);
    fuzz::CheckAcceptedDims(name, call.spec(grid_grad), g);
    FUZZ_CHECK(mask.array == nullptr || mask.length == 2, "%s accepted an outputMask of %zu elements", name,
               mask.length);
    if (mask.want_input_grad) written.push_back(input_grad);
    if (mask.want_grid_grad) written.push_back(grid_grad);
  } else {
    fuzz::CheckAcceptedDims(name, call.spec(out), accepted_out);
    written.push_back(out);
  }
  for (int index : {grad_output, grid, out, input_grad, grid_grad}) {
    FUZZ_CHECK(index < 0 || call.spec(index).dtype == input_spec.dtype, "%s accepted mixed dtypes", name);
  }

  // Bicubic reads 16 taps per output element and channel; the backward also scatters as many.
  const uint64_t taps = fuzz::SaturatingMul(fuzz::Elements(accepted_out), 16);
  call.RunPhase2(r, name, backward ? aclnnGridSampler2DBackward : aclnnGridSampler2D,
                 backward ? aclnnGridSampler2D : aclnnGridSampler2DBackward, written,
                 fuzz::SaturatingMul(taps, backward ? 3 : 1));
  return 0;
}
