#include "op_test_util.h"

#include <gtest/gtest.h>
#include <spawn.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <utility>

#include "hwy/targets.h"
#include "float_formats.h"
#include "self_command.h"

extern char** environ;

namespace optest {
namespace {

// aclInit and device 0 for the whole op_tests process.
class AclEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << aclGetRecentErrMsg();
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS) << aclGetRecentErrMsg();
  }
  void TearDown() override {
    EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS) << aclGetRecentErrMsg();
    EXPECT_EQ(aclFinalize(), ACL_SUCCESS) << aclGetRecentErrMsg();
  }
};
[[maybe_unused]] ::testing::Environment* const kAclEnvironment =
    ::testing::AddGlobalTestEnvironment(new AclEnvironment);

void Require(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("op_test_util: " + what + " (" + aclGetRecentErrMsg() + ")");
}

// Encodes RoundToDType(v, dtype) into element bytes.
void EncodeElement(double v, aclDataType dtype, uint8_t* out) {
  switch (dtype) {
    case ACL_FLOAT: {
      const float f = static_cast<float>(v);
      std::memcpy(out, &f, sizeof f);
      return;
    }
    case ACL_FLOAT16: {
      const uint16_t bits = ref::DoubleToHalfBits(v);
      std::memcpy(out, &bits, sizeof bits);
      return;
    }
    case ACL_BF16: {
      const uint16_t bits = ref::DoubleToBFloat16Bits(v);
      std::memcpy(out, &bits, sizeof bits);
      return;
    }
    case ACL_DOUBLE:
      std::memcpy(out, &v, sizeof v);
      return;
    case ACL_BOOL:
    case ACL_UINT8:
      *out = static_cast<uint8_t>(RoundToDType(v, ACL_BOOL));
      return;
    case ACL_INT32: {
      const int32_t i = static_cast<int32_t>(RoundToDType(v, ACL_INT32));
      std::memcpy(out, &i, sizeof i);
      return;
    }
    case ACL_INT64: {
      const int64_t i = static_cast<int64_t>(RoundToDType(v, ACL_INT64));
      std::memcpy(out, &i, sizeof i);
      return;
    }
    default:
      throw std::invalid_argument("op_test_util: unsupported dtype");
  }
}

double DecodeElement(const uint8_t* in, aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT: {
      float f;
      std::memcpy(&f, in, sizeof f);
      return f;
    }
    case ACL_FLOAT16: {
      uint16_t bits;
      std::memcpy(&bits, in, sizeof bits);
      return ref::HalfBitsToDouble(bits);
    }
    case ACL_BF16: {
      uint16_t bits;
      std::memcpy(&bits, in, sizeof bits);
      return ref::BFloat16BitsToDouble(bits);
    }
    case ACL_DOUBLE: {
      double d;
      std::memcpy(&d, in, sizeof d);
      return d;
    }
    case ACL_BOOL:
    case ACL_UINT8:
      return *in;
    case ACL_INT32: {
      int32_t i;
      std::memcpy(&i, in, sizeof i);
      return i;
    }
    case ACL_INT64: {
      int64_t i;
      std::memcpy(&i, in, sizeof i);
      return static_cast<double>(i);
    }
    default:
      throw std::invalid_argument("op_test_util: unsupported dtype");
  }
}

// The pre-fill of an output element: NaN for floating dtypes, the guard pattern otherwise.
void EncodeFill(aclDataType dtype, uint8_t* out) {
  if (IsFloatingDType(dtype)) {
    EncodeElement(std::numeric_limits<double>::quiet_NaN(), dtype, out);
  } else {
    std::memset(out, DeviceTensor::kGuardPattern, ElementBytes(dtype));
  }
}

}  // namespace

const char* LayoutName(Layout layout) {
  switch (layout) {
    case Layout::kContiguous:
      return "contiguous";
    case Layout::kTransposed:
      return "transposed";
    case Layout::kPadded:
      return "padded";
    case Layout::kChannelsLast:
      return "channels_last";
    case Layout::kBroadcast:
      return "broadcast";
  }
  return "?";
}

