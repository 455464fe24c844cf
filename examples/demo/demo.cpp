// aclnn_demo: runs every implemented operator through the public aclnn API on a realistic shape in each of its
// dtypes, checks the results against the float64 references of the test tree, and prints a table of errors,
// times and bandwidths. Exits non-zero if any check fails. The table goes to stdout; a progress line per operator
// and dtype (with the time elapsed) goes to stderr.
//
// Check: max |result - reference| <= tolerance, where tolerance = k(dtype) * max |reference| with k = 1e-5 for
// FLOAT (fp32 arithmetic), 1e-12 for DOUBLE, 2^-10 for FLOAT16 and 2^-7 for BFLOAT16 (twice the rounding step of one
// correctly rounded result near the largest value). The unit tests check much more tightly, element by element.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "aclnn/opdev/op_errno.h"
#include "op_calls.h"
#include "reference/float_formats.h"
#include "reference/grid_sampler2d_reference.h"
#include "reference/msda_reference.h"
#include "reference/nsa_compress_reference.h"
#include "reference/scaled_masked_softmax_reference.h"

namespace {

const int kTimedRuns = 3;  // the time shown is the best of these

struct Row {
  std::string op;
  std::string output;  // which of the operator's outputs the row checks, when it has several
  aclDataType dtype = ACL_FLOAT;
  std::string shape;
  double max_abs_error = NAN;
  double tolerance = 0;
  double milliseconds = NAN;
  double gbps = NAN;
  bool pass = false;
  std::string error;  // a failed call, if any
};

const char* DTypeName(aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT:
      return "FLOAT";
    case ACL_FLOAT16:
      return "FLOAT16";
    case ACL_BF16:
      return "BFLOAT16";
    case ACL_DOUBLE:
      return "DOUBLE";
    default:
      return "?";
  }
}

double RelativeTolerance(aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT16:
      return std::ldexp(1.0, -10);
    case ACL_BF16:
      return std::ldexp(1.0, -7);
    case ACL_DOUBLE:
      return 1e-12;
    default:
      return 1e-5;
  }
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t d = 0; d < shape.size(); ++d) s += (d > 0 ? "x" : "") + std::to_string(shape[d]);
  return s;
}

int64_t ElementCount(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return count;
}

// A row not yet run: output "" when the operator has one output.
Row MakeRow(const char* op, const char* output, aclDataType dtype, const std::vector<int64_t>& shape) {
  Row row;
  row.op = op;
  row.output = output;
  row.dtype = dtype;
  row.shape = ShapeString(shape);
  return row;
}

// aclGetRecentErrMsg() returns NULL when no message is pending.
std::string RecentErrorMessage() {
  const char* message = aclGetRecentErrMsg();
  return message != nullptr ? message : "";
}

std::string Failure(const char* call, int status) {
  return std::string(call) + " returned " + std::to_string(status) + ": " + RecentErrorMessage();
}

// Values as stored in dtype, and back: the reference sees exactly the values the library reads.
std::vector<unsigned char> Encode(const std::vector<double>& values, aclDataType dtype) {
  const size_t size = aclDataTypeSize(dtype);
  std::vector<unsigned char> bytes(values.size() * size);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == ACL_FLOAT) {
      const float f = static_cast<float>(values[i]);
      std::memcpy(&bytes[i * size], &f, size);
    } else if (dtype == ACL_DOUBLE) {
      std::memcpy(&bytes[i * size], &values[i], size);
    } else {
      const uint16_t bits =
          dtype == ACL_FLOAT16 ? ref::DoubleToHalfBits(values[i]) : ref::DoubleToBFloat16Bits(values[i]);
      std::memcpy(&bytes[i * size], &bits, size);
    }
  }
  return bytes;
}

std::vector<double> Decode(const std::vector<unsigned char>& bytes, aclDataType dtype) {
  const size_t size = aclDataTypeSize(dtype);
  std::vector<double> values(bytes.size() / size);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == ACL_FLOAT) {
      float f;
      std::memcpy(&f, &bytes[i * size], size);
      values[i] = f;
    } else if (dtype == ACL_DOUBLE) {
      std::memcpy(&values[i], &bytes[i * size], size);
    } else {
      uint16_t bits;
      std::memcpy(&bits, &bytes[i * size], size);
      values[i] = dtype == ACL_FLOAT16 ? ref::HalfBitsToDouble(bits) : ref::BFloat16BitsToDouble(bits);
    }
  }
  return values;
}

// Rounds values to dtype in place (so inputs are exactly representable).
void RoundTo(aclDataType dtype, std::vector<double>* values) { *values = Decode(Encode(*values, dtype), dtype); }

// A contiguous ND device tensor.
class DeviceTensor {
 public:
  DeviceTensor() = default;
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
  ~DeviceTensor() {
    if (tensor_ != nullptr) aclDestroyTensor(tensor_);
    if (data_ != nullptr) aclrtFree(data_);
  }

