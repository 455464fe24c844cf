// aclTensor's definition and the plain-data tensor description the operators copy into their parameters.
#ifndef PACL_TENSOR_H_
#define PACL_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "acl/acl_base.h"
#include "pacl/dtype.h"
#include "pacl/export.h"

namespace pacl {

inline constexpr int kMaxRank = 8;

// A view over storage: element (i0, ..., ik) lives at element index offset + sum(i_d * strides[d]) of the storage that
// begins at data. Strides and offset are in elements; aclCreateTensor has checked that they are not negative and that
// every element of the view lies inside the storage shape (internal code built on TensorDesc, such as the broadcast and
// overlap helpers, still handles negative strides correctly). aclCreateTensor also gives every dim of size 1, and
// every dim of an empty view, the stride a packed view would have: the caller's value addresses nothing and may be
// any int64, so a kernel turning it into a byte step or a row address would overflow (aclGetViewStrides still
// returns the caller's value). Trivially copyable, so an executor can keep a copy after the caller destroys its
// aclTensor.
struct TensorDesc {
  aclDataType dtype = ACL_DT_UNDEFINED;
  aclFormat format = ACL_FORMAT_UNDEFINED;
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
  int64_t offset = 0;
  int storage_rank = 0;
  int64_t storage_shape[kMaxRank] = {};
  void* data = nullptr;

  // Product of the view's dims (1 for rank 0).
  PACL_INTERNAL_API int64_t NumElements() const;
  // True when the view is the row-major packing of its shape (size-1 dims may have any stride).
  PACL_INTERNAL_API bool IsContiguous() const;
  // "[2, 3, 5]".
  PACL_INTERNAL_API std::string ShapeString() const;
  // The strides in the same form.
  PACL_INTERNAL_API std::string StridesString() const;
  // True when no two elements of the view share a memory location, proved by a sufficient condition: ordering
  // the dims of size > 1 by |stride|, each |stride| exceeds the largest offset the smaller dims reach. (Views that
  // interleave in stranger ways are reported as overlapping.) Outputs must have distinct elements, or parallel
  // kernels would race.
  PACL_INTERNAL_API bool ElementsAreDistinct() const;
  // True when the bytes between this view's lowest and highest element and those of other's intersect (a
  // sufficient test: two views that interleave without sharing an element count too). A view without elements, or
  // without data, shares nothing.
  PACL_INTERNAL_API bool MayShareMemoryWith(const TensorDesc& other) const;
  // The lowest and highest element index (offset and strides applied) of a view with elements; false when it has
  // none (or, impossible for a created tensor, the range overflows).
  PACL_INTERNAL_API bool ElementRange(int64_t* lowest, int64_t* highest) const;
  // Size of one element in bytes.
  size_t ElementSize() const { return DataTypeSize(dtype); }
  // Address of storage element `element`, an element index counted from data (offset and strides applied).
  char* ElementAt(int64_t element) const {
    return static_cast<char*>(data) + element * static_cast<int64_t>(ElementSize());
  }
  // Address of the view's element at index (rank entries).
  char* ElementAddress(const int64_t* index) const {
    int64_t element = offset;
    for (int d = 0; d < rank; ++d) element += index[d] * strides[d];
    return static_cast<char*>(data) + element * static_cast<int64_t>(ElementSize());
  }
};

}  // namespace pacl

struct aclTensor {
  pacl::TensorDesc desc;
  int64_t caller_strides[pacl::kMaxRank] = {};  // the strides as passed to aclCreateTensor, for aclGetViewStrides
};

#endif  // PACL_TENSOR_H_