namespace {

// The dim kBroadcast gives stride 0: the first of size > 1 (-1 when there is none).
int BroadcastDim(const std::vector<int64_t>& shape) {
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] > 1) return static_cast<int>(d);
  }
  return -1;
}

}  // namespace

std::vector<double> AsStored(const std::vector<double>& values, const std::vector<int64_t>& shape, Layout layout) {
  const int dim = BroadcastDim(shape);
  if (layout != Layout::kBroadcast || dim < 0) return values;
  int64_t inner = 1;  // elements per index of the broadcast dim
  for (size_t d = static_cast<size_t>(dim) + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t outer_stride = inner * shape[static_cast<size_t>(dim)];
  std::vector<double> stored(values.size());
  for (int64_t i = 0; i < static_cast<int64_t>(values.size()); ++i) {
    const int64_t outer = i / outer_stride;
    stored[static_cast<size_t>(i)] = values[static_cast<size_t>(outer * outer_stride + i % inner)];
  }
  return stored;
}

size_t ElementBytes(aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT:
    case ACL_INT32:
      return 4;
    case ACL_FLOAT16:
    case ACL_BF16:
      return 2;
    case ACL_DOUBLE:
    case ACL_INT64:
      return 8;
    case ACL_BOOL:
    case ACL_UINT8:
      return 1;
    default:
      throw std::invalid_argument("op_test_util: unsupported dtype");
  }
}

bool IsFloatingDType(aclDataType dtype) {
  return dtype == ACL_FLOAT || dtype == ACL_FLOAT16 || dtype == ACL_BF16 || dtype == ACL_DOUBLE;
}

double RoundToDType(double v, aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT:
      return static_cast<double>(static_cast<float>(v));
    case ACL_FLOAT16:
      return ref::RoundToFormat(v, ref::kHalf);
    case ACL_BF16:
      return ref::RoundToFormat(v, ref::kBFloat16);
    case ACL_DOUBLE:
      return v;
    case ACL_BOOL:
    case ACL_UINT8:
      if (!(v >= 0.0 && v <= 255.0)) throw std::invalid_argument("op_test_util: BOOL values must be in [0, 255]");
      return std::nearbyint(v);
    case ACL_INT32:
      if (!(v >= -2147483648.0 && v <= 2147483647.0)) throw std::invalid_argument("op_test_util: INT32 overflow");
      return std::nearbyint(v);
    case ACL_INT64:
      if (!(std::fabs(v) < 9.2e18)) throw std::invalid_argument("op_test_util: INT64 overflow");
      return std::nearbyint(v);
    default:
      throw std::invalid_argument("op_test_util: unsupported dtype");
  }
}

std::vector<double> RoundToDType(const std::vector<double>& values, aclDataType dtype) {
  std::vector<double> rounded(values.size());
  for (size_t i = 0; i < values.size(); ++i) rounded[i] = RoundToDType(values[i], dtype);
  return rounded;
}

double EpsilonOf(aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT:
      return std::ldexp(1.0, -23);
    case ACL_FLOAT16:
      return std::ldexp(1.0, -10);
    case ACL_BF16:
      return std::ldexp(1.0, -7);
    case ACL_DOUBLE:
      return std::ldexp(1.0, -52);
    default:
      throw std::invalid_argument("op_test_util: EpsilonOf needs a floating dtype");
  }
}

double UlpOf(double v, aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT:
      return ref::UlpOf(v, ref::FloatFormat{23, -126, 127});
    case ACL_FLOAT16:
      return ref::UlpOf(v, ref::kHalf);
    case ACL_BF16:
      return ref::UlpOf(v, ref::kBFloat16);
    case ACL_DOUBLE:
      return ref::UlpOf(v, ref::FloatFormat{52, -1022, 1023});
    default:
      throw std::invalid_argument("op_test_util: UlpOf needs a floating dtype");
  }
}

int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

std::vector<int64_t> CumulativeEnds(const std::vector<int64_t>& lengths) {
  std::vector<int64_t> ends;
  int64_t end = 0;
  for (int64_t length : lengths) ends.push_back(end += length);
  return ends;
}

