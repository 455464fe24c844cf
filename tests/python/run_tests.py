"""Runs the Python package's tests (ctest's python_package): pytest on this directory and on each operator's
src/ops/<op>/test/test_<op>_python.py, with the package from the source tree and the libraries of the build
tree. Without pytest, NumPy or PyTorch the test reports itself skipped
(exit status 77), unless PACL_REQUIRE_TORCH=1 (CI), where that is a failure."""

import os
import sys


def main():
    # scripts/gpu_check.sh: Debian's pytest unpacked beside a Python that lacks it, searched after everything else.
    fallback = os.environ.get("PACL_PYTEST_FALLBACK_PATH")
    if fallback:
        sys.path.append(fallback)
    missing = []
    for module in ("pytest", "numpy", "torch"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        print(f"cannot run the Python package's tests: no {', '.join(missing)} "
              "(Debian 12: apt-get install python3-numpy python3-pytest python3-torch, for /usr/bin/python3; "
              "ctest uses the interpreter in the CMake cache variable PACL_PYTHON)", file=sys.stderr)
        return 1 if os.environ.get("PACL_REQUIRE_TORCH") == "1" else 77
    import glob

    import pytest

    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)  # package_test_util, for the operators' test files too
    operator_tests = sorted(glob.glob(os.path.join(here, "..", "..", "src", "ops", "*", "test", "test_*_python.py")))
    return pytest.main(["-q", "-rs", "-p", "no:cacheprovider", here] + operator_tests)


if __name__ == "__main__":
    sys.exit(main())
