// libFuzzer harness: aclnnScaledMaskedSoftmax and aclnnScaledMaskedSoftmaxBackward (first byte: which).
// Input layout (every field one byte unless said; missing bytes read as 0, the plausible choice):
//   direction, B, N, S1, S2, dtype, mask dim 0 broadcast, mask dim 1 broadcast, scale, fixTriuMask,
//   then each tensor (fuzz::DecodeTensor), the out-pointer byte and phase 2's mode.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "aclnnop/aclnn_scaled_masked_softmax.h"
#include "aclnnop/aclnn_scaled_masked_softmax_backward.h"
#include "fuzz_support.h"
#include "scaled_masked_softmax/test/scaled_masked_softmax_calls.h"

namespace {

constexpr const char* kForward = "aclnnScaledMaskedSoftmax";
constexpr const char* kBackward = "aclnnScaledMaskedSoftmaxBackward";

double DecodeScale(fuzz::Reader& r) {
  const uint8_t choice = r.Byte();
  switch (choice % 16) {
    case 1: return 0.125;
    case 2: return -2.0;
    case 3: return 0.0;
    case 4: return std::numeric_limits<double>::quiet_NaN();
    case 5: return std::numeric_limits<double>::infinity();
    case 6: return 1e30;
    case 7: return 1e-45;
    case 8: {
      const uint64_t bits = r.Bits(8);
      double value;
      std::memcpy(&value, &bits, sizeof value);
      return value;
    }
    default: return 1.0 + (choice >> 4) / 4.0;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader r(data, size);
  fuzz::Call call(data, size);
  const bool backward = r.Flag();
  const int64_t batch = 1 + static_cast<int64_t>(r.Below(3));
  const int64_t heads = 1 + static_cast<int64_t>(r.Below(3));
  const int64_t query_len = 1 + static_cast<int64_t>(r.Below(8));
  const uint8_t key_choice = r.Byte();
  const int64_t key_len = key_choice < 240 ? 1 + key_choice % 80 : 256 * (key_choice - 239);  // up to 4096
  constexpr aclDataType kDTypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
  const aclDataType dtype = kDTypes[r.Below(3)];
  const int64_t mask_batch = r.Flag() ? 1 : batch;
  const int64_t mask_heads = r.Flag() ? 1 : heads;
  const double scale = DecodeScale(r);
  const bool fix_triu = r.Byte() == 0xff;

  const std::vector<int64_t> shape = {batch, heads, query_len, key_len};
  const std::vector<int64_t> mask_shape = {mask_batch, mask_heads, query_len, key_len};
  const fuzz::ValueRange values{false, 3};
  int grad_output = -1;
  int x_or_y = -1;
  if (backward) {
    grad_output = call.Add(fuzz::DecodeTensor(r, "gradOutput", false, shape, dtype, values));
    x_or_y = call.Add(fuzz::DecodeTensor(r, "y", false, shape, dtype, fuzz::ValueRange{true, 0}));
  } else {
    x_or_y = call.Add(fuzz::DecodeTensor(r, "x", false, shape, dtype, values));
  }
  const int mask = call.Add(fuzz::DecodeTensor(r, "mask", false, mask_shape, ACL_BOOL));
  const int out = call.Add(fuzz::DecodeTensor(r, backward ? "out" : "y", true, shape, dtype));
  call.Materialize();
  call.DecodeOutPointers(r);

  const char* name = backward ? kBackward : kForward;
  fuzz::Note("%s: scale %.17g, fixTriuMask %d", name, scale, fix_triu ? 1 : 0);
  aclnnStatus status;
  if (backward) {
    status = opcall::GetWorkspaceSize(opcall::ScaledMaskedSoftmaxBackward{call.tensor(grad_output),
                                                                          call.tensor(x_or_y), call.tensor(mask),
                                                                          scale, fix_triu, call.tensor(out)},
                                      call.workspace_size_out(), call.executor_out());
  } else {
    status = opcall::GetWorkspaceSize(
        opcall::ScaledMaskedSoftmax{call.tensor(x_or_y), call.tensor(mask), scale, fix_triu, call.tensor(out)},
        call.workspace_size_out(), call.executor_out());
  }
  if (!call.CheckPhase1(name, status, call.AnyPassedAsNull())) return 0;

  // Accepted: the documented rules hold.
  const fuzz::TensorSpec& values_spec = call.spec(backward ? grad_output : x_or_y);
  fuzz::CheckAcceptedDType(name, values_spec, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16});
  const std::vector<int64_t>& accepted = values_spec.dims;
  FUZZ_CHECK(accepted.size() == 4 && accepted[3] >= 1 && accepted[3] <= 4096, "%s accepted %s of dims %s", name,
             values_spec.name.c_str(), fuzz::DimsString(accepted).c_str());
  FUZZ_CHECK(!fix_triu, "%s accepted fixTriuMask = true", name);
  for (int index : {x_or_y, out}) {
    fuzz::CheckAcceptedDims(name, call.spec(index), accepted);
    FUZZ_CHECK(call.spec(index).dtype == values_spec.dtype, "%s accepted mixed dtypes", name);
  }
  fuzz::CheckAcceptedDType(name, call.spec(mask), {ACL_BOOL});
  const std::vector<int64_t>& mask_dims = call.spec(mask).dims;
  FUZZ_CHECK(mask_dims.size() == 4 && mask_dims[2] == accepted[2] && mask_dims[3] == accepted[3] &&
                 (mask_dims[0] == 1 || mask_dims[0] == accepted[0]) &&
                 (mask_dims[1] == 1 || mask_dims[1] == accepted[1]),
             "%s accepted mask dims %s for %s", name, fuzz::DimsString(mask_dims).c_str(),
             fuzz::DimsString(accepted).c_str());

  const uint64_t work = fuzz::SaturatingMul(8, fuzz::Elements(accepted));
  call.RunPhase2(r, name, backward ? aclnnScaledMaskedSoftmaxBackward : aclnnScaledMaskedSoftmax,
                 backward ? aclnnScaledMaskedSoftmax : aclnnScaledMaskedSoftmaxBackward, {out}, work);
  return 0;
}
