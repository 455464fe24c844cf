"""What the Python halves of the PyTorch parity tests share: importing torch (or skipping), the command line, the
work directory, running the C++ runner, the relative error in the 2-norm and the final report.

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


def relative_error(np, actual, expected):
    """||actual - expected|| / max(||expected||, SCALE_FLOOR * sqrt(elements)), 0 for empty arrays."""
    if expected.size == 0:
        return 0.0
    difference = np.linalg.norm((actual - expected).ravel())
    scale = max(np.linalg.norm(expected.ravel()), SCALE_FLOOR * np.sqrt(expected.size))
    return difference / scale


def report(failures):
    """Prints the failures, or PASS; the exit status."""
    if failures:
        print("FAIL: %d outputs differ from PyTorch:" % len(failures))
        for failure in failures:
            print("  " + failure)
        return 1
    print("PASS")
    return 0
