// The helpers every CANN aclnn sample defines (CHECK_RET, LOG_PRINT, GetShapeSize, Init, CreateAclTensor), written
// fresh in that style for the CANN-style programs of the install test. Only public headers; builds against CANN too.
#ifndef PACL_TESTS_INSTALL_CANN_STYLE_H_
#define PACL_TESTS_INSTALL_CANN_STYLE_H_

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"

#define CHECK_RET(cond, return_expr) \
  do {                               \
    if (!(cond)) {                   \
      return_expr;                   \
    }                                \
  } while (0)

#define LOG_PRINT(message, ...)         \
  do {                                  \
    std::printf(message, ##__VA_ARGS__); \
  } while (0)

inline int64_t GetShapeSize(const std::vector<int64_t>& shape) {
  int64_t size = 1;
  for (int64_t dim : shape) size *= dim;
  return size;
}

// aclInit, device and stream, as the samples do.
inline int Init(int32_t deviceId, aclrtStream* stream) {
  auto ret = aclInit(nullptr);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return ret);
  ret = aclrtSetDevice(deviceId);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return ret);
  ret = aclrtCreateStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret); return ret);
  return 0;
}

// Device memory holding hostData and a contiguous ND tensor over it. nullStrides: pass a null stride array (CANN
// then takes the contiguous strides), else the computed ones.
template <typename T>
int CreateAclTensor(const std::vector<T>& hostData, const std::vector<int64_t>& shape, void** deviceAddr,
                    aclDataType dataType, aclTensor** tensor, bool nullStrides = false) {
  auto size = GetShapeSize(shape) * static_cast<int64_t>(sizeof(T));
  auto ret = aclrtMalloc(deviceAddr, size > 0 ? size : 1, ACL_MEM_MALLOC_HUGE_FIRST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
  ret = aclrtMemcpy(*deviceAddr, size, hostData.data(), size, ACL_MEMCPY_HOST_TO_DEVICE);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
  *tensor = aclCreateTensor(shape.data(), shape.size(), dataType, nullStrides ? nullptr : strides.data(), 0,
                            aclFormat::ACL_FORMAT_ND, shape.data(), shape.size(), *deviceAddr);
  CHECK_RET(*tensor != nullptr, LOG_PRINT("aclCreateTensor failed: %s\n", aclGetRecentErrMsg()); return -1);
  return 0;
}

template <typename T>
int CopyToHost(void* deviceAddr, std::vector<T>* host) {
  auto size = static_cast<int64_t>(host->size() * sizeof(T));
  auto ret = aclrtMemcpy(host->data(), size, deviceAddr, size, ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy to host failed. ERROR: %d\n", ret); return ret);
  return 0;
}

// Phase 2 the way the samples call it: a workspace of the size phase 1 asked for, allocated for this call and freed
// after aclrtSynchronizeStream.
inline int RunWithFreshWorkspace(aclnnStatus (*phase2)(void*, uint64_t, aclOpExecutor*, aclrtStream),
                                 uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream,
                                 const char* name) {
  void* workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    auto ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
  }
  auto ret = phase2(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("%s failed. ERROR: %d: %s\n", name, ret, aclGetRecentErrMsg()); return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);
  if (workspaceAddr != nullptr) aclrtFree(workspaceAddr);
  return 0;
}

// |got - expected| <= atol + rtol * |expected| for every element; prints the first miss.
inline bool AllClose(const char* what, const std::vector<float>& got, const std::vector<double>& expected,
                     double atol, double rtol) {
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - expected[i]) <= atol + rtol * std::fabs(expected[i]))) {
      LOG_PRINT("%s[%zu] = %.9g, expected %.9g\n", what, i, got[i], expected[i]);
      return false;
    }
  }
  LOG_PRINT("%s: %zu values match\n", what, got.size());
  return true;
}

#endif  // PACL_TESTS_INSTALL_CANN_STYLE_H_