  // Copies host bytes in; with host empty, fills the buffer with 0xFF bytes (NaN in every float format) so an
  // element the operator does not write shows up in the check.
  std::string Create(const std::vector<int64_t>& shape, aclDataType dtype, const std::vector<unsigned char>& host) {
    bytes_ = static_cast<size_t>(ElementCount(shape)) * aclDataTypeSize(dtype);
    aclError status = aclrtMalloc(&data_, bytes_, ACL_MEM_MALLOC_HUGE_FIRST);
    if (status != ACL_SUCCESS) return Failure("aclrtMalloc", status);
    status = host.empty() ? aclrtMemset(data_, bytes_, 0xFF, bytes_)
                          : aclrtMemcpy(data_, bytes_, host.data(), bytes_, ACL_MEMCPY_HOST_TO_DEVICE);
    if (status != ACL_SUCCESS) return Failure("aclrtMemcpy/aclrtMemset", status);
    std::vector<int64_t> strides(shape.size(), 1);
    for (size_t d = shape.size(); d > 1; --d) strides[d - 2] = strides[d - 1] * shape[d - 1];
    tensor_ = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                              shape.size(), data_);
    return tensor_ != nullptr ? "" : std::string("aclCreateTensor: ") + RecentErrorMessage();
  }

  std::string CopyOut(std::vector<unsigned char>* host) const {
    host->resize(bytes_);
    aclError status = aclrtMemcpy(host->data(), bytes_, data_, bytes_, ACL_MEMCPY_DEVICE_TO_HOST);
    return status == ACL_SUCCESS ? "" : Failure("aclrtMemcpy", status);
  }

  aclTensor* tensor() const { return tensor_; }
  size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  aclTensor* tensor_ = nullptr;
  size_t bytes_ = 0;
};


// Runs a phase-1 result kTimedRuns times (repeatable executor), each run phase 2 + aclrtSynchronizeStream, and
// records the best time. Releases the executor.
std::string RunTimed(aclrtStream stream, uint64_t workspace_size, aclOpExecutor* executor,
                     opcall::Phase2Function phase2, double* best_milliseconds) {
  std::string error;
  aclnnStatus status = aclSetAclOpExecutorRepeatable(executor);
  if (status != ACLNN_SUCCESS) return Failure("aclSetAclOpExecutorRepeatable", status);
  void* workspace = nullptr;
  if (workspace_size > 0) {
    aclError alloc = aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST);
    if (alloc != ACL_SUCCESS) error = Failure("aclrtMalloc(workspace)", alloc);
  }
  *best_milliseconds = INFINITY;
  for (int run = 0; run < kTimedRuns && error.empty(); ++run) {
    const auto start = std::chrono::steady_clock::now();
    status = phase2(workspace, workspace_size, executor, stream);
    if (status != ACLNN_SUCCESS) {
      error = Failure("phase 2", status);
      break;
    }
    aclError sync = aclrtSynchronizeStream(stream);
    if (sync != ACL_SUCCESS) {
      error = Failure("aclrtSynchronizeStream", sync);
      break;
    }
    const std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - start;
    *best_milliseconds = std::min(*best_milliseconds, elapsed.count());
  }
  if (workspace != nullptr) aclrtFree(workspace);
  aclDestroyAclOpExecutor(executor);
  return error;
}

// RunTimed on a successful phase 1, else the phase-1 failure (phase1_name and its status).
// Phase 1 of `call` (an entry of the operator-call table, tests/op_calls), then RunTimed.
std::string TimedCall(aclrtStream stream, const opcall::OpCall& call, double* best_milliseconds) {
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  const opcall::OpKind op = opcall::KindOf(call);
  const aclnnStatus status = opcall::GetWorkspaceSize(call, &workspace_size, &executor);
  if (status != ACLNN_SUCCESS) {
    return Failure((std::string("aclnn") + opcall::OpName(op) + "GetWorkspaceSize").c_str(), status);
  }
  return RunTimed(stream, workspace_size, executor, opcall::Phase2Of(op), best_milliseconds);
}

// relative_tolerance: k(dtype) above unless a caller knows better (0).
void Check(const std::vector<double>& got, const std::vector<double>& expected, Row* row,
           double relative_tolerance = 0) {
  double largest = 0;
  for (double v : expected) largest = std::max(largest, std::fabs(v));
  row->tolerance = (relative_tolerance > 0 ? relative_tolerance : RelativeTolerance(row->dtype)) * largest;
  row->max_abs_error = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double error = std::fabs(got[i] - expected[i]);
    if (std::isnan(error) || error > row->max_abs_error) row->max_abs_error = error;
    if (std::isnan(error)) break;
  }
  row->pass = row->max_abs_error <= row->tolerance;
}

