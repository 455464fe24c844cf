#!/usr/bin/env bash
# Measures the CPU speed tables of README.md and docs/ops/<op>.md in one run and rewrites them: builds aclnn_bench
# (Release, in build/ or $PACL_BUILD_DIR, as scripts/compare_torch.sh does), times a fixed set of full-size cases
# (each operator forward and backward at a realistic shape, in its dtypes: the list is in scripts/speed_tables.py),
# then PyTorch's formulations of the same cases with the same thread count (src/ops/<op>/bench/torch_<op>.py, with
# Debian's /usr/bin/python3 and python3-torch), then runs scripts/speed_tables.py, which also refreshes the CUDA
# table from docs/cuda_bench.json. Leaves the run's files in docs/speed/ (cpu_bench.json, torch_<op>.json,
# run.json): commit them with the tables. Installs the missing Debian 12 packages with apt-get (root or sudo).
# Run it on a quiet machine (a shared host's load moves the triad and the times); it takes minutes: each case runs
# at least 0.5 s per repetition on each side.
#
#   scripts/speed_tables.sh [--threads N] [--repetitions R] [--no-build] [--smoke]
#
# --threads: ACLNN_NUM_THREADS and torch.set_num_threads (default: every CPU this process may use, nproc).
# --repetitions: per side (default 5). --no-build: use the aclnn_bench already in the build folder.
# --smoke: a check of the scripts themselves: the small smoke-test case of each operator, short timings, results
# in a temporary folder and the tables printed, not written.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${root}/scripts/packages.sh"

usage() {
  echo "usage: $0 [--threads N] [--repetitions R] [--no-build] [--smoke]" >&2
  exit 2
}
threads="$(nproc)" repetitions=5 build_it=1 smoke=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) [[ $# -ge 2 ]] || usage; threads="$2"; shift 2 ;;
    --repetitions) [[ $# -ge 2 ]] || usage; repetitions="$2"; shift 2 ;;
    --no-build) build_it=0; shift ;;
    --smoke) smoke=1; shift ;;
    *) usage ;;
  esac
done

tables=("${root}/scripts/speed_tables.py")
bench_options=()
torch_options=()
if [[ "${smoke}" -eq 1 ]]; then
  tables+=(--smoke)
  bench_options=(--triad_mib=8 --benchmark_min_time=0.05)
  torch_options=(--min-time 0.05)
fi

build="${PACL_BUILD_DIR:-${root}/build}"
if [[ "${build_it}" -eq 1 ]]; then
  pacl_ensure_packages cmake ninja-build g++ pkg-config libhwy-dev libgtest-dev libgmock-dev libbenchmark-dev
  cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
  cmake --build "${build}" --target aclnn_bench
fi
# Debian's torch, not whatever python3 comes first on PATH. Without it the tables have our side alone.
python=/usr/bin/python3
pacl_ensure_packages python3-torch || echo "could not install python3-torch: the PyTorch side will be skipped" >&2
have_torch=1
"${python}" -c "import torch" > /dev/null 2>&1 || have_torch=0

scratch="$(mktemp -d)"
trap 'rm -rf "${scratch}"' EXIT
if [[ "${smoke}" -eq 1 ]]; then
  results="${scratch}/results"
else
  results="${root}/docs/speed"
fi
mkdir -p "${results}"
# Files of an earlier run must not mix with this one's.
rm -f "${results}/cpu_bench.json" "${results}"/torch_*.json "${results}/run.json"

filter="$(python3 "${tables[@]}" --print-filter)"
echo "=== aclnn_bench, ACLNN_NUM_THREADS=${threads}, ${repetitions} repetitions"
ACLNN_NUM_THREADS="${threads}" "${build}/bench/aclnn_bench" --json="${results}/cpu_bench.json" \
  --benchmark_filter="${filter}" --benchmark_repetitions="${repetitions}" --benchmark_report_aggregates_only=true \
  --benchmark_out="${scratch}/benchmark_out.json" --benchmark_out_format=json "${bench_options[@]}"

if [[ "${have_torch}" -eq 0 ]]; then
  echo "=== PyTorch skipped: ${python} cannot import torch (Debian 12: apt-get install python3-torch)"
else
  for script in "${root}"/src/ops/*/bench/torch_*.py; do
    op="$(basename "$(dirname "$(dirname "${script}")")")"
    op_filter="$(python3 "${tables[@]}" --print-torch-filter "${op}")"
    [[ -n "${op_filter}" ]] || continue
    echo "=== PyTorch, ${op}, ${threads} threads"
    "${python}" "${script}" --threads "${threads}" --filter "${op_filter}" --repetitions "${repetitions}" \
      --aclnn-json "${scratch}/benchmark_out.json" --json-out "${results}/torch_${op}.json" "${torch_options[@]}"
  done
fi

# What was measured: the commit, and the files that differed from it (documentation and results aside).
commit="$(git -C "${root}" rev-parse --short HEAD 2> /dev/null || echo unknown)"
changed="$(git -C "${root}" status --porcelain -- . ':!docs' ':!README.md' 2> /dev/null | awk '{print $2}' || true)"
python3 - "${results}/run.json" "${commit}" "${threads}" "${repetitions}" "${changed}" << 'EOF'
import json, sys
path, commit, threads, repetitions, changed = sys.argv[1:]
with open(path, "w") as f:
    json.dump({"program": "scripts/speed_tables.sh", "commit": commit, "changed_files": changed.split(),
               "threads": int(threads), "repetitions": int(repetitions)}, f, indent=1)
    f.write("\n")
EOF

if [[ "${smoke}" -eq 1 ]]; then
  python3 "${tables[@]}" --results "${results}" --stdout
else
  python3 "${tables[@]}" --results "${results}"
fi
