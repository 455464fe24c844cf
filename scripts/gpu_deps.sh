#!/usr/bin/env bash
# Run HERE (a machine with Debian's package registry): downloads the .debs of the build and test dependencies that
# the GPU machine lacks (Highway, GoogleTest, Google Benchmark, pytest) into .gpu-debs/ (ignored by git), for
# scripts/gpu_check.sh to unpack there. Carry .gpu-debs in the device call.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "${root}/.gpu-debs"
cd "${root}/.gpu-debs"
apt-get update -qq
apt-get download libhwy-dev libhwy1 libgtest-dev libgmock-dev libbenchmark-dev libbenchmark1debian libgomp1
# pytest (pure Python) for the Python package's tests, used there only where that machine's Python lacks it.
apt-get download python3-pytest python3-pluggy python3-iniconfig python3-packaging python3-py python3-attr \
  python3-exceptiongroup python3-tomli
ls -l "${root}/.gpu-debs"