// One output of a timed call: its device tensor and the row that reports its check.
struct CheckedOutput {
  const DeviceTensor* device;
  Row* row;
};
// The expected values of a call's outputs, one vector per output, in the order of its CheckedOutputs.
using Expected = std::vector<std::vector<double>>;

// Completes the rows of one timed call and appends them to *rows. error: the call's failure, or "". When the call
// succeeded: reads every output back, checks each against its own expected values (computed by reference(), only
// then) with relative_tolerance (as for Check), and gives every row the call's time and its bandwidth for `bytes`
// moved. Returns "" or what failed (then the rows carry it); *got, when given, receives the outputs' values.
std::string CompleteCall(std::string error, double milliseconds, double bytes,
                         const std::vector<CheckedOutput>& outputs, const std::function<Expected()>& reference,
                         double relative_tolerance, std::vector<Row>* rows,
                         std::vector<std::vector<double>>* got = nullptr) {
  std::vector<std::vector<double>> values;
  for (size_t i = 0; i < outputs.size() && error.empty(); ++i) {
    std::vector<unsigned char> output_bytes;
    error = outputs[i].device->CopyOut(&output_bytes);
    values.push_back(Decode(output_bytes, outputs[i].row->dtype));
  }
  Expected expected;
  if (error.empty()) expected = reference();
  for (size_t i = 0; i < outputs.size() && error.empty(); ++i) {
    if (i >= expected.size() || expected[i].size() != values[i].size()) {
      error = "demo: the reference of " + outputs[i].row->op + " does not match its output " + std::to_string(i);
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    Row* row = outputs[i].row;
    if (error.empty()) {
      Check(values[i], expected[i], row, relative_tolerance);
      row->milliseconds = milliseconds;
      row->gbps = bytes / (milliseconds * 1e-3) / 1e9;
    } else {
      row->error = error;
    }
    rows->push_back(*row);
  }
  if (got != nullptr && error.empty()) *got = std::move(values);
  return error;
}

// Uniform values in [low, high) from a fixed-seed generator.
std::vector<double> RandomValues(int64_t count, double low, double high, uint64_t seed) {
  std::vector<double> values(static_cast<size_t>(count));
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (double& v : values) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    v = low + (high - low) * static_cast<double>(state >> 11) * 0x1.0p-53;
  }
  return values;
}

// Bytes of the tensors a call reads and writes, each counted once.
double TotalBytes(const std::vector<const DeviceTensor*>& tensors) {
  double bytes = 0;
  for (const DeviceTensor* t : tensors) bytes += static_cast<double>(t->bytes());
  return bytes;
}

// ScaledMaskedSoftmax forward then backward (on the forward's own output, as in training), one dtype.
void RunScaledMaskedSoftmax(aclrtStream stream, aclDataType dtype, std::vector<Row>* rows) {
  // Attention scores of 2 sequences, 16 heads, 512 tokens; one mask per sequence: causal, and sequence 1 is
  // padded (its last 64 keys masked).
  const std::vector<int64_t> shape = {2, 16, 512, 512};
  const std::vector<int64_t> mask_shape = {2, 1, 512, 512};
  const int64_t B = shape[0], N = shape[1], S1 = shape[2], S2 = shape[3];
  const double scale = 0.125;
  const int64_t count = ElementCount(shape);

  Row forward = MakeRow("ScaledMaskedSoftmax", "", dtype, shape);
  Row backward = MakeRow("ScaledMaskedSoftmaxBackward", "", dtype, shape);

  std::vector<uint8_t> mask(static_cast<size_t>(ElementCount(mask_shape)));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t q = 0; q < S1; ++q) {
      for (int64_t k = 0; k < S2; ++k) mask[(b * S1 + q) * S2 + k] = (k > q || (b == 1 && k >= S2 - 64)) ? 1 : 0;
    }
  }
  std::vector<double> x = RandomValues(count, -16.0, 16.0, 1);
  std::vector<double> grad_output = RandomValues(count, -1.0, 1.0, 2);
  RoundTo(dtype, &x);
  RoundTo(dtype, &grad_output);

  DeviceTensor x_dev, mask_dev, y_dev, grad_output_dev, out_dev;
  std::string error = x_dev.Create(shape, dtype, Encode(x, dtype));
  if (error.empty())
    error = mask_dev.Create(mask_shape, ACL_BOOL, std::vector<unsigned char>(mask.begin(), mask.end()));
  if (error.empty()) error = y_dev.Create(shape, dtype, {});
  if (error.empty()) error = grad_output_dev.Create(shape, dtype, Encode(grad_output, dtype));
  if (error.empty()) error = out_dev.Create(shape, dtype, {});

  double milliseconds = NAN;
  if (error.empty()) {
    error = TimedCall(
        stream, opcall::ScaledMaskedSoftmax{x_dev.tensor(), mask_dev.tensor(), scale, false, y_dev.tensor()},
        &milliseconds);
  }
  std::vector<std::vector<double>> y;  // the forward's output: the backward's input
  error = CompleteCall(
      error, milliseconds, TotalBytes({&x_dev, &mask_dev, &y_dev}), {{&y_dev, &forward}},
      [&] {
        std::vector<double> expected(static_cast<size_t>(count));
        ref::ScaledMaskedSoftmaxForward(x.data(), mask.data(), B, N, S1, S2, mask_shape[0], mask_shape[1], scale,
                                        expected.data());
        return Expected{expected};
      },
      0, rows, &y);

  if (error.empty()) {
    error = TimedCall(stream,
                      opcall::ScaledMaskedSoftmaxBackward{grad_output_dev.tensor(), y_dev.tensor(), mask_dev.tensor(),
                                                          scale, false, out_dev.tensor()},
                      &milliseconds);
  }
  CompleteCall(
      error, milliseconds, TotalBytes({&grad_output_dev, &y_dev, &mask_dev, &out_dev}), {{&out_dev, &backward}},
      [&] {
        std::vector<double> expected(static_cast<size_t>(count));
        ref::ScaledMaskedSoftmaxBackward(grad_output.data(), y[0].data(), mask.data(), B, N, S1, S2, mask_shape[0],
                                         mask_shape[1], scale, expected.data());
        return Expected{expected};
      },
      0, rows);
}

