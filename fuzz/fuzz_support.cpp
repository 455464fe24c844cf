// The shared part of the libFuzzer harnesses; see fuzz_support.h and README.md.
#include "fuzz_support.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "aclnn/opdev/op_errno.h"
#include "aclnnop/aclnn_scaled_masked_softmax.h"
#include "c_shim.h"

namespace fuzz {

namespace {

constexpr int kFloat = 0;
constexpr int kFloat16 = 1;
constexpr int kInt32 = 3;
constexpr int kInt64 = 9;
constexpr int kDouble = 11;
constexpr int kBool = 12;
constexpr int kString = 13;
constexpr int kBFloat16 = 27;

// Every aclDataType enumerator other than ACL_DT_UNDEFINED, then values outside them.
constexpr int kDataTypeValues[] = {0,  1, 2,  3,  4,  6,  7,  8,  9,   10,  11,         12,          13, 16, 17, 27,
                                   -1, 5, 14, 15, 18, 26, 28, 100, 255, 0x7fffffff, -0x7fffffff - 1};
constexpr int kKnownDataTypeCount = 16;
// Every aclFormat enumerator other than ACL_FORMAT_UNDEFINED, then values outside them.
constexpr int kFormatValues[] = {0,  1,  2, 3,  4,  12, 16,  27,
                                 29, 30, 32, 33, 35, 47, -1, 5, 13, 48, 100, -0x7fffffff - 1};
constexpr int kKnownFormatCount = 14;

// Two's-complement arithmetic without undefined behaviour (the harness builds absurd values on purpose).
int64_t WrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t WrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
int64_t WrapNeg(int64_t a) { return static_cast<int64_t>(0 - static_cast<uint64_t>(a)); }

__int128 Wide(int64_t v) { return static_cast<__int128>(v); }
constexpr __int128 kInt64Max = std::numeric_limits<int64_t>::max();

// (dim - 1) * stride, clamped to +-2^100: anything that far beyond int64 is out of every storage, and ten clamped
// spans still add up without overflowing __int128.
__int128 Span(int64_t dim, int64_t stride) {
  constexpr __int128 kLimit = static_cast<__int128>(1) << 100;
  const __int128 span = (Wide(dim) - 1) * Wide(stride);  // |span| < 2^127: no overflow
  return span > kLimit ? kLimit : span < -kLimit ? -kLimit : span;
}

// Row-major strides of dims (wrapping on overflow: the tensor is then refused anyway).
std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = WrapMul(strides[d], dims[d]);
  return strides;
}

// The 1-D storage that a view needs exactly: shifts spec->offset so the lowest element is at index >= 0 and sets
// storage_dims to {highest + 1} ({offset} for an empty view).
void ExactStorage(TensorSpec* spec) {
  bool empty = false;
  for (int64_t dim : spec->dims) empty = empty || dim <= 0;
  if (empty) {
    spec->storage_dims = {spec->offset < 0 ? 0 : spec->offset};
    return;
  }
  __int128 low = 0;
  __int128 high = 0;
  for (size_t d = 0; d < spec->dims.size(); ++d) {
    const __int128 span = Span(spec->dims[d], spec->strides[d]);
    if (span < 0) low += span; else high += span;
  }
  __int128 offset = Wide(spec->offset);
  if (offset + low < 0) offset = -low;
  const __int128 extent = offset + high + 1;
  if (offset > kInt64Max || extent > kInt64Max) {
    spec->storage_dims = {std::numeric_limits<int64_t>::max()};  // refused: its bytes overflow
    return;
  }
  spec->offset = static_cast<int64_t>(offset);
  spec->storage_dims = {static_cast<int64_t>(extent)};
}

// splitmix64.
uint64_t NextRandom(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The loops below touch every byte of the storage: they are left out of the coverage instrumentation, which would
// slow them tenfold and only feed the fuzzer the harness's own comparisons.

// The storage element index of every view element, in row-major order (the view is known valid).
[[clang::no_sanitize("coverage")]] std::vector<int64_t> ViewElementIndices(const TensorSpec& spec) {
  std::vector<int64_t> indices;
  const size_t rank = spec.dims.size();
  for (int64_t dim : spec.dims) {
    if (dim == 0) return indices;
  }
  indices.reserve(static_cast<size_t>(Elements(spec.dims)));
  std::vector<int64_t> index(rank, 0);
  int64_t element = spec.offset;
  while (true) {
    indices.push_back(element);
    size_t d = rank;
    while (true) {
      if (d == 0) return indices;  // every index wrapped around: done (rank 0: the one element)
      --d;
      if (++index[d] < spec.dims[d]) {
        element += spec.strides[d];
        break;
      }
      element -= (spec.dims[d] - 1) * spec.strides[d];
      index[d] = 0;
    }
  }
}

// Marks the bytes of the elements at `indices` in mask; returns the first element index met twice, or -1.
[[clang::no_sanitize("coverage")]] int64_t MarkElements(const std::vector<int64_t>& indices, size_t element_bytes,
                                                        std::vector<unsigned char>* seen,
                                                        std::vector<unsigned char>* mask) {
  for (int64_t element : indices) {
    const size_t at = static_cast<size_t>(element);
    if ((*seen)[at] != 0) return element;
    (*seen)[at] = 1;
    std::memset(mask->data() + at * element_bytes, 1, element_bytes);
  }
  return -1;
}

// The first byte that differs between before and after where mask is 0 (an empty mask: none may differ), or -1.
[[clang::no_sanitize("coverage")]] int64_t FirstUnexpectedChange(const std::vector<unsigned char>& before,
                                                                 const unsigned char* after,
                                                                 const std::vector<unsigned char>& mask) {
  if (mask.empty()) {
    if (before.empty() || std::memcmp(before.data(), after, before.size()) == 0) return -1;
  }
  for (size_t i = 0; i < before.size(); ++i) {
    if ((mask.empty() || mask[i] == 0) && before[i] != after[i]) return static_cast<int64_t>(i);
  }
  return -1;
}

aclrtStream g_stream = nullptr;

// PACL_FUZZ_VERBOSE=1: print each call's phase-1 answer and whether phase 2 ran (for reading a corpus or a crash).
bool Verbose() {
  static const bool verbose = std::getenv("PACL_FUZZ_VERBOSE") != nullptr;
  return verbose;
}

}  // namespace

void Fail(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::fprintf(stderr, "fuzz oracle: ");
  std::vfprintf(stderr, format, args);
  std::fprintf(stderr, "\n");
  va_end(args);
  std::fflush(stderr);
  std::abort();
}

void Note(const char* format, ...) {
  if (!Verbose()) return;
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  std::fprintf(stderr, "\n");
  va_end(args);
}

uint64_t Reader::Bits(int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= static_cast<uint64_t>(Byte()) << (8 * i);
  return value;
}

int64_t EdgeValue(Reader& r, int64_t plausible) {
  switch (r.Byte() % 24) {
    case 0: return plausible;
    case 1: return 0;
    case 2: return 1;
    case 3: return -1;
    case 4: return WrapAdd(plausible, 1);
    case 5: return WrapAdd(plausible, -1);
    case 6: return WrapMul(plausible, 2);
    case 7: return std::numeric_limits<int64_t>::max();
    case 8: return std::numeric_limits<int64_t>::min();
    case 9: return int64_t{1} << 31;
    case 10: return int64_t{1} << 32;
    case 11: return (int64_t{1} << 32) + 1;
    case 12: return int64_t{1} << 62;
    case 13: return std::numeric_limits<int32_t>::max();
    case 14: return WrapNeg(plausible);
    case 15: return 3037000500;          // just above sqrt(2^63): its square overflows int64
    case 16: return int64_t{1} << 21;    // its cube overflows int64
    case 17: return static_cast<int64_t>(r.Bits(8));
    case 18: return (int64_t{1} << 62) + 1;
    case 19: return -static_cast<int64_t>(r.Byte());
    default: return r.Byte();  // a small value
  }
}

int64_t Attribute(Reader& r, int64_t plausible) { return r.Byte() < 192 ? plausible : EdgeValue(r, plausible); }

double DecodeScale(Reader& r, double plausible) {
  const uint8_t choice = r.Byte();
  if (choice < 200) return plausible;
  const double kEdges[] = {
      0.0, -1.0, 1e30, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(), 1e-40, 3.5};
  return kEdges[choice % 7];
}

int IntOf(aclDataType dtype) { return static_cast<int>(dtype); }

int IntOf(aclFormat format) { return static_cast<int>(format); }

int DecodeDataType(Reader& r) {
  return kDataTypeValues[r.Byte() % (sizeof kDataTypeValues / sizeof kDataTypeValues[0])];
}

int DecodeFormat(Reader& r) { return kFormatValues[r.Byte() % (sizeof kFormatValues / sizeof kFormatValues[0])]; }

size_t ElementBytes(int dtype) {
  switch (dtype) {
    case 2: case 4: case 12: return 1;                     // INT8, UINT8, BOOL
    case 1: case 6: case 7: case 27: return 2;             // FLOAT16, INT16, UINT16, BF16
    case 0: case 3: case 8: return 4;                      // FLOAT, INT32, UINT32
    case 9: case 10: case 11: case 16: return 8;           // INT64, UINT64, DOUBLE, COMPLEX64
    case 17: return 16;                                    // COMPLEX128
    default: return 0;                                     // STRING and values that are not dtypes
  }
}

bool IsFloatDType(int dtype) {
  return dtype == kFloat || dtype == kFloat16 || dtype == kBFloat16 || dtype == kDouble;
}

uint64_t Elements(const std::vector<int64_t>& dims) {
  uint64_t count = 1;
  for (int64_t dim : dims) {
    if (dim < 0) return 0;
    count = SaturatingMul(count, static_cast<uint64_t>(dim));
  }
  return count;
}

uint64_t SaturatingMul(uint64_t a, uint64_t b) {
  uint64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? UINT64_MAX : product;
}

void MutateEnds(Reader& r, HostEnds* e) {
  const uint8_t choice = r.Byte();
  if (choice < 200) return;
  if (choice < 220) {
    if (!e->ends.empty()) {
      int64_t& entry = e->ends[r.Below(e->ends.size())];
      entry = EdgeValue(r, entry);
    }
  } else if (choice < 228) {
    e->ends.clear();
  } else if (choice < 236) {
    e->null = true;
  } else if (choice < 246) {
    if (!e->ends.empty()) e->ends.erase(e->ends.begin() + static_cast<long>(r.Below(e->ends.size())));
  } else {
    e->ends.insert(e->ends.begin() + static_cast<long>(r.Below(e->ends.size() + 1)), EdgeValue(r, 0));
  }
}

aclIntArray* MakeIntArray(const HostEnds& e) {
  if (e.null) return nullptr;
  std::unique_ptr<int64_t[]> copy(new int64_t[e.ends.size() + 1]);
  for (size_t i = 0; i < e.ends.size(); ++i) copy[i] = e.ends[i];
  aclIntArray* array = aclCreateIntArray(e.ends.empty() ? nullptr : copy.get(), e.ends.size());
  FUZZ_CHECK(array != nullptr, "aclCreateIntArray failed: %s", TakeRecentError().c_str());
  return array;
}

std::unique_ptr<char[]> DecodeTndLayout(Reader& r) {
  const uint8_t choice = r.Byte();
  if (choice >= 200 && choice < 215) return nullptr;
  static const char* const kOthers[] = {"", "BSND", "TNDX", "tnd", "TN", "BNSD"};
  const char* text = choice < 200 ? "TND" : kOthers[choice % 6];
  const size_t length = std::strlen(text);
  std::unique_ptr<char[]> copy(new char[length + 1]);
  std::memcpy(copy.get(), text, length + 1);
  return copy;
}

std::string DimsString(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(dims[i]);
  }
  return text + "]";
}

