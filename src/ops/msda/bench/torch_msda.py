#!/usr/bin/python3
"""PyTorch's side of the MultiScaleDeformableAttention speed comparison.

Times the pure-PyTorch composite formulation of multi-scale deformable attention (per level: the value as
(bs * nh, c, H, W) maps, grid_sample with bilinear interpolation, zeros padding and align_corners=False at
2 * location - 1; then the attention-weighted sum over levels and points) and its autograd backward (gradients of
value, location and attention weights) on the cases of src/ops/msda/bench/msda_bench.cpp, under the same names, with the same
kinds of data (the same distributions; another generator, which does not change the work done) and the same byte
count. The backward is timed alone: torch.autograd.grad on a graph built (and kept) once, so PyTorch's time does
not include its forward. Run it with Debian's python3-torch: /usr/bin/python3 src/ops/msda/bench/torch_msda.py.

  torch_msda.py [--threads N] [--filter REGEX] [--repetitions R] [--min-time S] [--aclnn-json FILE]
      [--json-out FILE]

Without --aclnn-json it prints PyTorch's times (median of the repetitions, each the mean over as many calls as
fill --min-time seconds), as aclnn_bench prints ours. With --aclnn-json (aclnn_bench's --benchmark_out file,
--benchmark_format json; with --benchmark_repetitions its medians are used) it prints both and the speed-up,
PyTorch's time divided by ours. scripts/compare_torch.sh msda runs the two.
--json-out also writes PyTorch's median time per case (ms) to FILE, for scripts/speed_tables.py.
"""

import os
import sys

# torch_bench_common.py is in bench/; no __pycache__ is left in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "bench"))
import torch_bench_common

# The aclnn_bench cases this script compares with (scripts/compare_torch.sh): their names start with this.
CASE_PREFIX = "Msda"

# The case table of src/ops/msda/bench/msda_bench.cpp (keep the two in step): (direction, dtype, shape label), and the shapes:
# (bs, nq, nh, c, np, ((H, W) per level)). "encoder_pixels" and "small": queries are the keys' pixels (see
# reference_points).
LEVELS = ((100, 150), (50, 75), (25, 38), (13, 19))
SHAPES = {
    "encoder": (2, 19947, 8, 32, 4, LEVELS),
    "encoder_pixels": (2, 19947, 8, 32, 4, LEVELS),
    "decoder": (2, 300, 8, 32, 4, LEVELS),
    "small": (1, 480, 8, 32, 4, ((16, 24), (8, 12))),
}
PIXEL_QUERY_SHAPES = ("encoder_pixels", "small")
OFFSET_HALF_WIDTH = 0.05  # location = reference point + offset uniform in [-0.05, 0.05)
LOGIT_HALF_WIDTH = 2.0  # attention weights: softmax over (level, point) of logits uniform in [-2, 2)


def cases():
    table = []
    for direction in ("backward", "forward"):
        for label in ("encoder", "encoder_pixels", "decoder", "small"):
            for dtype in ("FLOAT", "FLOAT16", "BFLOAT16"):
                table.append((direction, dtype, label))
    return table


def case_name(case):
    direction, dtype, label = case
    return "%s/%s/%s" % ("MsdaBackward" if direction == "backward" else "MsdaForward", dtype, label)


def case_bytes(case):
    """As msda_bench.cpp counts: each float tensor read or written once (the index tensors left out)."""
    direction, dtype, label = case
    bs, nq, nh, c, np_, levels = SHAPES[label]
    size = 4 if dtype == "FLOAT" else 2
    nk = sum(h * w for h, w in levels)
    value = bs * nk * nh * c * size
    location = bs * nq * nh * len(levels) * np_ * 2 * size
    weight = bs * nq * nh * len(levels) * np_ * size
    output = bs * nq * nh * c * size
    if direction == "forward":
        return value + location + weight + output
    return 2 * value + 2 * location + 2 * weight + output


