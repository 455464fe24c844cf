# shellcheck shell=bash
# Sourced by compare_grid_sampler_torch.sh and compare_msda_torch.sh: one operator's aclnn_bench cases against
# PyTorch's on this machine. See those scripts for what each compares.
# shellcheck source=scripts/packages.sh
source "$(dirname "${BASH_SOURCE[0]}")/packages.sh"

# pacl_compare_with_torch CASE_PREFIX TORCH_SCRIPT TORCH [--threads N] [--filter REGEX] [--repetitions R]
#
# Builds aclnn_bench (Release, in build/ or $PACL_BUILD_DIR), times its cases whose names start with CASE_PREFIX and
# match REGEX with ACLNN_NUM_THREADS=N, then runs TORCH_SCRIPT (relative to the repository root) with Debian's
# /usr/bin/python3 on the same cases and threads and prints the speed-up table. TORCH is "required" (a torch that
# cannot be installed or imported is an error) or "optional" (then our times alone, and a line saying the comparison
# was skipped). --threads defaults to 2, --repetitions (per side) to 5. Exits the calling script on errors.
pacl_compare_with_torch() {
  local case_prefix="$1" torch_script="$2" torch_need="$3"
  shift 3
  local root threads=2 filter="" repetitions=5
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --threads) threads="$2"; shift 2 ;;
      --filter) filter="$2"; shift 2 ;;
      --repetitions) repetitions="$2"; shift 2 ;;
      *) echo "usage: $0 [--threads N] [--filter REGEX] [--repetitions R]" >&2; exit 2 ;;
    esac
  done

  local build_packages=(cmake ninja-build g++ pkg-config libhwy-dev libgtest-dev libgmock-dev libbenchmark-dev)
  # Debian's torch, not whatever python3 comes first on PATH.
  local python=/usr/bin/python3 have_torch=1
  if [[ "${torch_need}" == required ]]; then
    pacl_ensure_packages "${build_packages[@]}" python3-torch
  else
    pacl_ensure_packages "${build_packages[@]}"
    # Without torch (or without the rights to install it) our side still runs.
    pacl_ensure_packages python3-torch || echo "could not install python3-torch: the PyTorch side will be skipped" >&2
  fi
  if ! "${python}" -c "import torch" > /dev/null 2>&1; then
    if [[ "${torch_need}" == required ]]; then
      echo "${python} cannot import torch (Debian 12: apt-get install python3-torch)" >&2
      exit 1
    fi
    have_torch=0
  fi

  local build="${PACL_BUILD_DIR:-${root}/build}"
  cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
  cmake --build "${build}" --target aclnn_bench

  local json
  json="$(mktemp --suffix=.json)"
  # shellcheck disable=SC2064  # the file's name now: json is local and gone when the script exits
  trap "rm -f '${json}'" EXIT
  echo "=== aclnn_bench, ACLNN_NUM_THREADS=${threads}"
  ACLNN_NUM_THREADS="${threads}" "${build}/bench/aclnn_bench" --benchmark_filter="^${case_prefix}.*${filter}" \
    --benchmark_repetitions="${repetitions}" --benchmark_report_aggregates_only=true \
    --benchmark_out="${json}" --benchmark_out_format=json
  if [[ "${have_torch}" -eq 0 ]]; then
    echo "=== PyTorch comparison skipped: ${python} cannot import torch (Debian 12: apt-get install python3-torch)"
    exit 0
  fi
  echo "=== PyTorch, ${threads} threads, and the comparison"
  "${python}" "${root}/${torch_script}" --threads "${threads}" --filter "${filter}" \
    --repetitions "${repetitions}" --aclnn-json "${json}"
}
