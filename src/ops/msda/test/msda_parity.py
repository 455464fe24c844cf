#!/usr/bin/python3
"""Parity of aclnnMultiScaleDeformableAttnFunction / aclnnMultiScaleDeformableAttentionGrad with PyTorch.

Random cases (FLOAT, FLOAT16 and BFLOAT16, INT32 / INT64 spatialShape and levelStartIndex, gradOutput 3-D and 4-D,
1 to 4 levels of 1 to 12 pixels a side, sometimes with unused keys after the last level, locations in [-0.1, 1.1] so
that points fall inside, across the border and outside) are written to a directory, run through the public aclnn API
by msda_parity_runner, and compared with the pure-PyTorch composite of multi-scale deformable attention: per level,
value is split into (bs * nh, c, H, W) maps and sampled with torch.nn.functional.grid_sample(mode="bilinear",
padding_mode="zeros", align_corners=False) at grid = 2 * location - 1, the samples are weighted by attnWeight and summed
over levels and points; its autograd gives the gradients. Torch computes in float64 on the exactly widened inputs
(the values the device holds), so the comparison measures our error alone:
- relative error in the 2-norm, per case and output, at most 1e-5 for FLOAT (the spec), 2^-10 for FLOAT16 and 2^-7
  for BFLOAT16 (twice the largest relative error of the final rounding alone), relative to
  max(||expected||, 0.1 sqrt(elements)) so that an output whose exact value is about 0 is judged at the data's scale;
- per element |actual - expected| <= 2 ulp(expected) of the dtype + 1e-5 max(max |expected|, 0.1): the rounding plus
  the fp32 arithmetic's error, which is a small fraction of the terms of each sum.

Sample points closer than 1e-3 pixel to an integer pixel coordinate are drawn again: there the bilinear cell (and at
-1 and W the inside test) changes, and two correct implementations that round differently may land on either side
(the composite, like grid_sample, also differs from the spec exactly at x = -1, where the spec says "outside"). The
operator tests (tests/ops/test_msda.cpp) cover those points against our float64 reference.

  msda_parity.py --runner PATH [--seed S] [--cases-per-dtype K] [--keep DIR]

Run it with Debian's python3-torch (/usr/bin/python3). Exit status: 0 pass, 1 fail, 77 when torch cannot be imported
(ctest reports the test skipped) unless PACL_REQUIRE_TORCH=1 is set (CI), which makes that a failure.
"""

import os
import sys

# parity_util.py is in tests/support; no __pycache__ is left in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "tests", "support"))
from parity_util import (SCALE_FLOOR, WorstErrors, argument_parser, compare, read_output, report, run_runner,
                         start, torch_dtype, ulp, work_directory, write_tensor)

DTYPES = ("FLOAT", "FLOAT16", "BFLOAT16")
INDEX_DTYPES = ("INT32", "INT64")
NORM_TOLERANCE = {"FLOAT": 1e-5, "FLOAT16": 2.0 ** -10, "BFLOAT16": 2.0 ** -7}
ELEMENT_ULPS = 2.0
ELEMENT_FRACTION = 1e-5
# Sample points within this many pixels of an integer pixel coordinate are drawn again (see the top).
EDGE_MARGIN = 1e-3
LOCATION_LOW, LOCATION_HIGH = -0.1, 1.1
INPUTS = ("value", "spatial_shape", "level_start_index", "location", "attn_weight", "grad_output")
OUTPUTS = ("output", "grad_value", "grad_location", "grad_attn_weight")


def random_locations(np, torch, rng, shape, levels, dtype):
    """Locations (bs, nq, nh, nl, np, 2) in dtype, uniform in [LOCATION_LOW, LOCATION_HIGH], away from the edges."""
    sizes = np.empty(shape)
    for level, (height, width) in enumerate(levels):
        sizes[:, :, :, level, :, 0] = width
        sizes[:, :, :, level, :, 1] = height
    location = rng.uniform(LOCATION_LOW, LOCATION_HIGH, size=shape)
    for _ in range(1000):
        stored = torch.from_numpy(location).to(torch_dtype(torch, dtype)).to(torch.float64).numpy()
        pixel = stored * sizes - 0.5
        near_edge = np.abs(pixel - np.round(pixel)) < EDGE_MARGIN
        if not near_edge.any():
            return torch.from_numpy(location).to(torch_dtype(torch, dtype))
        location[near_edge] = rng.uniform(LOCATION_LOW, LOCATION_HIGH, size=int(near_edge.sum()))
    raise RuntimeError("could not draw locations away from the pixel edges")


