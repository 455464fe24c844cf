// Test harness shared by the operator tests (public API only): device tensors built from logical float64 data in
// any dtype and storage layout, NaN-prefilled outputs, guard bytes, read-back to float64, streams and the process-wide
// runtime setup.
#ifndef PACL_TESTS_OPS_OP_TEST_UTIL_H_
#define PACL_TESTS_OPS_OP_TEST_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "op_calls.h"

namespace optest {

// How a tensor's elements are placed in its storage. The logical (view) shape is the same for all.
enum class Layout {
  kContiguous,    // row-major, offset 0
  kTransposed,    // the storage holds the last two dims swapped (a transposed view: last-dim stride != 1);
                  // the same as kContiguous for rank < 2
  kPadded,        // an element offset, and every dim's stride leaves a gap after the block of the dims inside it
  kChannelsLast,  // the storage holds dim 1 innermost (NCHW viewed from NHWC memory: strides (HWC, 1, WC, C));
                  // the same as kContiguous for rank < 3
  kBroadcast,     // the first dim of size > 1 has stride 0: one slice of storage seen repeated along it, what
                  // torch.expand gives (inputs only; the values must repeat along that dim: see AsStored)
};
const char* LayoutName(Layout layout);
// Layouts any tensor may have (kBroadcast is for inputs only).
inline constexpr Layout kAllLayouts[] = {Layout::kContiguous, Layout::kTransposed, Layout::kPadded,
                                         Layout::kChannelsLast};
// The layouts the operators' layout tests give an input on top of kContiguous.
inline constexpr Layout kInputLayouts[] = {Layout::kTransposed, Layout::kPadded, Layout::kChannelsLast,
                                           Layout::kBroadcast};
// ... and an output.
inline constexpr Layout kOutputLayouts[] = {Layout::kTransposed, Layout::kPadded, Layout::kChannelsLast};

// values (logical row-major order of shape) as a tensor of this layout holds them: for kBroadcast, slice 0 of the
// broadcast dim repeated along it; for every other layout, unchanged. Tests build broadcast inputs from these and
// compute their references on them.
std::vector<double> AsStored(const std::vector<double>& values, const std::vector<int64_t>& shape, Layout layout);

// Bytes per element of the dtypes the harness handles: FLOAT, FLOAT16, BF16, DOUBLE, BOOL, INT32, INT64.
size_t ElementBytes(aclDataType dtype);
using opcall::DTypeName;  // "FLOAT", "FLOAT16", ... (op_calls.h)
bool IsFloatingDType(aclDataType dtype);

// The value dtype stores for v: floats round to nearest even (FLOAT16/BF16 via reference/float_formats.h, DOUBLE
// unchanged); BOOL keeps the byte value (0..255, so masks can use any nonzero byte); INT32/INT64 round to nearest.
double RoundToDType(double v, aclDataType dtype);
std::vector<double> RoundToDType(const std::vector<double>& values, aclDataType dtype);
// Unit in the last place of a floating dtype at the magnitude of v.
double UlpOf(double v, aclDataType dtype);
// 2^-(fraction bits): the relative spacing at 1.0 (FLOAT 2^-23, FLOAT16 2^-10, BF16 2^-7, DOUBLE 2^-52).
double EpsilonOf(aclDataType dtype);

int64_t NumElements(const std::vector<int64_t>& shape);
std::string ShapeString(const std::vector<int64_t>& shape);
// Row-major strides of a dense tensor of this shape.
std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& shape);
// Cumulative ends of consecutive lengths (the NSA operators' actual-length arrays): {3, 0, 5} -> {3, 3, 8}.
std::vector<int64_t> CumulativeEnds(const std::vector<int64_t>& lengths);
// Each value `times` times over (the NSA statistics' 8 lanes per row).
std::vector<double> RepeatEach(const std::vector<double>& values, int64_t times);

// A uniform double in [lo, hi) from the top 53 bits of one draw, and a uniform integer in [lo, hi] (hi - lo below
// 2^32): the same numbers on every platform and standard library (std::uniform_*_distribution's algorithms are each
// library's own), so that inputs drawn from a seed, and the output digests checked into the repository
// (tests/system/test_output_digests.cpp), are the same on x86 and Arm.
double UniformValue(std::mt19937_64& rng, double lo, double hi);
int64_t UniformInt(std::mt19937_64& rng, int64_t lo, int64_t hi);

// Uniform random values in [lo, hi) (UniformValue), rounded to dtype (so the reference sees exactly what the device
// holds).
std::vector<double> RandomValues(std::mt19937_64& rng, int64_t count, double lo, double hi, aclDataType dtype);