std::vector<double> RepeatEach(const std::vector<double>& values, int64_t times) {
  std::vector<double> repeated;
  repeated.reserve(values.size() * static_cast<size_t>(times));
  for (double v : values) repeated.insert(repeated.end(), static_cast<size_t>(times), v);
  return repeated;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d > 1; --d) strides[d - 2] = strides[d - 1] * shape[d - 1];
  return strides;
}

double UniformValue(std::mt19937_64& rng, double lo, double hi) {
  const double unit = static_cast<double>(rng() >> 11) * 0x1p-53;  // exact: a multiple of 2^-53 in [0, 1)
  const double value = lo + (hi - lo) * unit;
  return value < hi ? value : lo;  // the product's rounding can reach hi
}

int64_t UniformInt(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int64_t>((rng() >> 32) * span >> 32);  // span <= 2^32: no overflow
}

std::vector<double> RandomValues(std::mt19937_64& rng, int64_t count, double lo, double hi, aclDataType dtype) {
  std::vector<double> values(static_cast<size_t>(count));
  for (double& v : values) v = RoundToDType(UniformValue(rng, lo, hi), dtype);
  return values;
}

// ---------------------------------------------------------------------------------------------------------------
// DeviceTensor

DeviceTensor::DeviceTensor(std::vector<int64_t> shape, aclDataType dtype, Layout layout,
                           const std::vector<double>& values, aclFormat format) {
  Allocate(std::move(shape), dtype, layout, format);
  Write(values);
}

DeviceTensor DeviceTensor::Output(std::vector<int64_t> shape, aclDataType dtype, Layout layout, aclFormat format) {
  DeviceTensor tensor;
  tensor.Allocate(std::move(shape), dtype, layout, format);
  std::vector<uint8_t> bytes = tensor.ReadAllocation();
  const size_t element_bytes = ElementBytes(dtype);
  tensor.ForEachElement([&](int64_t, int64_t index) {
    EncodeFill(dtype, bytes.data() + kGuardBytes + static_cast<size_t>(index) * element_bytes);
  });
  tensor.WriteAllocation(bytes);
  return tensor;
}

