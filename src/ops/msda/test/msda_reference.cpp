#include "msda/test/msda_reference.h"

#include <cmath>
#include <cstddef>

namespace ref {
namespace {

// Corner keys are checked in 128-bit integers: |yy|, |xx|, |W|, |start| < 2^63, so start + yy * W + xx is exact.
__extension__ typedef __int128 Int128;

// The corner (yy, xx) of a level, or -1 when it is zero padding.
int64_t CornerKey(int64_t yy, int64_t xx, int64_t height, int64_t width, int64_t start, int64_t nk) {
  if (yy < 0 || yy >= height || xx < 0 || xx >= width) return -1;
  const Int128 key =
      static_cast<Int128>(start) + static_cast<Int128>(yy) * static_cast<Int128>(width) + static_cast<Int128>(xx);
  if (key < 0 || key >= static_cast<Int128>(nk)) return -1;
  return static_cast<int64_t>(key);
}

size_t Index(int64_t i) { return static_cast<size_t>(i); }

}  // namespace

MsdaPoint MsdaSamplePoint(double loc_x, double loc_y, int64_t height, int64_t width, int64_t start, int64_t nk) {
  MsdaPoint point;
  const double w = static_cast<double>(width), h = static_cast<double>(height);
  point.x = loc_x * w - 0.5;
  point.y = loc_y * h - 0.5;
  // Comparisons with NaN are false, so a NaN coordinate is outside.
  point.inside = point.x > -1.0 && point.x < w && point.y > -1.0 && point.y < h;
  if (!point.inside) return point;
  // Inside: -1 < x < W <= 2^63 (as a double), so floor(x) and floor(x) + 1 fit in int64.
  const double fx = std::floor(point.x), fy = std::floor(point.y);
  const int64_t x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
  const double lx = point.x - fx, ly = point.y - fy;
  const double hx = 1.0 - lx, hy = 1.0 - ly;
  struct Candidate {
    int64_t yy, xx;
    double weight, dweight_dx, dweight_dy;
  };
  const Candidate candidates[4] = {
      {y0, x0, hy * hx, -hy, -hx},
      {y0, x0 + 1, hy * lx, hy, -lx},
      {y0 + 1, x0, ly * hx, -ly, hx},
      {y0 + 1, x0 + 1, ly * lx, ly, lx},
  };
  for (const Candidate& k : candidates) {
    const int64_t key = CornerKey(k.yy, k.xx, height, width, start, nk);
    if (key >= 0) point.corners.push_back({key, k.weight, k.dweight_dx, k.dweight_dy});
  }
  return point;
}

void MsdaForward(const double* value, const int64_t* spatial_shape, const int64_t* level_start, const double* location,
                 const double* attn, const MsdaShape& s, double* out) {
  for (int64_t b = 0; b < s.bs; ++b) {
    for (int64_t q = 0; q < s.nq; ++q) {
      for (int64_t h = 0; h < s.nh; ++h) {
        double* out_row = out + Index(((b * s.nq + q) * s.nh + h) * s.c);
        for (int64_t ch = 0; ch < s.c; ++ch) out_row[ch] = 0.0;
        for (int64_t l = 0; l < s.nl; ++l) {
          for (int64_t p = 0; p < s.np; ++p) {
            const int64_t point_index = (((b * s.nq + q) * s.nh + h) * s.nl + l) * s.np + p;
            const MsdaPoint point = MsdaSamplePoint(location[Index(2 * point_index)],
                                                    location[Index(2 * point_index + 1)], spatial_shape[Index(2 * l)],
                                                    spatial_shape[Index(2 * l + 1)], level_start[Index(l)], s.nk);
            const double a = attn[Index(point_index)];
            for (const MsdaCorner& corner : point.corners) {
              const double* v = value + Index(((b * s.nk + corner.key) * s.nh + h) * s.c);
              for (int64_t ch = 0; ch < s.c; ++ch) out_row[ch] += a * corner.weight * v[ch];
            }
          }
        }
      }
    }
  }
}

void MsdaBackward(const double* value, const int64_t* spatial_shape, const int64_t* level_start, const double* location,
                  const double* attn, const double* grad_output, const MsdaShape& s, double* grad_value,
                  double* grad_location, double* grad_attn) {
  const int64_t value_count = s.bs * s.nk * s.nh * s.c;
  for (int64_t i = 0; i < value_count; ++i) grad_value[Index(i)] = 0.0;
  for (int64_t b = 0; b < s.bs; ++b) {
    for (int64_t q = 0; q < s.nq; ++q) {
      for (int64_t h = 0; h < s.nh; ++h) {
        const double* g = grad_output + Index(((b * s.nq + q) * s.nh + h) * s.c);
        for (int64_t l = 0; l < s.nl; ++l) {
          const int64_t height = spatial_shape[Index(2 * l)], width = spatial_shape[Index(2 * l + 1)];
          for (int64_t p = 0; p < s.np; ++p) {
            const int64_t point_index = (((b * s.nq + q) * s.nh + h) * s.nl + l) * s.np + p;
            const MsdaPoint point =
                MsdaSamplePoint(location[Index(2 * point_index)], location[Index(2 * point_index + 1)], height, width,
                                level_start[Index(l)], s.nk);
            const double a = attn[Index(point_index)];
            double sum_sample = 0.0, sum_dx = 0.0, sum_dy = 0.0;
            for (const MsdaCorner& corner : point.corners) {
              const size_t row = Index(((b * s.nk + corner.key) * s.nh + h) * s.c);
              for (int64_t ch = 0; ch < s.c; ++ch) {
                const double gv = g[ch] * value[row + Index(ch)];
                sum_sample += corner.weight * gv;
                sum_dx += corner.dweight_dx * gv;
                sum_dy += corner.dweight_dy * gv;
                grad_value[row + Index(ch)] += corner.weight * a * g[ch];
              }
            }
            // A point with no valid corner has exactly zero gradients (also when W * attn would be Inf or NaN).
            const bool contributes = !point.corners.empty();
            grad_attn[Index(point_index)] = sum_sample;
            grad_location[Index(2 * point_index)] = contributes ? static_cast<double>(width) * a * sum_dx : 0.0;
            grad_location[Index(2 * point_index + 1)] = contributes ? static_cast<double>(height) * a * sum_dy : 0.0;
          }
        }
      }
    }
  }
}

}  // namespace ref