// The grid sampler computes pixel coordinates in the working precision: an fp32 coordinate is off by up to about
// eps32 * size pixels, and the result moves by that times the image's slope (at most 2 per pixel for values in
// [-1, 1]). So FLOAT gets max(k, 8 * eps32 * size); the other dtypes' k already exceed that.
double GridSamplerTolerance(aclDataType dtype, const ref::GridSamplerShape& s) {
  const double coordinate_bound = 8.0 * std::ldexp(1.0, -24) * static_cast<double>(std::max(s.Hin, s.Win));
  return dtype == ACL_FLOAT ? std::max(RelativeTolerance(dtype), coordinate_bound) : RelativeTolerance(dtype);
}

// GridSampler2D forward and backward (bilinear, zeros padding, alignCorners false: a spatial-transformer warp),
// one dtype: a batch of 2 feature maps of 32 channels, 128x128, sampled through a rotated, scaled grid.
void RunGridSampler2D(aclrtStream stream, aclDataType dtype, std::vector<Row>* rows) {
  const ref::GridSamplerShape s{2, 32, 128, 128, 128, 128};
  const std::vector<int64_t> input_shape = {s.N, s.C, s.Hin, s.Win};
  const std::vector<int64_t> grid_shape = {s.N, s.Hout, s.Wout, 2};
  const std::vector<int64_t> out_shape = {s.N, s.C, s.Hout, s.Wout};
  const int interpolation = 0, padding = 0;
  const bool align_corners = false;
  const double tolerance = GridSamplerTolerance(dtype, s);

  Row forward = MakeRow("GridSampler2D", "", dtype, out_shape);
  Row input_grad_row = MakeRow("GridSampler2DBackward", "inputGrad", dtype, input_shape);
  Row grid_grad_row = MakeRow("GridSampler2DBackward", "gridGrad", dtype, grid_shape);

  std::vector<double> input = RandomValues(ElementCount(input_shape), -1.0, 1.0, 3);
  std::vector<double> grad_output = RandomValues(ElementCount(out_shape), -1.0, 1.0, 4);
  std::vector<double> jitter = RandomValues(ElementCount(grid_shape), -0.01, 0.01, 5);
  std::vector<double> grid(jitter.size());
  const double angle = 0.3, zoom = 1.1;
  for (int64_t n = 0; n < s.N; ++n) {
    for (int64_t h = 0; h < s.Hout; ++h) {
      for (int64_t w = 0; w < s.Wout; ++w) {
        const double u = (2.0 * w + 1.0) / s.Wout - 1.0, v = (2.0 * h + 1.0) / s.Hout - 1.0;
        const size_t i = static_cast<size_t>(((n * s.Hout + h) * s.Wout + w) * 2);
        grid[i] = zoom * (std::cos(angle) * u - std::sin(angle) * v) + jitter[i];
        grid[i + 1] = zoom * (std::sin(angle) * u + std::cos(angle) * v) + jitter[i + 1];
      }
    }
  }
  RoundTo(dtype, &input);
  RoundTo(dtype, &grad_output);
  RoundTo(dtype, &grid);

  DeviceTensor input_dev, grid_dev, out_dev, grad_output_dev, input_grad_dev, grid_grad_dev;
  std::string setup_error = input_dev.Create(input_shape, dtype, Encode(input, dtype));
  if (setup_error.empty()) setup_error = grid_dev.Create(grid_shape, dtype, Encode(grid, dtype));
  if (setup_error.empty()) setup_error = out_dev.Create(out_shape, dtype, {});
  if (setup_error.empty()) setup_error = grad_output_dev.Create(out_shape, dtype, Encode(grad_output, dtype));
  if (setup_error.empty()) setup_error = input_grad_dev.Create(input_shape, dtype, {});
  if (setup_error.empty()) setup_error = grid_grad_dev.Create(grid_shape, dtype, {});

  double milliseconds = NAN;
  std::string error = setup_error;
  if (error.empty()) {
    error = TimedCall(stream,
                      opcall::GridSampler2D{input_dev.tensor(), grid_dev.tensor(), interpolation, padding,
                                            align_corners, out_dev.tensor()},
                      &milliseconds);
  }
  CompleteCall(
      error, milliseconds, TotalBytes({&input_dev, &grid_dev, &out_dev}), {{&out_dev, &forward}},
      [&] {
        std::vector<double> expected(static_cast<size_t>(ElementCount(out_shape)));
        ref::GridSampler2DForward(input.data(), grid.data(), s, interpolation, padding, align_corners, expected.data());
        return Expected{expected};
      },
      tolerance, rows);

  // Backward: one call, two outputs (outputMask [true, true]), each checked against its own largest value.
  const bool mask_values[2] = {true, true};
  aclBoolArray* output_mask = aclCreateBoolArray(mask_values, 2);
  error = setup_error;
  if (error.empty() && output_mask == nullptr) error = std::string("aclCreateBoolArray: ") + RecentErrorMessage();
  if (error.empty()) {
    error = TimedCall(stream,
                      opcall::GridSampler2DBackward{grad_output_dev.tensor(), input_dev.tensor(), grid_dev.tensor(),
                                                    interpolation, padding, align_corners, output_mask,
                                                    input_grad_dev.tensor(), grid_grad_dev.tensor()},
                      &milliseconds);
  }
  if (output_mask != nullptr) aclDestroyBoolArray(output_mask);
  CompleteCall(
      error, milliseconds, TotalBytes({&grad_output_dev, &input_dev, &grid_dev, &input_grad_dev, &grid_grad_dev}),
      {{&input_grad_dev, &input_grad_row}, {&grid_grad_dev, &grid_grad_row}},
      [&] {
        std::vector<double> input_grad(input.size()), grid_grad(grid.size());
        ref::GridSampler2DBackward(grad_output.data(), input.data(), grid.data(), s, interpolation, padding,
                                   align_corners, input_grad.data(), grid_grad.data());
        return Expected{input_grad, grid_grad};
      },
      tolerance, rows);
}