void DeviceTensor::Allocate(std::vector<int64_t> shape, aclDataType dtype, Layout layout, aclFormat format) {
  shape_ = std::move(shape);
  dtype_ = dtype;
  layout_ = layout;
  const int rank = static_cast<int>(shape_.size());
  const int64_t count = NumElements(shape_);
  strides_.assign(shape_.size(), 1);
  offset_ = 0;
  if (layout == Layout::kTransposed && rank >= 2) {
    std::vector<int64_t> storage_shape = shape_;
    std::swap(storage_shape[rank - 1], storage_shape[rank - 2]);
    for (int d = rank - 2; d >= 0; --d) strides_[d] = strides_[d + 1] * storage_shape[d + 1];
    std::swap(strides_[rank - 1], strides_[rank - 2]);
    storage_elements_ = count;
  } else if (layout == Layout::kChannelsLast && rank >= 3) {
    // Storage dims (0, 2, 3, ..., rank - 1, 1), row-major.
    int64_t stride = 1;
    strides_[1] = stride;
    stride *= shape_[1];
    for (int d = rank - 1; d >= 2; --d) {
      strides_[static_cast<size_t>(d)] = stride;
      stride *= shape_[static_cast<size_t>(d)];
    }
    strides_[0] = stride;
    storage_elements_ = count;
  } else if (layout == Layout::kBroadcast && BroadcastDim(shape_) >= 0) {
    const int dim = BroadcastDim(shape_);
    for (int d = rank - 2; d >= 0; --d) {
      strides_[static_cast<size_t>(d)] =
          strides_[static_cast<size_t>(d) + 1] * (d + 1 == dim ? 1 : shape_[static_cast<size_t>(d) + 1]);
    }
    strides_[static_cast<size_t>(dim)] = 0;
    storage_elements_ = count / shape_[static_cast<size_t>(dim)];
  } else if (layout == Layout::kPadded) {
    constexpr int64_t kGap = 3;
    offset_ = 5;
    for (int d = rank - 2; d >= 0; --d) strides_[d] = strides_[d + 1] * shape_[d + 1] + kGap;
    int64_t last = 0;
    for (int d = 0; d < rank; ++d) last += (shape_[d] - 1) * strides_[d];
    storage_elements_ = count > 0 ? offset_ + last + 1 + kGap : offset_ + kGap;
  } else {
    for (int d = rank - 2; d >= 0; --d) strides_[d] = strides_[d + 1] * shape_[d + 1];
    storage_elements_ = count;
  }

  allocation_bytes_ = 2 * kGuardBytes + static_cast<size_t>(storage_elements_) * ElementBytes(dtype_);
  Require(aclrtMalloc(&allocation_, allocation_bytes_, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS, "aclrtMalloc");
  WriteAllocation(std::vector<uint8_t>(allocation_bytes_, kGuardPattern));

  const int64_t storage_dims[1] = {storage_elements_};
  tensor_ =
      aclCreateTensor(shape_.data(), shape_.size(), dtype_, strides_.data(), offset_, format, storage_dims, 1, data());
  Require(tensor_ != nullptr, "aclCreateTensor");
}

DeviceTensor::~DeviceTensor() { Release(); }

void DeviceTensor::Release() {
  if (tensor_ != nullptr) aclDestroyTensor(tensor_);
  if (allocation_ != nullptr) aclrtFree(allocation_);
  tensor_ = nullptr;
  allocation_ = nullptr;
}

DeviceTensor::DeviceTensor(DeviceTensor&& other) noexcept { *this = std::move(other); }

DeviceTensor& DeviceTensor::operator=(DeviceTensor&& other) noexcept {
  if (this != &other) {
    Release();
    shape_ = std::move(other.shape_);
    strides_ = std::move(other.strides_);
    offset_ = other.offset_;
    storage_elements_ = other.storage_elements_;
    dtype_ = other.dtype_;
    layout_ = other.layout_;
    allocation_bytes_ = other.allocation_bytes_;
    allocation_ = std::exchange(other.allocation_, nullptr);
    tensor_ = std::exchange(other.tensor_, nullptr);
  }
  return *this;
}

void* DeviceTensor::data() const { return static_cast<uint8_t*>(allocation_) + kGuardBytes; }

std::vector<uint8_t> DeviceTensor::ReadAllocation() const {
  std::vector<uint8_t> bytes(allocation_bytes_);
  Require(
      aclrtMemcpy(bytes.data(), bytes.size(), allocation_, allocation_bytes_, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS,
      "aclrtMemcpy to host");
  return bytes;
}

void DeviceTensor::WriteAllocation(const std::vector<uint8_t>& bytes) {
  Require(
      aclrtMemcpy(allocation_, allocation_bytes_, bytes.data(), bytes.size(), ACL_MEMCPY_HOST_TO_DEVICE) == ACL_SUCCESS,
      "aclrtMemcpy to device");
}

bool DeviceTensor::Dense() const {
  if (offset_ != 0 || storage_elements_ != size()) return false;
  int64_t stride = 1;
  for (size_t d = shape_.size(); d-- > 0;) {
    if (shape_[d] != 1 && strides_[d] != stride) return false;
    stride *= shape_[d];
  }
  return true;
}

template <class Visit>
void DeviceTensor::ForEachElement(Visit&& visit) const {
  const int64_t count = size();
  if (Dense()) {
    for (int64_t i = 0; i < count; ++i) visit(i, i);
    return;
  }
  const int rank = static_cast<int>(shape_.size());
  std::vector<int64_t> index(shape_.size(), 0);
  int64_t element = offset_;
  for (int64_t i = 0; i < count; ++i) {
    visit(i, element);
    for (int d = rank - 1; d >= 0; --d) {  // odometer, last dim fastest
      element += strides_[d];
      if (++index[d] < shape_[d]) break;
      element -= index[d] * strides_[d];
      index[d] = 0;
    }
  }
}

void DeviceTensor::Write(const std::vector<double>& values) {
  if (static_cast<int64_t>(values.size()) != size()) {
    throw std::invalid_argument("op_test_util: Write got " + std::to_string(values.size()) + " values for shape " +
                                ShapeString(shape_));
  }
  if (layout_ == Layout::kBroadcast) {
    auto same = [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); };
    const std::vector<double> stored = AsStored(values, shape_, layout_);
    if (!std::equal(stored.begin(), stored.end(), values.begin(), same)) {
      throw std::invalid_argument("op_test_util: values for a broadcast tensor of shape " + ShapeString(shape_) +
                                  " must repeat along the broadcast dim (use AsStored)");
    }
  }
  std::vector<uint8_t> bytes = ReadAllocation();
  const size_t element_bytes = ElementBytes(dtype_);
  uint8_t* storage = bytes.data() + kGuardBytes;
  ForEachElement([&](int64_t i, int64_t index) {
    EncodeElement(values[static_cast<size_t>(i)], dtype_, storage + static_cast<size_t>(index) * element_bytes);
  });
  WriteAllocation(bytes);
}

std::vector<double> DeviceTensor::Read() const {
  const std::vector<uint8_t> bytes = ReadAllocation();
  const size_t element_bytes = ElementBytes(dtype_);
  const uint8_t* storage = bytes.data() + kGuardBytes;
  std::vector<double> values(static_cast<size_t>(size()));
  ForEachElement([&](int64_t i, int64_t index) {
    values[static_cast<size_t>(i)] = DecodeElement(storage + static_cast<size_t>(index) * element_bytes, dtype_);
  });
  return values;
}

std::vector<uint8_t> DeviceTensor::ReadBytes() const {
  const std::vector<uint8_t> bytes = ReadAllocation();
  const size_t element_bytes = ElementBytes(dtype_);
  const uint8_t* storage = bytes.data() + kGuardBytes;
  if (Dense()) return std::vector<uint8_t>(storage, storage + static_cast<size_t>(size()) * element_bytes);
  std::vector<uint8_t> elements(static_cast<size_t>(size()) * element_bytes);
  ForEachElement([&](int64_t i, int64_t index) {
    std::memcpy(elements.data() + static_cast<size_t>(i) * element_bytes,
                storage + static_cast<size_t>(index) * element_bytes, element_bytes);
  });
  return elements;
}

std::string DeviceTensor::CheckGuards() const {
  const std::vector<uint8_t> bytes = ReadAllocation();
  const size_t element_bytes = ElementBytes(dtype_);
  // Dense: the view covers the whole storage, so only the two guards are outside it; otherwise mark the view's bytes.
  const bool dense = Dense();
  const size_t view_end = kGuardBytes + static_cast<size_t>(storage_elements_) * element_bytes;
  std::vector<bool> in_view;
  if (!dense) {
    in_view.assign(allocation_bytes_, false);
    ForEachElement([&](int64_t, int64_t index) {
      const size_t start = kGuardBytes + static_cast<size_t>(index) * element_bytes;
      for (size_t b = 0; b < element_bytes; ++b) in_view[start + b] = true;
    });
  }
  auto covered = [&](size_t i) { return dense ? (i >= kGuardBytes && i < view_end) : in_view[i]; };
  for (size_t i = 0; i < allocation_bytes_; ++i) {
    if (!covered(i) && bytes[i] != kGuardPattern) {
      const long long storage_byte = static_cast<long long>(i) - static_cast<long long>(kGuardBytes);
      return "byte " + std::to_string(storage_byte) + " relative to the storage start (storage bytes: " +
             std::to_string(storage_elements_ * static_cast<int64_t>(element_bytes)) + ", layout " +
             LayoutName(layout_) + ") was overwritten with " + std::to_string(bytes[i]);
    }
  }
  return "";
}

// ---------------------------------------------------------------------------------------------------------------

bool DeviceIsCpu() {
  const char* name = aclrtGetSocName();
  return name != nullptr && std::strncmp(name, "CPU", 3) == 0;
}

bool StrictMode() {
  const char* text = std::getenv("ACLNN_STRICT");
  if (text == nullptr) return false;
  for (const char* on : {"1", "true", "yes", "on"}) {
    if (strcasecmp(text, on) == 0) return true;
  }
  return false;
}

std::string StrictModeReason(const char* why) {
  return std::string("not in strict mode (") + why + "; docs/strict_mode.md)";
}

std::string CpuOnlyReason(const char* why) {
  const char* name = aclrtGetSocName();
  return std::string("CPU device only (") + why + "); the device is " + (name != nullptr ? name : "unknown");
}

TestStream::TestStream() { Require(aclrtCreateStream(&stream_) == ACL_SUCCESS, "aclrtCreateStream"); }
TestStream::~TestStream() {
  if (stream_ != nullptr) aclrtDestroyStream(stream_);
}

std::string RecentErrorMessage() {
  const char* message = aclGetRecentErrMsg();
  return message != nullptr ? std::string(message) : std::string();
}

DeviceWorkspace::DeviceWorkspace(uint64_t bytes) : bytes_(bytes) {
  if (bytes > 0) ok_ = aclrtMalloc(&data_, bytes, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS;
}

DeviceWorkspace::~DeviceWorkspace() {
  if (data_ != nullptr) aclrtFree(data_);
}

double RelativeNormError(const std::vector<double>& actual, const std::vector<double>& expected) {
  if (actual.size() != expected.size()) return std::numeric_limits<double>::infinity();
  double diff = 0.0;
  double norm = 0.0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double d = actual[i] - expected[i];
    diff += d * d;
    norm += expected[i] * expected[i];
  }
  if (std::isnan(diff)) return std::numeric_limits<double>::infinity();
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

namespace {
constexpr char kOutputFileVariable[] = "PACL_TEST_OUTPUT_FILE";
}  // namespace

void WriteOutputForParent(const std::vector<uint8_t>& bytes) {
  const char* path = std::getenv(kOutputFileVariable);
  if (path == nullptr) return;
  std::ofstream file(path, std::ios::binary);
  file.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(file.good()) << "cannot write " << path;
}

std::vector<uint8_t> RunTestInChild(const std::string& test_name,
                                    const std::vector<std::pair<std::string, std::string>>& environment) {
  static int child_count = 0;
  const std::string path = testing::TempDir() + "pacl_child_" + std::to_string(getpid()) + "_" +
                           std::to_string(child_count++) + ".bin";
  const std::string output_prefix = std::string(kOutputFileVariable) + "=";
  auto overridden = [&](const std::string& entry) {
    if (entry.rfind(output_prefix, 0) == 0) return true;
    // A sharded run's GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX would shard the child's one test away.
    if (entry.rfind("GTEST_", 0) == 0) return true;
    for (const auto& [name, value] : environment) {
      if (entry.rfind(name + "=", 0) == 0) return true;
    }
    return false;
  };
  std::vector<std::string> env_strings;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (!overridden(*entry)) env_strings.push_back(*entry);
  }
  std::string description;
  for (const auto& [name, value] : environment) {
    env_strings.push_back(name + "=" + value);
    description += (description.empty() ? "" : " ") + name + "=" + value;
  }
  env_strings.push_back(output_prefix + path);
  std::vector<char*> envp;
  for (std::string& text : env_strings) envp.push_back(text.data());
  envp.push_back(nullptr);
  std::vector<std::string> command = pacl_test::SelfCommand();
  command.push_back("--gtest_filter=" + test_name);
  command.push_back("--gtest_brief=1");
  std::vector<char*> argv;
  for (std::string& argument : command) argv.push_back(argument.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (command.size() < 3 || posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data()) != 0) {
    ADD_FAILURE() << "posix_spawn failed";
    return {};
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << test_name << " with " << description
                                                               << " failed";
  std::ifstream file(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::remove(path.c_str());
  return bytes;
}

std::vector<uint8_t> RunTestWithThreads(const std::string& test_name, int threads) {
  return RunTestInChild(test_name, {{"ACLNN_NUM_THREADS", std::to_string(threads)}});
}

std::vector<std::string> SimdTargetNames() {
  // The libraries compile HWY_TARGETS with the same HWY_DISABLED_TARGETS as this file (tests/CMakeLists.txt).
  const int64_t targets = hwy::SupportedTargets() & HWY_TARGETS;
  std::vector<std::string> names;
  for (int64_t rest = targets; rest != 0; rest &= rest - 1) names.push_back(hwy::TargetName(rest & -rest));
  return names;
}

std::string FirstDifference(const std::vector<uint8_t>& actual, const std::vector<uint8_t>& expected) {
  if (actual.size() != expected.size()) {
    return std::to_string(actual.size()) + " bytes instead of " + std::to_string(expected.size());
  }
  size_t first = actual.size();
  size_t count = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (actual[i] == expected[i]) continue;
    first = std::min(first, i);
    ++count;
  }
  if (count == 0) return "";
  return std::to_string(count) + " of " + std::to_string(actual.size()) + " bytes differ, the first at byte " +
         std::to_string(first);
}

std::vector<uint8_t> ConcatenatedBytes(const std::vector<const DeviceTensor*>& tensors) {
  std::vector<uint8_t> bytes;
  for (const DeviceTensor* t : tensors) {
    const std::vector<uint8_t> part = t->ReadBytes();
    bytes.insert(bytes.end(), part.begin(), part.end());
  }
  return bytes;
}

void ExpectBitIdenticalRunToRun(const std::function<std::vector<uint8_t>()>& compute) {
  const std::vector<uint8_t> first = compute();
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(compute(), first);
  ASSERT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), ACL_SUCCESS) << RecentErrorMessage();
  EXPECT_EQ(compute(), first);
  // Left on: unset counts as on when an operator is bound, so the tests that follow see the default behaviour.
  // (Setting it to 0 would let a device bind its faster non-deterministic kernels for the rest of the process.)
}

