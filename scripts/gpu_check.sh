#!/usr/bin/env bash
# The whole GPU run, on a machine with an NVIDIA GPU (the device tool's): unpacks the dependencies from .gpu-debs/
# (scripts/gpu_deps.sh made them), builds with the CUDA backend for sm_90, runs the CUDA device tests, the runtime,
# base and operator tests (CPU and, where they apply, the GPU), the CUDA device tests under compute-sanitizer, the
# allocator benchmark on both devices, and writes docs/cuda.md (and a copy with the logs under $OUT when set).
#
#   PACL_COMMIT=<commit> scripts/gpu_check.sh [build-dir]      (default build-gpu)
#
# A device call (the device tool): command "PACL_COMMIT=abc1234 bash scripts/gpu_check.sh", carry [".gpu-debs"];
# docs/cuda.md and gpu_check.log come back under $OUT (copy cuda.md into docs/ here and commit it).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-${root}/build-gpu}"
out="${OUT:-${root}/out}"
mkdir -p "${out}"
log="${out}/gpu_check.log"
: > "${log}"
step() { echo "=== $*" | tee -a "${log}"; }
run() { "$@" 2>&1 | tee -a "${log}"; return "${PIPESTATUS[0]}"; }

prefix="${root}/.gpu-prefix"
if [[ -d "${root}/.gpu-debs" ]]; then
  step "unpacking .gpu-debs into ${prefix}"
  mkdir -p "${prefix}"
  for deb in "${root}"/.gpu-debs/*.deb; do dpkg -x "${deb}" "${prefix}"; done
fi
export CMAKE_PREFIX_PATH="${prefix}/usr:${CMAKE_PREFIX_PATH:-}"
export LD_LIBRARY_PATH="${prefix}/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"

step "configure (PACL_CUDA=ON, sm_90)"
run cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPACL_WARNINGS_AS_ERRORS=ON -DPACL_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 || exit 1
step "build"
run cmake --build "${build}" -j "$(nproc)" || exit 1

status=0
results=()
# Runs a gtest suite and records "passed", "passed, N skipped" or "FAILED". A suite meant for the GPU that skips
# everything (device 0 is not a GPU: no driver, or a build without CUDA) has not run: it is recorded as FAILED.
record() {  # name, must_run_on_gpu (yes/no), command...
  local name="$1" must_run="$2"
  shift 2
  step "${name}"
  local suite_log="${out}/suite.log"
  "$@" 2>&1 | tee "${suite_log}" | tee -a "${log}" > /dev/null
  local code="${PIPESTATUS[0]}"
  local skipped ran
  skipped="$(grep -oE '^\[  SKIPPED \] [0-9]+ test' "${suite_log}" | grep -oE '[0-9]+' | head -1)"
  ran="$(grep -oE '^\[==========\] [0-9]+ test' "${suite_log}" | grep -oE '[0-9]+' | tail -1)"
  if [[ "${code}" != 0 ]]; then
    results+=("| ${name} | FAILED (exit ${code}) |")
    status=1
  elif [[ "${must_run}" == yes && -n "${skipped}" && "${skipped}" == "${ran}" ]]; then
    results+=("| ${name} | FAILED: all ${ran} skipped (device 0 is not a GPU?) |")
    status=1
  elif [[ -n "${skipped}" ]]; then
    results+=("| ${name} | passed, ${skipped} of ${ran} skipped |")
  else
    results+=("| ${name} | passed (${ran:-?} tests) |")
  fi
  rm -f "${suite_log}"
}
record "CUDA device tests (device 0 = GPU)" yes env ACLNN_DEVICE=cuda "${build}/tests/cuda_device_tests"
record "conformance table on the GPU (skips: operators without CUDA kernels)" no \
  env ACLNN_DEVICE=cuda "${build}/tests/system/conformance_tests" --gtest_brief=1
# The operator tests on the GPU: every test that is not CPU-only (those skip themselves, saying so) runs there.
record "operator tests on the GPU (ACLNN_DEVICE=cuda)" no env ACLNN_DEVICE=cuda "${build}/tests/op_tests" --gtest_brief=1
record "runtime tests on the GPU device table" no "${build}/tests/runtime_tests" --gtest_filter='DeviceTable.*:EventTest.*:OptionsTest.*'
record "runtime tests, ACLNN_DEVICE=cpu" no env ACLNN_DEVICE=cpu "${build}/tests/runtime_tests"
record "base tests, ACLNN_DEVICE=cpu" no env ACLNN_DEVICE=cpu "${build}/tests/base_tests"
record "conformance table, ACLNN_DEVICE=cpu" no env ACLNN_DEVICE=cpu "${build}/tests/system/conformance_tests" --gtest_brief=1
record "operator tests, ACLNN_DEVICE=cpu" no env ACLNN_DEVICE=cpu "${build}/tests/op_tests" --gtest_brief=1
if command -v compute-sanitizer > /dev/null; then
  record "compute-sanitizer memcheck: CUDA device tests" yes env ACLNN_DEVICE=cuda compute-sanitizer --tool memcheck --error-exitcode 1 \
    "${build}/tests/cuda_device_tests"
else
  results+=("| compute-sanitizer | not installed |")
fi
step "allocator benchmark"
bench() {  # ACLNN_DEVICE value: the summary line, or what failed
  local output
  output="$(ACLNN_DEVICE="$1" "${build}/bench/allocator_bench" --benchmark_min_time=0.2 --benchmark_color=false 2>&1 |
    sed 's/\x1b\[[0-9;]*m//g')"
  echo "${output}" >> "${log}"
  echo "${output}" | grep -E 'speedup' | tail -1 | grep . ||
    echo "did not run: $(echo "${output}" | grep -iE 'fail|error|cannot' | head -1)"
}
bench_gpu="$(bench cuda)"
bench_cpu="$(bench cpu)"

gpu="$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)"
# The device machine gets a copy of the working tree without .git: pass PACL_COMMIT=$(git rev-parse --short HEAD).
commit="${PACL_COMMIT:-$(git -C "${root}" rev-parse --short HEAD 2>/dev/null || echo unknown)}"
dirty="$(git -C "${root}" status --porcelain 2>/dev/null | grep -c . || true)"
{
  echo "# The CUDA device: the last GPU run"
  echo
  echo "Written by \`scripts/gpu_check.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'). Rerun it on a GPU machine to refresh it."
  echo
  echo "- GPU: ${gpu:-unknown} (name, memory, driver)"
  echo "- nvcc: $(nvcc --version 2>/dev/null | tail -1)"
  echo "- commit: ${commit}$([[ "${dirty}" != 0 ]] && echo " with ${dirty} changed files")"
  echo
  echo "| suite | result |"
  echo "| --- | --- |"
  printf '%s\n' "${results[@]}"
  echo
  echo "Allocator (64 MiB aclrtMalloc + aclrtMemset + aclrtFree per iteration, against aligned_alloc + memset + free"
  echo "on the host):"
  echo
  echo "- GPU (ACLNN_DEVICE=cuda): ${bench_gpu}"
  echo "- CPU (ACLNN_DEVICE=cpu): ${bench_cpu}"
} > "${root}/docs/cuda.md"
cp "${root}/docs/cuda.md" "${out}/cuda.md"
cat "${root}/docs/cuda.md"
exit "${status}"