// MultiScaleDeformableAttention forward and backward, one dtype, on Deformable DETR's encoder self-attention:
// 2 images, 4 levels of (H, W) = (100, 150), (50, 75), (25, 38), (13, 19) (19947 keys), every pixel of every
// level a query (nq = nk = 19947), 8 heads of 32 channels, 4 points on each level; INT64 spatialShape and
// levelStartIndex, as PyTorch models pass them. A query's locations are its own pixel's centre (its reference
// point, as the encoder has it) plus small offsets (+-0.05) per (head, level, point); attention weights a softmax
// over each query and head's 16 (level, point) pairs.
//
// The locations are multiples of 2^-16: then the pixel coordinate loc * W - 0.5 (W, H < 256) is exact in fp32 and
// the operator and the float64 reference pick the same bilinear cell. (gradLocation jumps where a coordinate crosses
// an integer, so a coordinate rounded across one would be a legitimate difference of O(1), not an error.) In
// FLOAT16 and BFLOAT16 the rounded locations are such multiples anyway.
void RunMultiScaleDeformableAttention(aclrtStream stream, aclDataType dtype, std::vector<Row>* rows) {
  const std::vector<int64_t> heights = {100, 50, 25, 13}, widths = {150, 75, 38, 19};
  ref::MsdaShape s{2, 0, 8, 32, static_cast<int64_t>(heights.size()), 0, 4};
  std::vector<int64_t> spatial_shape, level_start;
  std::vector<double> pixel_centres;  // (x, y) of every key, in key order: the queries' reference points
  for (size_t l = 0; l < heights.size(); ++l) {
    spatial_shape.push_back(heights[l]);
    spatial_shape.push_back(widths[l]);
    level_start.push_back(s.nk);
    s.nk += heights[l] * widths[l];
    for (int64_t y = 0; y < heights[l]; ++y) {
      for (int64_t x = 0; x < widths[l]; ++x) {
        pixel_centres.push_back((static_cast<double>(x) + 0.5) / static_cast<double>(widths[l]));
        pixel_centres.push_back((static_cast<double>(y) + 0.5) / static_cast<double>(heights[l]));
      }
    }
  }
  s.nq = s.nk;
  const std::vector<int64_t> value_shape = {s.bs, s.nk, s.nh, s.c};
  const std::vector<int64_t> location_shape = {s.bs, s.nq, s.nh, s.nl, s.np, 2};
  const std::vector<int64_t> attn_shape = {s.bs, s.nq, s.nh, s.nl, s.np};
  const std::vector<int64_t> output_shape = {s.bs, s.nq, s.nh * s.c};

  Row forward = MakeRow("MultiScaleDeformableAttnFunction", "", dtype, output_shape);
  Row grad_value_row = MakeRow("MultiScaleDeformableAttentionGrad", "gradValue", dtype, value_shape);
  Row grad_location_row = MakeRow("MultiScaleDeformableAttentionGrad", "gradLocation", dtype, location_shape);
  Row grad_attn_row = MakeRow("MultiScaleDeformableAttentionGrad", "gradAttnWeight", dtype, attn_shape);

  std::vector<double> value = RandomValues(ElementCount(value_shape), -1.0, 1.0, 6);
  std::vector<double> grad_output = RandomValues(ElementCount(output_shape), -1.0, 1.0, 7);
  std::vector<double> location = RandomValues(ElementCount(location_shape), -0.05, 0.05, 9);
  const size_t coordinates_per_query = static_cast<size_t>(s.nh * s.nl * s.np * 2);
  for (size_t i = 0; i < location.size(); ++i) {
    const size_t query = i / coordinates_per_query % static_cast<size_t>(s.nq);  // the same in every image
    location[i] = std::round((location[i] + pixel_centres[2 * query + i % 2]) * 65536.0) / 65536.0;
  }
  std::vector<double> attn = RandomValues(ElementCount(attn_shape), -2.0, 2.0, 10);  // logits, then a softmax
  const size_t group = static_cast<size_t>(s.nl * s.np);
  for (size_t begin = 0; begin < attn.size(); begin += group) {
    double sum = 0;
    for (size_t k = begin; k < begin + group; ++k) {
      attn[k] = std::exp(attn[k]);
      sum += attn[k];
    }
    for (size_t k = begin; k < begin + group; ++k) attn[k] /= sum;
  }
  RoundTo(dtype, &value);
  RoundTo(dtype, &grad_output);
  RoundTo(dtype, &location);
  RoundTo(dtype, &attn);

  auto index_bytes = [](const std::vector<int64_t>& values) {
    std::vector<unsigned char> bytes(values.size() * sizeof(int64_t));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
  };
  DeviceTensor value_dev, spatial_shape_dev, level_start_dev, location_dev, attn_dev, output_dev, grad_output_dev,
      grad_value_dev, grad_location_dev, grad_attn_dev;
  std::string setup_error = value_dev.Create(value_shape, dtype, Encode(value, dtype));
  if (setup_error.empty()) setup_error = spatial_shape_dev.Create({s.nl, 2}, ACL_INT64, index_bytes(spatial_shape));
  if (setup_error.empty()) setup_error = level_start_dev.Create({s.nl}, ACL_INT64, index_bytes(level_start));
  if (setup_error.empty()) setup_error = location_dev.Create(location_shape, dtype, Encode(location, dtype));
  if (setup_error.empty()) setup_error = attn_dev.Create(attn_shape, dtype, Encode(attn, dtype));
  if (setup_error.empty()) setup_error = output_dev.Create(output_shape, dtype, {});
  if (setup_error.empty()) setup_error = grad_output_dev.Create(output_shape, dtype, Encode(grad_output, dtype));
  if (setup_error.empty()) setup_error = grad_value_dev.Create(value_shape, dtype, {});
  if (setup_error.empty()) setup_error = grad_location_dev.Create(location_shape, dtype, {});
  if (setup_error.empty()) setup_error = grad_attn_dev.Create(attn_shape, dtype, {});

  double milliseconds = NAN;
  std::string error = setup_error;
  if (error.empty()) {
    error = TimedCall(stream,
                      opcall::MultiScaleDeformableAttnFunction{value_dev.tensor(), spatial_shape_dev.tensor(),
                                                               level_start_dev.tensor(), location_dev.tensor(),
                                                               attn_dev.tensor(), output_dev.tensor()},
                      &milliseconds);
  }
  CompleteCall(
      error, milliseconds, TotalBytes({&value_dev, &location_dev, &attn_dev, &output_dev}), {{&output_dev, &forward}},
      [&] {
        std::vector<double> expected(static_cast<size_t>(ElementCount(output_shape)));
        ref::MsdaForward(value.data(), spatial_shape.data(), level_start.data(), location.data(), attn.data(), s,
                         expected.data());
        return Expected{expected};
      },
      0, rows);

  // Backward: one call, three outputs, each checked against its own largest value.
  error = setup_error;
  if (error.empty()) {
    error = TimedCall(stream,
                      opcall::MultiScaleDeformableAttentionGrad{
                          value_dev.tensor(), spatial_shape_dev.tensor(), level_start_dev.tensor(),
                          location_dev.tensor(), attn_dev.tensor(), grad_output_dev.tensor(),
                          grad_value_dev.tensor(), grad_location_dev.tensor(), grad_attn_dev.tensor()},
                      &milliseconds);
  }
  CompleteCall(
      error, milliseconds,
      TotalBytes({&value_dev, &location_dev, &attn_dev, &grad_output_dev, &grad_value_dev, &grad_location_dev,
                  &grad_attn_dev}),
      {{&grad_value_dev, &grad_value_row}, {&grad_location_dev, &grad_location_row}, {&grad_attn_dev, &grad_attn_row}},
      [&] {
        std::vector<double> grad_value(value.size()), grad_location(location.size()), grad_attn(attn.size());
        ref::MsdaBackward(value.data(), spatial_shape.data(), level_start.data(), location.data(), attn.data(),
                          grad_output.data(), s, grad_value.data(), grad_location.data(), grad_attn.data());
        return Expected{grad_value, grad_location, grad_attn};
      },
      0, rows);
}

