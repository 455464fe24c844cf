#!/usr/bin/env bash
# MultiScaleDeformableAttention against PyTorch on this machine, in one run: builds aclnn_bench (Release, in build/
# or $PACL_BUILD_DIR), times our Msda cases, then PyTorch's pure-PyTorch composite (per-level grid_sample, weighted
# sum; autograd for the backward) on the same cases with the same thread count (bench/torch_msda.py, Debian's
# python3-torch), and prints the speed-up table. Installs the missing Debian 12 packages with apt-get (root or sudo
# needed for that). Without an importable torch it prints our times alone and says the comparison was skipped.
#
#   scripts/compare_msda_torch.sh [--threads N] [--filter REGEX] [--repetitions R]
#
# --threads: ACLNN_NUM_THREADS for aclnn_bench and torch.set_num_threads for PyTorch (default 2);
# --filter: only the cases whose name matches (e.g. 'Backward/FLOAT/encoder'); --repetitions: per side (default 5).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${root}/scripts/packages.sh"

threads=2
filter=""
repetitions=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads="$2"; shift 2 ;;
    --filter) filter="$2"; shift 2 ;;
    --repetitions) repetitions="$2"; shift 2 ;;
    *) echo "usage: $0 [--threads N] [--filter REGEX] [--repetitions R]" >&2; exit 2 ;;
  esac
done

pacl_ensure_packages cmake ninja-build g++ pkg-config libhwy-dev libgtest-dev libgmock-dev libbenchmark-dev
# PyTorch is optional here: without it (or without the rights to install it) our side still runs.
pacl_ensure_packages python3-torch || echo "could not install python3-torch: the PyTorch side will be skipped" >&2
# Debian's torch, not whatever python3 comes first on PATH.
python=/usr/bin/python3
have_torch=1
if ! "${python}" -c "import torch" > /dev/null 2>&1; then
  have_torch=0
fi

build="${PACL_BUILD_DIR:-${root}/build}"
cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "${build}" --target aclnn_bench

json="$(mktemp --suffix=.json)"
trap 'rm -f "${json}"' EXIT
echo "=== aclnn_bench, ACLNN_NUM_THREADS=${threads}"
ACLNN_NUM_THREADS="${threads}" "${build}/bench/aclnn_bench" --benchmark_filter="^Msda.*${filter}" \
  --benchmark_repetitions="${repetitions}" --benchmark_report_aggregates_only=true \
  --benchmark_out="${json}" --benchmark_out_format=json
if [[ "${have_torch}" -eq 0 ]]; then
  echo "=== PyTorch comparison skipped: ${python} cannot import torch (Debian 12: apt-get install python3-torch)"
  exit 0
fi
echo "=== PyTorch, ${threads} threads, and the comparison"
"${python}" "${root}/bench/torch_msda.py" --threads "${threads}" --filter "${filter}" \
  --repetitions "${repetitions}" --aclnn-json "${json}"
