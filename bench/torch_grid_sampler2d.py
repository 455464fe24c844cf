#!/usr/bin/python3
"""PyTorch's side of the GridSampler2D speed comparison.

Times torch.nn.functional.grid_sample and torch.ops.aten.grid_sampler_2d_backward (outputMask [True, True]) on
the cases of bench/grid_sampler2d_bench.cpp, under the same names, with the same kinds of data (the same grid
formulas; random values from another generator, which does not change the work done) and the same byte count.
Run it with Debian's python3-torch: /usr/bin/python3 bench/torch_grid_sampler2d.py.

  torch_grid_sampler2d.py [--threads N] [--filter REGEX] [--repetitions R] [--min-time S] [--aclnn-json FILE]

Without --aclnn-json it prints PyTorch's times (median of the repetitions, each the mean over as many calls as
fill --min-time seconds), as aclnn_bench prints ours. With --aclnn-json (aclnn_bench's --benchmark_out file,
--benchmark_format json; with --benchmark_repetitions its medians are used) it prints both and the speed-up,
PyTorch's time divided by ours. scripts/compare_grid_sampler_torch.sh runs the two.
"""

import argparse
import json
import math
import os
import re
import statistics
import sys
import time

INTERPOLATIONS = {"bilinear": 0, "nearest": 1, "bicubic": 2}
PADDINGS = {"zeros": 0, "border": 1, "reflection": 2}

# The case table of bench/grid_sampler2d_bench.cpp (keep the two in step):
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


def time_call(call, repetitions, min_time):
    """Median over the repetitions of the mean seconds per call (each repetition runs >= min_time seconds)."""
    call()  # warm-up: first-touch of PyTorch's output allocations, thread pool start
    means = []
    for _ in range(repetitions):
        calls, start = 0, time.perf_counter()
        while True:
            call()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        means.append(elapsed / calls)
    return statistics.median(means)


def read_aclnn_json(path):
    """{case name: (milliseconds, GB/s, triad%)} from aclnn_bench's JSON output; medians when it has them."""
    with open(path) as f:
        report = json.load(f)
    scale_to_ms = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
    iterations, medians = {}, {}
    for entry in report.get("benchmarks", []):
        if entry.get("error_occurred"):
            continue
        name = entry.get("run_name", entry["name"])
        name = re.sub(r"/manual_time$", "", name)
        figures = (entry["real_time"] * scale_to_ms[entry.get("time_unit", "ns")], entry.get("GB/s"),
                   entry.get("triad%"))
        if entry.get("run_type") == "aggregate":
            if entry.get("aggregate_name") == "median":
                medians[name] = figures
        else:
            iterations.setdefault(name, []).append(figures)
    result = {}
    for name, runs in iterations.items():
        result[name] = tuple(statistics.median(r[i] for r in runs if r[i] is not None)
                             if any(r[i] is not None for r in runs) else None for i in range(3))
    result.update(medians)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_threads = os.environ.get("ACLNN_NUM_THREADS", "2")
    parser.add_argument("--threads", type=int, default=int(default_threads) if default_threads.isdigit() else 2,
                        help="torch.set_num_threads (default: ACLNN_NUM_THREADS, else 2)")
    parser.add_argument("--filter", default="", help="regular expression: only the cases whose name matches")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--min-time", type=float, default=0.5, help="seconds per repetition")
    parser.add_argument("--aclnn-json", help="aclnn_bench --benchmark_out file to compare with")
    args = parser.parse_args()

    try:
        import torch
    except ImportError as error:
        print("torch_grid_sampler2d.py: cannot import torch (%s); on Debian 12: apt-get install python3-torch "
              "and run this with /usr/bin/python3" % error, file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    ours = read_aclnn_json(args.aclnn_json) if args.aclnn_json else None

    print("PyTorch %s, %d threads (torch.get_num_threads() = %d), median of %d repetitions of >= %.2f s"
          % (torch.__version__, args.threads, torch.get_num_threads(), args.repetitions, args.min_time))
    selected = [c for c in cases() if re.search(args.filter, case_name(c))]
    width = max([len(case_name(c)) for c in selected] + [4])
    if ours is None:
        print("%-*s %12s %10s" % (width, "case", "torch_ms", "GB/s"))
    else:
        print("%-*s %12s %12s %9s %10s %8s" % (width, "case", "aclnn_ms", "torch_ms", "speed-up", "aclnn_GB/s",
                                                "triad%"))
    with torch.inference_mode():
        for case in selected:
            name = case_name(case)
            call = make_call(torch, case)
            seconds = time_call(call, args.repetitions, args.min_time) if call is not None else None
            torch_ms = "%12.3f" % (seconds * 1e3) if seconds is not None else "%12s" % "n/a"
            if ours is None:
                gbps = "%10.2f" % (case_bytes(case) / seconds / 1e9) if seconds is not None else "%10s" % "n/a"
                print("%-*s %s %s" % (width, name, torch_ms, gbps))
                continue
            mine = ours.get(name)
            if mine is None:
                print("%-*s %12s %s %9s" % (width, name, "missing", torch_ms, ""))
                continue
            ms, gbps, triad = mine
            speedup = "%8.2fx" % (seconds * 1e3 / ms) if seconds is not None else "%9s" % "n/a"
            print("%-*s %12.3f %s %s %10s %8s" % (width, name, ms, torch_ms, speedup,
                                                   "%.2f" % gbps if gbps is not None else "n/a",
                                                   "%.1f" % triad if triad is not None else "n/a"))
            sys.stdout.flush()
    if ours is not None:
        print("speed-up: PyTorch's time / aclnn's time (above 1: aclnn is faster); n/a: PyTorch has no CPU "
              "kernel for the dtype")
    return 0


if __name__ == "__main__":
    sys.exit(main())