int64_t CheckedBytes(const std::vector<int64_t>& dims, uint64_t element_bytes) {
  int64_t product = 1;
  for (int64_t dim : dims) {
    if (dim < 0 || __builtin_mul_overflow(product, dim, &product)) return -1;
  }
  if (__builtin_mul_overflow(product, static_cast<int64_t>(element_bytes), &product)) return -1;
  return product;
}

void ApplyLayout(Reader& r, uint8_t layout, TensorSpec* spec) {
  std::vector<int64_t>& dims = spec->dims;
  const size_t rank = dims.size();
  spec->strides = ContiguousStrides(dims);
  spec->offset = 0;
  spec->storage_dims = dims;
  if (rank == 0) {
    if (layout % 8 != 0) {  // a scalar somewhere inside a longer storage
      spec->offset = static_cast<int64_t>(r.Below(4));
      spec->storage_dims = {spec->offset + 1 + static_cast<int64_t>(r.Below(3))};
    }
    return;
  }
  switch (layout % 8) {
    case 0:  // contiguous, storage dims = view dims
      return;
    case 1: {  // the last two dims transposed in storage
      if (rank < 2) return;
      std::vector<int64_t> storage = dims;
      std::swap(storage[rank - 1], storage[rank - 2]);
      const std::vector<int64_t> storage_strides = ContiguousStrides(storage);
      spec->strides = storage_strides;
      std::swap(spec->strides[rank - 1], spec->strides[rank - 2]);
      spec->storage_dims = storage;
      return;
    }
    case 2: {  // gaps after every dim, a non-unit innermost stride sometimes, an offset
      int64_t stride = 1 + static_cast<int64_t>(r.Below(2));
      for (size_t d = rank; d-- > 0;) {
        spec->strides[d] = stride;
        stride = WrapAdd(WrapMul(stride, dims[d]), 1 + static_cast<int64_t>(r.Below(3)));
      }
      spec->offset = static_cast<int64_t>(r.Below(8));
      ExactStorage(spec);
      return;
    }
    case 3:  // one dim broadcast (stride 0)
      spec->strides[r.Below(rank)] = 0;
      ExactStorage(spec);
      return;
    case 4: {  // negative strides (one dim, or all)
      const bool all = r.Flag();
      const size_t chosen = r.Below(rank);
      for (size_t d = 0; d < rank; ++d) {
        if (all || d == chosen) spec->strides[d] = WrapNeg(spec->strides[d]);
      }
      ExactStorage(spec);
      return;
    }
    case 5: {  // the dims in another order in memory (storage dims = the dims in memory order)
      std::vector<size_t> order(rank);
      for (size_t d = 0; d < rank; ++d) order[d] = d;
      for (size_t d = rank; d > 1; --d) std::swap(order[d - 1], order[r.Below(d)]);
      std::vector<int64_t> storage(rank);
      for (size_t m = 0; m < rank; ++m) storage[m] = dims[order[m]];
      const std::vector<int64_t> storage_strides = ContiguousStrides(storage);
      for (size_t m = 0; m < rank; ++m) spec->strides[order[m]] = storage_strides[m];
      spec->storage_dims = storage;
      return;
    }
    case 6:  // raw strides and offset, exact storage for them
      for (size_t d = 0; d < rank; ++d) spec->strides[d] = EdgeValue(r, spec->strides[d]);
      spec->offset = EdgeValue(r, 0);
      if (spec->offset < 0) spec->offset = 0;
      ExactStorage(spec);
      return;
    default:  // overlapping: one dim's stride 0, 1 or 2 (elements of an output would share memory)
      spec->strides[r.Below(rank)] = static_cast<int64_t>(r.Below(3));
      ExactStorage(spec);
      return;
  }
}