// NsaCompress forward and backward (Native Sparse Attention's key/value compression), one dtype: 4 sequences of
// 1024, 20, 1979 and 1093 tokens (the second shorter than a block: it has no block, and its inputGrad is all
// zeros), 4 heads of 128, compressBlockSize 32, compressStride 16, layout "TND".
void RunNsaCompress(aclrtStream stream, aclDataType dtype, std::vector<Row>* rows) {
  const std::vector<int64_t> act_seq_len = {1024, 1044, 3023, 4116};
  const int64_t block_size = 32, stride = 16;
  const ref::NsaCompressShape s{act_seq_len.back(), 4, 128, block_size};
  const std::vector<int64_t> block_starts = ref::NsaCompressBlockStarts(act_seq_len, block_size, stride);
  const std::vector<int64_t> input_shape = {s.tokens, s.heads, s.dim};
  const std::vector<int64_t> weight_shape = {block_size, s.heads};
  const std::vector<int64_t> output_shape = {static_cast<int64_t>(block_starts.size()), s.heads, s.dim};

  Row forward = MakeRow("NsaCompress", "", dtype, output_shape);
  Row input_grad_row = MakeRow("NsaCompressGrad", "inputGrad", dtype, input_shape);
  Row weight_grad_row = MakeRow("NsaCompressGrad", "weightGrad", dtype, weight_shape);

  std::vector<double> input = RandomValues(ElementCount(input_shape), -1.0, 1.0, 11);
  std::vector<double> weight = RandomValues(ElementCount(weight_shape), -0.25, 0.25, 12);
  std::vector<double> output_grad = RandomValues(ElementCount(output_shape), -1.0, 1.0, 13);
  RoundTo(dtype, &input);
  RoundTo(dtype, &weight);
  RoundTo(dtype, &output_grad);

  DeviceTensor input_dev, weight_dev, output_dev, output_grad_dev, input_grad_dev, weight_grad_dev;
  std::string setup_error = input_dev.Create(input_shape, dtype, Encode(input, dtype));
  if (setup_error.empty()) setup_error = weight_dev.Create(weight_shape, dtype, Encode(weight, dtype));
  if (setup_error.empty()) setup_error = output_dev.Create(output_shape, dtype, {});
  if (setup_error.empty()) setup_error = output_grad_dev.Create(output_shape, dtype, Encode(output_grad, dtype));
  if (setup_error.empty()) setup_error = input_grad_dev.Create(input_shape, dtype, {});
  if (setup_error.empty()) setup_error = weight_grad_dev.Create(weight_shape, dtype, {});
  aclIntArray* act_seq_len_array = aclCreateIntArray(act_seq_len.data(), act_seq_len.size());
  if (setup_error.empty() && act_seq_len_array == nullptr) setup_error = "aclCreateIntArray: " + RecentErrorMessage();

  double milliseconds = NAN;
  std::string error = setup_error;
  if (error.empty()) {
    error = TimedCall(stream,
                      opcall::NsaCompress{input_dev.tensor(), weight_dev.tensor(), act_seq_len_array, "TND",
                                          block_size, stride, 0, output_dev.tensor()},
                      &milliseconds);
  }
  CompleteCall(
      error, milliseconds, TotalBytes({&input_dev, &weight_dev, &output_dev}), {{&output_dev, &forward}},
      [&] {
        std::vector<double> expected(static_cast<size_t>(ElementCount(output_shape)));
        ref::NsaCompressForward(input.data(), weight.data(), block_starts, s, expected.data());
        return Expected{expected};
      },
      0, rows);

  // Backward: one call, two outputs, each checked against its own largest value.
  error = setup_error;
  if (error.empty()) {
    error = TimedCall(stream,
                      opcall::NsaCompressGrad{output_grad_dev.tensor(), input_dev.tensor(), weight_dev.tensor(),
                                              act_seq_len_array, block_size, stride, 0, "TND",
                                              input_grad_dev.tensor(), weight_grad_dev.tensor()},
                      &milliseconds);
  }
  if (act_seq_len_array != nullptr) aclDestroyIntArray(act_seq_len_array);
  CompleteCall(
      error, milliseconds, TotalBytes({&input_dev, &weight_dev, &output_grad_dev, &input_grad_dev, &weight_grad_dev}),
      {{&input_grad_dev, &input_grad_row}, {&weight_grad_dev, &weight_grad_row}},
      [&] {
        std::vector<double> input_grad(input.size()), weight_grad(weight.size());
        ref::NsaCompressBackward(input.data(), weight.data(), output_grad.data(), block_starts, s, input_grad.data(),
                                 weight_grad.data());
        return Expected{input_grad, weight_grad};
      },
      0, rows);
}

