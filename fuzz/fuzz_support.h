// The shared part of the libFuzzer harnesses: decoding fuzz bytes into structured tensor descriptions, building
// their storage and aclTensors, and the oracle around the two phases of an aclnn call (see README.md).
//
// NOTE: the decoding is designed so that a short or all-zero input describes a plausible, valid call: every read
// past the end of the input returns 0, and 0 always means "the plausible choice" (contiguous layout, no mutation,
// the expected dtype). The fuzzer then reaches the deep checks and phase 2 easily, and each mutation byte it flips
// breaks one rule at a time. Storage is allocated with malloc for exactly the bytes the storage dims describe, so
// AddressSanitizer catches any access outside the described tensors; the fill bytes come from a generator seeded
// with a hash of the input, so every run of an input is the same.
#ifndef PACL_FUZZ_FUZZ_SUPPORT_H_
#define PACL_FUZZ_FUZZ_SUPPORT_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"

namespace fuzz {

// Limits that keep one input fast: phase 2 runs only when the storage of all tensors together, the workspace and
// the harness's estimate of the kernel's work stay below them.
inline constexpr uint64_t kMaxStorageBytes = uint64_t{4} << 20;
inline constexpr uint64_t kMaxWorkspaceBytes = uint64_t{32} << 20;
inline constexpr uint64_t kMaxWork = uint64_t{1} << 23;

// Prints "fuzz oracle: <message>" and aborts (libFuzzer records the input as a crash).
[[noreturn]] void Fail(const char* format, ...) __attribute__((format(printf, 1, 2)));
#define FUZZ_CHECK(condition, ...)                   \
  do {                                               \
    if (!(condition)) ::fuzz::Fail(__VA_ARGS__);     \
  } while (false)

// With PACL_FUZZ_VERBOSE set: prints the line to stderr (the harnesses describe each call this way).
void Note(const char* format, ...) __attribute__((format(printf, 1, 2)));

// Reads the input front to back; past the end every read returns 0.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  // Little-endian, from the next `bytes` bytes.
  uint64_t Bits(int bytes);
  // A value in [0, n) (n > 0).
  uint64_t Below(uint64_t n) { return Byte() % n; }
  bool Flag() { return (Byte() & 1) != 0; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// plausible, or (a selector byte chooses) an edge value: 0, +-1, plausible +- 1, INT64_MIN/MAX, 2^31, 2^32, 2^62,
// values whose products overflow, a raw 64-bit value...
int64_t EdgeValue(Reader& r, int64_t plausible);
// A 64-bit attribute: plausible when the first byte is below 192, else an edge value.
int64_t Attribute(Reader& r, int64_t plausible);
// A scale attribute (a double): plausible when the first byte is below 200, else an edge value (0, -1, 1e30, NaN,
// infinity, a subnormal-producing 1e-40, 3.5).
double DecodeScale(Reader& r, double plausible);

// The int value of an enumerator (dtypes and formats are kept as ints: see c_shim.h).
int IntOf(aclDataType dtype);
int IntOf(aclFormat format);
// A dtype: every enumerator or one of several values outside them.
int DecodeDataType(Reader& r);
int DecodeFormat(Reader& r);
// Bytes per element of a dtype value (this harness's own table); 0 for STRING and values that are not dtypes.
size_t ElementBytes(int dtype);
bool IsFloatDType(int dtype);

// The values a floating tensor gets in the "plausible" fill: magnitudes below 2^max_exponent, non-negative if asked.
struct ValueRange {
  bool non_negative = false;
  int max_exponent = 1;
};

// How a tensor's storage is filled before phase 2.
enum class Fill : uint8_t {
  kPlausible = 0,     // finite values in the ValueRange; bools 0/1; integers from int_values or small
  kRandomBytes = 1,   // raw random bytes: NaN, Inf, huge, negative indices...
  kWithSpecials = 2,  // plausible, with NaN, +-Inf, +-0, huge and subnormal values sprinkled in
};

// One tensor argument as the harness will create it.
struct TensorSpec {
  std::string name;
  bool is_output = false;
  bool null_tensor = false;  // pass nullptr instead of an aclTensor
  bool null_data = false;    // create the aclTensor with tensorData == nullptr
  int dtype = 0;
  int format = 2;  // ACL_FORMAT_ND
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;  // one per dim
  int64_t offset = 0;
  std::vector<int64_t> storage_dims;
  int alias_of = -1;  // this tensor uses the storage of the tensor with this index (if that one has storage)
  Fill fill = Fill::kPlausible;
  ValueRange range;
  std::vector<int64_t> int_values;  // plausible values of an integer tensor, in view order (cycled)
};

// Decodes one tensor whose plausible form is `shape` in `dtype`, contiguous, format ND: a layout byte
// (contiguous, transposed, padded, broadcast, negative strides, permuted, raw strides, overlapping), a mutation
// byte (dtype, format, rank, one dim, storage, offset, null tensor / data, alias), then each mutation's details
// and the fill.
TensorSpec DecodeTensor(Reader& r, const std::string& name, bool is_output, const std::vector<int64_t>& shape,
                        int dtype, ValueRange range = {});

// The strides and storage of a layout for spec.dims (used by DecodeTensor, exposed for the aclCreateTensor harness).
void ApplyLayout(Reader& r, uint8_t layout, TensorSpec* spec);

// Whether aclCreateTensor must accept this description, by this harness's own reading of the rules: rank <= 8,
// no negative dim, a known dtype other than STRING, a known format, offset >= 0, element counts and storage bytes
// that fit int64, and every view element inside the storage (an empty view: offset <= storage elements).
bool CreateTensorMustAccept(const TensorSpec& spec, std::string* why);

// Product of dims when every dim is >= 0 and the product (times element_bytes) fits int64; -1 otherwise.
int64_t CheckedBytes(const std::vector<int64_t>& dims, uint64_t element_bytes);

// The view's element count (every dim >= 0), saturating at UINT64_MAX; products that saturate likewise.
uint64_t Elements(const std::vector<int64_t>& dims);
uint64_t SaturatingMul(uint64_t a, uint64_t b);

// "[2, 3, 5]".
std::string DimsString(const std::vector<int64_t>& dims);

// An actual-length array (the NSA attention operators' cumulative sequence ends) as the caller passes it: usually
// consistent; MutateEnds (one byte, then its details) sometimes makes it null, empty, or replaces an entry by an edge
// value, drops one or adds one.
struct HostEnds {
  std::vector<int64_t> ends;
  bool null = false;
};
void MutateEnds(Reader& r, HostEnds* e);
// An exact-size copy of the array (reading past its size is an ASan report), or null.
aclIntArray* MakeIntArray(const HostEnds& e);
// The layout string ("TND" usually; else null, empty or another layout) in an exact-size allocation (reading past
// its terminator is an ASan report), or null.
std::unique_ptr<char[]> DecodeTndLayout(Reader& r);

// Checks on a call that phase 1 accepted: the tensor's view dims are `expected`; its dtype is one of `allowed`.
void CheckAcceptedDims(const char* op_name, const TensorSpec& spec, const std::vector<int64_t>& expected);
void CheckAcceptedDType(const char* op_name, const TensorSpec& spec, std::initializer_list<aclDataType> allowed);

// aclGetRecentErrMsg as a string ("" for none). It hands out and clears the thread's pending messages (newest
// first, one a line), so each message is read once.
std::string TakeRecentError();

// The process-wide runtime: aclInit, device 0, one stream; ACLNN_NUM_THREADS=1 unless already set.
void InitRuntimeOnce();
aclrtStream Stream();

using Phase2 = aclnnStatus (*)(void* workspace, uint64_t workspace_size, aclOpExecutor* executor, aclrtStream stream);

// The tensors of one operator call: their storage, the aclTensors, and the checks around the two phases.
class Call {
 public:
  Call(const uint8_t* data, size_t size);
  ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  // Adds a tensor; returns its index. All tensors are added before Materialize.
  int Add(TensorSpec spec);
  TensorSpec& spec(int index) { return specs_[static_cast<size_t>(index)]; }
  // Allocates and fills the storage (when small enough) and creates the aclTensors, checking aclCreateTensor's
  // decision against CreateTensorMustAccept.
  void Materialize();
  // The aclTensor to pass (nullptr for a null tensor or one aclCreateTensor refused).
  aclTensor* tensor(int index) const;
  // Whether the tensor is passed as null, or has elements but no data (phase 1 must then answer 161001).
  bool PassedAsNull(int index) const;
  bool AnyPassedAsNull() const;
  const std::vector<int64_t>& dims(int index) const { return specs_[static_cast<size_t>(index)].dims; }

  // Phase 1's out-pointers: usually valid, sometimes null (decoded from one byte).
  void DecodeOutPointers(Reader& r);
  uint64_t* workspace_size_out() { return null_workspace_size_ ? nullptr : &workspace_size_; }
  aclOpExecutor** executor_out() { return null_executor_ ? nullptr : &executor_; }
  bool out_pointer_null() const { return null_workspace_size_ || null_executor_; }

  // Checks phase 1's answer. A refusal must carry 161001 (exactly when a required argument is null: required_null)
  // or 161002, and a message that starts with op_name. Returns whether phase 1 accepted.
  bool CheckPhase1(const char* op_name, aclnnStatus status, bool required_null);

  // After an accepted phase 1: runs phase 2 (decoding a misuse mode from r) when everything is small enough,
  // otherwise destroys the executor. written: the indices of the outputs phase 2 may write. work: the harness's
  // estimate of the kernel's operations. Checks that phase 2 succeeds, that every written output has distinct
  // elements inside its storage, and that no byte outside the written outputs' elements changed.
  void RunPhase2(Reader& r, const char* op_name, Phase2 run, Phase2 other_op_run, const std::vector<int>& written,
                 uint64_t work);

  // Random numbers from the input's hash.
  uint64_t Random();

 private:
  struct Buffer;
  void FillBuffer(Buffer& buffer, const TensorSpec& spec);
  void WriteViewIntegers(const TensorSpec& spec, Buffer& buffer);

  std::vector<TensorSpec> specs_;
  std::vector<aclTensor*> tensors_;
  std::vector<int> buffer_of_;  // per tensor: its buffer index, or -1
  std::vector<std::unique_ptr<Buffer>> buffers_;
  bool all_storage_allocated_ = true;
  uint64_t rng_state_ = 0;
  uint64_t workspace_size_ = 0;
  aclOpExecutor* executor_ = nullptr;
  bool null_workspace_size_ = false;
  bool null_executor_ = false;
};

}  // namespace fuzz

#endif  // PACL_FUZZ_FUZZ_SUPPORT_H_
