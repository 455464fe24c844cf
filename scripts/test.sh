#!/usr/bin/env bash
# Builds portable-aclnn (Release, in build/) with warnings as errors and runs the whole test suite. Works on a
# fresh Debian 12 machine (installs the missing packages with apt-get; needs root or sudo for that). The CUDA backend
# is built when nvcc is found (on the PATH, or /usr/local/cuda/bin/nvcc), for sm_90; PACL_CUDA=ON in the environment
# makes a missing nvcc an error, PACL_CUDA=OFF leaves the backend out. Without a GPU its tests skip themselves.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${root}/scripts/packages.sh"

pacl_ensure_packages cmake ninja-build g++ pkg-config libhwy-dev libgtest-dev libgmock-dev libbenchmark-dev

build="${root}/build"
cuda_args=(-DPACL_CUDA="${PACL_CUDA:-AUTO}")
if ! command -v nvcc > /dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  cuda_args+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
fi
cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPACL_WARNINGS_AS_ERRORS=ON "${cuda_args[@]}"
cmake --build "${build}"
status=0
ctest --test-dir "${build}" --output-on-failure -j "$(nproc)" --output-junit "${build}/ctest-junit.xml" || status=$?
# Which tests were skipped, and why (ctest's summary names them only).
if command -v python3 > /dev/null; then
  python3 "${root}/scripts/ctest_skips.py" "${build}/ctest-junit.xml" "${build}"
fi
exit "${status}"