void ExpectBitIdenticalForThreadCounts(const std::string& child_test, const std::vector<int>& thread_counts,
                                       const std::function<std::vector<uint8_t>()>& compute) {
  if (!DeviceIsCpu()) GTEST_SKIP() << CpuOnlyReason("ACLNN_NUM_THREADS sets the CPU kernels' thread count");
  const std::vector<uint8_t> one = RunTestWithThreads(child_test, 1);
  ASSERT_FALSE(one.empty());
  for (int threads : thread_counts) {
    EXPECT_EQ(FirstDifference(RunTestWithThreads(child_test, threads), one), "")
        << "ACLNN_NUM_THREADS=" << threads << " differs from 1";
  }
  EXPECT_EQ(FirstDifference(compute(), one), "") << "this process's thread count differs from 1";
}

void ExpectBitIdenticalOnEverySimdTarget(const std::string& child_test) {
  if (!DeviceIsCpu()) GTEST_SKIP() << CpuOnlyReason("SIMD targets are the CPU kernels'");
  if (const char* pinned = std::getenv("ACLNN_SIMD_TARGET"); pinned != nullptr && *pinned != '\0') {
    GTEST_SKIP() << "this process is pinned to ACLNN_SIMD_TARGET=" << pinned << "; the unpinned run compares targets";
  }
  const std::vector<std::string> targets = SimdTargetNames();
  ASSERT_FALSE(targets.empty());
  // Highway lists targets best first: the first is what an unpinned process runs.
  const std::vector<uint8_t> reference = RunTestInChild(child_test, {{"ACLNN_SIMD_TARGET", targets[0]}});
  ASSERT_FALSE(reference.empty());
  for (size_t t = 1; t < targets.size(); ++t) {
    EXPECT_EQ(FirstDifference(RunTestInChild(child_test, {{"ACLNN_SIMD_TARGET", targets[t]}}), reference), "")
        << "ACLNN_SIMD_TARGET=" << targets[t] << " differs from " << targets[0];
  }
  std::string names;
  for (const std::string& name : targets) names += (names.empty() ? "" : ", ") + name;
  testing::Test::RecordProperty("simd_targets_compared", names);
  if (targets.size() < 2) std::fprintf(stderr, "note: this CPU runs one SIMD target only (%s)\n", names.c_str());
}

