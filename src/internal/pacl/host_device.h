// Per-element math shared by the CPU kernels (g++) and the CUDA kernels (nvcc): functions marked PACL_HOST_DEVICE
// compile for both, so the CPU tests also check what a GPU computes. The scalar math functions below pick CUDA's
// device functions in device code and <cmath>'s elsewhere; both are exact (floor, fmod, nearbyint, the tests) or
// the same IEEE operation, so a tap index or weight comes out the same on both.
#ifndef PACL_HOST_DEVICE_H_
#define PACL_HOST_DEVICE_H_

#include <cmath>
#include <cstdint>

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
#endif

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
