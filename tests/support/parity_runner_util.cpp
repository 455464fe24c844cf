#include "parity_runner_util.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>

namespace parity {

std::string RecentError() {
  const char* message = aclGetRecentErrMsg();
  return message != nullptr ? message : "(no message)";
}

DeviceTensor::DeviceTensor(const std::vector<int64_t>& shape, aclDataType dtype) : dtype_(dtype) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  bytes_ = static_cast<size_t>(count) * aclDataTypeSize(dtype);
  if (aclrtMalloc(&data_, bytes_ > 0 ? bytes_ : 1, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    error_ = "aclrtMalloc failed: " + RecentError();
    return;
  }
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d > 1; --d) strides[d - 2] = strides[d - 1] * shape[d - 1];
  tensor_ = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                            shape.size(), data_);
  if (tensor_ == nullptr) error_ = "aclCreateTensor failed: " + RecentError();
}

DeviceTensor::~DeviceTensor() {
  if (tensor_ != nullptr) aclDestroyTensor(tensor_);
  if (data_ != nullptr) aclrtFree(data_);
}

std::string DeviceTensor::Load(const std::string& path) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) return "cannot open " + path;
  if (static_cast<size_t>(file.tellg()) != bytes_) {
    return path + " holds " + std::to_string(static_cast<long long>(file.tellg())) + " bytes, expected " +
           std::to_string(bytes_);
  }
  file.seekg(0);
  std::vector<char> host(bytes_);
  if (!file.read(host.data(), static_cast<std::streamsize>(bytes_))) return "cannot read " + path;
  return CopyIn(host);
}

std::string DeviceTensor::FillNaN() {
  std::vector<char> host(bytes_);
  const size_t size = aclDataTypeSize(dtype_);
  for (size_t i = 0; i < bytes_; i += size) {
    if (dtype_ == ACL_DOUBLE) {
      const double nan = std::numeric_limits<double>::quiet_NaN();
      std::memcpy(&host[i], &nan, sizeof nan);
    } else if (dtype_ == ACL_FLOAT) {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(&host[i], &nan, sizeof nan);
    } else if (dtype_ == ACL_FLOAT16 || dtype_ == ACL_BF16) {
      // The quiet NaN with the smallest payload in each 16-bit format.
      const uint16_t nan_bits = dtype_ == ACL_FLOAT16 ? 0x7E00 : 0x7FC0;
      std::memcpy(&host[i], &nan_bits, sizeof nan_bits);
    } else {
      return "FillNaN: dtype " + std::to_string(static_cast<int>(dtype_)) + " has no NaN";
    }
  }
  return CopyIn(host);
}

std::string DeviceTensor::Save(const std::string& path) const {
  std::vector<char> host(bytes_);
  if (bytes_ > 0 && aclrtMemcpy(host.data(), host.size(), data_, bytes_, ACL_MEMCPY_DEVICE_TO_HOST) != ACL_SUCCESS) {
    return "aclrtMemcpy to the host failed: " + RecentError();
  }
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file.write(host.data(), static_cast<std::streamsize>(host.size()))) return "cannot write " + path;
  return "";
}

std::string DeviceTensor::CopyIn(const std::vector<char>& host) {
  if (bytes_ > 0 && aclrtMemcpy(data_, bytes_, host.data(), bytes_, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS) {
    return "aclrtMemcpy to the device failed: " + RecentError();
  }
  return "";
}

std::string RunCall(const opcall::OpCall& call, aclrtStream stream) {
  const aclnnStatus status = opcall::Run(call, stream);
  if (status == ACLNN_SUCCESS) return "";
  return std::string("aclnn") + call.op().name +
         " (phase 1, phase 2 or the synchronisation) returned " + std::to_string(status) + ": " + RecentError();
}

bool ParseDType(const std::string& text, std::initializer_list<std::pair<const char*, aclDataType>> known,
                aclDataType* dtype) {
  for (const auto& [name, value] : known) {
    if (text == name) {
      *dtype = value;
      return true;
    }
  }
  return false;
}

int RunParityMain(int argc, char** argv, const char* source_file, const RunCaseLine& run_case_line) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR (see the top of %s)\n", argv[0], source_file);
    return 2;
  }
  const std::string dir = argv[1];
  std::ifstream list(dir + "/cases.txt");
  if (!list) {
    std::fprintf(stderr, "cannot open %s/cases.txt\n", dir.c_str());
    return 1;
  }
  if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) {
    std::fprintf(stderr, "runtime setup failed: %s\n", RecentError().c_str());
    return 1;
  }
  aclrtStream stream = nullptr;
  if (aclrtCreateStream(&stream) != ACL_SUCCESS) {
    std::fprintf(stderr, "aclrtCreateStream failed: %s\n", RecentError().c_str());
    aclrtResetDevice(0);
    aclFinalize();
    return 1;
  }
  int failures = 0, cases = 0;
  std::string line;
  while (std::getline(list, line)) {
    if (line.empty()) continue;
    std::string case_name;
    const std::string error = run_case_line(dir, line, stream, &case_name);
    ++cases;
    if (!error.empty()) {
      std::fprintf(stderr, "case %s: %s\n", case_name.c_str(), error.c_str());
      ++failures;
    }
  }
  aclrtDestroyStream(stream);
  aclrtResetDevice(0);
  aclFinalize();
  std::printf("ran %d cases, %d failed\n", cases, failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace parity
