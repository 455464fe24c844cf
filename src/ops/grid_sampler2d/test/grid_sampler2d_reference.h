// Float64 reference of GridSampler2D (forward) and GridSampler2DBackward with PyTorch's grid_sampler_2d semantics,
// written from the spec (docs/spec section 2) independently of src/: the yardstick of the operator tests.
//
// Semantics, per grid point (x, y) in [-1, 1] (x indexes width, y height):
// - unnormalize: alignCorners ? (c + 1) / 2 * (size - 1) : ((c + 1) * size - 1) / 2, derivative (size - 1) / 2 or
//   size / 2.
// - bilinear / nearest: the padding is applied to that source coordinate first: zeros leaves it, border clips it to
//   [0, size - 1] (derivative 0 where clipped, also exactly at the limits), reflection reflects it over [0, size - 1]
//   (alignCorners) or [-0.5, size - 0.5] (derivative sign flips once per reflection) and then clips it. Bilinear reads
//   the 4 pixels around it, nearest the pixel nearbyint() picks (half to even); pixels outside the input read 0.
// - bicubic: cubic convolution (A = -0.75) on the 4x4 pixels around floor() of the unnormalized, unpadded coordinate;
//   each of those pixel indices is mapped through the padding when read (zeros: outside reads 0; border: clipped;
//   reflection: reflected, then clipped). The grid gradient therefore has no padding factor.
// - nearest has a zero grid gradient.
// Non-finite coordinates: a NaN or infinite source coordinate (after unnormalizing, after the padding for
// bilinear/nearest) reads nothing: output 0, gradients 0. With zeros padding this is the project's decision ("far out
// of range", where PyTorch itself propagates NaN for bilinear and bicubic); with border or reflection padding the
// value of such points is not defined by the spec (PyTorch gives position 0, the edge or NaN depending on the mode),
// and the tests only check that the operator's result there is finite and bounded.
#ifndef PACL_TESTS_REFERENCE_GRID_SAMPLER2D_REFERENCE_H_
#define PACL_TESTS_REFERENCE_GRID_SAMPLER2D_REFERENCE_H_

#include <cstdint>
#include <vector>

namespace ref {

struct GridSamplerShape {
  int64_t N, C, Hin, Win, Hout, Wout;
};

// Dense row-major float64: input (N, C, Hin, Win), grid (N, Hout, Wout, 2) as (x, y), out (N, C, Hout, Wout).
// interpolation: 0 bilinear, 1 nearest, 2 bicubic; padding: 0 zeros, 1 border, 2 reflection.
void GridSampler2DForward(const double* input, const double* grid, const GridSamplerShape& shape, int interpolation,
                          int padding, bool align_corners, double* out);

// input_grad (N, C, Hin, Win) and grid_grad (N, Hout, Wout, 2) are written whole (not accumulated into).
void GridSampler2DBackward(const double* grad_output, const double* input, const double* grid,
                           const GridSamplerShape& shape, int interpolation, int padding, bool align_corners,
                           double* input_grad, double* grid_grad);

// ---------------------------------------------------------------------------------------------------------------
// The sampling of one grid point: the core of the two functions above, exposed so that the tests can derive their
// rounding-error bounds from the very taps the reference uses (an addition to the API the brief names).
//
// out = sum over taps of weight * input[h, w]; input_grad[h, w] += weight * g per tap;
// grid_grad = (x_mult * sum dweight_dx * input * g, y_mult * sum dweight_dy * input * g), summed over taps and C.
struct GridSamplerTap {
  int64_t h, w;       // an input pixel inside the input (taps outside read 0 and are left out)
  double weight;      // interpolation weight
  double dweight_dx;  // derivative of weight along the coordinate the weights are computed from
  double dweight_dy;
};
struct GridSamplerPoint {
  double x, y;            // the unnormalized source coordinates (pixels), before any padding
  double x_mult, y_mult;  // d(the coordinate the weights use) / d(grid value): unnormalize and padding factors
  std::vector<GridSamplerTap> taps;  // several taps may name the same pixel (border / reflection)
};
GridSamplerPoint GridSampler2DSamplePoint(double grid_x, double grid_y, int64_t Hin, int64_t Win, int interpolation,
                                          int padding, bool align_corners);

}  // namespace ref

#endif  // PACL_TESTS_REFERENCE_GRID_SAMPLER2D_REFERENCE_H_
