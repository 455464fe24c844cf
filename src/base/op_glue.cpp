// OpChecker: the argument checks of the aclnn entry points, with CANN's status codes and messages that name the
// operator, the parameter, the values involved and the rule. Only the first failure of a call is recorded.
#include "pacl/op_glue.h"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <initializer_list>
#include <string>

#include "aclnn/acl_meta.h"
#include "aclnn/opdev/op_errno.h"
#include "pacl/dtype.h"
#include "pacl/error.h"
#include "pacl/runtime.h"
#include "pacl/tensor.h"
#include "pacl/tensor_objects.h"

namespace pacl {

namespace {

bool IsPlainFormat(aclFormat format) {
  switch (format) {
    case ACL_FORMAT_ND:
    case ACL_FORMAT_NCHW:
    case ACL_FORMAT_NHWC:
    case ACL_FORMAT_NC:
    case ACL_FORMAT_NCL:
    case ACL_FORMAT_NCDHW:
    case ACL_FORMAT_NDHWC:
    case ACL_FORMAT_HWCN:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::vector<rt::MemoryUse>& StrictMemoryUsesOfThisCall() {
  thread_local std::vector<rt::MemoryUse> uses;
  return uses;
}

OpChecker::OpChecker(const char* op_name) : op_name_(op_name) {
  if (rt::StrictMode()) StrictMemoryUsesOfThisCall().clear();
}

aclnnStatus OpChecker::Fail(aclnnStatus status, const std::string& message) {
  if (!ok()) return status_;  // the first failure is the one reported
  status_ = status;
  SetRecentErrorMessage(std::string(op_name_ != nullptr ? op_name_ : "") + ": " + message);
  return status_;
}

bool OpChecker::NotNull(const void* p, const char* param) {
  if (!ok()) return false;
  if (p != nullptr) return true;
  Fail(ACLNN_ERR_PARAM_NULLPTR, StrFormat("%s must not be null", param));
  return false;
}

bool OpChecker::OutPointers(const uint64_t* workspace_size, aclOpExecutor* const* executor) {
  return NotNull(workspace_size, "workspaceSize") && NotNull(executor, "executor");
}

bool OpChecker::Tensor(const aclTensor* t, const char* param) {
  if (!NotNull(t, param)) return false;
  if (t->desc.data == nullptr && t->desc.NumElements() > 0) {
    Fail(ACLNN_ERR_PARAM_NULLPTR,
         StrFormat("%s data must not be null (the tensor has shape %s)", param, t->desc.ShapeString().c_str()));
    return false;
  }
  std::string why;
  if (t->desc.data != nullptr && t->desc.NumElements() > 0) {
    uintptr_t base = 0;
    size_t size = 0;
    if (rt::FindDeviceAllocation(t->desc.data, &base, &size)) {
      // The storage (storageDims from data) must lie inside the allocation that holds its start, or the kernels
      // would read and write past it. aclCreateTensor has checked that the bytes fit int64.
      int64_t storage_elements = 1;
      for (int d = 0; d < t->desc.storage_rank; ++d) storage_elements *= t->desc.storage_shape[d];
      const uint64_t storage_bytes = static_cast<uint64_t>(storage_elements) * t->desc.ElementSize();
      const uintptr_t start = reinterpret_cast<uintptr_t>(t->desc.data);
      const uint64_t room = static_cast<uint64_t>(base + size - start);
      if (storage_bytes > room) {
        Fail(ACLNN_ERR_PARAM_INVALID,
             StrFormat("%s storage (%" PRId64 " elements of %zu bytes: %" PRIu64 " bytes from %p) runs past the end "
                       "of its aclrtMalloc allocation (%zu bytes at %p): only %" PRIu64 " bytes follow %p",
                       param, storage_elements, t->desc.ElementSize(), storage_bytes, t->desc.data, size,
                       reinterpret_cast<void*>(base), room, t->desc.data));
        return false;
      }
      if (rt::StrictMode()) {
        StrictMemoryUsesOfThisCall().push_back(
            {t->desc.data, storage_bytes, false, StrFormat("%s's %s", op_name_ != nullptr ? op_name_ : "", param)});
      }
    } else if (rt::IsFreedDeviceMemory(t->desc.data, &why)) {
      Fail(ACLNN_ERR_PARAM_INVALID, StrFormat("%s data %p lies in %s: a tensor's data must be live memory", param,
                                              t->desc.data, why.c_str()));
      if (rt::StrictMode()) rt::StrictReport(RecentErrorMessage(), t->desc.data);
      return false;
    } else if (rt::StrictMode()) {
      // On an NPU a host or stack pointer as tensor data is a crash or garbage; the CPU device would run it.
      Fail(ACLNN_ERR_PARAM_INVALID,
           StrFormat("%s data %p is not device memory: it lies in no live aclrtMalloc allocation (a host or stack "
                     "pointer?); strict mode refuses it, as an NPU cannot read it (copy the data to aclrtMalloc "
                     "memory with aclrtMemcpy)",
                     param, t->desc.data));
      rt::StrictReport(RecentErrorMessage(), nullptr);
      return false;
    }
  }
  if (!device_known_) {
    device_ = rt::CurrentDevice();
    device_known_ = true;
  }
  if (t->desc.data != nullptr && !rt::DeviceCanAccess(device_, t->desc.data, &why)) {
    Fail(ACLNN_ERR_PARAM_INVALID, StrFormat("%s data %p is not memory of device %d (%s): it is %s", param, t->desc.data,
                                            static_cast<int>(device_.id), rt::DeviceKindName(device_.kind),
                                            why.c_str()));
    return false;
  }
  return true;
}

bool OpChecker::Rank(const TensorDesc& t, const char* param, int rank) {
  if (!ok()) return false;
  if (t.rank == rank) return true;
  Fail(ACLNN_ERR_PARAM_INVALID, StrFormat("%s must be %d-D, got shape %s", param, rank, t.ShapeString().c_str()));
  return false;
}

bool OpChecker::DType(const TensorDesc& t, const char* param, std::initializer_list<aclDataType> allowed) {
  if (!ok()) return false;
  for (aclDataType dtype : allowed) {
    if (t.dtype == dtype) return true;
  }
  std::string names;
  for (aclDataType dtype : allowed) {
    if (!names.empty()) names += ", ";
    names += DataTypeName(dtype);
  }
  Fail(ACLNN_ERR_PARAM_INVALID, StrFormat("%s dtype must be %s%s, got %s", param, allowed.size() > 1 ? "one of " : "",
                                          names.c_str(), DataTypeName(t.dtype)));
  return false;
}

bool OpChecker::SameDType(const TensorDesc& a, const char* a_param, const TensorDesc& b, const char* b_param) {
  if (!ok()) return false;
  if (a.dtype == b.dtype) return true;
  Fail(ACLNN_ERR_PARAM_INVALID, StrFormat("%s dtype must equal %s dtype (%s), got %s", b_param, a_param,
                                          DataTypeName(a.dtype), DataTypeName(b.dtype)));
  return false;
}

bool OpChecker::SameShape(const TensorDesc& a, const char* a_param, const TensorDesc& b, const char* b_param) {
  if (!ok()) return false;
  bool same = a.rank == b.rank;
  for (int d = 0; same && d < a.rank; ++d) same = a.shape[d] == b.shape[d];
  if (same) return true;
  Fail(ACLNN_ERR_PARAM_INVALID, StrFormat("%s shape must equal %s shape %s, got %s", b_param, a_param,
                                          a.ShapeString().c_str(), b.ShapeString().c_str()));
  return false;
}

bool OpChecker::Shape(const TensorDesc& t, const char* param, std::initializer_list<int64_t> dims,
                      const char* meaning) {
  if (!Rank(t, param, static_cast<int>(dims.size()))) return false;
  bool same = true;
  int d = 0;
  for (int64_t dim : dims) same = same && t.shape[d++] == dim;
  if (same) return true;
  std::string expected = "[";
  d = 0;
  for (int64_t dim : dims) expected += (d++ > 0 ? ", " : "") + std::to_string(dim);
  expected += "]";
  Fail(ACLNN_ERR_PARAM_INVALID, StrFormat("%s must have shape %s = %s, got %s", param, meaning, expected.c_str(),
                                          t.ShapeString().c_str()));
  return false;
}

bool OpChecker::PlainFormat(const TensorDesc& t, const char* param) {
  if (!ok()) return false;
  if (IsPlainFormat(t.format)) return true;
  Fail(ACLNN_ERR_PARAM_INVALID,
       StrFormat("%s format must be ND (or another plain layout: NCHW, NHWC, NC, NCL, NCDHW, NDHWC, HWCN), got %s",
                 param, FormatName(t.format).c_str()));
  return false;
}

bool OpChecker::DistinctOutputElements(const TensorDesc& t, const char* param) {
  if (!ok()) return false;
  if (t.ElementsAreDistinct()) {
    if (rt::StrictMode()) {
      const std::string what = StrFormat("%s's %s", op_name_ != nullptr ? op_name_ : "", param);
      for (rt::MemoryUse& use : StrictMemoryUsesOfThisCall()) {
        if (use.data == t.data && use.what == what) use.written = true;
      }
    }
    return true;
  }
  Fail(ACLNN_ERR_PARAM_INVALID,
       StrFormat("%s must not have elements that share memory, got shape %s with strides %s (an output view needs "
                 "distinct memory for every element)",
                 param, t.ShapeString().c_str(), t.StridesString().c_str()));
  return false;
}

bool OpChecker::Check(bool ok_condition, const char* format, ...) {
  if (!ok()) return false;
  if (ok_condition) return true;
  va_list args;
  va_start(args, format);
  std::string message = VStrFormat(format, args);
  va_end(args);
  Fail(ACLNN_ERR_PARAM_INVALID, message);
  return false;
}

BindingTarget CurrentBindingTarget() {
  BindingTarget target;
  target.device = rt::CurrentDevice();
  target.deterministic_only = rt::DeterministicEnabled();
  return target;
}

aclnnStatus FailNoImplementation(const char* op_name, aclDataType dtype, const BindingTarget& target,
                                 bool skipped_nondeterministic) {
  SetRecentErrorMessage(StrFormat("%s: no implementation for %s on device %d (%s)%s", op_name != nullptr ? op_name : "",
                                  DataTypeName(dtype), static_cast<int>(target.device.id),
                                  rt::DeviceKindName(target.device.kind),
                                  skipped_nondeterministic
                                      ? " that is deterministic (ACL_OPT_DETERMINISTIC is on; turning it off may "
                                        "allow a faster, non-deterministic one)"
                                      : ""));
  return ACLNN_ERR_PARAM_INVALID;
}

}  // namespace pacl
