// Data type traits, fp16/bf16 <-> fp32 scalar conversion (round to nearest even), and the dtype switches.
// The out-of-line functions here live in libascendcl (acl_base.h's aclDataTypeSize and aclFloatToFloat16 need them).
#ifndef PACL_DTYPE_H_
#define PACL_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "acl/acl_base.h"
#include "pacl/export.h"

namespace pacl {

// Storage types for the two 16-bit float formats: raw bits, converted through float.
struct Float16 {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

// Size of one element in bytes (0 for ACL_STRING, ACL_DT_UNDEFINED and unknown values). Inline: kernels ask for it
// per row when they form addresses, and a call into another library there cost a few per cent.
inline size_t DataTypeSize(aclDataType dtype) {
  switch (dtype) {
    case ACL_BOOL:
    case ACL_INT8:
    case ACL_UINT8:
      return 1;
    case ACL_FLOAT16:
    case ACL_BF16:
    case ACL_INT16:
    case ACL_UINT16:
      return 2;
    case ACL_FLOAT:
    case ACL_INT32:
    case ACL_UINT32:
      return 4;
    case ACL_DOUBLE:
    case ACL_INT64:
    case ACL_UINT64:
    case ACL_COMPLEX64:
      return 8;
    case ACL_COMPLEX128:
      return 16;
    case ACL_STRING:
    case ACL_DT_UNDEFINED:
      return 0;
  }
  return 0;
}
// "FLOAT", "FLOAT16", "BFLOAT16", ... ("UNKNOWN(<n>)" for values outside the enum, kept in one of 8 rotating
// thread-local buffers: valid for the next 7 calls on this thread, enough for one message).
PACL_INTERNAL_API const char* DataTypeName(aclDataType dtype);

inline uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
inline float BitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// Exact widening, without branches (it runs in kernels' scalar loops): a normal half moves its exponent from bias
// 15 to 127 (Inf/NaN from 31 to 255, the NaN payload kept); a subnormal is its integer mantissa times 2^-24 (exact).
inline float HalfToFloat(uint16_t bits) {
  const uint32_t magnitude = bits & 0x7FFFu;
  const uint32_t rebias = magnitude >= 0x7C00u ? (224u << 23) : (112u << 23);
  const float subnormal = static_cast<float>(magnitude) * 0x1p-24f;
  const uint32_t magnitude_bits = magnitude < 0x400u ? FloatBits(subnormal) : (magnitude << 13) + rebias;
  return BitsToFloat((static_cast<uint32_t>(bits & 0x8000u) << 16) | magnitude_bits);
}
inline float BFloat16ToFloat(uint16_t bits) { return BitsToFloat(static_cast<uint32_t>(bits) << 16); }

// Round to nearest, ties to even; overflow gives +-Inf, NaN stays NaN (quiet).
PACL_INTERNAL_API uint16_t FloatToHalf(float value);
inline uint16_t FloatToBFloat16(float value) {
  const uint32_t bits = FloatBits(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // quiet NaN
  const uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

// Widen/narrow one element of the float types an operator computes in.
inline float ToFloat(float v) { return v; }
inline float ToFloat(Float16 v) { return HalfToFloat(v.bits); }
inline float ToFloat(BFloat16 v) { return BFloat16ToFloat(v.bits); }
template <class T>
T FromFloat(float v);
template <>
inline float FromFloat<float>(float v) { return v; }
template <>
inline Float16 FromFloat<Float16>(float v) { return Float16{FloatToHalf(v)}; }
template <>
inline BFloat16 FromFloat<BFloat16>(float v) { return BFloat16{FloatToBFloat16(v)}; }

template <class T>
struct TypeTag {
  using type = T;
};

// The dtype switches of the operators: call fn(TypeTag<T>{}) with the storage type T of dtype. Callers validate
// dtype in phase 1; a value outside the list is treated as ACL_FLOAT.
// DispatchFloat: ACL_FLOAT -> float, ACL_FLOAT16 -> Float16, ACL_BF16 -> BFloat16.
template <class Fn>
decltype(auto) DispatchFloat(aclDataType dtype, Fn&& fn) {
  switch (dtype) {
    case ACL_FLOAT16:
      return fn(TypeTag<Float16>{});
    case ACL_BF16:
      return fn(TypeTag<BFloat16>{});
    default:
      return fn(TypeTag<float>{});
  }
}

// DispatchFloatOrDouble: as DispatchFloat, plus ACL_DOUBLE -> double.
template <class Fn>
decltype(auto) DispatchFloatOrDouble(aclDataType dtype, Fn&& fn) {
  if (dtype == ACL_DOUBLE) return fn(TypeTag<double>{});
  return DispatchFloat(dtype, static_cast<Fn&&>(fn));
}

// One element of a FLOAT, FLOAT16 or BFLOAT16 array at byte address p (any alignment): widened exactly, or stored
// rounded to nearest even.
inline float LoadFloatElement(aclDataType dtype, const void* p) {
  return DispatchFloat(dtype, [p](auto tag) {
    typename decltype(tag)::type v;
    std::memcpy(&v, p, sizeof v);
    return ToFloat(v);
  });
}
inline void StoreFloatElement(aclDataType dtype, void* p, float value) {
  DispatchFloat(dtype, [p, value](auto tag) {
    const auto v = FromFloat<typename decltype(tag)::type>(value);
    std::memcpy(p, &v, sizeof v);
  });
}

}  // namespace pacl

#endif  // PACL_DTYPE_H_
