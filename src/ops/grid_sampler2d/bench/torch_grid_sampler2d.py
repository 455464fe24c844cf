#!/usr/bin/python3
"""PyTorch's side of the GridSampler2D speed comparison.

Times torch.nn.functional.grid_sample and torch.ops.aten.grid_sampler_2d_backward (outputMask [True, True]) on
the cases of src/ops/grid_sampler2d/bench/grid_sampler2d_bench.cpp, under the same names, with the same kinds of data (the same grid
formulas; random values from another generator, which does not change the work done) and the same byte count.
Run it with Debian's python3-torch: /usr/bin/python3 src/ops/grid_sampler2d/bench/torch_grid_sampler2d.py.

  torch_grid_sampler2d.py [--threads N] [--filter REGEX] [--repetitions R] [--min-time S] [--aclnn-json FILE]
      [--json-out FILE]

Without --aclnn-json it prints PyTorch's times (median of the repetitions, each the mean over as many calls as
fill --min-time seconds), as aclnn_bench prints ours. With --aclnn-json (aclnn_bench's --benchmark_out file,
--benchmark_format json; with --benchmark_repetitions its medians are used) it prints both and the speed-up,
PyTorch's time divided by ours. scripts/compare_torch.sh grid_sampler2d runs the two.
--json-out also writes PyTorch's median time per case (ms) to FILE, for scripts/speed_tables.py.
"""

import math
import os
import sys

# torch_bench_common.py is in bench/; no __pycache__ is left in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "bench"))
import torch_bench_common

# The aclnn_bench cases this script compares with (scripts/compare_torch.sh): their names start with this.
CASE_PREFIX = "GridSampler2D"

INTERPOLATIONS = {"bilinear": 0, "nearest": 1, "bicubic": 2}
PADDINGS = {"zeros": 0, "border": 1, "reflection": 2}

# The case table of src/ops/grid_sampler2d/bench/grid_sampler2d_bench.cpp (keep the two in step):
# (direction, dtype, interpolation, padding, align_corners, (N, C, Hin, Win, Hout, Wout), grid kind).
BATCH_SHAPE = (4, 32, 256, 256, 256, 256)
LARGE_SHAPE = (1, 64, 512, 512, 512, 512)
SMALL_SHAPE = (2, 8, 128, 128, 128, 128)


def cases():
    table = []
    for direction in ("backward", "forward"):
        for shape in (BATCH_SHAPE, LARGE_SHAPE):
            for grid in ("warp", "random"):
                table.append((direction, "FLOAT", "bilinear", "zeros", False, shape, grid))
        table.append((direction, "FLOAT", "bicubic", "zeros", False, SMALL_SHAPE, "warp"))
        table.append((direction, "FLOAT16", "bilinear", "zeros", False, SMALL_SHAPE, "warp"))
    return table


def case_name(case):
    direction, dtype, interpolation, padding, align, (n, c, hin, win, hout, wout), grid = case
    op = "GridSampler2DBackward" if direction == "backward" else "GridSampler2D"
    mode = "%s_%s%s" % (interpolation, padding, "_align" if align else "")
    return "%s/%s/%s/%dx%dx%dx%d_to_%dx%d/%s" % (op, dtype, mode, n, c, hin, win, hout, wout, grid)


def case_bytes(case):
    direction, dtype, _, _, _, (n, c, hin, win, hout, wout), _ = case
    size = 4 if dtype == "FLOAT" else 2
    input_bytes = n * c * hin * win * size
    grid_bytes = n * hout * wout * 2 * size
    out_bytes = n * c * hout * wout * size
    if direction == "forward":
        return input_bytes + grid_bytes + out_bytes
    return out_bytes + 2 * input_bytes + 2 * grid_bytes


def warp_grid(torch, shape, generator):
    """The "warp" grid of grid_sampler2d_bench.cpp: output pixel centres rotated by 0.3 rad, scaled by 1.1,
    shifted by (0.05, -0.05), plus a uniform jitter of up to half an input pixel."""
    n, _, hin, win, hout, wout = shape
    angle, scale, shift_x, shift_y = 0.3, 1.1, 0.05, -0.05
    u = (2.0 * torch.arange(wout, dtype=torch.float64) + 1.0) / wout - 1.0
    v = (2.0 * torch.arange(hout, dtype=torch.float64) + 1.0) / hout - 1.0
    v, u = torch.meshgrid(v, u, indexing="ij")
    x = scale * (math.cos(angle) * u - math.sin(angle) * v) + shift_x
    y = scale * (math.sin(angle) * u + math.cos(angle) * v) + shift_y
    grid = torch.stack((x, y), dim=-1).expand(n, hout, wout, 2).clone()
    jitter = torch.rand((n, hout, wout, 2), dtype=torch.float64, generator=generator) * 2.0 - 1.0
    jitter[..., 0] *= 1.0 / win
    jitter[..., 1] *= 1.0 / hin
    return (grid + jitter).to(torch.float32)


def make_call(torch, case):
    """Returns a function running one call of the case, or None if PyTorch has no CPU kernel for it."""
    direction, dtype, interpolation, padding, align, shape, grid_kind = case
    if dtype != "FLOAT":
        return None  # torch 1.13 has no CPU grid_sampler_2d for Half or BFloat16
    n, c, hin, win, hout, wout = shape
    generator = torch.Generator().manual_seed(1)
    uniform = lambda *size: torch.rand(size, dtype=torch.float32, generator=generator) * 2.0 - 1.0
    source = uniform(n, c, hin, win)
    grid = warp_grid(torch, shape, generator) if grid_kind == "warp" else uniform(n, hout, wout, 2)
    if direction == "forward":
        functional = torch.nn.functional
        return lambda: functional.grid_sample(source, grid, mode=interpolation, padding_mode=padding,
                                              align_corners=align)
    grad_output = uniform(n, c, hout, wout)
    backward = torch.ops.aten.grid_sampler_2d_backward
    interpolation_code, padding_code = INTERPOLATIONS[interpolation], PADDINGS[padding]
    return lambda: backward(grad_output, source, grid, interpolation_code, padding_code, align, [True, True])


def main():
    return torch_bench_common.main(__doc__.split("\n\n")[0], "torch_grid_sampler2d.py", cases, case_name, case_bytes,
                                   make_call, inference_mode=True)


if __name__ == "__main__":
    sys.exit(main())
