// Vectorized (Highway, dynamic dispatch) conversion of rows between the float storage types and fp32 scratch.
// fp32 -> fp16/bf16 rounds to nearest even on every instruction-set target, NaN stays NaN, overflow gives Inf.
#ifndef PACL_CONVERT_H_
#define PACL_CONVERT_H_

#include <cstdint>

#include "acl/acl_base.h"
#include "pacl/export.h"
#include "pacl/tensor.h"

namespace pacl {

// dst[i] = float(src[i * src_stride]) for i in [0, n); src_type is ACL_FLOAT, ACL_FLOAT16 or ACL_BF16; src
// points at element 0 and src_stride is in elements (may be any value, 1 is the fast path).
PACL_INTERNAL_API void LoadAsFloat(aclDataType src_type, const void* src, int64_t src_stride, float* dst, int64_t n);

// dst[i * dst_stride] = round(src[i]) for i in [0, n), to dst_type (ACL_FLOAT, ACL_FLOAT16 or ACL_BF16).
PACL_INTERNAL_API void StoreFromFloat(const float* src, aclDataType dst_type, void* dst, int64_t dst_stride,
                                      int64_t n);

// StoreFromFloat to a contiguous dst (dst_stride 1) with non-temporal stores for the whole vectors that begin at a
// vector boundary (plain stores for the rest; the same values): for outputs too large to stay in cache for the
// caller, so that their lines are written without first being read. The stores are weakly ordered: the writing
// thread calls FinishStreamedStores() before another thread may read dst.
PACL_INTERNAL_API void StreamFromFloat(const float* src, aclDataType dst_type, void* dst, int64_t n);
PACL_INTERNAL_API void FinishStreamedStores();

// StreamFromFloat when `stream` (dst_stride must then be 1), else StoreFromFloat.
inline void StoreOrStreamFromFloat(const float* src, aclDataType dst_type, void* dst, int64_t dst_stride, int64_t n,
                                   bool stream) {
  if (stream) {
    StreamFromFloat(src, dst_type, dst, n);
  } else {
    StoreFromFloat(src, dst_type, dst, dst_stride, n);
  }
}

// Outputs of at least this many bytes are worth streaming (several times what the caches of the CPUs we target
// keep for one core).
inline constexpr int64_t kStreamMinBytes = int64_t{8} << 20;

// Whether writes to output t are worth streaming: its view's bytes reach kStreamMinBytes.
inline bool WorthStreaming(const TensorDesc& t) {
  return t.NumElements() * static_cast<int64_t>(t.ElementSize()) >= kStreamMinBytes;
}

// How the rows a SIMD kernel reads in place are stored: fp32, or fp16 / bf16 bits that it widens exactly in
// registers (LoadRowLanes in pacl/float_vectors-inl.h).
enum RowKind : int { kFloatRow = 0, kHalfRow = 1, kBFloat16Row = 2 };

// The RowKind of rows of a 16-bit float dtype (ACL_FLOAT16 or ACL_BF16).
inline int HalfWidthRowKind(aclDataType dtype) { return dtype == ACL_FLOAT16 ? kHalfRow : kBFloat16Row; }

// Name of the instruction-set target Highway chose for this process ("AVX3", "AVX2", ...), for benchmarks/demo.
// ACLNN_SIMD_TARGET=<name> pins it (see convert.cpp).
PACL_INTERNAL_API const char* SimdTargetName();

// For tests only: they let the conversion tests run on every compiled target and change process-wide Highway
// state (not safe while another thread converts).
namespace convert_testing {
// Highway target bits (HWY_AVX3, HWY_SSE4, ...) compiled into libnnopbase that this CPU can run.
PACL_INTERNAL_API int64_t AvailableSimdTargetsForTest();
// Makes dynamic dispatch choose among `targets` only (the best of them); 0 restores the normal choice.
PACL_INTERNAL_API void SetSimdTargetsForTest(int64_t targets);
}  // namespace convert_testing

}  // namespace pacl

#endif  // PACL_CONVERT_H_