def deformable_attention(torch, value, levels, location, weight):
    """The composite formulation. value (bs, nk, nh, c); location (bs, nq, nh, nl, np, 2) as (x, y) in [0, 1];
    weight (bs, nq, nh, nl, np). Returns (bs, nq, nh * c)."""
    functional = torch.nn.functional
    bs, _, nh, c = value.shape
    _, nq, _, nl, np_, _ = location.shape
    per_level = value.split([h * w for h, w in levels], dim=1)
    grid = 2.0 * location - 1.0  # grid_sample's [-1, 1] coordinates; align_corners=False: x_pix = loc_x * W - 0.5
    samples = []
    for l, (h, w) in enumerate(levels):
        # (bs, h*w, nh, c) -> (bs * nh, c, h, w)
        maps = per_level[l].permute(0, 2, 3, 1).reshape(bs * nh, c, h, w)
        # (bs, nq, nh, np, 2) -> (bs * nh, nq, np, 2)
        level_grid = grid[:, :, :, l].transpose(1, 2).reshape(bs * nh, nq, np_, 2)
        samples.append(functional.grid_sample(maps, level_grid, mode="bilinear", padding_mode="zeros",
                                              align_corners=False))  # (bs * nh, c, nq, np)
    stacked = torch.stack(samples, dim=3).reshape(bs * nh, c, nq, nl * np_)
    weights = weight.transpose(1, 2).reshape(bs * nh, 1, nq, nl * np_)
    output = (stacked * weights).sum(dim=-1)  # (bs * nh, c, nq)
    return output.reshape(bs, nh * c, nq).transpose(1, 2).contiguous()


def reference_points(torch, label, rand):
    """(bs, nq, 1, 1, 1, 2) as (x, y): uniform in [0, 1), or for PIXEL_QUERY_SHAPES the centre of each query's own
    pixel, queries in key order (level by level, row by row), as in Deformable-DETR's encoder."""
    bs, nq, _, _, _, levels = SHAPES[label]
    if label not in PIXEL_QUERY_SHAPES:
        return rand(bs, nq, 1, 1, 1, 2)
    centres = []
    for h, w in levels:
        y, x = torch.meshgrid((torch.arange(h, dtype=torch.float32) + 0.5) / h,
                              (torch.arange(w, dtype=torch.float32) + 0.5) / w, indexing="ij")
        centres.append(torch.stack((x, y), dim=-1).reshape(h * w, 2))
    points = torch.cat(centres)
    assert points.shape[0] == nq, "a pixel-query shape needs nq == nk"
    return points.reshape(1, nq, 1, 1, 1, 2).expand(bs, nq, 1, 1, 1, 2)


def make_inputs(torch, label, dtype):
    bs, nq, nh, c, np_, levels = SHAPES[label]
    nl, nk = len(levels), sum(h * w for h, w in levels)
    generator = torch.Generator().manual_seed(1)
    rand = lambda *size: torch.rand(size, dtype=torch.float32, generator=generator)
    value = rand(bs, nk, nh, c) * 2.0 - 1.0
    reference = reference_points(torch, label, rand)
    location = reference + (rand(bs, nq, nh, nl, np_, 2) * 2.0 - 1.0) * OFFSET_HALF_WIDTH
    logits = (rand(bs, nq, nh, nl * np_) * 2.0 - 1.0) * LOGIT_HALF_WIDTH
    weight = torch.softmax(logits, dim=-1).reshape(bs, nq, nh, nl, np_)
    grad_output = rand(bs, nq, nh * c) * 2.0 - 1.0
    to = lambda t: t.to(dtype).contiguous()
    return to(value), levels, to(location), to(weight), to(grad_output)


def make_call(torch, case):
    """Returns a function running one call of the case, or None if PyTorch has no CPU kernel for it."""
    direction, dtype, label = case
    torch_dtype = {"FLOAT": torch.float32, "FLOAT16": torch.float16, "BFLOAT16": torch.bfloat16}[dtype]
    value, levels, location, weight, grad_output = make_inputs(torch, label, torch_dtype)
    try:  # torch 1.13 has no CPU grid_sampler_2d for Half or BFloat16
        with torch.inference_mode():
            deformable_attention(torch, value[:, :1], ((1, 1),), location[:, :1, :, :1], weight[:, :1, :, :1])
    except RuntimeError:
        return None
    if direction == "forward":
        def forward():
            with torch.inference_mode():
                return deformable_attention(torch, value, levels, location, weight)
        return forward
    inputs = [t.requires_grad_() for t in (value, location, weight)]
    output = deformable_attention(torch, inputs[0], levels, inputs[1], inputs[2])
    return lambda: torch.autograd.grad(output, inputs, grad_output, retain_graph=True)


def main():
    return torch_bench_common.main(__doc__.split("\n\n")[0], "torch_msda.py", cases, case_name, case_bytes,
                                   make_call, inference_mode=False,
                                   note=". PyTorch's backward is autograd alone (its forward's graph is kept).")


if __name__ == "__main__":
    sys.exit(main())
