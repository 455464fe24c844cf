#!/usr/bin/env bash
# Builds portable-aclnn (Release, warnings as errors, in build/; the CUDA backend too when nvcc is found: without a
# GPU its tests skip themselves) and runs the whole test suite with ctest, then lists the skipped tests with their
# reasons. Works on a fresh Debian 12 machine: installs the missing packages with apt-get (needs root or sudo),
# including Debian's python3-numpy, python3-torch and python3-pytest, since the Python tests (the package, the
# PyTorch parity tests) run with Debian's /usr/bin/python3. Its cost on the 2-core development VM: README.md, "Two
# commands". Extra arguments go to ctest (e.g. -R conformance).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${root}/scripts/packages.sh"
source "${root}/scripts/build_config.sh"

pacl_ensure_packages cmake ninja-build g++ pkg-config libhwy-dev libgtest-dev libgmock-dev libbenchmark-dev \
  python3 python3-numpy python3-torch python3-pytest

build="${root}/build"
pacl_configure_build "${root}" "${build}"
cmake --build "${build}"
pacl_reuse_big_blocks
status=0
ctest --test-dir "${build}" --output-on-failure -j "$(nproc)" --output-junit "${build}/ctest-junit.xml" "$@" ||
  status=$?
# Which tests were skipped, and why (ctest's summary names them only).
/usr/bin/python3 "${root}/scripts/ctest_skips.py" "${build}/ctest-junit.xml" "${build}"
exit "${status}"