bool Ok(aclError status, const char* call) {
  if (status == ACL_SUCCESS) return true;
  std::fprintf(stderr, "%s failed with %d: %s\n", call, status, RecentErrorMessage().c_str());
  return false;
}

}  // namespace

int main() {
  const int32_t device = 0;
  aclrtStream stream = nullptr;
  if (!Ok(aclInit(nullptr), "aclInit")) return 1;
  if (!Ok(aclrtSetDevice(device), "aclrtSetDevice") || !Ok(aclrtCreateStream(&stream), "aclrtCreateStream")) {
    aclFinalize();
    return 1;
  }

  const char* threads = std::getenv("ACLNN_NUM_THREADS");
  std::printf("portable-aclnn demo (ACLNN_NUM_THREADS=%s; time = best of %d runs of phase 2 + synchronize)\n\n",
              threads != nullptr ? threads : "unset: all CPUs", kTimedRuns);
  std::fflush(stdout);

  // One step per operator and dtype: its forward and backward, run, read back and checked.
  struct Step {
    const char* op;
    aclDataType dtype;
    void (*run)(aclrtStream stream, aclDataType dtype, std::vector<Row>* rows);
  };
  std::vector<Step> steps;
  for (aclDataType dtype : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
    steps.push_back({"ScaledMaskedSoftmax", dtype, RunScaledMaskedSoftmax});
  }
  for (aclDataType dtype : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE}) {
    steps.push_back({"GridSampler2D", dtype, RunGridSampler2D});
  }
  for (aclDataType dtype : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
    steps.push_back({"MultiScaleDeformableAttention", dtype, RunMultiScaleDeformableAttention});
  }
  for (aclDataType dtype : {ACL_FLOAT16, ACL_BF16}) steps.push_back({"NsaCompress", dtype, RunNsaCompress});

  // Progress on stderr, a line per step, so that stdout holds only the table.
  const auto start = std::chrono::steady_clock::now();
  auto elapsed_seconds = [&start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<Row> rows;
  for (size_t i = 0; i < steps.size(); ++i) {
    std::fprintf(stderr, "[%zu/%zu] %s %s: forward and backward, checked against float64 (elapsed %.0f s)\n", i + 1,
                 steps.size(), steps[i].op, DTypeName(steps[i].dtype), elapsed_seconds());
    steps[i].run(stream, steps[i].dtype, &rows);
  }
  std::fprintf(stderr, "all %zu steps done in %.0f s\n", steps.size(), elapsed_seconds());

  // A row that checks one of several outputs is labelled "operator:output".
  auto label = [](const Row& row) { return row.output.empty() ? row.op : row.op + ":" + row.output; };
  int op_width = 8, shape_width = 5;
  for (const Row& row : rows) {
    op_width = std::max(op_width, static_cast<int>(label(row).size()));
    shape_width = std::max(shape_width, static_cast<int>(row.shape.size()));
  }
  std::printf("%-*s %-9s %-*s %13s %11s %-6s %9s %8s\n", op_width, "operator", "dtype", shape_width, "shape",
              "max abs error", "tolerance", "check", "time ms", "GB/s");
  bool all_pass = true;
  for (const Row& row : rows) {
    if (!row.error.empty()) {
      std::printf("%-*s %-9s %-*s FAILED: %s\n", op_width, label(row).c_str(), DTypeName(row.dtype), shape_width,
                  row.shape.c_str(), row.error.c_str());
      all_pass = false;
      continue;
    }
    std::printf("%-*s %-9s %-*s %13.3e %11.3e %-6s %9.3f %8.2f\n", op_width, label(row).c_str(), DTypeName(row.dtype),
                shape_width, row.shape.c_str(), row.max_abs_error, row.tolerance, row.pass ? "pass" : "FAIL",
                row.milliseconds, row.gbps);
    all_pass = all_pass && row.pass;
  }
  std::printf("\n%s\n", all_pass ? "all checks passed" : "SOME CHECKS FAILED");

  aclrtDestroyStream(stream);
  aclrtResetDevice(device);
  aclFinalize();
  return all_pass ? 0 : 1;
}
