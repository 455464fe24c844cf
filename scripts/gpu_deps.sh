#!/usr/bin/env bash
# Run HERE (a machine with Debian's package registry): downloads the .debs of the build and test dependencies that
# the GPU machine lacks (Highway, GoogleTest, Google Benchmark) into .gpu-debs/ (ignored by git), for
# scripts/gpu_check.sh to unpack there. Carry .gpu-debs in the device call.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "${root}/.gpu-debs"
cd "${root}/.gpu-debs"
apt-get update -qq
apt-get download libhwy-dev libhwy1 libgtest-dev libgmock-dev libbenchmark-dev libbenchmark1debian libgomp1
ls -l "${root}/.gpu-debs"