def make_cases(np, torch, rng, per_dtype):
    """[(name, dtype, spatial_dtype, start_dtype, grad_rank, dims, levels, inputs)], inputs as torch tensors in
    their device dtypes."""
    cases = []
    for dtype in DTYPES:
        for k in range(per_dtype):
            nl = int(rng.integers(1, 5))
            levels = [(int(rng.integers(1, 13)), int(rng.integers(1, 13))) for _ in range(nl)]
            starts = [0]
            for height, width in levels[:-1]:
                starts.append(starts[-1] + height * width)
            nk = starts[-1] + levels[-1][0] * levels[-1][1] + (int(rng.integers(0, 6)) if k % 3 == 2 else 0)
            bs, nh, nq, npoints = (int(rng.integers(1, 3)), int(rng.integers(1, 5)), int(rng.integers(1, 31)),
                                   int(rng.integers(1, 5)))
            c = 8 * int(rng.integers(1, 5))
            spatial_dtype = INDEX_DTYPES[int(rng.integers(0, 2))]
            start_dtype = INDEX_DTYPES[int(rng.integers(0, 2))]
            grad_rank = 3 + k % 2
            float_dtype = torch_dtype(torch, dtype)
            grad_shape = (bs, nq, nh, c) if grad_rank == 4 else (bs, nq, nh * c)
            inputs = {
                "value": torch.from_numpy(rng.uniform(-2.0, 2.0, size=(bs, nk, nh, c))).to(float_dtype),
                "spatial_shape": torch.tensor(levels, dtype=torch_dtype(torch, spatial_dtype)),
                "level_start_index": torch.tensor(starts, dtype=torch_dtype(torch, start_dtype)),
                "location": random_locations(np, torch, rng, (bs, nq, nh, nl, npoints, 2), levels, dtype),
                "attn_weight": torch.from_numpy(rng.uniform(-0.5, 1.0, size=(bs, nq, nh, nl, npoints))).to(float_dtype),
                "grad_output": torch.from_numpy(rng.uniform(-1.0, 1.0, size=grad_shape)).to(float_dtype),
            }
            name = "%s_%d" % (dtype, k)
            cases.append((name, dtype, spatial_dtype, start_dtype, grad_rank, (bs, nk, nh, c, nl, nq, npoints),
                          levels, inputs))
    return cases


def composite(torch, value, levels, starts, location, attn):
    """The pure-PyTorch multi-scale deformable attention: output (bs, nq, nh * c)."""
    functional = torch.nn.functional
    bs, _, nh, c = value.shape
    _, nq, _, nl, npoints, _ = location.shape
    grid = 2.0 * location - 1.0
    samples = []
    for level, (height, width) in enumerate(levels):
        start = starts[level]
        # (bs, H * W, nh, c) -> (bs * nh, c, H, W)
        maps = value[:, start:start + height * width].permute(0, 2, 3, 1).reshape(bs * nh, c, height, width)
        # (bs, nq, nh, np, 2) -> (bs * nh, nq, np, 2)
        level_grid = grid[:, :, :, level].permute(0, 2, 1, 3, 4).reshape(bs * nh, nq, npoints, 2)
        samples.append(functional.grid_sample(maps, level_grid, mode="bilinear", padding_mode="zeros",
                                              align_corners=False))  # (bs * nh, c, nq, np)
    stacked = torch.stack(samples, dim=3)  # (bs * nh, c, nq, nl, np)
    weights = attn.permute(0, 2, 1, 3, 4).reshape(bs * nh, 1, nq, nl, npoints)
    out = (stacked * weights).sum(dim=(3, 4))  # (bs * nh, c, nq)
    return out.reshape(bs, nh * c, nq).transpose(1, 2)


def expected_results(torch, levels, inputs):
    """Output and gradients of the composite in float64 on the widened inputs."""
    widened = {key: inputs[key].to(torch.float64) for key in ("value", "location", "attn_weight", "grad_output")}
    for key in ("value", "location", "attn_weight"):
        widened[key].requires_grad_(True)
    starts = [int(s) for s in inputs["level_start_index"]]
    out = composite(torch, widened["value"], levels, starts, widened["location"], widened["attn_weight"])
    out.backward(widened["grad_output"].reshape(out.shape))
    return {
        "output": out.detach().numpy(),
        "grad_value": widened["value"].grad.numpy(),
        "grad_location": widened["location"].grad.numpy(),
        "grad_attn_weight": widened["attn_weight"].grad.numpy(),
    }


def element_tolerance(np, expected, dtype):
    """ELEMENT_ULPS ulp of each expected value plus ELEMENT_FRACTION of the output's scale (see the top)."""
    floor = max(np.abs(expected).max() if expected.size else 0.0, SCALE_FLOOR)
    return ELEMENT_ULPS * ulp(np, expected, dtype) + ELEMENT_FRACTION * floor


def main():
    parser = argument_parser(__doc__.split("\n\n")[0], "msda_parity_runner", 20240604)
    parser.add_argument("--cases-per-dtype", type=int, default=12)
    args, np, torch, rng = start(parser)
    cases = make_cases(np, torch, rng, args.cases_per_dtype)

    with work_directory("msda_parity_", args.keep) as work:
        with open(os.path.join(work, "cases.txt"), "w") as listing:
            for name, dtype, spatial_dtype, start_dtype, grad_rank, dims, _, inputs in cases:
                for key in INPUTS:
                    write_tensor(torch, inputs[key], os.path.join(work, "%s.%s" % (name, key)))
                listing.write("%s %s %s %s %d %s\n" % (name, dtype, spatial_dtype, start_dtype, grad_rank,
                                                       " ".join(str(d) for d in dims)))

        if not run_runner(args.runner, work):
            return 1

        failures = []
        worst = WorstErrors()
        for name, dtype, _, _, _, dims, levels, inputs in cases:
            expected = expected_results(torch, levels, inputs)
            for output in OUTPUTS:
                reference = expected[output]
                actual = read_output(np, os.path.join(work, "%s.%s" % (name, output)), dtype)
                if actual.size != reference.size:
                    failures.append("%s %s: %d elements, expected %d" % (name, output, actual.size, reference.size))
                    continue
                norm_error, ratio, failure = compare(np, actual.reshape(reference.shape), reference,
                                                     element_tolerance(np, reference, dtype), NORM_TOLERANCE[dtype])
                worst.add(dtype, output, norm_error, ratio, name)
                if failure:
                    failures.append("%s %s (dims bs, nk, nh, c, nl, nq, np = %s, levels %s): %s" % (
                        name, output, dims, levels, failure))

    worst.print_summary(len(cases), args.seed, torch, NORM_TOLERANCE)
    return report(failures)


if __name__ == "__main__":
    sys.exit(main())