TensorSpec DecodeTensor(Reader& r, const std::string& name, bool is_output, const std::vector<int64_t>& shape,
                        int dtype, ValueRange range) {
  TensorSpec spec;
  spec.name = name;
  spec.is_output = is_output;
  spec.dtype = dtype;
  spec.dims = shape;
  spec.range = range;
  const uint8_t layout = r.Byte();
  const uint8_t mutations = r.Byte();
  if (mutations & 0x01) spec.dtype = DecodeDataType(r);
  if (mutations & 0x02) spec.format = DecodeFormat(r);
  if (mutations & 0x04) {  // another rank: dims dropped, or extra dims of 1..3 added in front
    const size_t rank = r.Below(11);
    while (spec.dims.size() > rank) spec.dims.pop_back();
    while (spec.dims.size() < rank) spec.dims.insert(spec.dims.begin(), 1 + static_cast<int64_t>(r.Below(3)));
  }
  if ((mutations & 0x08) && !spec.dims.empty()) {
    const size_t d = r.Below(spec.dims.size());
    spec.dims[d] = EdgeValue(r, spec.dims[d]);
  }
  ApplyLayout(r, layout, &spec);
  if (mutations & 0x10) {
    switch (r.Below(4)) {
      case 0: {  // one element too few
        if (spec.storage_dims.empty()) spec.storage_dims = {1};
        spec.storage_dims.back() = WrapAdd(spec.storage_dims.back(), -1);
        break;
      }
      case 1: {  // any storage dims
        spec.storage_dims.resize(r.Below(11));
        for (int64_t& dim : spec.storage_dims) dim = EdgeValue(r, 1 + static_cast<int64_t>(r.Below(8)));
        break;
      }
      case 2:  // the same storage described with a leading dim of 1
        spec.storage_dims.insert(spec.storage_dims.begin(), 1);
        break;
      default:
        if (!spec.storage_dims.empty()) {
          int64_t& dim = spec.storage_dims[r.Below(spec.storage_dims.size())];
          dim = EdgeValue(r, dim);
        }
        break;
    }
  }
  if (mutations & 0x20) spec.offset = EdgeValue(r, spec.offset);
  if (mutations & 0x40) {
    if (r.Flag()) spec.null_tensor = true; else spec.null_data = true;
  }
  if (mutations & 0x80) spec.alias_of = r.Byte();
  spec.fill = static_cast<Fill>(r.Below(3));
  return spec;
}

