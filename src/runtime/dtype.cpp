// Data type sizes and names, and the scalar fp16 <-> fp32 conversion (also behind acl_base.h's helpers).
//
// NOTE: FloatToHalf works on the bit pattern. Normal results add the rounding bias (0xFFF plus the lowest kept
// bit, which gives ties-to-even) to the fp32 bits and re-bias the exponent; a carry out of the mantissa moves to
// the next binade or to Inf on its own. Subnormal results shift the significand (with its implicit bit) right by
// the exponent deficit and round on the shifted-out bits. NaNs keep their sign and top payload bits and get the
// quiet bit set.
#include <cstdio>

#include "acl/acl_base.h"
#include "pacl/dtype.h"

namespace pacl {

const char* DataTypeName(aclDataType dtype) {
  switch (dtype) {
    case ACL_DT_UNDEFINED:
      return "UNDEFINED";
    case ACL_FLOAT:
      return "FLOAT";
    case ACL_FLOAT16:
      return "FLOAT16";
    case ACL_INT8:
      return "INT8";
    case ACL_INT32:
      return "INT32";
    case ACL_UINT8:
      return "UINT8";
    case ACL_INT16:
      return "INT16";
    case ACL_UINT16:
      return "UINT16";
    case ACL_UINT32:
      return "UINT32";
    case ACL_INT64:
      return "INT64";
    case ACL_UINT64:
      return "UINT64";
    case ACL_DOUBLE:
      return "DOUBLE";
    case ACL_BOOL:
      return "BOOL";
    case ACL_STRING:
      return "STRING";
    case ACL_COMPLEX64:
      return "COMPLEX64";
    case ACL_COMPLEX128:
      return "COMPLEX128";
    case ACL_BF16:
      return "BFLOAT16";
  }
  // A few rotating per-thread buffers, so that one message can name two unknown values.
  constexpr int kBuffers = 8;
  thread_local char buffers[kBuffers][32];
  thread_local int next = 0;
  char* buffer = buffers[next];
  next = (next + 1) % kBuffers;
  std::snprintf(buffer, sizeof buffers[0], "UNKNOWN(%d)", static_cast<int>(dtype));
  return buffer;
}

uint16_t FloatToHalf(float value) {
  const uint32_t bits = FloatBits(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) {  // NaN
    return static_cast<uint16_t>(sign | 0x7E00u | ((magnitude >> 13) & 0x3FFu));
  }
  if (magnitude >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520 (and Inf): Inf
  if (magnitude >= 0x38800000u) {                                                // >= 2^-14: a normal half
    const uint32_t rounded = magnitude + 0xFFFu + ((magnitude >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
  }
  if (magnitude <= 0x33000000u) return sign;  // <= 2^-25: rounds to (signed) zero, the tie included
  // Subnormal half: value = significand * 2^(e - 150) = q * 2^-24 with q = significand >> (126 - e).
  const uint32_t exponent = magnitude >> 23;
  const uint32_t significand = (magnitude & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126u - exponent;  // 14..24
  uint32_t quotient = significand >> shift;
  const uint32_t remainder = significand & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  if (remainder > half || (remainder == half && (quotient & 1u) != 0)) ++quotient;
  return static_cast<uint16_t>(sign | quotient);
}

}  // namespace pacl

extern "C" {

size_t aclDataTypeSize(aclDataType dataType) { return pacl::DataTypeSize(dataType); }

float aclFloat16ToFloat(aclFloat16 value) { return pacl::HalfToFloat(value); }

aclFloat16 aclFloatToFloat16(float value) { return pacl::FloatToHalf(value); }

}  // extern "C"
