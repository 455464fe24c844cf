// Per-element math shared by the CPU kernels (g++) and the CUDA kernels (nvcc): functions marked PACL_HOST_DEVICE
// compile for both, so the CPU tests also check what a GPU computes. The scalar math functions below pick CUDA's
// device functions in device code and <cmath>'s elsewhere; both are exact (floor, fmod, nearbyint, the tests) or
// the same IEEE operation, so a tap index or weight comes out the same on both.
#ifndef PACL_HOST_DEVICE_H_
#define PACL_HOST_DEVICE_H_

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define PACL_HOST_DEVICE __host__ __device__
// Always inlined: these run per output element in the inner loops of both devices.
#define PACL_HOST_DEVICE_INLINE __host__ __device__ __forceinline__
#else
#define PACL_HOST_DEVICE
#define PACL_HOST_DEVICE_INLINE inline __attribute__((always_inline))
#endif

namespace pacl::hd {

#if defined(__CUDA_ARCH__)
PACL_HOST_DEVICE_INLINE float Floor(float x) { return floorf(x); }
PACL_HOST_DEVICE_INLINE double Floor(double x) { return floor(x); }
PACL_HOST_DEVICE_INLINE float Fmod(float x, float y) { return fmodf(x, y); }
PACL_HOST_DEVICE_INLINE double Fmod(double x, double y) { return fmod(x, y); }
// Round half to even (the default rounding mode on the CPU; rint on the GPU).
PACL_HOST_DEVICE_INLINE float NearbyInt(float x) { return rintf(x); }
PACL_HOST_DEVICE_INLINE double NearbyInt(double x) { return rint(x); }
PACL_HOST_DEVICE_INLINE bool IsNan(float x) { return isnan(x); }
PACL_HOST_DEVICE_INLINE bool IsNan(double x) { return isnan(x); }
PACL_HOST_DEVICE_INLINE bool IsFinite(float x) { return isfinite(x); }
PACL_HOST_DEVICE_INLINE bool IsFinite(double x) { return isfinite(x); }
// a * b + c rounded once.
PACL_HOST_DEVICE_INLINE float Fma(float a, float b, float c) { return fmaf(a, b, c); }
PACL_HOST_DEVICE_INLINE double Fma(double a, double b, double c) { return fma(a, b, c); }
#else
inline float Floor(float x) { return std::floor(x); }
inline double Floor(double x) { return std::floor(x); }
inline float Fmod(float x, float y) { return std::fmod(x, y); }
inline double Fmod(double x, double y) { return std::fmod(x, y); }
inline float NearbyInt(float x) { return std::nearbyint(x); }
inline double NearbyInt(double x) { return std::nearbyint(x); }
inline bool IsNan(float x) { return std::isnan(x); }
inline bool IsNan(double x) { return std::isnan(x); }
inline bool IsFinite(float x) { return std::isfinite(x); }
inline bool IsFinite(double x) { return std::isfinite(x); }
inline float Fma(float a, float b, float c) { return std::fma(a, b, c); }
inline double Fma(double a, double b, double c) { return std::fma(a, b, c); }
#endif

// The bits of a float, and back.
PACL_HOST_DEVICE_INLINE int32_t FloatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_int(f);
#else
  int32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
#endif
}
PACL_HOST_DEVICE_INLINE float BitsToFloat(int32_t bits) {
#if defined(__CUDA_ARCH__)
  return __int_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

// CanonicalExp and pacl's vector Exp return exactly +0 for every input below this (e^-104 is below the smallest
// fp32 subnormal's half), so a kernel may skip the evaluation for such inputs without changing a bit.
inline constexpr float kExpZeroBelow = -104.0f;
// On [kExpNormalBelow, kExpNormalAbove] the vector Exp neither clamps, zeroes nor scales in two steps
// (n = round(x / ln2) lies in [-124, 124]), so its ExpNormalRange, without those checks, gives the same bits there.
inline constexpr float kExpNormalBelow = -86.0f;
inline constexpr float kExpNormalAbove = 86.0f;

// e^x: the scalar twin of pacl's vector Exp (pacl/canonical_math-inl.h, where the method is described), operation
// for operation, so it gives the same bits for every input that is not NaN (base_tests check that); a NaN input
// gives NaN. At most about 1 ulp of error; inputs below -104 give +0, above 89 +Inf.
PACL_HOST_DEVICE_INLINE float CanonicalExp(float x) {
  if (IsNan(x)) return x;
  if (x < kExpZeroBelow) return 0.0f;
  if (x > 89.0f) x = 89.0f;
  const float shifter = 12582912.0f;  // 1.5 * 2^23
  const float shifted = Fma(x, 1.44269504088896341f, shifter);
  const float n = shifted - shifter;  // round(x / ln2), an integer in [-150, 128]
  const int32_t n_int = FloatBits(shifted) - FloatBits(shifter);
  float r = Fma(n, -0.693145751953125f, x);
  r = Fma(n, -1.428606765330187045e-06f, r);
  const float r2 = r * r;
  const float q67 = Fma(r, 1.0f / 5040.0f, 1.0f / 720.0f);
  const float q45 = Fma(r, 1.0f / 120.0f, 1.0f / 24.0f);
  const float q23 = Fma(r, 1.0f / 6.0f, 0.5f);
  float q = Fma(r2, q67, q45);
  q = Fma(r2, q, q23);
  const float p = Fma(r2, q, r) + 1.0f;
  constexpr int32_t kExponentOne = int32_t{1} << 23;  // one in the exponent field
  if (n_int >= -125 && n_int <= 127) return BitsToFloat(FloatBits(p) + n_int * kExponentOne);
  // p * 2^(n - n/2) exactly, then * 2^(n/2) (n/2 rounded down, as an arithmetic shift): one rounding.
  const int32_t half_n = n_int >= 0 ? n_int / 2 : -((1 - n_int) / 2);
  const float p_scaled = BitsToFloat(FloatBits(p) + (n_int - half_n) * kExponentOne);
  return p_scaled * BitsToFloat((half_n + 127) * kExponentOne);
}

template <class T>
PACL_HOST_DEVICE_INLINE T Min(T a, T b) {
  return b < a ? b : a;
}
template <class T>
PACL_HOST_DEVICE_INLINE T Max(T a, T b) {
  return a < b ? b : a;
}

}  // namespace pacl::hd

#endif  // PACL_HOST_DEVICE_H_
