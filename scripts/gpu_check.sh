#!/usr/bin/env bash
# The whole GPU run, on a machine with an NVIDIA GPU (the device tool's), in stages that accumulate across calls on
# the same machine (the build folder and the results stay there):
#   build       unpack .gpu-debs (scripts/gpu_deps.sh made them), configure and build with the CUDA backend (sm_90),
#               unless the build folder already holds a build whose CUDA device tests start (one built here and
#               carried: see below)
#   tests       the CUDA device tests; the operator tests, the conformance table and the concurrency and lifecycle
#               tests on the GPU (every test that is not CPU-only runs there)
#   bench       the allocator benchmark on both devices; the operators against PyTorch CUDA (bench/cuda/gpu_bench.py)
#   sanitizers  compute-sanitizer memcheck of the CUDA device tests and of the conformance table, racecheck of it;
#               memcheck and racecheck of the softmax and NSA (NsaCompress, NsaSelectedAttention,
#               NsaCompressAttention) operator tests whose kernels use shared-memory stages or warp shuffles; memcheck
#               of the grid sampler tests of its tiled and inputGrad kernels, and of MSDA's layout, aliasing and
#               forward-bits tests (its 8-channel kernels against the channel-at-a-time ones)
#   python      the Python package's tests (tests/python) on that machine's PyTorch, CUDA tensors included
#   profile     Nsight Compute (ncu, where it can read the counters) on the benchmark's calls of the operators that
#               miss issue 14's targets (PACL_PROFILE_SUITES, a regex of gpu_bench.py suite names; default NSA
#               float16, the grid sampler, MSDA encoder and decoder): per kernel launch of ours (and CUB's) its time,
#               throughputs, occupancy, launch figures and warp stall reasons, in $OUT/ncu.txt (not in docs/cuda.md)
#   cputests    the runtime, base, conformance and operator tests on the CPU of that machine
# Every call then writes docs/cuda.md (and docs/cuda_bench.json) from all results so far, and copies them and the log
# under $OUT. A suite that outlives PACL_SUITE_TIMEOUT seconds (default 600), or the time left before
# PACL_DEADLINE (seconds since the epoch, optional), is stopped and recorded as timed out, so that one call of the
# device tool always brings back a report.
#
#   PACL_COMMIT=<commit> scripts/gpu_check.sh [stage ...]  (default: build tests python bench sanitizers cputests;
#   profile only when named)
#
# One device call (the device tool gives about 15 minutes a session, machine start included), with a build made
# here (cmake -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DPACL_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90, in
# /work/main) carried: carry [".gpu-debs", "build-cuda"], command
#   "mkdir -p /work && ln -sfn $PWD /work/main && PACL_COMMIT=abc1234 PACL_GPU_BUILD=/work/main/build-cuda
#    PACL_DEADLINE=$(($(date +%s)+560)) bash scripts/gpu_check.sh", timeout_s 600
# (the link gives the carried binaries their run path). Copy $OUT/cuda.md and $OUT/cuda_bench.json into docs/.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PACL_GPU_BUILD:-${root}/build-gpu}"
out="${OUT:-${root}/out}"
stages=("$@")
[[ ${#stages[@]} == 0 ]] && stages=(build tests python bench sanitizers cputests)
mkdir -p "${out}" "${build}"
log="${out}/gpu_check.log"
touch "${log}"
step() { echo "=== $*" | tee -a "${log}"; }
run() { "$@" 2>&1 | tee -a "${log}"; return "${PIPESTATUS[0]}"; }
wants() { [[ " ${stages[*]} " == *" $1 "* ]]; }

# Results of every stage run so far: "| suite | result |" rows, one per suite (a rerun replaces its row).
results="${build}/gpu_results.md"
touch "${results}"
status=0
set_result() {  # name, result
  grep -vF "| $1 |" "${results}" > "${results}.new" || true
  echo "| $1 | $2 |" >> "${results}.new"
  mv "${results}.new" "${results}"
}

prefix="${root}/.gpu-prefix"
if [[ -d "${root}/.gpu-debs" && ! -d "${prefix}/usr" ]]; then
  step "unpacking .gpu-debs into ${prefix}"
  mkdir -p "${prefix}"
  for deb in "${root}"/.gpu-debs/*.deb; do dpkg -x "${deb}" "${prefix}"; done
fi
export CMAKE_PREFIX_PATH="${prefix}/usr:${CMAKE_PREFIX_PATH:-}"
export LD_LIBRARY_PATH="${prefix}/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"

# Seconds a suite may run: PACL_SUITE_TIMEOUT, less if PACL_DEADLINE comes sooner (20 s kept for the report).
suite_seconds() {
  local limit="${PACL_SUITE_TIMEOUT:-600}"
  if [[ -n "${PACL_DEADLINE:-}" ]]; then
    local left=$((PACL_DEADLINE - $(date +%s) - 20))
    ((left < limit)) && limit="${left}"
  fi
  ((limit < 1)) && limit=1
  echo "${limit}"
}

# Writes docs/cuda.md from all results so far and copies it (and the figures) under $OUT; run after every stage, so
# that a call stopped by its time limit still brings back the report of the stages it finished.
write_report() {
  gpu="$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  # The device machine gets a copy of the working tree without .git: pass PACL_COMMIT=$(git rev-parse --short HEAD).
  commit="${PACL_COMMIT:-$(git -C "${root}" rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  # Files that differ from the commit, the report's own files aside (the first few named).
  changed="$(git -C "${root}" status --porcelain -- . ':!docs/cuda.md' ':!docs/cuda_bench.json' 2>/dev/null |
    awk '{print $2}')"
  dirty="$(echo "${changed}" | grep -c . || true)"
  {
    echo "# The CUDA device: the last GPU run"
    echo
    echo "Written by \`scripts/gpu_check.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'). Rerun it on a GPU machine to refresh"
    echo "it."
    echo
    echo "- GPU: ${gpu:-unknown} (name, memory, driver)"
    echo "- nvcc: $(nvcc --version 2>/dev/null | tail -1)"
    echo "- commit: ${commit}$([[ "${dirty}" != 0 ]] &&
      echo " with ${dirty} changed files ($(echo "${changed}" | head -5 | tr '\n' ' '))")"
    echo
    echo "| suite | result |"
    echo "| --- | --- |"
    cat "${results}"
    if [[ -f "${build}/gpu_allocator.md" ]]; then
      echo
      cat "${build}/gpu_allocator.md"
    fi
    if [[ -f "${build}/gpu_operators.md" ]]; then
      echo
      echo "## The operators against PyTorch CUDA"
      echo
      echo "\`bench/cuda/gpu_bench.py\` (raw figures: docs/cuda_bench.json): each call timed with a repeatable executor"
      echo "and a reused workspace, queued back to back, best of 5 rounds; GB/s counts every input and output once; the"
      echo "copy bandwidth is a 1 GiB device-to-device copy measured in the same run. Backward rows are the"
      echo "deterministic implementation (the default) unless they say atomic (ACL_OPT_DETERMINISTIC off). \"kernels\""
      echo "is the GPU time of the call's kernels and copies alone (CUPTI, through torch.profiler): the rest of \"ours\""
      echo "is the host's share of a call (launches, the stream worker's hand-over and its wait for completion)."
      echo
      cat "${build}/gpu_operators.md"
    fi
  } > "${root}/docs/cuda.md"
  cp "${root}/docs/cuda.md" "${out}/cuda.md"
  [[ -f "${root}/docs/cuda_bench.json" ]] && cp "${root}/docs/cuda_bench.json" "${out}/cuda_bench.json"
  cat "${root}/docs/cuda.md"
}

if wants build && "${build}/tests/cuda_device_tests" --gtest_list_tests > /dev/null 2>&1; then
  step "build: ${build} already holds a build whose CUDA device tests start; not rebuilding"
  set_result "build" "carried, built elsewhere with the same nvcc"
elif wants build; then
  step "configure (PACL_CUDA=ON, sm_90)"
  run cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPACL_WARNINGS_AS_ERRORS=ON -DPACL_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 || { set_result "build" "FAILED: configure"; write_report; exit 1; }
  step "build"
  if run cmake --build "${build}" -j "$(nproc)"; then set_result "build" "passed"; else
    set_result "build" "FAILED"
    write_report
    exit 1
  fi
fi
write_report

# Runs a gtest suite and records "passed", "passed, N skipped" or "FAILED". A suite meant for the GPU that skips
# everything (device 0 is not a GPU: no driver, or a build without CUDA) has not run: it is recorded as FAILED.
record() {  # name, must_run_on_gpu (yes/no), command...
  local name="$1" must_run="$2"
  shift 2
  step "${name}"
  local suite_log="${out}/suite.log" seconds start
  seconds="$(suite_seconds)"
  start="$(date +%s)"
  timeout "${seconds}" "$@" 2>&1 | tee "${suite_log}" | tee -a "${log}" > /dev/null
  local code="${PIPESTATUS[0]}"
  local took="$(($(date +%s) - start)) s"
  local skipped ran
  skipped="$(grep -oE '^\[  SKIPPED \] [0-9]+ test' "${suite_log}" | grep -oE '[0-9]+' | head -1)"
  ran="$(grep -oE '^\[==========\] [0-9]+ test' "${suite_log}" | grep -oE '[0-9]+' | tail -1)"
  if [[ "${code}" == 124 ]]; then
    set_result "${name}" "TIMED OUT after ${seconds} s"
    status=1
  elif [[ "${code}" != 0 ]]; then
    local failed
    failed="$(grep -E '^\[  FAILED  \] [A-Za-z]' "${suite_log}" | head -5 | sed 's/^\[  FAILED  \] //' | tr '\n' ' ')"
    set_result "${name}" "FAILED (exit ${code}) ${failed}"
    status=1
  elif [[ "${must_run}" == yes && -n "${skipped}" && "${skipped}" == "${ran}" ]]; then
    set_result "${name}" "FAILED: all ${ran} skipped (device 0 is not a GPU?)"
    status=1
  elif [[ -n "${skipped}" ]]; then
    set_result "${name}" "passed, ${skipped} of ${ran} skipped (${took})"
  else
    set_result "${name}" "passed (${ran:-?} tests, ${took})"
  fi
  rm -f "${suite_log}"
}

if wants tests; then
  record "CUDA device tests (device 0 = GPU)" yes env ACLNN_DEVICE=cuda "${build}/tests/cuda_device_tests"
  record "conformance table on the GPU" yes env ACLNN_DEVICE=cuda "${build}/tests/system/conformance_tests" \
    --gtest_brief=1
  # Each call waiting for its own kernels (the fault-reporting mode): the same results, no report.
  record "conformance table on the GPU, ACLNN_DEBUG_SYNC=1" yes env ACLNN_DEVICE=cuda ACLNN_DEBUG_SYNC=1 \
    "${build}/tests/system/conformance_tests" --gtest_brief=1
  # Every operator test that is not CPU-only (those skip themselves, saying why) runs on the GPU.
  record "operator tests on the GPU" yes env ACLNN_DEVICE=cuda "${build}/tests/op_tests" --gtest_brief=1
  record "concurrency and lifecycle tests on the GPU" yes env ACLNN_DEVICE=cuda "${build}/tests/system/system_tests" \
    --gtest_brief=1
  record "runtime tests on the GPU device table" no "${build}/tests/runtime_tests" \
    --gtest_filter='DeviceTable.*:EventTest.*:OptionsTest.*'
fi
write_report

if wants python; then
  # The Python package on this machine's PyTorch (2.x: torch.compile too), CUDA tensors included.
  name="Python package tests, CUDA tensors included (PyTorch $(python3 -c 'import torch; print(torch.__version__)' \
    2>/dev/null || echo missing))"
  step "${name}"
  pytest_log="${out}/pytest.log"
  timeout "$(suite_seconds)" env PORTABLE_ACLNN_LIBRARY_DIR="${build}" PYTHONPATH="${root}/python" \
    PACL_PYTEST_FALLBACK_PATH="${prefix}/usr/lib/python3/dist-packages" PACL_REQUIRE_TORCH=1 \
    python3 "${root}/tests/python/run_tests.py" 2>&1 | tee "${pytest_log}" >> "${log}"
  code="${PIPESTATUS[0]}"
  summary="$(grep -E '[0-9]+ (passed|failed|error)' "${pytest_log}" | tail -1 | tr -d '=' | sed 's/^ *//; s/ *$//')"
  if [[ "${code}" == 0 ]]; then
    set_result "${name}" "passed: ${summary}"
  else
    set_result "${name}" "FAILED (exit ${code}): ${summary}; $(grep -E '^(FAILED|ERROR) ' "${pytest_log}" | head -6 |
      tr '\n' ' ')"
    status=1
  fi
  # The host time a small call costs on CUDA tensors against torch.softmax (issue 48's goal: <= 20 us), and where it
  # goes (cProfile).
  step "Python per-call cost on CUDA tensors"
  timeout "$(suite_seconds)" env PORTABLE_ACLNN_LIBRARY_DIR="${build}" PYTHONPATH="${root}/python" \
    python3 "${root}/bench/python/python_overhead.py" --profile --no-msda > "${out}/python_overhead.txt" 2>&1 ||
    status=1
  set_result "Python per-call cost" "$(grep -iE 'cuda' "${out}/python_overhead.txt" | head -3 | tr '\n' ' ')"
fi
write_report

if wants bench; then
  step "allocator benchmark"
  allocator_bench() {  # ACLNN_DEVICE value: the summary line, or what failed
    local output
    output="$(ACLNN_DEVICE="$1" timeout "$(suite_seconds)" "${build}/bench/allocator_bench" \
      --benchmark_min_time=0.2 --benchmark_color=false 2>&1 |
      sed 's/\x1b\[[0-9;]*m//g')"
    echo "${output}" >> "${log}"
    echo "${output}" | grep -E 'speedup' | tail -1 | grep . ||
      echo "did not run: $(echo "${output}" | grep -iE 'fail|error|cannot' | head -1)"
  }
  {
    echo "Allocator (64 MiB aclrtMalloc + aclrtMemset + aclrtFree per iteration, against aligned_alloc + memset +"
    echo "free on the host):"
    echo
    echo "- GPU (ACLNN_DEVICE=cuda): $(allocator_bench cuda)"
    echo "- CPU (ACLNN_DEVICE=cpu): $(allocator_bench cpu)"
  } > "${build}/gpu_allocator.md"
  step "operator benchmark against PyTorch CUDA (bench/cuda/gpu_bench.py)"
  if timeout "$(suite_seconds)" python3 -u "${root}/bench/cuda/gpu_bench.py" "${build}" \
    --json "${root}/docs/cuda_bench.json" \
    > "${build}/gpu_operators.md" 2>> "${log}"; then
    set_result "operator benchmark (gpu_bench.py)" "ran"
  else
    set_result "operator benchmark (gpu_bench.py)" "FAILED: see gpu_check.log"
    status=1
  fi
  cat "${build}/gpu_operators.md" >> "${log}"
fi
write_report

if wants sanitizers; then
  if command -v compute-sanitizer > /dev/null; then
    sanitize=(env ACLNN_DEVICE=cuda compute-sanitizer --error-exitcode 1 --tool)
    record "compute-sanitizer memcheck: CUDA device tests" yes "${sanitize[@]}" memcheck \
      "${build}/tests/cuda_device_tests"
    record "compute-sanitizer memcheck: conformance table" yes "${sanitize[@]}" memcheck \
      "${build}/tests/system/conformance_tests" --gtest_brief=1
    record "compute-sanitizer racecheck: conformance table" yes "${sanitize[@]}" racecheck \
      "${build}/tests/system/conformance_tests" --gtest_brief=1
    # The kernels with shared-memory stages or warp shuffles, on operator tests large enough to reuse every stage.
    kernels_filter='ScaledMaskedSoftmaxValues.ManyLong*:NsaCompress/NsaCompressSweep.*:NsaCompressDeterminism.*'
    kernels_filter+=':NsaCompressLongSeqLen.*:NsaCompressEmpty.*'
    kernels_filter+=':NsaSelectedAttentionSample.*:NsaSelectedAttentionHostile.*:NsaSelectedAttentionModes.*'
    kernels_filter+=':NsaSelectedAttentionEmpty.*:NsaCompressAttentionSelection.*:NsaCompressAttentionForwardSample.*'
    record "compute-sanitizer memcheck: softmax and NSA operator tests" yes \
      "${sanitize[@]}" memcheck "${build}/tests/op_tests" --gtest_brief=1 --gtest_filter="${kernels_filter}"
    record "compute-sanitizer racecheck: softmax and NSA operator tests" yes \
      "${sanitize[@]}" racecheck \
      "${build}/tests/op_tests" --gtest_brief=1 --gtest_filter="${kernels_filter}"
    # The grid sampler's tiled forward / gridGrad kernels and its deterministic inputGrad (sort and gather).
    grid_filter='GridSampler2D/GridSamplerTiles.*:GridSampler2D/GridSamplerNonFinite.*:GridSampler2DFarGrids.*'
    grid_filter+=':GridSampler2DEmpty.*'
    record "compute-sanitizer memcheck: grid sampler operator tests" yes "${sanitize[@]}" memcheck \
      "${build}/tests/op_tests" --gtest_brief=1 --gtest_filter="${grid_filter}"
    # MSDA's 8-channel forward (against the channel-at-a-time one), its value copy under an aliasing output, and
    # the deterministic backward's sort in the workspace.
    msda_filter='MsdaDeterminism.ForwardBits*:MsdaAliasing.*:MultiScaleDeformableAttention/MsdaLayouts.*'
    record "compute-sanitizer memcheck: MSDA operator tests" yes "${sanitize[@]}" memcheck \
      "${build}/tests/op_tests" --gtest_brief=1 --gtest_filter="${msda_filter}"
  else
    set_result "compute-sanitizer" "not installed"
  fi
fi
write_report

if wants profile; then
  if command -v ncu > /dev/null; then
    step "Nsight Compute on the slow operators (ncu.txt)"
    suites="${PACL_PROFILE_SUITES:-NsaCompress float16|GridSampler2D|MSDA (encoder|decoder) float32}"
    # Each case runs twice (warm-up, then the call to look at): every launch of our kernels and CUB's is profiled.
    timeout "$(suite_seconds)" env ACLNN_DEVICE=cuda ncu --clock-control none --kernel-name-base demangled \
      --kernel-name 'regex:pacl::|cub::' --launch-count 400 --section SpeedOfLight --section LaunchStats \
      --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats \
      --log-file "${out}/ncu.txt" python3 "${root}/bench/cuda/gpu_bench.py" "${build}" --profile \
      --only "${suites}" >> "${log}" 2>&1
    code=$?
    kernels="$(grep -cE ', Context [0-9]+, Stream [0-9]+' "${out}/ncu.txt" 2>/dev/null || true)"
    if [[ "${code}" == 0 ]]; then
      set_result "Nsight Compute profile (ncu.txt)" "ran: ${kernels:-0} kernel launches profiled"
    else
      set_result "Nsight Compute profile (ncu.txt)" "FAILED (exit ${code}): $(tail -3 "${out}/ncu.txt" 2>/dev/null |
        tr '\n' ' ' | cut -c1-200)"
      status=1
    fi
  else
    set_result "Nsight Compute profile (ncu.txt)" "ncu not installed"
  fi
fi
write_report

if wants cputests; then
  record "runtime tests, ACLNN_DEVICE=cpu" no env ACLNN_DEVICE=cpu "${build}/tests/runtime_tests"
  record "base tests, ACLNN_DEVICE=cpu" no env ACLNN_DEVICE=cpu "${build}/tests/base_tests"
  record "conformance table, ACLNN_DEVICE=cpu" no env ACLNN_DEVICE=cpu "${build}/tests/system/conformance_tests" \
    --gtest_brief=1
  record "operator tests, ACLNN_DEVICE=cpu" no env ACLNN_DEVICE=cpu "${build}/tests/op_tests" --gtest_brief=1
fi
write_report

cat "${root}/docs/cuda.md"
exit "${status}"