// A tensor in device memory (aclrtMalloc), with kGuardBytes of guard pattern before and after its storage.
// Storage bytes that no view element covers (padding gaps) hold the same pattern; CheckGuards() verifies that
// nothing but the view's elements was written. The pattern is all ones: NaN in every float dtype (and -1 in the
// integer ones), so a kernel that reads a gap or guard element into a sum gets NaN, which every check sees. Not
// copyable; movable.
class DeviceTensor {
 public:
  static constexpr size_t kGuardBytes = 64;
  static constexpr uint8_t kGuardPattern = 0xFF;

  // An input holding values (logical row-major order, NumElements(shape) entries), stored as RoundToDType.
  DeviceTensor(std::vector<int64_t> shape, aclDataType dtype, Layout layout, const std::vector<double>& values,
               aclFormat format = ACL_FORMAT_ND);
  // An output: every view element pre-filled with NaN of dtype (FLOAT types) or the guard pattern bytes (others).
  static DeviceTensor Output(std::vector<int64_t> shape, aclDataType dtype, Layout layout,
                             aclFormat format = ACL_FORMAT_ND);
  ~DeviceTensor();
  DeviceTensor(DeviceTensor&& other) noexcept;
  DeviceTensor& operator=(DeviceTensor&& other) noexcept;
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;

  aclTensor* get() const { return tensor_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  aclDataType dtype() const { return dtype_; }
  Layout layout() const { return layout_; }
  int64_t size() const { return NumElements(shape_); }
  // The storage (the aclTensor's data pointer).
  void* data() const;

  // Overwrites the view's elements (logical row-major order), leaving gaps and guards alone.
  void Write(const std::vector<double>& values);
  // The view's elements in logical row-major order, decoded to float64 (BOOL: the byte value).
  std::vector<double> Read() const;
  // The raw bytes of the view's elements in logical row-major order (for bit-identity checks).
  std::vector<uint8_t> ReadBytes() const;
  // "" when every byte outside the view's elements (guards and gaps) still holds the guard pattern, else a
  // description of the first damaged byte.
  std::string CheckGuards() const;

 private:
  DeviceTensor() = default;
  void Allocate(std::vector<int64_t> shape, aclDataType dtype, Layout layout, aclFormat format);
  std::vector<uint8_t> ReadAllocation() const;
  void WriteAllocation(const std::vector<uint8_t>& bytes);
  // Calls visit(i, storage_index) for each view element i in logical row-major order. Dense tensors (view element i
  // at storage element i: contiguous, no offset) take a plain loop; the harness reads and writes every tensor a few
  // times per check, so this is most of a big test's time, above all under the sanitizers.
  template <class Visit>
  void ForEachElement(Visit&& visit) const;
  bool Dense() const;
  void Release();

  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  int64_t offset_ = 0;
  int64_t storage_elements_ = 0;
  aclDataType dtype_ = ACL_FLOAT;
  Layout layout_ = Layout::kContiguous;
  size_t allocation_bytes_ = 0;
  void* allocation_ = nullptr;
  aclTensor* tensor_ = nullptr;
};

// An aclrtStream created for one test and destroyed with it.
class TestStream {
 public:
  TestStream();
  ~TestStream();
  TestStream(const TestStream&) = delete;
  TestStream& operator=(const TestStream&) = delete;
  aclrtStream get() const { return stream_; }

 private:
  aclrtStream stream_ = nullptr;
};

// Whether the current device is the CPU (aclrtGetSocName). Tests that only make sense there skip themselves on
// another device with CpuOnlyReason(): those that read device memory from the host, count threads or pin SIMD
// targets. Every other test runs on whatever device ACLNN_DEVICE picks.
bool DeviceIsCpu();
std::string CpuOnlyReason(const char* why);
// Whether this run is in strict mode (ACLNN_STRICT set to 1, true, yes or on, as the library reads it): tests of
// what strict mode refuses or changes by design skip, saying why (StrictModeReason).
bool StrictMode();
std::string StrictModeReason(const char* why);

// The calling thread's pending error message (aclGetRecentErrMsg), as a string ("" when none).
std::string RecentErrorMessage();

// A phase-2 workspace of the size phase 1 asked for, in device memory (none for 0 bytes), freed with the object.
class DeviceWorkspace {
 public:
  explicit DeviceWorkspace(uint64_t bytes);
  ~DeviceWorkspace();
  DeviceWorkspace(const DeviceWorkspace&) = delete;
  DeviceWorkspace& operator=(const DeviceWorkspace&) = delete;
  void* get() const { return data_; }
  uint64_t size() const { return bytes_; }
  // False when aclrtMalloc failed.
  bool ok() const { return ok_; }

