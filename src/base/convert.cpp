// NOTE: conversion of rows between the float storage types and fp32 scratch.
// Contiguous fp16/bf16 rows go straight to the per-target vector code in convert-inl.h (Highway dynamic dispatch:
// the best of AVX3, AVX2, SSE4 and the portable baseline this CPU supports, chosen on the first call). Strided
// rows (any stride, including 0 and negative) are gathered into / scattered from a small block buffer on the stack
// and converted by the same vector code, so every element is rounded by the same instructions whatever the stride.
// fp32 rows are copied. Results are identical on every target (see convert-inl.h).
#include "pacl/convert.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <limits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "convert-inl.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep (compiles convert-inl.h once per target)
#include "hwy/highway.h"
#include "hwy/cache_control.h"
#include "hwy/targets.h"

// The static (baseline) target's copy; must come after hwy/highway.h.
#include "convert-inl.h"

#if HWY_ONCE
namespace pacl {
HWY_EXPORT(HalfRowToFloat);
HWY_EXPORT(BFloat16RowToFloat);
HWY_EXPORT(FloatRowToHalf);
HWY_EXPORT(FloatRowToBFloat16);
HWY_EXPORT(FloatRowToHalfStreamed);
HWY_EXPORT(FloatRowToBFloat16Streamed);
HWY_EXPORT(FloatRowStreamed);
HWY_EXPORT(CompiledTarget);

namespace {

// Elements converted per dispatch for strided rows (the gather/scatter buffer lives on the stack).
constexpr int64_t kStridedBlock = 512;

using HalfRowLoader = void (*)(const uint16_t*, float*, size_t);
using HalfRowStorer = void (*)(const float*, uint16_t*, size_t);

void LoadHalfWidthRow(HalfRowLoader convert, const uint16_t* src, int64_t src_stride, float* dst, int64_t n) {
  if (src_stride == 1) {
    convert(src, dst, static_cast<size_t>(n));
    return;
  }
  uint16_t block[kStridedBlock];
  for (int64_t start = 0; start < n; start += kStridedBlock) {
    const int64_t count = std::min(kStridedBlock, n - start);
    for (int64_t j = 0; j < count; ++j) block[j] = src[(start + j) * src_stride];
    convert(block, dst + start, static_cast<size_t>(count));
  }
}

void StoreHalfWidthRow(HalfRowStorer convert, const float* src, uint16_t* dst, int64_t dst_stride, int64_t n) {
  if (dst_stride == 1) {
    convert(src, dst, static_cast<size_t>(n));
    return;
  }
  uint16_t block[kStridedBlock];
  for (int64_t start = 0; start < n; start += kStridedBlock) {
    const int64_t count = std::min(kStridedBlock, n - start);
    convert(src + start, block, static_cast<size_t>(count));
    for (int64_t j = 0; j < count; ++j) dst[(start + j) * dst_stride] = block[j];
  }
}

// HWY_DYNAMIC_DISPATCH(...) evaluates to the chosen target's function; calling through it also performs the
// one-time target selection on the first call.
void HalfRowToFloatDispatched(const uint16_t* src, float* dst, size_t n) {
  HWY_DYNAMIC_DISPATCH(HalfRowToFloat)(src, dst, n);
}
void BFloat16RowToFloatDispatched(const uint16_t* src, float* dst, size_t n) {
  HWY_DYNAMIC_DISPATCH(BFloat16RowToFloat)(src, dst, n);
}
void FloatRowToHalfDispatched(const float* src, uint16_t* dst, size_t n) {
  HWY_DYNAMIC_DISPATCH(FloatRowToHalf)(src, dst, n);
}
void FloatRowToBFloat16Dispatched(const float* src, uint16_t* dst, size_t n) {
  HWY_DYNAMIC_DISPATCH(FloatRowToBFloat16)(src, dst, n);
}

}  // namespace

void LoadAsFloat(aclDataType src_type, const void* src, int64_t src_stride, float* dst, int64_t n) {
  if (n <= 0) return;
  switch (src_type) {
    case ACL_FLOAT: {
      const float* values = static_cast<const float*>(src);
      if (src_stride == 1) {
        std::memmove(dst, values, static_cast<size_t>(n) * sizeof(float));
      } else {
        for (int64_t i = 0; i < n; ++i) dst[i] = values[i * src_stride];
      }
      return;
    }
    case ACL_FLOAT16:
      LoadHalfWidthRow(&HalfRowToFloatDispatched, static_cast<const uint16_t*>(src), src_stride, dst, n);
      return;
    case ACL_BF16:
      LoadHalfWidthRow(&BFloat16RowToFloatDispatched, static_cast<const uint16_t*>(src), src_stride, dst, n);
      return;
    default:
      // Callers validate dtypes before this point; an unsupported one reads nothing and yields NaN rows, so the
      // mistake shows in any result instead of reading memory with the wrong element size.
      std::fill(dst, dst + n, std::numeric_limits<float>::quiet_NaN());
      return;
  }
}

void StoreFromFloat(const float* src, aclDataType dst_type, void* dst, int64_t dst_stride, int64_t n) {
  if (n <= 0) return;
  switch (dst_type) {
    case ACL_FLOAT: {
      float* values = static_cast<float*>(dst);
      if (dst_stride == 1) {
        std::memmove(values, src, static_cast<size_t>(n) * sizeof(float));
      } else {
        for (int64_t i = 0; i < n; ++i) values[i * dst_stride] = src[i];
      }
      return;
    }
    case ACL_FLOAT16:
      StoreHalfWidthRow(&FloatRowToHalfDispatched, src, static_cast<uint16_t*>(dst), dst_stride, n);
      return;
    case ACL_BF16:
      StoreHalfWidthRow(&FloatRowToBFloat16Dispatched, src, static_cast<uint16_t*>(dst), dst_stride, n);
      return;
    default:
      // Callers validate dtypes before this point; an unsupported one writes nothing (its element size is not
      // known to be right).
      return;
  }
}

void StreamFromFloat(const float* src, aclDataType dst_type, void* dst, int64_t n) {
  if (n <= 0) return;
  const size_t count = static_cast<size_t>(n);
  switch (dst_type) {
    case ACL_FLOAT:
      HWY_DYNAMIC_DISPATCH(FloatRowStreamed)(src, static_cast<float*>(dst), count);
      return;
    case ACL_FLOAT16:
      HWY_DYNAMIC_DISPATCH(FloatRowToHalfStreamed)(src, static_cast<uint16_t*>(dst), count);
      return;
    case ACL_BF16:
      HWY_DYNAMIC_DISPATCH(FloatRowToBFloat16Streamed)(src, static_cast<uint16_t*>(dst), count);
      return;
    default:
      return;  // as StoreFromFloat: an unsupported type writes nothing
  }
}

void FinishStreamedStores() { hwy::FlushStream(); }

const char* SimdTargetName() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(CompiledTarget)()); }

