// Float64 reference of MultiScaleDeformableAttention: the forward (aclnnMultiScaleDeformableAttnFunction) and its
// gradients (aclnnMultiScaleDeformableAttentionGrad), written from the spec (section 2,
// "MultiScaleDeformableAttention") independently of src/: the yardstick of the operator tests.
//
// Semantics, per sample point (b, q, h, l, p) with (H, W) = spatialShape[l] and start = levelStartIndex[l], any int64
// values (negative, zero, huge, inconsistent with nk):
// - pixel coordinates x = loc_x * W - 0.5, y = loc_y * H - 0.5 (location's last dim is (x, y)).
// - the point is inside only if -1 < x < W and -1 < y < H (strict; NaN fails). A point that is not inside contributes
//   nothing and gets zero gradients (location and attnWeight).
// - inside: bilinear over the corners (y0, x0), (y0, x0 + 1), (y0 + 1, x0), (y0 + 1, x0 + 1), y0 = floor(y),
//   x0 = floor(x); a corner (yy, xx) is valid only if 0 <= yy < H, 0 <= xx < W and 0 <= start + yy * W + xx < nk,
//   evaluated exactly (128-bit integers here, so no product can wrap); other corners are zero padding.
// - out[b, q, h * c + ch] = sum over l, p of attn[b, q, h, l, p] * sum over valid corners of
//   weight * value[b, key, h, ch], key = start + yy * W + xx.
// - with g = gradOutput[b, q, h * c .. h * c + c): gradValue[b, key, h, ch] += weight * attn * g[ch];
//   gradAttnWeight = sum_ch g[ch] * sample[ch]; gradLocation x = W * attn * sum_ch g[ch] * sum over valid corners of
//   dweight/dx * value, y likewise with H and dweight/dy (the derivative of the bilinear weight formula, one-sided at
//   integer coordinates as floor() picks the cell).
#ifndef PACL_TESTS_REFERENCE_MSDA_REFERENCE_H_
#define PACL_TESTS_REFERENCE_MSDA_REFERENCE_H_

#include <cstdint>
#include <vector>

namespace ref {

struct MsdaShape {
  int64_t bs, nk, nh, c, nl, nq, np;
};

// Dense row-major float64 arrays: value (bs, nk, nh, c); spatial_shape (nl, 2) as (H, W); level_start (nl);
// location (bs, nq, nh, nl, np, 2) as (x, y); attn (bs, nq, nh, nl, np); out and grad_output (bs, nq, nh * c)
// (the same order as (bs, nq, nh, c)).
void MsdaForward(const double* value, const int64_t* spatial_shape, const int64_t* level_start, const double* location,
                 const double* attn, const MsdaShape& shape, double* out);

// grad_value, grad_location and grad_attn (shaped like value, location, attn) are written whole.
void MsdaBackward(const double* value, const int64_t* spatial_shape, const int64_t* level_start, const double* location,
                  const double* attn, const double* grad_output, const MsdaShape& shape, double* grad_value,
                  double* grad_location, double* grad_attn);

// ---------------------------------------------------------------------------------------------------------------
// The sampling of one point: the core of the functions above, exposed so that the tests can derive their rounding
// error bounds from the very corners the reference uses.
struct MsdaCorner {
  int64_t key;        // value row start + yy * W + xx, in [0, nk)
  double weight;      // bilinear weight
  double dweight_dx;  // derivative of weight with respect to the pixel coordinate x
  double dweight_dy;
};
struct MsdaPoint {
  bool inside = false;              // -1 < x < W and -1 < y < H
  double x = 0, y = 0;              // pixel coordinates (float64)
  std::vector<MsdaCorner> corners;  // the valid corners only (none when not inside)
};
MsdaPoint MsdaSamplePoint(double loc_x, double loc_y, int64_t height, int64_t width, int64_t start, int64_t nk);

}  // namespace ref

#endif  // PACL_TESTS_REFERENCE_MSDA_REFERENCE_H_
