#!/usr/bin/env bash
# Builds portable-aclnn (Release, in build/) and runs the demo: every implemented operator on a realistic shape
# in each dtype, checked against float64 references, with times and bandwidths. Works on a fresh Debian 12
# machine (installs the missing packages with apt-get; needs root or sudo for that).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${root}/scripts/packages.sh"

# The demo needs the float64 references of the test tree, so GoogleTest too (tests/ defines them).
pacl_ensure_packages cmake ninja-build g++ libhwy-dev libgtest-dev libgmock-dev

build="${root}/build"
cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "${build}" --target aclnn_demo
"${build}/examples/aclnn_demo"
