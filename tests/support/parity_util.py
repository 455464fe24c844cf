"""What the Python halves of the PyTorch parity tests share: importing torch (or skipping), the command line, the
work directory, raw tensor files, running the C++ runner, ulps, the comparison of one output and the final report.

The drivers import it from their own folder (Python puts a script's folder first on sys.path).
"""

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile

# The exit status ctest reports as "skipped" (SKIP_RETURN_CODE in tests/parity/CMakeLists.txt).
SKIP = 77
# The smallest per-element magnitude errors in the 2-norm are measured against: an output whose exact value is
# about 0 is judged at the data's scale (inputs of magnitude about 1) instead of its own.
SCALE_FLOOR = 0.1


def import_torch():
    """(numpy, torch); exits with SKIP when they cannot be imported, or 1 when PACL_REQUIRE_TORCH=1 (CI)."""
    try:
        import numpy
        import torch
        return numpy, torch
    except ImportError as error:
        message = "%s cannot import torch/numpy (%s); Debian 12: apt-get install python3-torch" % (
            sys.executable, error)
        if os.environ.get("PACL_REQUIRE_TORCH") == "1":
            print("FAIL: " + message + " (PACL_REQUIRE_TORCH=1)", file=sys.stderr)
            sys.exit(1)
        print("SKIPPED: " + message)
        sys.exit(SKIP)


def argument_parser(description, runner_name, default_seed):
    """A parser with the options every driver takes: --runner, --seed and --keep."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--runner", required=True, help="path of " + runner_name)
    parser.add_argument("--seed", type=int, default=default_seed)
    parser.add_argument("--keep", help="write the case files into this directory and keep them")
    return parser


def start(parser):
    """Parses the command line and imports torch: (args, numpy, torch, a numpy Generator seeded with --seed); torch
    runs on one thread."""
    args = parser.parse_args()
    np, torch = import_torch()
    torch.set_num_threads(1)
    return args, np, torch, np.random.default_rng(args.seed)


@contextlib.contextmanager
def work_directory(prefix, keep):
    """The directory the case files go to: keep if given (created if need be), else a temporary one."""
    with tempfile.TemporaryDirectory(prefix=prefix) as temporary:
        work = keep or temporary
        os.makedirs(work, exist_ok=True)
        yield work


def run_runner(runner, work):
    """Runs the C++ runner on the cases in work and echoes its output; False (after saying so) if it failed."""
    run = subprocess.run([runner, work], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, timeout=600)
    sys.stdout.write(run.stdout)
    if run.returncode != 0:
        print("FAIL: %s exited with %d" % (runner, run.returncode))
        return False
    return True


# (explicit fraction bits, exponent of the smallest normal number) of each floating dtype, for its ulp.
FORMATS = {"FLOAT": (23, -126), "FLOAT16": (10, -14), "BFLOAT16": (7, -126)}


def torch_dtype(torch, name):
    """The torch dtype of an aclDataType name."""
    return {"FLOAT": torch.float32, "FLOAT16": torch.float16, "BFLOAT16": torch.bfloat16, "INT32": torch.int32,
            "INT64": torch.int64}[name]


def write_tensor(torch, tensor, path):
    """The tensor's elements as a raw file (native byte order; BFLOAT16 as its 16-bit patterns)."""
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.view(torch.int16)
    tensor.numpy().tofile(path)


def read_output(np, path, dtype):
    """A raw file of FLOAT, FLOAT16 or BFLOAT16 elements as float64."""
    if dtype == "FLOAT":
        return np.fromfile(path, dtype=np.float32).astype(np.float64)
    if dtype == "FLOAT16":
        return np.fromfile(path, dtype=np.float16).astype(np.float64)
    bits = np.fromfile(path, dtype=np.uint16).astype(np.uint32) << 16
    return bits.view(np.float32).astype(np.float64)


def ulp(np, values, dtype):
    """One unit in the last place of dtype at the magnitude of each value."""
    mantissa_bits, min_exponent = FORMATS[dtype]
    _, exponent = np.frexp(np.abs(values))  # |v| = m * 2^exponent, m in [0.5, 1)
    return np.ldexp(1.0, np.maximum(exponent - 1, min_exponent) - mantissa_bits)


def compare(np, actual, expected, tolerance, norm_tolerance):
    """One output against its expected values: every element within its tolerance (an array like expected) and the
    relative 2-norm error (relative_error) at most norm_tolerance. Returns (norm error, worst element's error / its
    tolerance, description of the failure or "")."""
    if not np.isfinite(actual).all():
        return float("inf"), float("inf"), "%d non-finite elements (NaN: not written)" % int(
            (~np.isfinite(actual)).sum())
    if expected.size == 0:
        return 0.0, 0.0, ""
    difference = np.abs(actual - expected)
    norm_error = relative_error(np, actual, expected)
    ratio = (difference / tolerance).max()
    if not norm_error <= norm_tolerance:
        return norm_error, ratio, "relative error %.3g > %.3g" % (norm_error, norm_tolerance)
    if not ratio <= 1.0:
        worst = int(np.argmax(difference / tolerance))
        return norm_error, ratio, "element %d: actual %r, expected %r, tolerance %.3g" % (
            worst, float(actual.ravel()[worst]), float(expected.ravel()[worst]), float(tolerance.ravel()[worst]))
    return norm_error, ratio, ""


def relative_error(np, actual, expected):
    """||actual - expected|| / max(||expected||, SCALE_FLOOR * sqrt(elements)), 0 for empty arrays."""
    if expected.size == 0:
        return 0.0
    difference = np.linalg.norm((actual - expected).ravel())
    scale = max(np.linalg.norm(expected.ravel()), SCALE_FLOOR * np.sqrt(expected.size))
    return difference / scale


class WorstErrors:
    """The worst relative 2-norm error per (dtype, output) over the cases, with that case's worst element error /
    tolerance, for the summary."""

    def __init__(self):
        self.worst = {}

    def add(self, dtype, output, norm_error, ratio, case_name):
        if norm_error > self.worst.get((dtype, output), (-1.0, 0.0, ""))[0]:
            self.worst[(dtype, output)] = (norm_error, ratio, case_name)

    def print_summary(self, case_count, seed, torch, norm_tolerance):
        """norm_tolerance: the relative 2-norm tolerance per dtype."""
        print("%d cases (seed %d), PyTorch %s; worst relative 2-norm error and worst element error / tolerance:"
              % (case_count, seed, torch.__version__))
        width = max([len(output) for _, output in self.worst] + [1])
        for (dtype, output), (error, ratio, name) in sorted(self.worst.items()):
            print("  %-8s %-*s %.3g (tolerance %.3g)  element %.3g  (%s)" % (
                dtype, width, output, error, norm_tolerance[dtype], ratio, name))


def report(failures):
    """Prints the failures, or PASS; the exit status."""
    if failures:
        print("FAIL: %d outputs differ from PyTorch:" % len(failures))
        for failure in failures:
            print("  " + failure)
        return 1
    print("PASS")
    return 0
