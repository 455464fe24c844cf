// The shared part of the benchmark driver: memory bandwidth (a STREAM-style triad), device tensors filled with
// random data, and the timed loop every operator case goes through. Uses only the public aclnn API.
#ifndef PACL_BENCH_BENCH_COMMON_H_
#define PACL_BENCH_BENCH_COMMON_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "op_calls.h"

namespace bench {

// The thread count the library uses: ACLNN_NUM_THREADS when it is an integer in [1, 1024], else the number of
// CPUs this process may run on. (The library's own function for this is internal; this follows its rule.)
int LibraryThreadCount();

// STREAM's triad a[i] = b[i] + s * c[i] over three arrays of `mib_per_array` MiB of doubles, split over
// `threads` threads; GB/s counting 24 bytes per element (STREAM's convention: two reads and one write, no
// write-allocate traffic). SetUpTriad allocates and first-touches the arrays (kept until ReleaseBenchmarkResources);
// MeasureTriadGBps returns the best of `repetitions` passes (0 if the result is wrong or nothing is set up).
void SetUpTriad(int threads, size_t mib_per_array);
double MeasureTriadGBps(int repetitions);
// The read-only bandwidth over the triad's b and c arrays (a sum, 16 bytes per element, same threads): the ceiling
// of a kernel that mostly reads, which on some machines is well below the triad (a VM measured 34 GB/s read-only
// against a 50 GB/s triad). Best of `repetitions` passes, 0 if the sum is wrong or nothing is set up.
double MeasureReadGBps(int repetitions);

// The machine's fp32 multiply-add peak in GFLOP/s (a fused multiply-add counted as 2 operations): `threads` threads
// each run independent chains of fused multiply-adds held in registers, in the widest vectors the CPU has (AVX-512,
// AVX2 + FMA, NEON; plain scalar fma elsewhere), for about `seconds`; the best of three passes. The ceiling of a
// compute-bound kernel on the same threads: the compute-bound cases print their GFLOP/s as a percentage of it.
double MeasureFmaPeakGflops(int threads, double seconds);

// A device buffer and the contiguous ND tensor over it.
struct DeviceTensor {
  void* data = nullptr;
  aclTensor* tensor = nullptr;
  size_t bytes = 0;
};

// Returns "" on success, else what failed (with aclGetRecentErrMsg). Values are uniform in [low, high), rounded
// to dtype (ACL_FLOAT, ACL_FLOAT16 or ACL_BF16); seed makes them reproducible.
std::string CreateRandomTensor(const std::vector<int64_t>& shape, aclDataType dtype, double low, double high,
                               uint32_t seed, DeviceTensor* result);
// A tensor holding `values` (row-major, ElementCount(shape) entries) rounded to dtype (ACL_FLOAT, ACL_FLOAT16 or
// ACL_BF16); for inputs whose values must follow a pattern (e.g. a sampling grid).
std::string CreateTensorFromValues(const std::vector<int64_t>& shape, aclDataType dtype,
                                   const std::vector<float>& values, DeviceTensor* result);
// A tensor of any dtype holding `bytes` (row-major, ElementCount(shape) elements of the dtype's size): index tensors,
// masks.
// INT32 bytes of index values (topk indices, page tables, slots), for CreateTensorFromBytes.
std::vector<unsigned char> Int32Bytes(const std::vector<int64_t>& values);
std::string CreateTensorFromBytes(const std::vector<int64_t>& shape, aclDataType dtype,
                                  const std::vector<unsigned char>& bytes, DeviceTensor* result);
// A BOOL tensor (..., S1, S2) holding a causal mask: true (masked) where the key index exceeds the query index.
std::string CreateCausalMask(const std::vector<int64_t>& shape, DeviceTensor* result);
void ReleaseDeviceTensor(DeviceTensor* t);


// One operator call after phase 1: what the timed loop runs again and again.
struct PreparedCall {
  std::vector<DeviceTensor> tensors;  // inputs and outputs, released with the call
  // Attribute arrays phase 1 was given, released with the call.
  std::vector<aclBoolArray*> bool_arrays;
  std::vector<aclIntArray*> int_arrays;
  aclOpExecutor* executor = nullptr;
  uint64_t workspace_size = 0;
  opcall::Phase2Function phase2 = nullptr;
  std::optional<opcall::OpCall> op_call;  // the call phase 1 was given (the fresh-call pattern repeats it per call)
  double bytes = 0;  // every input and output tensor counted once
  // Floating-point operations per call for a compute-bound case (a multiply-add counted as 2), else 0. When set,
  // the case also reports GFLOP/s, the machine's fp32 FMA peak (MeasureFmaPeakGflops with the library's thread count,
  // measured before each such case; the best figure of the run) and fma% (GFLOP/s as a percentage of it).
  double flops = 0;
};

// CreateRandomTensor, the tensor then owned by call (released with it, also when the creation failed part way, so
// a preparer can return at its first failure).
std::string AddRandomTensor(PreparedCall* call, const std::vector<int64_t>& shape, aclDataType dtype, double low,
                            double high, uint32_t seed, DeviceTensor* result);

// Phase 1 of op_call (an entry of the operator-call table, tests/support/op_calls.h), its executor, workspace size and
// phase-2 function stored in *call.
aclnnStatus PlanCall(const opcall::OpCall& op_call, PreparedCall* call);

// Creates the tensors of one case and runs phase 1 on them, filling *call; returns "" or what failed.
using Preparer = std::function<std::string(PreparedCall* call)>;

// What a case is, as the result files (--json, --csv) describe it. The operator files brace-initialise it, in
// this order.
struct CaseInfo {
  std::string name;      // Google Benchmark's name: "<operator case prefix>/<dtype>/<variant>"
  std::string op;        // the operator, the same for its forward and backward: "GridSampler2D"
  std::string function;  // the phase-2 function timed: "aclnnGridSampler2DBackward"
  bool backward = false;
  aclDataType dtype = ACL_FLOAT;
  std::string shape;  // the tensors' shapes in words
  // How each timed call is made. false: CANN's repeatable executor and a reused workspace, phase 2 and a
  // synchronisation per call. true: the way CANN's samples call, a fresh executor (phase 1), aclrtMalloc of the
  // workspace, phase 2, aclrtSynchronizeStream and aclrtFree per call; such a case is named "<name>/fresh_calls".
  bool fresh_calls = false;
};

// What the timed loop learnt about a case during the run.
struct CaseMeasurement {
  CaseInfo info;
  double bytes = 0;         // per call: every input and output tensor counted once
  double triad_gbps = 0;    // the triad measured just before the case's timed runs (triad_now_GB/s)
  double best_seconds = 0;  // the fastest single timed call seen, Google Benchmark's trial runs included; 0: none
  std::string error;        // what failed, "" if nothing
};

// Registers info.name with Google Benchmark. When it runs: prepare once (untimed), make the executor repeatable,
// allocate the workspace, measure the triad again (the machine's bandwidth can drift during a long run, on shared
// hosts especially), then time phase 2 + aclrtSynchronizeStream per iteration. Counters: GB/s (bytes / time),
// triad_GB/s (the best triad of the run so far), triad_now_GB/s (the triad just measured) and triad% (GB/s as a
// percentage of triad_GB/s); read_GB/s and read% likewise for the read-only bandwidth (MeasureReadGBps).
void RegisterOperatorBenchmark(const CaseInfo& info, Preparer prepare);

// The measurement of the registered case called `name`; nullptr if there is none.
const CaseMeasurement* FindCaseMeasurement(const std::string& name);

// Set by main before the benchmarks run.
void SetStream(aclrtStream stream);
// Releases the triad arrays and the tensors, executor and workspace of the last case that ran (main calls it
// after the run).
void ReleaseBenchmarkResources();
// Whether any case failed (phase 1, phase 2 or the synchronisation); main's exit status reports it.
bool AnyBenchmarkFailed();

std::string ShapeLabel(const std::vector<int64_t>& shape);  // "4x16x1024x1024"
using opcall::DTypeName;                                    // "FLOAT", "FLOAT16", "BFLOAT16" (op_calls.h)
int64_t ElementCount(const std::vector<int64_t>& shape);
// aclGetRecentErrMsg(), or "" when there is none (it returns NULL then).
std::string RecentErrorMessage();

// The operators' case tables (src/ops/<op>/bench/<op>_bench.cpp, compiled into aclnn_bench) register themselves:
//   const CaseTableRegistration kRegistration("GridSampler2D", RegisterCases);   // at namespace scope
// and main calls RegisterAllCaseTables once, which calls each table's function (its RegisterOperatorBenchmark
// calls), ordered by operator name.
class CaseTableRegistration {
 public:
  CaseTableRegistration(const char* op, void (*register_cases)());
};
void RegisterAllCaseTables();

}  // namespace bench

#endif  // PACL_BENCH_BENCH_COMMON_H_
