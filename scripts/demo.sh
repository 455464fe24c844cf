#!/usr/bin/env bash
# Builds portable-aclnn (Release, in build/; the CUDA backend too when nvcc is found) and runs the demo: every
# operator on a realistic shape in each dtype, checked against float64 references, with times and bandwidths.
# Works on a fresh Debian 12 machine (installs the missing packages with apt-get; needs root or sudo for that).
# Its cost on the 2-core development VM: README.md, "Two commands". scripts/test.sh afterwards reuses this build.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${root}/scripts/packages.sh"
source "${root}/scripts/build_config.sh"

# The demo needs the float64 references of the test tree, so GoogleTest too (tests/ defines them).
pacl_ensure_packages cmake ninja-build g++ pkg-config libhwy-dev libgtest-dev libgmock-dev libbenchmark-dev

build="${root}/build"
pacl_configure_build "${root}" "${build}"
cmake --build "${build}" --target aclnn_demo
pacl_reuse_big_blocks
"${build}/examples/aclnn_demo"