 private:
  uint64_t bytes_ = 0;
  void* data_ = nullptr;
  bool ok_ = true;
};

// Relative error in the 2-norm: ||actual - expected|| / ||expected|| (or ||actual - expected|| if expected is 0).
double RelativeNormError(const std::vector<double>& actual, const std::vector<double>& expected);

// Thread-count determinism checks. The thread count is read once per process, so a test runs one of its cases
// in child processes of this binary: RunTestWithThreads runs the test named test_name (Suite.Name) with
// ACLNN_NUM_THREADS = threads and returns the bytes that test handed to WriteOutputForParent (empty, with a
// failure recorded, if the child failed). WriteOutputForParent does nothing outside such a child.
std::vector<uint8_t> RunTestWithThreads(const std::string& test_name, int threads);
void WriteOutputForParent(const std::vector<uint8_t>& bytes);
// The same with any environment variables set in the child (name, value).
std::vector<uint8_t> RunTestInChild(const std::string& test_name,
                                    const std::vector<std::pair<std::string, std::string>>& environment);
// The SIMD targets the libraries were built for that this CPU can run (Highway's names: AVX3, AVX2, SSE4, ...),
// best first; only the pinned one in a process started with ACLNN_SIMD_TARGET.
std::vector<std::string> SimdTargetNames();
// "" when the byte strings are equal, else how many bytes differ and where the first one is.
std::string FirstDifference(const std::vector<uint8_t>& actual, const std::vector<uint8_t>& expected);

// The raw bytes (ReadBytes) of the tensors, one after the other.
std::vector<uint8_t> ConcatenatedBytes(const std::vector<const DeviceTensor*>& tensors);
// compute() (an operator's output bytes) gives the same bytes again, and the same with ACL_OPT_DETERMINISTIC set
// (which stays set: the default binding is deterministic too).
void ExpectBitIdenticalRunToRun(const std::function<std::vector<uint8_t>()>& compute);
// child_test (Suite.Name, which hands compute()'s bytes to WriteOutputForParent) gives the same bytes with
// ACLNN_NUM_THREADS = 1 and each of thread_counts, and compute() in this process gives them too.
void ExpectBitIdenticalForThreadCounts(const std::string& child_test, const std::vector<int>& thread_counts,
                                       const std::function<std::vector<uint8_t>()>& compute);
// child_test gives the same bytes with ACLNN_SIMD_TARGET set to each target of SimdTargetNames() (skipped in a
// process that is itself pinned to one target).
void ExpectBitIdenticalOnEverySimdTarget(const std::string& child_test);

// ---------------------------------------------------------------------------------------------------------------
// Checks shared by the operator tests.

// Per element: |actual - RoundToDType(expected)| <= UlpOf(max of both magnitudes) + bound[i], where bound bounds the
// kernel's fp32 arithmetic error before the output's single rounding (0: "within 1 ulp of the rounded reference");
// an infinite rounded reference must be matched exactly. FLOAT results must also meet the spec's relative 2-norm
// error <= 1e-5, unless the bounds are not small against the values (cancellation). Reports at most 10 elements.
void ExpectClose(const char* what, const std::vector<double>& actual, const std::vector<double>& expected,
                 const std::vector<double>& bound, aclDataType dtype);
// Every value exactly 0 (the first one that is not is reported).
void ExpectAllZero(const char* what, const std::vector<double>& values);
// CheckGuards() of every tensor is "".
void ExpectGuardsIntact(const std::vector<const DeviceTensor*>& tensors);

// After a rejected phase-1 call: the thread's recent error message contains "<op_name>:" and every fragment.
void ExpectErrorMessage(const std::string& op_name, const std::vector<std::string>& fragments);
// Outputs a rejected call must have left alone: guards intact and every element still the NaN pre-fill.
void ExpectOutputsUntouched(const std::vector<const DeviceTensor*>& outputs);

// A contiguous tensor (format ND) whose data is never initialized, for sizes too large to fill cheaply or for
// phase-1 checks, which read no data; or, with `data` given, a view of that address (owned by the caller, possibly
// unmapped). Not copyable.
class RawTensor {
 public:
  RawTensor(const std::vector<int64_t>& shape, aclDataType dtype, void* data = nullptr);
  ~RawTensor();
  RawTensor(const RawTensor&) = delete;
  RawTensor& operator=(const RawTensor&) = delete;
  aclTensor* get() const { return tensor_; }

 private:
  void* allocation_ = nullptr;
  aclTensor* tensor_ = nullptr;
};

// A view of `storage`'s data with the given shape, row-major strides except stride 0 on dim zero_dim: its elements
// share memory (an output like that would have several threads write one element). storage must hold at least as
// many elements as the view's distinct positions. The caller destroys the tensor (aclDestroyTensor).
aclTensor* SelfOverlappingView(const DeviceTensor& storage, std::vector<int64_t> shape, int zero_dim);

// A host aclIntArray (aclCreateIntArray) destroyed with the object.
class HostIntArray {
 public:
  explicit HostIntArray(const std::vector<int64_t>& values);
  ~HostIntArray();
  HostIntArray(const HostIntArray&) = delete;
  HostIntArray& operator=(const HostIntArray&) = delete;
  aclIntArray* get() const { return array_; }

 private:
  aclIntArray* array_ = nullptr;
};

}  // namespace optest

#endif  // PACL_TESTS_OPS_OP_TEST_UTIL_H_
