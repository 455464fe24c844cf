#!/usr/bin/python3
"""Parity of aclnnGridSampler2D / aclnnGridSampler2DBackward with PyTorch's grid_sampler_2d.

Random cases of every mode (3 interpolations x 3 paddings x 2 alignCorners, FLOAT and DOUBLE, small random
shapes including 1-pixel-wide inputs, grid values in [-1.3, 1.3]) are written to a directory, run through the
public aclnn API by grid_sampler2d_parity_runner, and compared with torch.nn.functional.grid_sample and
torch.ops.aten.grid_sampler_2d_backward(gradOutput, input, grid, interpolation, padding, align, [True, True]):
relative error in the 2-norm, per case and per output, at most 1e-10 for DOUBLE and 1e-5 for FLOAT. The error is
relative to max(||expected||, 0.1 sqrt(elements)): inputs and gradOutput are of magnitude <= 1, so an output whose
exact value is about 0 (e.g. the grid gradient of a 1-pixel input, where FLOAT rounding leaves noise of ~1e-8 in
both implementations) is judged at the data's scale instead of its own.

Sample points closer than 1e-3 pixel to a multiple of half a pixel are drawn again: there the result or its
gradient jumps (nearest rounding, bilinear and bicubic tap boundaries, border clipping, reflection edges), and two
correct implementations that round differently in the last bit may land on either side. Points exactly on those
places, where no rounding can happen, are cases of their own (for every mode and both dtypes): the identity grid
with alignCorners on a 5 x 9 input (every point exactly on a pixel), and grids whose values all lie in
{-3, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3} on 4 x 8 (5 x 9 with alignCorners) inputs, where every unnormalized
position is exact (pixels, pixel edges, the input's edges, and reflections of them): there the result is PyTorch's
convention (a clip's derivative is 0 on its limits, the sign of a reflection), which ours must share.

  grid_sampler2d_parity.py --runner PATH [--seed S] [--cases-per-combination K] [--grid-limit L] [--keep DIR]

(--grid-limit L draws grid values in [-L, L] instead, e.g. 4 for coordinates reflected several times.)

Run it with Debian's python3-torch (/usr/bin/python3). Exit status: 0 pass, 1 fail, 77 when torch cannot be
imported (ctest reports the test skipped) unless PACL_REQUIRE_TORCH=1 is set (CI), which makes that a failure.
"""

import os
import sys

# parity_util.py is in tests/support; no __pycache__ is left in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "tests", "support"))
from parity_util import argument_parser, relative_error, report, run_runner, start, work_directory

INTERPOLATIONS = ("bilinear", "nearest", "bicubic")
PADDINGS = ("zeros", "border", "reflection")
TOLERANCE = {"FLOAT": 1e-5, "DOUBLE": 1e-10}
GRID_LIMIT = 1.3
# Sample points within this many pixels of a multiple of 0.5 pixel are drawn again (see above).
EDGE_MARGIN = 1e-3
# The grid values of the exact "edges" cases (see above).
EDGE_VALUES = (-3.0, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0)


def unnormalize(coordinate, size, align):
    """PyTorch's map from [-1, 1] to pixel coordinates, in float64."""
    if align:
        return (coordinate + 1.0) / 2.0 * (size - 1)
    return ((coordinate + 1.0) * size - 1.0) / 2.0


def random_grid(np, rng, n, out_h, out_w, in_h, in_w, align, limit):
    """Grid (n, out_h, out_w, 2) uniform in [-limit, limit], away from the jumps (see the top)."""
    grid = rng.uniform(-limit, limit, size=(n, out_h, out_w, 2))
    for axis, size in ((0, in_w), (1, in_h)):
        if align and size == 1:
            continue  # the pixel coordinate is 0 whatever the grid value: nothing jumps
        for _ in range(1000):
            pixel = unnormalize(grid[..., axis], size, align)
            near_edge = np.abs(2.0 * pixel - np.round(2.0 * pixel)) < 2.0 * EDGE_MARGIN
            if not near_edge.any():
                break
            grid[..., axis][near_edge] = rng.uniform(-limit, limit, size=int(near_edge.sum()))
        else:
            raise RuntimeError("could not draw a grid away from the pixel edges")
    return grid


def make_cases(np, rng, per_combination):
    """[(name, dtype, interpolation, padding, align, (N, C, Hin, Win, Hout, Wout), kind)], kind "random",
    "identity" or "edges" (see the top)."""
    cases = []
    for dtype in ("FLOAT", "DOUBLE"):
        for interpolation in range(3):
            for padding in range(3):
                for align in (False, True):
                    for k in range(per_combination):
                        n, c = int(rng.integers(1, 4)), int(rng.integers(1, 5))
                        out_h, out_w = int(rng.integers(1, 9)), int(rng.integers(1, 9))
                        in_h, in_w = int(rng.integers(2, 10)), int(rng.integers(2, 10))
                        if k % 2 == 1:  # every other case has a 1-pixel-wide input
                            in_h, in_w = [(1, in_w), (in_h, 1), (1, 1)][int(rng.integers(0, 3))]
                        name = "%s_%s_%s_%s_%d" % (dtype, INTERPOLATIONS[interpolation], PADDINGS[padding],
                                                   "align" if align else "noalign", k)
                        cases.append((name, dtype, interpolation, padding, align,
                                      (n, c, in_h, in_w, out_h, out_w), "random"))
                    # The exact grids (see the top): (5, 9) inputs with alignCorners, (4, 8) without.
                    in_h, in_w = (5, 9) if align else (4, 8)
                    for kind in ("identity", "edges") if align else ("edges",):
                        out_h, out_w = (in_h, in_w) if kind == "identity" else (len(EDGE_VALUES), len(EDGE_VALUES))
                        name = "%s_%s_%s_%s_%s" % (dtype, INTERPOLATIONS[interpolation], PADDINGS[padding],
                                                   "align" if align else "noalign", kind)
                        cases.append((name, dtype, interpolation, padding, align, (2, 3, in_h, in_w, out_h, out_w),
                                      kind))
    return cases


