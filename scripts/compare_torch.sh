#!/usr/bin/env bash
# One operator against PyTorch on this machine, in one run: builds aclnn_bench (Release, in build/ or
# $PACL_BUILD_DIR), times the operator's cases (src/ops/<op>/bench/<op>_bench.cpp), then PyTorch's formulation of
# the same cases with the same thread count (src/ops/<op>/bench/torch_<op>.py, run with Debian's /usr/bin/python3 and
# python3-torch), and prints the speed-up table (PyTorch's time / ours, medians). Installs the missing Debian 12
# packages with apt-get (root or sudo needed for that). Without an importable torch it prints our times alone and
# says the comparison was skipped.
#
#   scripts/compare_torch.sh OP [--threads N] [--filter REGEX] [--repetitions R]
#
# OP: an operator folder with a PyTorch script: grid_sampler2d (F.grid_sample and its autograd), msda (the
# pure-PyTorch composite: per-level grid_sample, weighted sum; autograd for the backward), nsa_compress (per-sequence
# unfold + einsum in float32; autograd). --threads: ACLNN_NUM_THREADS for aclnn_bench and torch.set_num_threads for
# PyTorch (default 2); --filter: only the cases whose name matches (e.g. 'Backward/FLOAT/encoder');
# --repetitions: per side (default 5).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${root}/scripts/packages.sh"

usage() {
  echo "usage: $0 OP [--threads N] [--filter REGEX] [--repetitions R]; OP one of:" \
    $(cd "${root}/src/ops" && ls -d */bench/torch_*.py 2> /dev/null | cut -d/ -f1) >&2
  exit 2
}
[[ $# -ge 1 ]] || usage
op="$1"
shift
torch_script="${root}/src/ops/${op}/bench/torch_${op}.py"
[[ -f "${torch_script}" ]] || usage
case_prefix="$(sed -n 's/^CASE_PREFIX = "\(.*\)"$/\1/p' "${torch_script}")"
[[ -n "${case_prefix}" ]] || { echo "${torch_script} has no CASE_PREFIX line" >&2; exit 1; }

threads=2 filter="" repetitions=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads="$2"; shift 2 ;;
    --filter) filter="$2"; shift 2 ;;
    --repetitions) repetitions="$2"; shift 2 ;;
    *) usage ;;
  esac
done

pacl_ensure_packages cmake ninja-build g++ pkg-config libhwy-dev libgtest-dev libgmock-dev libbenchmark-dev
# Debian's torch, not whatever python3 comes first on PATH. Without it (or without the rights to install it) our
# side still runs.
python=/usr/bin/python3
pacl_ensure_packages python3-torch || echo "could not install python3-torch: the PyTorch side will be skipped" >&2
have_torch=1
"${python}" -c "import torch" > /dev/null 2>&1 || have_torch=0

build="${PACL_BUILD_DIR:-${root}/build}"
cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "${build}" --target aclnn_bench

json="$(mktemp --suffix=.json)"
trap 'rm -f "${json}"' EXIT
echo "=== aclnn_bench, ACLNN_NUM_THREADS=${threads}"
ACLNN_NUM_THREADS="${threads}" "${build}/bench/aclnn_bench" --benchmark_filter="^${case_prefix}.*${filter}" \
  --benchmark_repetitions="${repetitions}" --benchmark_report_aggregates_only=true \
  --benchmark_out="${json}" --benchmark_out_format=json
if [[ "${have_torch}" -eq 0 ]]; then
  echo "=== PyTorch comparison skipped: ${python} cannot import torch (Debian 12: apt-get install python3-torch)"
  exit 0
fi
echo "=== PyTorch, ${threads} threads, and the comparison"
"${python}" "${torch_script}" --threads "${threads}" --filter "${filter}" --repetitions "${repetitions}" \
  --aclnn-json "${json}"
