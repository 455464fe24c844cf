#!/usr/bin/python3
"""Parity of aclnnNsaCompress / aclnnNsaCompressGrad with PyTorch.

Random cases (FLOAT16 and BFLOAT16; (compressBlockSize, compressStride) in (32, 16), (64, 32), (48, 16), (128, 64);
1 to 7 sequences whose lengths are empty, shorter than a block, exactly a block, a whole number of strides past it or
with a tail no block covers; actSeqLen with and without a leading 0; layout "TND" or null) are written to a directory,
run through the public aclnn API by nsa_compress_parity_runner, and compared with the PyTorch composite: per sequence,
input[start:end].unfold(0, blockSize, stride) gives the (blocks, N, D, blockSize) windows, torch.einsum("kndj,jn->knd")
weights and sums them, and the blocks of all sequences are concatenated; its autograd gives inputGrad and weightGrad.
Torch computes in float64 on the exactly widened inputs (the values the device holds), so the comparison measures our
error alone:
- per element |actual - expected| <= ulp(expected) of the dtype + k(n) * 2^-24 * sum |terms|: the output's rounding
  plus the error of fp32 accumulation over the n terms of the element's sum (sum |terms| is the composite run on the
  inputs' magnitudes; k(n) = n + 1 up to 256 terms, 4 sqrt(n) beyond, as in tests/ops/test_nsa_compress.cpp);
- relative error in the 2-norm, per case and output, at most 2^-10 for FLOAT16 and 2^-7 for BFLOAT16 (twice the
  largest relative error of the final rounding alone), relative to max(||expected||, 0.1 sqrt(elements)).

  nsa_compress_parity.py --runner PATH [--seed S] [--cases-per-dtype K] [--keep DIR]

Run it with Debian's python3-torch (/usr/bin/python3). Exit status: 0 pass, 1 fail, 77 when torch cannot be imported
(ctest reports the test skipped) unless PACL_REQUIRE_TORCH=1 is set (CI), which makes that a failure.
"""

import os
import sys

# parity_util.py is in tests/support; no __pycache__ is left in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "tests", "support"))
from parity_util import (WorstErrors, argument_parser, compare, read_output, report, run_runner, start,
                         torch_dtype, ulp, work_directory, write_tensor)

DTYPES = ("FLOAT16", "BFLOAT16")
NORM_TOLERANCE = {"FLOAT16": 2.0 ** -10, "BFLOAT16": 2.0 ** -7}
BLOCK_STRIDE_PAIRS = ((32, 16), (64, 32), (48, 16), (128, 64))
FP32_UNIT_ROUNDOFF = 2.0 ** -24
INPUTS = ("input", "weight", "output_grad")
OUTPUTS = ("output", "input_grad", "weight_grad")


def sequence_length(rng, block_size, stride):
    """A length of a random kind: empty, too short for a block, one block, a whole number of strides past a block,
    or with a tail no block covers."""
    kind = int(rng.integers(0, 5))
    if kind == 0:
        return 0
    if kind == 1:
        return int(rng.integers(1, block_size))
    if kind == 2:
        return block_size
    if kind == 3:
        return block_size + stride * int(rng.integers(1, 5))
    return block_size + stride * int(rng.integers(0, 5)) + int(rng.integers(1, stride))