bool CreateTensorMustAccept(const TensorSpec& spec, std::string* why) {
  auto refuse = [why](const std::string& reason) {
    if (why != nullptr) *why = reason;
    return false;
  };
  if (spec.dims.size() > 8) return refuse("view rank above 8");
  if (spec.storage_dims.size() > 8) return refuse("storage rank above 8");
  for (int64_t dim : spec.dims) {
    if (dim < 0) return refuse("negative view dim");
  }
  for (int64_t dim : spec.storage_dims) {
    if (dim < 0) return refuse("negative storage dim");
  }
  bool known_dtype = false;
  for (int i = 0; i < kKnownDataTypeCount; ++i) known_dtype = known_dtype || kDataTypeValues[i] == spec.dtype;
  if (!known_dtype || spec.dtype == kString) return refuse("dtype not supported");
  bool known_format = false;
  for (int i = 0; i < kKnownFormatCount; ++i) known_format = known_format || kFormatValues[i] == spec.format;
  if (!known_format) return refuse("unknown format");
  for (size_t d = 0; d < spec.dims.size() && d < spec.strides.size(); ++d) {
    if (spec.strides[d] < 0) return refuse("negative stride");
  }
  if (spec.offset < 0) return refuse("negative offset");
  // The element count as the product dim by dim: an intermediate overflow refuses even if a later dim is 0.
  const int64_t view_elements = CheckedBytes(spec.dims, 1);
  if (view_elements < 0) return refuse("view element count overflows int64");
  const int64_t storage_elements = CheckedBytes(spec.storage_dims, 1);
  if (storage_elements < 0 || CheckedBytes(spec.storage_dims, ElementBytes(spec.dtype)) < 0) {
    return refuse("storage bytes overflow int64");
  }
  if (view_elements == 0) {
    if (spec.offset > storage_elements) return refuse("empty view's offset beyond the storage");
    return true;
  }
  __int128 low = spec.offset;
  __int128 high = spec.offset;
  for (size_t d = 0; d < spec.dims.size(); ++d) {
    const __int128 span = Span(spec.dims[d], spec.strides[d]);
    if (span < 0) low += span; else high += span;
  }
  if (low < 0 || high >= storage_elements) return refuse("view outside the storage");
  return true;
}

void CheckAcceptedDims(const char* op_name, const TensorSpec& spec, const std::vector<int64_t>& expected) {
  FUZZ_CHECK(spec.dims == expected, "%s accepted %s with dims %s, expected %s", op_name, spec.name.c_str(),
             DimsString(spec.dims).c_str(), DimsString(expected).c_str());
}

void CheckAcceptedDType(const char* op_name, const TensorSpec& spec, std::initializer_list<aclDataType> allowed) {
  for (aclDataType dtype : allowed) {
    if (IntOf(dtype) == spec.dtype) return;
  }
  Fail("%s accepted %s with dtype %d", op_name, spec.name.c_str(), spec.dtype);
}

// The library keeps the last 1024 released executors as tombstones (so that a stale handle is recognized; see
// src/base/executor.cpp): until that many were released, every input that creates an executor ends with more
// allocations than frees, and libFuzzer then reruns it under a full LeakSanitizer scan. Releasing 1100 executors up
// front keeps those scans for inputs that really leak.
void WarmUpExecutorRegistry() {
  const int64_t dims[4] = {1, 1, 1, 1};
  const int64_t strides[4] = {1, 1, 1, 1};
  float x = 0.0f;
  float y = 0.0f;
  unsigned char mask = 0;
  aclTensor* x_tensor = aclCreateTensor(dims, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 4, &x);
  aclTensor* mask_tensor = aclCreateTensor(dims, 4, ACL_BOOL, strides, 0, ACL_FORMAT_ND, dims, 4, &mask);
  aclTensor* y_tensor = aclCreateTensor(dims, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 4, &y);
  for (int i = 0; i < 1100; ++i) {
    uint64_t workspace_size = 0;
    aclOpExecutor* executor = nullptr;
    FUZZ_CHECK(aclnnScaledMaskedSoftmaxGetWorkspaceSize(x_tensor, mask_tensor, 1.0, false, y_tensor, &workspace_size,
                                                        &executor) == ACLNN_SUCCESS &&
                   aclDestroyAclOpExecutor(executor) == ACLNN_SUCCESS,
               "warming up the executor registry failed: %s", TakeRecentError().c_str());
  }
  aclDestroyTensor(x_tensor);
  aclDestroyTensor(mask_tensor);
  aclDestroyTensor(y_tensor);
}

std::string TakeRecentError() {
  const char* message = aclGetRecentErrMsg();
  return message == nullptr ? std::string() : std::string(message);
}