namespace {

// ACLNN_SIMD_TARGET=<name> (a Highway target name: AVX3, AVX2, SSE4, SCALAR or EMU128) pins every kernel of the
// process to that instruction set, e.g. to reproduce the bits another machine computes, or to test the narrower
// code paths on a wide machine. Applied while libnnopbase loads, before any kernel has been dispatched; a name
// that was not compiled in or that this CPU cannot run is reported on stderr and ignored.
struct SimdTargetFromEnvironment {
  SimdTargetFromEnvironment() {
    const char* wanted = std::getenv("ACLNN_SIMD_TARGET");
    if (wanted == nullptr || *wanted == '\0') return;
    const int64_t available = hwy::SupportedTargets() & HWY_TARGETS;
    for (int64_t rest = available; rest != 0; rest &= rest - 1) {
      const int64_t target = rest & -rest;
      if (std::strcmp(hwy::TargetName(target), wanted) == 0) {
        hwy::SetSupportedTargetsForTest(target);
        return;
      }
    }
    std::string names;
    for (int64_t rest = available; rest != 0; rest &= rest - 1) {
      names += names.empty() ? "" : ", ";
      names += hwy::TargetName(rest & -rest);
    }
    std::fprintf(stderr, "portable-aclnn: ignoring ACLNN_SIMD_TARGET=%s: not one of the targets this build can run "
                 "here (%s)\n", wanted, names.c_str());
  }
};
const SimdTargetFromEnvironment simd_target_from_environment;

}  // namespace

// Test hooks declared in pacl/convert.h. Call AvailableSimdTargetsForTest while no restriction is active.
namespace convert_testing {

int64_t AvailableSimdTargetsForTest() { return hwy::SupportedTargets() & HWY_TARGETS; }

void SetSimdTargetsForTest(int64_t targets) { hwy::SetSupportedTargetsForTest(targets); }

}  // namespace convert_testing

}  // namespace pacl
#endif  // HWY_ONCE