def exact_grid(np, kind, n, out_h, out_w, in_h, in_w):
    """The identity grid (alignCorners) or every pair of EDGE_VALUES: values exact in float32."""
    if kind == "identity":
        xs = -1.0 + 2.0 * np.arange(out_w) / (in_w - 1)
        ys = -1.0 + 2.0 * np.arange(out_h) / (in_h - 1)
    else:
        xs = np.array(EDGE_VALUES)
        ys = np.array(EDGE_VALUES)
    grid = np.empty((n, out_h, out_w, 2))
    grid[..., 0] = xs[None, None, :]
    grid[..., 1] = ys[None, :, None]
    return grid


def main():
    parser = argument_parser(__doc__.split("\n\n")[0], "grid_sampler2d_parity_runner", 20240521)
    parser.add_argument("--cases-per-combination", type=int, default=2)
    parser.add_argument("--grid-limit", type=float, default=GRID_LIMIT)
    args, np, torch, rng = start(parser)
    cases = make_cases(np, rng, args.cases_per_combination)

    with work_directory("grid_sampler2d_parity_", args.keep) as work:
        data = {}
        with open(os.path.join(work, "cases.txt"), "w") as listing:
            for name, dtype, interpolation, padding, align, shape, kind in cases:
                n, c, in_h, in_w, out_h, out_w = shape
                np_dtype = np.float32 if dtype == "FLOAT" else np.float64
                if kind == "random":
                    grid = random_grid(np, rng, n, out_h, out_w, in_h, in_w, align, args.grid_limit)
                else:
                    grid = exact_grid(np, kind, n, out_h, out_w, in_h, in_w)
                arrays = {
                    "input": rng.uniform(-1.0, 1.0, size=(n, c, in_h, in_w)).astype(np_dtype),
                    "grid": grid.astype(np_dtype),
                    "grad_output": rng.uniform(-1.0, 1.0, size=(n, c, out_h, out_w)).astype(np_dtype),
                }
                for key, array in arrays.items():
                    array.tofile(os.path.join(work, "%s.%s" % (name, key)))
                data[name] = arrays
                listing.write("%s %s %d %d %d %s\n" % (name, dtype, interpolation, padding, int(align),
                                                       " ".join(str(d) for d in shape)))

        if not run_runner(args.runner, work):
            return 1

        failures = []
        worst = {}
        for name, dtype, interpolation, padding, align, shape, _ in cases:
            arrays = data[name]
            np_dtype = arrays["input"].dtype
            source = torch.from_numpy(arrays["input"])
            grid = torch.from_numpy(arrays["grid"])
            grad_output = torch.from_numpy(arrays["grad_output"])
            expected = {
                "out": torch.nn.functional.grid_sample(source, grid, mode=INTERPOLATIONS[interpolation],
                                                       padding_mode=PADDINGS[padding], align_corners=align),
            }
            expected["input_grad"], expected["grid_grad"] = torch.ops.aten.grid_sampler_2d_backward(
                grad_output, source, grid, interpolation, padding, align, [True, True])
            for output, reference in expected.items():
                reference = reference.numpy()
                actual = np.fromfile(os.path.join(work, "%s.%s" % (name, output)), dtype=np_dtype)
                if actual.size != reference.size:
                    failures.append("%s %s: %d elements, expected %d" % (name, output, actual.size,
                                                                         reference.size))
                    continue
                actual = actual.reshape(reference.shape)
                if not np.isfinite(actual).all():
                    failures.append("%s %s: %d non-finite elements (NaN: not written)" % (
                        name, output, int((~np.isfinite(actual)).sum())))
                    continue
                error = relative_error(np, actual.astype(np.float64), reference.astype(np.float64))
                key = (dtype, output)
                if error > worst.get(key, (-1.0, ""))[0]:
                    worst[key] = (error, name)
                if not error <= TOLERANCE[dtype]:
                    failures.append("%s %s: relative error %.3g > %.0e (shape %s)" % (
                        name, output, error, TOLERANCE[dtype], shape))

    print("%d cases (seed %d), PyTorch %s; worst relative error in the 2-norm per dtype and output:"
          % (len(cases), args.seed, torch.__version__))
    for (dtype, output), (error, name) in sorted(worst.items()):
        print("  %-6s %-10s %.3g  (tolerance %.0e; %s)" % (dtype, output, error, TOLERANCE[dtype], name))
    return report(failures)


if __name__ == "__main__":
    sys.exit(main())