void InitRuntimeOnce() {
  static bool initialized = false;
  if (initialized) return;
  initialized = true;
  setenv("ACLNN_NUM_THREADS", "1", 0);  // fast iterations; an explicit setting wins
  FUZZ_CHECK(aclInit(nullptr) == ACL_SUCCESS, "aclInit failed: %s", TakeRecentError().c_str());
  FUZZ_CHECK(aclrtSetDevice(0) == ACL_SUCCESS, "aclrtSetDevice failed: %s", TakeRecentError().c_str());
  FUZZ_CHECK(aclrtCreateStream(&g_stream) == ACL_SUCCESS, "aclrtCreateStream failed: %s", TakeRecentError().c_str());
  WarmUpExecutorRegistry();
}

aclrtStream Stream() { return g_stream; }

// One storage allocation, shared by a tensor and the tensors that alias it.
struct Call::Buffer {
  int64_t bytes = 0;       // the size the tensors describe (the largest of them)
  unsigned char* data = nullptr;  // malloc'd, exactly `bytes`; null when too large to allocate
  int first_user = -1;
};

Call::Call(const uint8_t* data, size_t size) {
  InitRuntimeOnce();
  TakeRecentError();  // a message left by an earlier input must not pass for one of this input's
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a
  for (size_t i = 0; i < size; ++i) hash = (hash ^ data[i]) * 0x100000001b3ull;
  rng_state_ = hash;
}

Call::~Call() {
  for (aclTensor* tensor : tensors_) {
    if (tensor != nullptr) aclDestroyTensor(tensor);
  }
  for (auto& buffer : buffers_) std::free(buffer->data);
  // Messages this input left (e.g. the refused second run) are freed within it, so the input's allocations balance
  // its frees (libFuzzer reruns unbalanced inputs to look for leaks).
  TakeRecentError();
}

uint64_t Call::Random() { return NextRandom(&rng_state_); }

int Call::Add(TensorSpec spec) {
  const int index = static_cast<int>(specs_.size());
  if (spec.alias_of >= 0) spec.alias_of = index == 0 ? -1 : spec.alias_of % index;
  specs_.push_back(std::move(spec));
  return index;
}

[[clang::no_sanitize("coverage")]] void Call::FillBuffer(Buffer& buffer, const TensorSpec& spec) {
  unsigned char* bytes = buffer.data;
  const size_t size = static_cast<size_t>(buffer.bytes);
  const size_t element_bytes = ElementBytes(spec.dtype);
  if (spec.fill == Fill::kRandomBytes || element_bytes == 0 || element_bytes > sizeof(uint64_t)) {
    for (size_t at = 0; at < size; at += sizeof(uint64_t)) {
      const uint64_t bits = Random();
      std::memcpy(bytes + at, &bits, size - at < sizeof bits ? size - at : sizeof bits);
    }
    return;
  }
  const int max_exponent = spec.range.max_exponent;
  for (size_t at = 0; at + element_bytes <= size; at += element_bytes) {
    const uint64_t bits = Random();
    const bool special = spec.fill == Fill::kWithSpecials && (bits & 15) == 0;
    const uint64_t sign = spec.range.non_negative ? 0 : (bits >> 4) & 1;
    const int exponent_offset = static_cast<int>((bits >> 5) % static_cast<uint64_t>(8 + max_exponent)) - 8;
    uint64_t value = 0;
    switch (spec.dtype) {
      case kFloat: {
        constexpr uint32_t kSpecials[] = {0x7fc00000u, 0x7f800000u, 0xff800000u, 0u, 0x80000000u,
                                          0x7f7fffffu, 1u,          0x4f000000u, 0xcf000000u};
        value = special ? kSpecials[(bits >> 8) % 9]
                        : (sign << 31) | (static_cast<uint64_t>(127 + exponent_offset) << 23) |
                              ((bits >> 16) & 0x7fffff);
        break;
      }
      case kDouble: {
        constexpr uint64_t kSpecials[] = {0x7ff8000000000000ull, 0x7ff0000000000000ull, 0xfff0000000000000ull, 0ull,
                                          0x8000000000000000ull, 0x7fefffffffffffffull, 1ull, 0x43e0000000000000ull};
        const uint64_t more = Random();
        value = special ? kSpecials[(bits >> 8) % 8]
                        : (sign << 63) | (static_cast<uint64_t>(1023 + exponent_offset) << 52) |
                              (more & 0xfffffffffffffull);
        break;
      }
      case kFloat16: {
        constexpr uint16_t kSpecials[] = {0x7e00, 0x7c00, 0xfc00, 0, 0x8000, 0x7bff, 1, 0x7800};
        value = special ? kSpecials[(bits >> 8) % 8]
                        : (sign << 15) | (static_cast<uint64_t>(15 + exponent_offset) << 10) | ((bits >> 16) & 0x3ff);
        break;
      }
      case kBFloat16: {
        constexpr uint16_t kSpecials[] = {0x7fc0, 0x7f80, 0xff80, 0, 0x8000, 0x7f7f, 1, 0x4f00};
        value = special ? kSpecials[(bits >> 8) % 8]
                        : (sign << 15) | (static_cast<uint64_t>(127 + exponent_offset) << 7) | ((bits >> 16) & 0x7f);
        break;
      }
      case kBool:
        value = special ? (bits >> 8) & 0xff : (bits >> 8) & 1;
        break;
      case kInt32:
      case kInt64:
        value = special ? Random() : (bits >> 8) % 8;
        break;
      default:
        value = bits;
        break;
    }
    // The low bytes (little-endian), each size a fixed-size store (a variable-size memcpy per element is slow
    // under ASan).
    switch (element_bytes) {
      case 1:
        bytes[at] = static_cast<unsigned char>(value);
        break;
      case 2: {
        const uint16_t narrow = static_cast<uint16_t>(value);
        std::memcpy(bytes + at, &narrow, sizeof narrow);
        break;
      }
      case 4: {
        const uint32_t narrow = static_cast<uint32_t>(value);
        std::memcpy(bytes + at, &narrow, sizeof narrow);
        break;
      }
      default:
        std::memcpy(bytes + at, &value, sizeof value);
        break;
    }
  }
  for (size_t at = size / element_bytes * element_bytes; at < size; ++at) {
    bytes[at] = static_cast<unsigned char>(Random());
  }
}

