#!/usr/bin/env bash
# Builds portable-aclnn (Release, in build/) with warnings as errors and runs the whole test suite. Works on a
# fresh Debian 12 machine (installs the missing packages with apt-get; needs root or sudo for that).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${root}/scripts/packages.sh"

pacl_ensure_packages cmake ninja-build g++ pkg-config libhwy-dev libgtest-dev libgmock-dev libbenchmark-dev

build="${root}/build"
cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPACL_WARNINGS_AS_ERRORS=ON
cmake --build "${build}"
status=0
ctest --test-dir "${build}" --output-on-failure -j "$(nproc)" --output-junit "${build}/ctest-junit.xml" || status=$?
# Which tests were skipped, and why (ctest's summary names them only).
if command -v python3 > /dev/null; then python3 "${root}/scripts/ctest_skips.py" "${build}/ctest-junit.xml" "${build}"; fi
exit "${status}"