// ---------------------------------------------------------------------------------------------------------------
// Checks

void ExpectClose(const char* what, const std::vector<double>& actual, const std::vector<double>& expected,
                 const std::vector<double>& bound, aclDataType dtype) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  ASSERT_EQ(bound.size(), expected.size()) << what;
  int failures = 0;
  bool all_finite = true;
  for (size_t i = 0; i < actual.size() && failures < 10; ++i) {
    const double a = actual[i];
    const double rounded = RoundToDType(expected[i], dtype);
    if (a == rounded) continue;
    bool ok = false;
    double tolerance = 0.0;
    if (std::isfinite(a) && std::isfinite(rounded)) {
      tolerance = UlpOf(std::max(std::fabs(rounded), std::fabs(a)), dtype) + bound[i];
      ok = std::fabs(a - rounded) <= tolerance;
    }
    all_finite = all_finite && std::isfinite(a) && std::isfinite(rounded);
    if (!ok) {
      ++failures;
      ADD_FAILURE() << what << " element " << i << ": actual " << a << ", reference " << expected[i] << " (rounded "
                    << rounded << "), tolerance " << tolerance;
    }
  }
  double expected_norm = 0.0, bound_norm = 0.0;
  for (size_t i = 0; i < expected.size(); ++i) {
    all_finite = all_finite && std::isfinite(expected[i]);
    expected_norm += expected[i] * expected[i];
    bound_norm += bound[i] * bound[i];
  }
  if (failures == 0 && all_finite && dtype == ACL_FLOAT && expected_norm > 1e4 * bound_norm) {
    EXPECT_LE(RelativeNormError(actual, expected), 1e-5) << what;
  }
}