void Call::WriteViewIntegers(const TensorSpec& spec, Buffer& buffer) {
  if (spec.int_values.empty() || spec.fill == Fill::kRandomBytes) return;
  if (spec.dtype != kInt32 && spec.dtype != kInt64) return;
  if (!CreateTensorMustAccept(spec, nullptr) || Elements(spec.dims) > 4096) return;
  const size_t element_bytes = ElementBytes(spec.dtype);
  if (CheckedBytes(spec.storage_dims, element_bytes) > buffer.bytes) return;
  size_t i = 0;
  for (int64_t element : ViewElementIndices(spec)) {
    const int64_t value = spec.int_values[i++ % spec.int_values.size()];
    unsigned char* at = buffer.data + static_cast<size_t>(element) * element_bytes;
    if (spec.dtype == kInt32) {
      const int32_t narrow = static_cast<int32_t>(value);
      std::memcpy(at, &narrow, sizeof narrow);
    } else {
      std::memcpy(at, &value, sizeof value);
    }
  }
}

void Call::Materialize() {
  const size_t count = specs_.size();
  buffer_of_.assign(count, -1);
  tensors_.assign(count, nullptr);
  for (size_t i = 0; i < count; ++i) {
    const TensorSpec& spec = specs_[i];
    if (spec.null_tensor) continue;
    const int64_t bytes = CheckedBytes(spec.storage_dims, ElementBytes(spec.dtype));
    const int alias = spec.alias_of;
    if (alias >= 0 && buffer_of_[static_cast<size_t>(alias)] >= 0) {
      const int shared = buffer_of_[static_cast<size_t>(alias)];
      buffer_of_[i] = shared;
      Buffer& buffer = *buffers_[static_cast<size_t>(shared)];
      if (bytes > buffer.bytes) buffer.bytes = bytes;
      continue;
    }
    if (bytes < 0) continue;  // aclCreateTensor must refuse it
    auto buffer = std::make_unique<Buffer>();
    buffer->bytes = bytes;
    buffer->first_user = static_cast<int>(i);
    buffer_of_[i] = static_cast<int>(buffers_.size());
    buffers_.push_back(std::move(buffer));
  }
  uint64_t total = 0;
  for (auto& buffer : buffers_) {
    const uint64_t bytes = static_cast<uint64_t>(buffer->bytes);
    if (bytes > kMaxStorageBytes || total + bytes > kMaxStorageBytes) {
      all_storage_allocated_ = false;
      continue;
    }
    total += bytes;
    buffer->data = static_cast<unsigned char*>(std::malloc(bytes));
    FUZZ_CHECK(buffer->data != nullptr || bytes == 0, "malloc(%llu) failed", static_cast<unsigned long long>(bytes));
    FillBuffer(*buffer, specs_[static_cast<size_t>(buffer->first_user)]);
  }
  for (size_t i = 0; i < count; ++i) {
    if (buffer_of_[i] >= 0 && buffers_[static_cast<size_t>(buffer_of_[i])]->data != nullptr) {
      WriteViewIntegers(specs_[i], *buffers_[static_cast<size_t>(buffer_of_[i])]);
    }
  }

  // A storage too large to allocate gets an address that faults if touched: phase 1 reads no tensor data, and
  // phase 2 does not run then.
  static unsigned char* const kUnbackedStorage = reinterpret_cast<unsigned char*>(uintptr_t{64});
  for (size_t i = 0; i < count; ++i) {
    TensorSpec& spec = specs_[i];
    if (spec.null_tensor) {
      if (Verbose()) std::fprintf(stderr, "  %s: null\n", spec.name.c_str());
      continue;
    }
    if (buffer_of_[i] < 0) all_storage_allocated_ = false;
    void* data = nullptr;
    if (!spec.null_data) {
      data = buffer_of_[i] >= 0 && buffers_[static_cast<size_t>(buffer_of_[i])]->data != nullptr
                 ? static_cast<void*>(buffers_[static_cast<size_t>(buffer_of_[i])]->data)
                 : static_cast<void*>(kUnbackedStorage);
    }
    // Exact-size copies of the arrays, so that reading past viewDimsNum / storageDimsNum is an ASan report.
    std::unique_ptr<int64_t[]> dims(spec.dims.empty() ? nullptr : new int64_t[spec.dims.size()]);
    std::unique_ptr<int64_t[]> strides(spec.dims.empty() ? nullptr : new int64_t[spec.dims.size()]);
    std::unique_ptr<int64_t[]> storage(spec.storage_dims.empty() ? nullptr : new int64_t[spec.storage_dims.size()]);
    for (size_t d = 0; d < spec.dims.size(); ++d) {
      dims[d] = spec.dims[d];
      strides[d] = spec.strides[d];
    }
    for (size_t d = 0; d < spec.storage_dims.size(); ++d) storage[d] = spec.storage_dims[d];
    tensors_[i] = FuzzCreateTensor(dims.get(), spec.dims.size(), spec.dtype, strides.get(), spec.offset, spec.format,
                                   storage.get(), spec.storage_dims.size(), data);
    const std::string message = tensors_[i] == nullptr ? TakeRecentError() : std::string();
    if (Verbose()) {
      std::fprintf(stderr,
                   "  %s: %s dtype %d format %d dims %s strides %s offset %lld storage %s alias %d fill %d -> %s\n",
                   spec.name.c_str(), spec.null_data ? "null data" : "", spec.dtype, spec.format,
                   DimsString(spec.dims).c_str(), DimsString(spec.strides).c_str(),
                   static_cast<long long>(spec.offset), DimsString(spec.storage_dims).c_str(), spec.alias_of,
                   static_cast<int>(spec.fill), tensors_[i] != nullptr ? "created" : message.c_str());
    }
    std::string why;
    const bool must_accept = CreateTensorMustAccept(spec, &why);
    FUZZ_CHECK(tensors_[i] != nullptr || !must_accept,
               "aclCreateTensor refused %s (dims %s, strides %s, offset %lld, storage %s, dtype %d, format %d), a "
               "valid description: %s",
               spec.name.c_str(), DimsString(spec.dims).c_str(), DimsString(spec.strides).c_str(),
               static_cast<long long>(spec.offset), DimsString(spec.storage_dims).c_str(), spec.dtype, spec.format,
               message.c_str());
    FUZZ_CHECK(tensors_[i] == nullptr || must_accept,
               "aclCreateTensor accepted %s (dims %s, strides %s, offset %lld, storage %s, dtype %d, format %d) "
               "although %s",
               spec.name.c_str(), DimsString(spec.dims).c_str(), DimsString(spec.strides).c_str(),
               static_cast<long long>(spec.offset), DimsString(spec.storage_dims).c_str(), spec.dtype, spec.format,
               why.c_str());
    if (tensors_[i] == nullptr) {
      FUZZ_CHECK(message.rfind("aclCreateTensor: ", 0) == 0, "aclCreateTensor refused %s with message \"%s\"",
                 spec.name.c_str(), message.c_str());
    }
  }
}

