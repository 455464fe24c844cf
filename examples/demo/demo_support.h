// What aclnn_demo's operator steps share (examples/demo/demo.cpp runs them): device tensors made through the public
// API, a timed call through the operator-call table, and the checks against the float64 references.
//
// Each operator's step is src/ops/<op>/test/<op>_demo.cpp, which registers itself:
//   const demo::StepRegistration kRegistration("GridSampler2D", {ACL_FLOAT, ACL_FLOAT16}, RunGridSampler2D);
// (The steps are compiled into aclnn_demo itself, examples/CMakeLists.txt, so every registration is linked.)
//
// Check: max |result - reference| <= tolerance, where tolerance = k(dtype) * max |reference| with k = 1e-5 for
// FLOAT (fp32 arithmetic), 1e-12 for DOUBLE, 2^-10 for FLOAT16 and 2^-7 for BFLOAT16 (twice the rounding step of one
// correctly rounded result near the largest value; infinities, NSA's softmaxMax of a row without keys, exactly). The
// unit tests check much more tightly, element by element.
#ifndef PACL_EXAMPLES_DEMO_DEMO_SUPPORT_H_
#define PACL_EXAMPLES_DEMO_DEMO_SUPPORT_H_

#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "op_calls.h"

namespace demo {

inline constexpr int kTimedRuns = 3;  // the time shown is the best of these,
inline constexpr double kTimedMilliseconds = 1000;  // or of the runs that fit in this (at least one)

// One line of the demo's table: one output of one call.
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

// One operator's forward and backward in one dtype: runs them, checks them and appends their rows.
using StepFunction = void (*)(aclrtStream stream, aclDataType dtype, std::vector<Row>* rows);

struct Step {
  const char* op;  // "GridSampler2D": the table's order and the progress line
  std::vector<aclDataType> dtypes;
  StepFunction run;
};

// Adds an operator's step; its <op>_demo.cpp holds one, at namespace scope.
class StepRegistration {
 public:
  StepRegistration(const char* op, std::initializer_list<aclDataType> dtypes, StepFunction run);
};
// Every registered step, ordered by operator name.
std::vector<Step> AllSteps();

using opcall::DTypeName;

double RelativeTolerance(aclDataType dtype);  // k(dtype) above
std::string ShapeString(const std::vector<int64_t>& shape);
int64_t ElementCount(const std::vector<int64_t>& shape);
// A row not yet run: output "" when the operator has one output.
Row MakeRow(const char* op, const char* output, aclDataType dtype, const std::vector<int64_t>& shape);
// aclGetRecentErrMsg(), "" when none is pending.
std::string RecentErrorMessage();
std::string Failure(const char* call, int status);

// Values as stored in dtype, and back: the reference sees exactly the values the library reads.
std::vector<unsigned char> Encode(const std::vector<double>& values, aclDataType dtype);
std::vector<double> Decode(const std::vector<unsigned char>& bytes, aclDataType dtype);
// Rounds values to dtype in place (so inputs are exactly representable).
void RoundTo(aclDataType dtype, std::vector<double>* values);

// A contiguous ND device tensor.
class DeviceTensor {
 public:
  DeviceTensor() = default;
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
  ~DeviceTensor();

  // Copies host bytes in; with host empty, fills the buffer with 0xFF bytes (NaN in every float format) so an
  // element the operator does not write shows up in the check.
  std::string Create(const std::vector<int64_t>& shape, aclDataType dtype, const std::vector<unsigned char>& host);
  std::string CopyOut(std::vector<unsigned char>* host) const;

  aclTensor* tensor() const { return tensor_; }
  size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  aclTensor* tensor_ = nullptr;
  size_t bytes_ = 0;
};

// Phase 1 of `call` (an entry of the operator-call table, tests/support/op_calls.h), then kTimedRuns runs of phase 2 (fewer once they took kTimedMilliseconds)
// + aclrtSynchronizeStream on a repeatable executor; the best time in *best_milliseconds. "" or what failed.
std::string TimedCall(aclrtStream stream, const opcall::OpCall& call, double* best_milliseconds);

// One output of a timed call: its device tensor and the row that reports its check.
struct CheckedOutput {
  const DeviceTensor* device;
  Row* row;
};
// The expected values of a call's outputs, one vector per output, in the order of its CheckedOutputs.
using Expected = std::vector<std::vector<double>>;

// Completes the rows of one timed call and appends them to *rows. error: the call's failure, or "". When the call
// succeeded: reads every output back, checks each against its own expected values (computed by reference(), only
// then) with relative_tolerance (0: k(dtype) above), and gives every row the call's time and its bandwidth for
// `bytes` moved. Returns "" or what failed (then the rows carry it); *got, when given, receives the outputs' values.
std::string CompleteCall(std::string error, double milliseconds, double bytes,
                         const std::vector<CheckedOutput>& outputs, const std::function<Expected()>& reference,
                         double relative_tolerance, std::vector<Row>* rows,
                         std::vector<std::vector<double>>* got = nullptr);

// Each value `times` times over (NSA's softmaxMax / softmaxSum: one value per row, written into 8 lanes).
std::vector<double> RepeatEach(const std::vector<double>& values, int times);
// Uniform values in [low, high) from a fixed-seed generator.
std::vector<double> RandomValues(int64_t count, double low, double high, uint64_t seed);
// INT32 bytes of index values (topk indices, page tables, slots), for DeviceTensor::Create.
std::vector<unsigned char> Int32Bytes(const std::vector<int64_t>& values);
// Bytes of the tensors a call reads and writes, each counted once.
double TotalBytes(const std::vector<const DeviceTensor*>& tensors);

}  // namespace demo

#endif  // PACL_EXAMPLES_DEMO_DEMO_SUPPORT_H_