def make_cases(np, torch, rng, per_dtype):
    """[(name, dtype, layout, block_size, stride, act_seq_len, inputs)], inputs as torch tensors in the device dtype."""
    cases = []
    for dtype in DTYPES:
        for k in range(per_dtype):
            block_size, stride = BLOCK_STRIDE_PAIRS[k % len(BLOCK_STRIDE_PAIRS)]
            heads = (1, 2, 4, 8)[int(rng.integers(0, 4))]
            dim = (16, 32, 64, 128)[int(rng.integers(0, 4))]
            lengths = [sequence_length(rng, block_size, stride) for _ in range(int(rng.integers(1, 8)))]
            ends = list(np.cumsum(lengths, dtype=np.int64))
            act_seq_len = ([0] if k % 3 == 0 else []) + [int(e) for e in ends]
            tokens = act_seq_len[-1]
            blocks = sum((n - block_size) // stride + 1 for n in lengths if n >= block_size)
            float_dtype = torch_dtype(torch, dtype)
            inputs = {
                "input": torch.from_numpy(rng.uniform(-2.0, 2.0, size=(tokens, heads, dim))).to(float_dtype),
                "weight": torch.from_numpy(rng.uniform(-0.5, 1.0, size=(block_size, heads))).to(float_dtype),
                "output_grad": torch.from_numpy(rng.uniform(-1.0, 1.0, size=(blocks, heads, dim))).to(float_dtype),
            }
            layout = "null" if k % 2 else "TND"
            cases.append(("%s_%d" % (dtype, k), dtype, layout, block_size, stride, act_seq_len, inputs))
    return cases


def composite(torch, inputs, weight, act_seq_len, block_size, stride):
    """The PyTorch NsaCompress forward: (blocks, N, D)."""
    parts = []
    start = 0
    for end in act_seq_len:
        if end - start >= block_size:
            windows = inputs[start:end].unfold(0, block_size, stride)  # (blocks, N, D, blockSize)
            parts.append(torch.einsum("kndj,jn->knd", windows, weight))
        start = end
    if not parts:
        return inputs.new_zeros((0, inputs.shape[1], inputs.shape[2])) + 0.0 * weight.sum()
    return torch.cat(parts, dim=0)


def composite_results(torch, case_inputs, act_seq_len, block_size, stride):
    """Output, inputGrad and weightGrad of the composite in float64 on the given (float64) tensors."""
    inputs = case_inputs["input"].clone().requires_grad_(True)
    weight = case_inputs["weight"].clone().requires_grad_(True)
    out = composite(torch, inputs, weight, act_seq_len, block_size, stride)
    out.backward(case_inputs["output_grad"])
    input_grad = inputs.grad if inputs.grad is not None else torch.zeros_like(inputs)
    weight_grad = weight.grad if weight.grad is not None else torch.zeros_like(weight)
    return {"output": out.detach().numpy(), "input_grad": input_grad.numpy(), "weight_grad": weight_grad.numpy()}


def accumulation_factor(np, terms):
    """k(n) of the fp32 accumulation error bound, elementwise (see the top)."""
    terms = np.asarray(terms, dtype=np.float64)
    return np.where(terms <= 256, terms + 1.0, np.maximum(257.0, 4.0 * np.sqrt(terms)))


def expected_results(np, torch, inputs, act_seq_len, block_size, stride):
    """(expected values, error bounds) per output: the composite on the widened inputs, and k(n) u times the
    composite on their magnitudes."""
    widened = {key: inputs[key].to(torch.float64) for key in INPUTS}
    expected = composite_results(torch, widened, act_seq_len, block_size, stride)
    magnitudes = composite_results(torch, {key: value.abs() for key, value in widened.items()}, act_seq_len,
                                   block_size, stride)
    tokens, heads, dim = widened["input"].shape
    blocks = widened["output_grad"].shape[0]
    # Terms per inputGrad element: the blocks covering its token.
    coverage = np.zeros(tokens)
    start = 0
    for end in act_seq_len:
        first = start
        while first + block_size <= end:
            coverage[first:first + block_size] += 1
            first += stride
        start = end
    terms = {
        "output": np.full((blocks, heads, dim), block_size),
        "input_grad": np.broadcast_to(coverage[:, None, None], (tokens, heads, dim)),
        "weight_grad": np.full((block_size, heads), blocks * dim),
    }
    bounds = {key: accumulation_factor(np, terms[key]) * FP32_UNIT_ROUNDOFF * magnitudes[key] for key in OUTPUTS}
    return expected, bounds


def main():
    parser = argument_parser(__doc__.split("\n\n")[0], "nsa_compress_parity_runner", 20240605)
    parser.add_argument("--cases-per-dtype", type=int, default=12)
    args, np, torch, rng = start(parser)
    cases = make_cases(np, torch, rng, args.cases_per_dtype)

    with work_directory("nsa_compress_parity_", args.keep) as work:
        with open(os.path.join(work, "cases.txt"), "w") as listing:
            for name, dtype, layout, block_size, stride, act_seq_len, inputs in cases:
                for key in INPUTS:
                    write_tensor(torch, inputs[key], os.path.join(work, "%s.%s" % (name, key)))
                np.array(act_seq_len, dtype=np.int64).tofile(os.path.join(work, name + ".act_seq_len"))
                tokens, heads, dim = inputs["input"].shape
                listing.write("%s %s %s %d %d %d %d %d %d %d\n" % (
                    name, dtype, layout, block_size, stride, tokens, heads, dim, inputs["output_grad"].shape[0],
                    len(act_seq_len)))

        if not run_runner(args.runner, work):
            return 1

        failures = []
        worst = WorstErrors()
        for name, dtype, _, block_size, stride, act_seq_len, inputs in cases:
            expected, bounds = expected_results(np, torch, inputs, act_seq_len, block_size, stride)
            for output in OUTPUTS:
                reference = expected[output]
                actual = read_output(np, os.path.join(work, "%s.%s" % (name, output)), dtype)
                if actual.size != reference.size:
                    failures.append("%s %s: %d elements, expected %d" % (name, output, actual.size, reference.size))
                    continue
                actual = actual.reshape(reference.shape)
                # The output's rounding (the larger of the two ulps, in case they straddle a power of 2) plus the
                # fp32 accumulation bound.
                tolerance = ulp(np, np.maximum(np.abs(reference), np.abs(actual)), dtype) + bounds[output]
                norm_error, ratio, failure = compare(np, actual, reference, tolerance, NORM_TOLERANCE[dtype])
                worst.add(dtype, output, norm_error, ratio, name)
                if failure:
                    failures.append("%s %s (blockSize %d, stride %d, actSeqLen %s, N, D = %s): %s" % (
                        name, output, block_size, stride, act_seq_len, tuple(inputs["input"].shape[1:]), failure))

    worst.print_summary(len(cases), args.seed, torch, NORM_TOLERANCE)
    return report(failures)


if __name__ == "__main__":
    sys.exit(main())
