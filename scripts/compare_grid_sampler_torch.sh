#!/usr/bin/env bash
# GridSampler2D against PyTorch on this machine, in one run: builds aclnn_bench (Release, in build/ or
# $PACL_BUILD_DIR), times our GridSampler2D cases, then PyTorch's CPU grid_sample / grid_sampler_2d_backward on the
# same cases with the same thread count (bench/torch_grid_sampler2d.py, Debian's python3-torch), and prints the
# speed-up table. Installs the missing Debian 12 packages with apt-get (root or sudo needed for that).
#
#   scripts/compare_grid_sampler_torch.sh [--threads N] [--filter REGEX] [--repetitions R]
#
# --threads: ACLNN_NUM_THREADS for aclnn_bench and torch.set_num_threads for PyTorch (default 2);
# --filter: only the cases whose name matches (e.g. 'Backward.*4x32'); --repetitions: per side (default 5).
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

pacl_ensure_packages cmake ninja-build g++ pkg-config libhwy-dev libgtest-dev libgmock-dev libbenchmark-dev \
  python3-torch
# Debian's torch, not whatever python3 comes first on PATH.
python=/usr/bin/python3
if ! "${python}" -c "import torch" > /dev/null 2>&1; then
  echo "${python} cannot import torch (Debian 12: apt-get install python3-torch)" >&2
  exit 1
fi

build="${PACL_BUILD_DIR:-${root}/build}"
cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "${build}" --target aclnn_bench

json="$(mktemp --suffix=.json)"
trap 'rm -f "${json}"' EXIT
echo "=== aclnn_bench, ACLNN_NUM_THREADS=${threads}"
ACLNN_NUM_THREADS="${threads}" "${build}/bench/aclnn_bench" --benchmark_filter="^GridSampler2D.*${filter}" \
  --benchmark_repetitions="${repetitions}" --benchmark_report_aggregates_only=true \
  --benchmark_out="${json}" --benchmark_out_format=json
echo "=== PyTorch, ${threads} threads, and the comparison"
"${python}" "${root}/bench/torch_grid_sampler2d.py" --threads "${threads}" --filter "${filter}" \
  --repetitions "${repetitions}" --aclnn-json "${json}"