void ExpectAllZero(const char* what, const std::vector<double>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] != 0.0) {
      ADD_FAILURE() << what << " element " << i << " is " << values[i] << ", expected exactly 0";
      return;
    }
  }
}

void ExpectGuardsIntact(const std::vector<const DeviceTensor*>& tensors) {
  for (const DeviceTensor* t : tensors) EXPECT_EQ(t->CheckGuards(), "");
}

void ExpectErrorMessage(const std::string& op_name, const std::vector<std::string>& fragments) {
  const std::string message = RecentErrorMessage();
  EXPECT_NE(message.find(op_name + ":"), std::string::npos) << message;
  for (const std::string& fragment : fragments) {
    EXPECT_NE(message.find(fragment), std::string::npos) << "missing \"" << fragment << "\" in: " << message;
  }
}

void ExpectOutputsUntouched(const std::vector<const DeviceTensor*>& outputs) {
  for (const DeviceTensor* t : outputs) {
    EXPECT_EQ(t->CheckGuards(), "");
    for (double v : t->Read()) {
      if (!std::isnan(v)) {
        ADD_FAILURE() << "a rejected call wrote an output";
        break;
      }
    }
  }
}

RawTensor::RawTensor(const std::vector<int64_t>& shape, aclDataType dtype, void* data) {
  const size_t bytes = static_cast<size_t>(NumElements(shape)) * ElementBytes(dtype);
  if (data == nullptr) {
    EXPECT_EQ(aclrtMalloc(&allocation_, bytes > 0 ? bytes : 1, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    data = allocation_;
  }
  const std::vector<int64_t> strides = ContiguousStrides(shape);
  const int64_t storage[1] = {NumElements(shape)};
  tensor_ = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND, storage, 1, data);
  EXPECT_NE(tensor_, nullptr) << RecentErrorMessage();
}

RawTensor::~RawTensor() {
  if (tensor_ != nullptr) aclDestroyTensor(tensor_);
  if (allocation_ != nullptr) aclrtFree(allocation_);
}

aclTensor* SelfOverlappingView(const DeviceTensor& storage, std::vector<int64_t> shape, int zero_dim) {
  std::vector<int64_t> strides = ContiguousStrides(shape);
  strides[static_cast<size_t>(zero_dim)] = 0;
  const int64_t storage_dims[1] = {storage.size()};
  return aclCreateTensor(shape.data(), shape.size(), storage.dtype(), strides.data(), 0, ACL_FORMAT_ND, storage_dims, 1,
                         storage.data());
}

HostIntArray::HostIntArray(const std::vector<int64_t>& values) {
  array_ = aclCreateIntArray(values.data(), values.size());
  Require(array_ != nullptr, "aclCreateIntArray");
}

HostIntArray::~HostIntArray() {
  if (array_ != nullptr) aclDestroyIntArray(array_);
}

}  // namespace optest