aclTensor* Call::tensor(int index) const { return tensors_[static_cast<size_t>(index)]; }

bool Call::PassedAsNull(int index) const {
  const TensorSpec& spec = specs_[static_cast<size_t>(index)];
  if (tensors_[static_cast<size_t>(index)] == nullptr) return true;
  return spec.null_data && Elements(spec.dims) > 0;
}

bool Call::AnyPassedAsNull() const {
  for (size_t i = 0; i < specs_.size(); ++i) {
    if (PassedAsNull(static_cast<int>(i))) return true;
  }
  return false;
}

void Call::DecodeOutPointers(Reader& r) {
  const uint8_t choice = r.Byte();
  null_workspace_size_ = choice == 0xfe;
  null_executor_ = choice == 0xff;
}

bool Call::CheckPhase1(const char* op_name, aclnnStatus status, bool required_null) {
  const std::string message = status == ACLNN_SUCCESS ? std::string() : TakeRecentError();
  Note("%sGetWorkspaceSize: %d %s", op_name, status, message.c_str());
  if (status == ACLNN_SUCCESS) {
    FUZZ_CHECK(!required_null && !out_pointer_null(), "%sGetWorkspaceSize accepted a null required argument",
               op_name);
    FUZZ_CHECK(executor_ != nullptr, "%sGetWorkspaceSize succeeded without an executor", op_name);
    return true;
  }
  FUZZ_CHECK(status == ACLNN_ERR_PARAM_NULLPTR || status == ACLNN_ERR_PARAM_INVALID,
             "%sGetWorkspaceSize returned %d, not 161001 or 161002: %s", op_name, status, message.c_str());
  const bool null_expected = required_null || out_pointer_null();
  FUZZ_CHECK((status == ACLNN_ERR_PARAM_NULLPTR) == null_expected,
             "%sGetWorkspaceSize returned %d while a required argument %s null: %s", op_name, status,
             null_expected ? "was" : "was not", message.c_str());
  const std::string prefix = std::string(op_name) + ": ";
  FUZZ_CHECK(message.rfind(prefix, 0) == 0 && message.size() > prefix.size(),
             "%sGetWorkspaceSize returned %d with message \"%s\" (expected \"%s...\")", op_name, status,
             message.c_str(), prefix.c_str());
  return false;
}

