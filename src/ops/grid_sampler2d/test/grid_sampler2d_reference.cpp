#include "grid_sampler2d/test/grid_sampler2d_reference.h"

#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>

namespace ref {
namespace {

constexpr int kBilinear = 0;
constexpr int kNearest = 1;
constexpr int kBicubic = 2;
constexpr int kZeros = 0;
constexpr int kBorder = 1;
constexpr int kReflection = 2;
constexpr double kCubicA = -0.75;

// A coordinate and the derivative of it with respect to the grid value it came from.
struct Coordinate {
  double value;
  double mult;
};

Coordinate Unnormalize(double c, int64_t size, bool align_corners) {
  const double s = static_cast<double>(size);
  if (align_corners) return {(c + 1.0) / 2.0 * (s - 1.0), (s - 1.0) / 2.0};
  return {((c + 1.0) * s - 1.0) / 2.0, s / 2.0};
}

// Clip to [0, size - 1]; the derivative is 0 where clipped, including exactly at the limits. NaN stays NaN.
Coordinate Clip(Coordinate c, int64_t size) {
  const double high = static_cast<double>(size - 1);
  if (c.value <= 0.0) return {0.0, 0.0};
  if (c.value >= high) return {high, 0.0};
  return c;
}

// Reflect over [low, high] = [twice_low / 2, twice_high / 2]: the coordinate bounces between the two ends; each
// bounce flips the sign of the derivative. Non-finite values come back NaN.
Coordinate Reflect(Coordinate c, double low, double high) {
  if (!std::isfinite(c.value)) return {std::numeric_limits<double>::quiet_NaN(), 0.0};
  if (low == high) return {0.0, 0.0};
  const double span = high - low;
  double distance = c.value - low;
  double mult = c.mult;
  if (distance < 0) {
    distance = -distance;
    mult = -mult;
  }
  const double extra = std::fmod(distance, span);
  const double flips = std::floor(distance / span);
  if (std::fmod(flips, 2.0) == 0.0) return {low + extra, mult};
  return {high - extra, -mult};
}

// The padding for the single source coordinate of bilinear and nearest.
Coordinate PadSourceCoordinate(Coordinate c, int64_t size, int padding, bool align_corners) {
  switch (padding) {
    case kZeros:
      return c;
    case kBorder:
      return Clip(c, size);
    case kReflection: {
      const double s = static_cast<double>(size);
      const Coordinate reflected = align_corners ? Reflect(c, 0.0, s - 1.0) : Reflect(c, -0.5, s - 0.5);
      return Clip(reflected, size);
    }
    default:
      throw std::invalid_argument("GridSampler2D reference: padding must be 0, 1 or 2");
  }
}

// Index of a pixel coordinate (an integer-valued double) inside [0, size), or -1. Compared as a double first, so
// huge and NaN values are never converted to an integer.
int64_t PixelIndex(double coordinate, int64_t size) {
  if (!(coordinate >= 0.0 && coordinate < static_cast<double>(size))) return -1;
  return static_cast<int64_t>(coordinate);
}

// The bicubic tap at integer coordinate t mapped through the padding: an index in [0, size) or -1 (reads 0).
int64_t BicubicTapIndex(double t, int64_t size, int padding, bool align_corners) {
  if (padding == kZeros) return PixelIndex(t, size);
  const Coordinate padded = PadSourceCoordinate({t, 1.0}, size, padding, align_corners);
  // Reflected integers are integers (both reflection ranges have integer or half-integer ends); truncation as in
  // the semantics.
  if (!std::isfinite(padded.value)) return -1;
  return PixelIndex(std::trunc(padded.value), size);
}

// Cubic convolution weights for the four taps at distances 1 + t, t, 1 - t, 2 - t, and their derivatives in t.
void CubicWeights(double t, double w[4], double dw[4]) {
  const double A = kCubicA;
  auto outer = [A](double d) { return ((A * d - 5.0 * A) * d + 8.0 * A) * d - 4.0 * A; };  // |d| in [1, 2]
  auto outer_derivative = [A](double d) { return (3.0 * A * d - 10.0 * A) * d + 8.0 * A; };
  auto inner = [A](double d) { return ((A + 2.0) * d - (A + 3.0)) * d * d + 1.0; };  // |d| in [0, 1]
  auto inner_derivative = [A](double d) { return (3.0 * (A + 2.0) * d - 2.0 * (A + 3.0)) * d; };
  w[0] = outer(t + 1.0);
  w[1] = inner(t);
  w[2] = inner(1.0 - t);
  w[3] = outer(2.0 - t);
  dw[0] = outer_derivative(t + 1.0);
  dw[1] = inner_derivative(t);
  dw[2] = -inner_derivative(1.0 - t);
  dw[3] = -outer_derivative(2.0 - t);
}

}  // namespace

GridSamplerPoint GridSampler2DSamplePoint(double grid_x, double grid_y, int64_t Hin, int64_t Win, int interpolation,
                                          int padding, bool align_corners) {
  if (padding < 0 || padding > 2) throw std::invalid_argument("GridSampler2D reference: padding must be 0, 1 or 2");
  GridSamplerPoint point;
  const Coordinate ux = Unnormalize(grid_x, Win, align_corners);
  const Coordinate uy = Unnormalize(grid_y, Hin, align_corners);
  point.x = ux.value;
  point.y = uy.value;

  if (interpolation == kBilinear || interpolation == kNearest) {
    const Coordinate px = PadSourceCoordinate(ux, Win, padding, align_corners);
    const Coordinate py = PadSourceCoordinate(uy, Hin, padding, align_corners);
    point.x_mult = px.mult;
    point.y_mult = py.mult;
    if (!std::isfinite(px.value) || !std::isfinite(py.value)) return point;
    if (interpolation == kNearest) {
      const int64_t w = PixelIndex(std::nearbyint(px.value), Win);
      const int64_t h = PixelIndex(std::nearbyint(py.value), Hin);
      if (w >= 0 && h >= 0) point.taps.push_back({h, w, 1.0, 0.0, 0.0});
      return point;
    }
    const double x0 = std::floor(px.value);
    const double y0 = std::floor(py.value);
    const double tx = px.value - x0;
    const double ty = py.value - y0;
    const double wx[2] = {1.0 - tx, tx}, dwx[2] = {-1.0, 1.0};
    const double wy[2] = {1.0 - ty, ty}, dwy[2] = {-1.0, 1.0};
    for (int j = 0; j < 2; ++j) {
      const int64_t h = PixelIndex(y0 + j, Hin);
      if (h < 0) continue;
      for (int i = 0; i < 2; ++i) {
        const int64_t w = PixelIndex(x0 + i, Win);
        if (w < 0) continue;
        point.taps.push_back({h, w, wx[i] * wy[j], dwx[i] * wy[j], wx[i] * dwy[j]});
      }
    }
    return point;
  }

  if (interpolation != kBicubic) {
    throw std::invalid_argument("GridSampler2D reference: interpolation must be 0, 1 or 2");
  }
  point.x_mult = ux.mult;
  point.y_mult = uy.mult;
  if (!std::isfinite(ux.value) || !std::isfinite(uy.value)) return point;
  const double x0 = std::floor(ux.value);
  const double y0 = std::floor(uy.value);
  double wx[4], dwx[4], wy[4], dwy[4];
  CubicWeights(ux.value - x0, wx, dwx);
  CubicWeights(uy.value - y0, wy, dwy);
  for (int j = 0; j < 4; ++j) {
    const int64_t h = BicubicTapIndex(y0 - 1.0 + j, Hin, padding, align_corners);
    if (h < 0) continue;
    for (int i = 0; i < 4; ++i) {
      const int64_t w = BicubicTapIndex(x0 - 1.0 + i, Win, padding, align_corners);
      if (w < 0) continue;
      point.taps.push_back({h, w, wx[i] * wy[j], dwx[i] * wy[j], wx[i] * dwy[j]});
    }
  }
  return point;
}

void GridSampler2DForward(const double* input, const double* grid, const GridSamplerShape& s, int interpolation,
                          int padding, bool align_corners, double* out) {
  const int64_t points = s.Hout * s.Wout;
  for (int64_t n = 0; n < s.N; ++n) {
    for (int64_t p = 0; p < points; ++p) {
      const double* g = grid + (n * points + p) * 2;
      const GridSamplerPoint point =
          GridSampler2DSamplePoint(g[0], g[1], s.Hin, s.Win, interpolation, padding, align_corners);
      for (int64_t c = 0; c < s.C; ++c) {
        const double* image = input + (n * s.C + c) * s.Hin * s.Win;
        double sum = 0.0;
        for (const GridSamplerTap& tap : point.taps) sum += tap.weight * image[tap.h * s.Win + tap.w];
        out[(n * s.C + c) * points + p] = sum;
      }
    }
  }
}

void GridSampler2DBackward(const double* grad_output, const double* input, const double* grid,
                           const GridSamplerShape& s, int interpolation, int padding, bool align_corners,
                           double* input_grad, double* grid_grad) {
  const int64_t points = s.Hout * s.Wout;
  const int64_t pixels = s.Hin * s.Win;
  for (int64_t i = 0; i < s.N * s.C * pixels; ++i) input_grad[i] = 0.0;
  for (int64_t n = 0; n < s.N; ++n) {
    for (int64_t p = 0; p < points; ++p) {
      const double* g = grid + (n * points + p) * 2;
      const GridSamplerPoint point =
          GridSampler2DSamplePoint(g[0], g[1], s.Hin, s.Win, interpolation, padding, align_corners);
      double gx = 0.0, gy = 0.0;
      for (int64_t c = 0; c < s.C; ++c) {
        const double go = grad_output[(n * s.C + c) * points + p];
        const double* image = input + (n * s.C + c) * pixels;
        double* image_grad = input_grad + (n * s.C + c) * pixels;
        for (const GridSamplerTap& tap : point.taps) {
          const int64_t index = tap.h * s.Win + tap.w;
          image_grad[index] += tap.weight * go;
          gx += tap.dweight_dx * image[index] * go;
          gy += tap.dweight_dy * image[index] * go;
        }
      }
      grid_grad[(n * points + p) * 2] = point.x_mult * gx;
      grid_grad[(n * points + p) * 2 + 1] = point.y_mult * gy;
    }
  }
}

}  // namespace ref
