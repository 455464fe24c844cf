#!/usr/bin/python3
"""PyTorch's side of the NsaCompress speed comparison.

Times the pure-PyTorch composite formulation of NSA key/value compression in float32 (per sequence:
input[s:e].unfold(0, blockSize, stride) gives the (nb, N, D, blockSize) windows; torch.einsum with the
(blockSize, N) weight gives the (nb, N, D) blocks; the sequences' blocks concatenated) and its autograd backward
(gradients of input and weight) on the cases of src/ops/nsa_compress/bench/nsa_compress_bench.cpp, under the same names, with the same
kinds of data (the same distributions; another generator, which does not change the work done). PyTorch computes
in float32 whatever the case's dtype (the usual way to run this without a fused kernel; the inputs are converted
once, outside the timing); its GB/s counts the case's bytes as aclnn_bench does, at the case's 2-byte element size,
so the two GB/s columns measure the same work. The backward is timed alone: torch.autograd.grad on a graph built
(and kept) once, so PyTorch's time does not include its forward. Run it with Debian's python3-torch:
/usr/bin/python3 src/ops/nsa_compress/bench/torch_nsa_compress.py.

  torch_nsa_compress.py [--threads N] [--filter REGEX] [--repetitions R] [--min-time S] [--aclnn-json FILE]
      [--json-out FILE]

Without --aclnn-json it prints PyTorch's times (median of the repetitions, each the mean over as many calls as
fill --min-time seconds), as aclnn_bench prints ours. With --aclnn-json (aclnn_bench's --benchmark_out file,
--benchmark_format json; with --benchmark_repetitions its medians are used) it prints both and the speed-up,
PyTorch's time divided by ours. scripts/compare_torch.sh nsa_compress runs the two.
--json-out also writes PyTorch's median time per case (ms) to FILE, for scripts/speed_tables.py.
"""

import os
import sys

# torch_bench_common.py is in bench/; no __pycache__ is left in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "bench"))
import torch_bench_common

# The aclnn_bench cases this script compares with (scripts/compare_torch.sh): their names start with this (a
# regular expression: NsaCompressAttention's cases are not this operator's).
CASE_PREFIX = "NsaCompress(Grad)?/"

# The case table of src/ops/nsa_compress/bench/nsa_compress_bench.cpp (keep the two in step): (direction, dtype, shape), the shapes as
# (sequences, tokens per sequence, N, D); compressBlockSize and compressStride are the same for every case.
BLOCK_SIZE = 32
STRIDE = 16
SHAPES = ((8, 4096, 4, 128), (4, 2048, 128, 192), (2, 512, 2, 64))
WEIGHT_HALF_WIDTH = 1.0 / 16  # weight uniform in [-1/16, 1/16); input and outputGrad in [-1, 1)


def cases():
    table = []
    for direction in ("backward", "forward"):
        for shape in SHAPES:
            for dtype in ("FLOAT16", "BFLOAT16"):
                table.append((direction, dtype, shape))
    return table


def case_name(case):
    direction, dtype, (sequences, length, heads, dim) = case
    op = "NsaCompressGrad" if direction == "backward" else "NsaCompress"
    return "%s/%s/%dx%d_N%d_D%d" % (op, dtype, sequences, length, heads, dim)


def blocks_per_sequence(length):
    return (length - BLOCK_SIZE) // STRIDE + 1 if length >= BLOCK_SIZE else 0


def case_bytes(case):
    """As nsa_compress_bench.cpp counts: each tensor read or written once, at the case's element size."""
    direction, _, (sequences, length, heads, dim) = case
    size = 2
    input_bytes = sequences * length * heads * dim * size
    weight_bytes = BLOCK_SIZE * heads * size
    output_bytes = sequences * blocks_per_sequence(length) * heads * dim * size
    if direction == "forward":
        return input_bytes + weight_bytes + output_bytes
    return 2 * input_bytes + output_bytes + 2 * weight_bytes


def compress(torch, tokens, weight, sequence_ends):
    """The composite formulation. tokens (T, N, D); weight (blockSize, N); sequence_ends: cumulative ends.
    Returns (total blocks, N, D)."""
    blocks, start = [], 0
    for end in sequence_ends:
        if end - start >= BLOCK_SIZE:
            windows = tokens[start:end].unfold(0, BLOCK_SIZE, STRIDE)  # (nb, N, D, blockSize), a view
            blocks.append(torch.einsum("kndj,jn->knd", windows, weight))
        start = end
    return torch.cat(blocks)


def make_call(torch, case):
    """Returns a function running one call of the case (PyTorch has float32 CPU kernels for all of it)."""
    direction, _, (sequences, length, heads, dim) = case
    generator = torch.Generator().manual_seed(1)
    uniform = lambda half_width, *size: (torch.rand(size, dtype=torch.float32, generator=generator) * 2.0 - 1.0) \
        * half_width
    tokens = uniform(1.0, sequences * length, heads, dim)
    weight = uniform(WEIGHT_HALF_WIDTH, BLOCK_SIZE, heads)
    sequence_ends = [(i + 1) * length for i in range(sequences)]
    if direction == "forward":
        def forward():
            with torch.inference_mode():
                return compress(torch, tokens, weight, sequence_ends)
        return forward
    output_grad = uniform(1.0, sequences * blocks_per_sequence(length), heads, dim)
    inputs = [t.requires_grad_() for t in (tokens, weight)]
    output = compress(torch, inputs[0], inputs[1], sequence_ends)
    return lambda: torch.autograd.grad(output, inputs, output_grad, retain_graph=True)


def main():
    return torch_bench_common.main(__doc__.split("\n\n")[0], "torch_nsa_compress.py", cases, case_name, case_bytes,
                                   make_call, inference_mode=False,
                                   note=". PyTorch computes in float32 (see this script, torch_nsa_compress.py); "
                                        "its backward is autograd alone (its forward's graph is kept).")


if __name__ == "__main__":
    sys.exit(main())