void Call::RunPhase2(Reader& r, const char* op_name, Phase2 run, Phase2 other_op_run, const std::vector<int>& written,
                     uint64_t work) {
  aclOpExecutor* executor = executor_;
  const uint64_t workspace_size = workspace_size_;
  const uint8_t mode = r.Byte() % 8;
  for (const TensorSpec& spec : specs_) {
    const uint64_t elements = Elements(spec.dims);
    work = work > UINT64_MAX - elements ? UINT64_MAX : work + elements;
  }
  const bool skip = !all_storage_allocated_ || workspace_size > kMaxWorkspaceBytes || work > kMaxWork || mode == 7;
  if (Verbose()) {
    std::fprintf(stderr, "%s: phase 2 %s (workspace %llu bytes, work %llu, mode %d)\n", op_name,
                 skip ? "skipped" : "runs", static_cast<unsigned long long>(workspace_size),
                 static_cast<unsigned long long>(work), mode);
  }
  if (skip) {
    FUZZ_CHECK(aclDestroyAclOpExecutor(executor) == ACLNN_SUCCESS, "aclDestroyAclOpExecutor failed: %s",
               TakeRecentError().c_str());
    FUZZ_CHECK(aclDestroyAclOpExecutor(executor) == ACLNN_ERR_PARAM_INVALID,
               "a second aclDestroyAclOpExecutor did not answer 161002");
    return;
  }

  // What phase 2 may change: the bytes of the written outputs' elements. Each written output must have distinct
  // elements (phase 1 refuses overlapping outputs), all inside its storage.
  // A mask is allocated only for the buffers of written outputs; the others must stay byte for byte the same.
  std::vector<std::vector<unsigned char>> writable(buffers_.size());
  for (int index : written) {
    const TensorSpec& spec = specs_[static_cast<size_t>(index)];
    FUZZ_CHECK(tensors_[static_cast<size_t>(index)] != nullptr && buffer_of_[static_cast<size_t>(index)] >= 0,
               "%s: phase 1 accepted a call whose output %s is null", op_name, spec.name.c_str());
    const int64_t storage_elements = CheckedBytes(spec.storage_dims, 1);
    FUZZ_CHECK(Elements(spec.dims) <= static_cast<uint64_t>(storage_elements),
               "%s: phase 1 accepted output %s with %s elements in a storage of %lld: its elements share memory",
               op_name, spec.name.c_str(), DimsString(spec.dims).c_str(), static_cast<long long>(storage_elements));
    const size_t buffer = static_cast<size_t>(buffer_of_[static_cast<size_t>(index)]);
    writable[buffer].resize(static_cast<size_t>(buffers_[buffer]->bytes), 0);
    std::vector<unsigned char> seen(static_cast<size_t>(storage_elements), 0);
    const int64_t shared = MarkElements(ViewElementIndices(spec), ElementBytes(spec.dtype), &seen, &writable[buffer]);
    FUZZ_CHECK(shared < 0,
               "%s: phase 1 accepted output %s (dims %s, strides %s) whose elements share storage element %lld",
               op_name, spec.name.c_str(), DimsString(spec.dims).c_str(), DimsString(spec.strides).c_str(),
               static_cast<long long>(shared));
  }
  std::vector<std::vector<unsigned char>> before(buffers_.size());
  for (size_t b = 0; b < buffers_.size(); ++b) {
    if (buffers_[b]->bytes > 0) before[b].assign(buffers_[b]->data, buffers_[b]->data + buffers_[b]->bytes);
  }

  // The workspace: exactly the size phase 1 asked for, full of garbage.
  unsigned char* workspace = nullptr;
  if (workspace_size > 0) {
    workspace = static_cast<unsigned char*>(std::malloc(workspace_size));
    FUZZ_CHECK(workspace != nullptr, "malloc of a %llu-byte workspace failed",
               static_cast<unsigned long long>(workspace_size));
    for (uint64_t i = 0; i < workspace_size; ++i) workspace[i] = static_cast<unsigned char>(Random());
  }
  aclrtStream stream = Stream();

  if (mode == 5) {  // misuse first: each must be refused and leave the executor usable
    if (workspace_size > 0) {
      FUZZ_CHECK(run(workspace, workspace_size - 1, executor, stream) == ACLNN_ERR_PARAM_INVALID,
                 "%s ran with a workspace smaller than asked for", op_name);
      FUZZ_CHECK(run(nullptr, workspace_size, executor, stream) == ACLNN_ERR_PARAM_NULLPTR,
                 "%s ran with a null workspace", op_name);
    }
    FUZZ_CHECK(other_op_run(workspace, workspace_size, executor, stream) == ACLNN_ERR_PARAM_INVALID,
               "another operator's phase 2 ran %s's executor", op_name);
  }
  const bool repeat = mode == 6;
  if (repeat) {
    FUZZ_CHECK(aclSetAclOpExecutorRepeatable(executor) == ACLNN_SUCCESS, "aclSetAclOpExecutorRepeatable failed: %s",
               TakeRecentError().c_str());
  }
  for (int round = 0; round < (repeat ? 2 : 1); ++round) {
    const aclnnStatus status = run(workspace, workspace_size, executor, stream);
    FUZZ_CHECK(status == ACLNN_SUCCESS, "%s (phase 2) returned %d after phase 1 accepted: %s", op_name, status,
               TakeRecentError().c_str());
    const aclError synced = aclrtSynchronizeStream(stream);
    FUZZ_CHECK(synced == ACL_SUCCESS, "%s: aclrtSynchronizeStream returned %d after phase 1 accepted: %s", op_name,
               synced, TakeRecentError().c_str());
  }
  if (repeat) {
    FUZZ_CHECK(aclDestroyAclOpExecutor(executor) == ACLNN_SUCCESS, "aclDestroyAclOpExecutor failed: %s",
               TakeRecentError().c_str());
  } else {
    FUZZ_CHECK(run(workspace, workspace_size, executor, stream) == ACLNN_ERR_PARAM_INVALID,
               "%s ran a non-repeatable executor twice", op_name);
    if (mode & 1) {
      FUZZ_CHECK(aclDestroyAclOpExecutor(executor) == ACLNN_SUCCESS,
                 "aclDestroyAclOpExecutor of an executor that ran failed: %s", TakeRecentError().c_str());
    }
  }
  std::free(workspace);

  for (size_t b = 0; b < buffers_.size(); ++b) {
    const int64_t changed = FirstUnexpectedChange(before[b], buffers_[b]->data, writable[b]);
    FUZZ_CHECK(changed < 0, "%s changed byte %lld of the storage of %s, which is not an element of a written output",
               op_name, static_cast<long long>(changed),
               specs_[static_cast<size_t>(buffers_[b]->first_user)].name.c_str());
  }
}

}  // namespace fuzz

// libFuzzer calls this once before the first input: the runtime setup (and the registry warm-up) then stays out of
// the inputs' allocation counts.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  fuzz::InitRuntimeOnce();
  return 0;
}
