#include "demo_support.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <utility>

#include "aclnn/opdev/op_errno.h"
#include "float_formats.h"

namespace demo {
namespace {

std::vector<Step>& RegisteredSteps() {
  static std::vector<Step>* const steps = new std::vector<Step>;  // filled during static initialisation
  return *steps;
}

// Runs a phase-1 result kTimedRuns times, or as often as fits in kTimedMilliseconds (repeatable executor), each run phase 2 + aclrtSynchronizeStream, and
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
  double total_milliseconds = 0;  // a slow call (MSDA in DOUBLE: seconds) is not repeated for a table of the demo
  for (int run = 0; run < kTimedRuns && total_milliseconds < kTimedMilliseconds && error.empty(); ++run) {
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
    total_milliseconds += elapsed.count();
  }
  if (workspace != nullptr) aclrtFree(workspace);
  aclDestroyAclOpExecutor(executor);
  return error;
}

// relative_tolerance: k(dtype) above unless a caller knows better (0). An infinite expected value (NSA's softmaxMax
// of a row that sees no key: -inf) must be matched exactly and does not count towards the largest value.
void Check(const std::vector<double>& got, const std::vector<double>& expected, Row* row,
           double relative_tolerance) {
  double largest = 0;
  for (double v : expected) {
    if (std::isfinite(v)) largest = std::max(largest, std::fabs(v));
  }
  row->tolerance = (relative_tolerance > 0 ? relative_tolerance : RelativeTolerance(row->dtype)) * largest;
  row->max_abs_error = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double error = std::isinf(expected[i]) ? (got[i] == expected[i] ? 0.0 : INFINITY)
                                                 : std::fabs(got[i] - expected[i]);
    if (std::isnan(error) || error > row->max_abs_error) row->max_abs_error = error;
    if (std::isnan(error)) break;
  }
  row->pass = row->max_abs_error <= row->tolerance;
}

}  // namespace

StepRegistration::StepRegistration(const char* op, std::initializer_list<aclDataType> dtypes, StepFunction run) {
  RegisteredSteps().push_back({op, dtypes, run});
}

std::vector<Step> AllSteps() {
  std::vector<Step> steps = RegisteredSteps();
  std::sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return std::strcmp(a.op, b.op) < 0; });
  return steps;
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

DeviceTensor::~DeviceTensor() {
  if (tensor_ != nullptr) aclDestroyTensor(tensor_);
  if (data_ != nullptr) aclrtFree(data_);
}

std::string DeviceTensor::Create(const std::vector<int64_t>& shape, aclDataType dtype,
                                 const std::vector<unsigned char>& host) {
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

std::string DeviceTensor::CopyOut(std::vector<unsigned char>* host) const {
  host->resize(bytes_);
  aclError status = aclrtMemcpy(host->data(), bytes_, data_, bytes_, ACL_MEMCPY_DEVICE_TO_HOST);
  return status == ACL_SUCCESS ? "" : Failure("aclrtMemcpy", status);
}


std::string TimedCall(aclrtStream stream, const opcall::OpCall& call, double* best_milliseconds) {
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus status = opcall::GetWorkspaceSize(call, &workspace_size, &executor);
  if (status != ACLNN_SUCCESS) {
    return Failure((std::string("aclnn") + call.op().name + "GetWorkspaceSize").c_str(), status);
  }
  return RunTimed(stream, workspace_size, executor, call.op().phase2, best_milliseconds);
}

// Completes the rows of one timed call and appends them to *rows. error: the call's failure, or "". When the call
// succeeded: reads every output back, checks each against its own expected values (computed by reference(), only
// then) with relative_tolerance (as for Check), and gives every row the call's time and its bandwidth for `bytes`
// moved. Returns "" or what failed (then the rows carry it); *got, when given, receives the outputs' values.
std::string CompleteCall(std::string error, double milliseconds, double bytes,
                         const std::vector<CheckedOutput>& outputs, const std::function<Expected()>& reference,
                         double relative_tolerance, std::vector<Row>* rows,
                         std::vector<std::vector<double>>* got) {
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

std::vector<double> RepeatEach(const std::vector<double>& values, int times) {
  std::vector<double> repeated;
  repeated.reserve(values.size() * static_cast<size_t>(times));
  for (double v : values) repeated.insert(repeated.end(), static_cast<size_t>(times), v);
  return repeated;
}

// Uniform values in [low, high) from a fixed-seed generator.
std::vector<unsigned char> Int32Bytes(const std::vector<int64_t>& values) {
  std::vector<unsigned char> bytes(values.size() * sizeof(int32_t));
  for (size_t i = 0; i < values.size(); ++i) {
    const auto v = static_cast<int32_t>(values[i]);
    std::memcpy(&bytes[i * sizeof(int32_t)], &v, sizeof(int32_t));
  }
  return bytes;
}

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

}  // namespace demo
