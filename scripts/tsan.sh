#!/usr/bin/env bash
# ThreadSanitizer run of the concurrency and lifecycle tests (tests/system/) and the runtime tests (tests/runtime/).
# Builds build-tsan/ with clang-14 (-DPACL_SANITIZE_THREAD=ON): the kernels' OpenMP runtime is then LLVM's libomp,
# which reports its synchronisation to TSan through the Archer tool (OMP_TOOL_LIBRARIES=libarcher.so), so the
# parallel-for path is checked too, without false reports. First a canary proves the setup: correct ParallelFor code
# must give no report, and a deliberate race inside ParallelFor must be reported. Exits non-zero on any report or
# test failure. See tests/system/README.md for what is and is not covered.
# Works on a fresh Debian 12 machine (installs the missing packages with apt-get; needs root or sudo for that).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${root}/scripts/packages.sh"

pacl_ensure_packages cmake ninja-build pkg-config clang-14 libclang-rt-14-dev libomp-14-dev libhwy-dev libgtest-dev \
  libgmock-dev

archer=/usr/lib/llvm-14/lib/libarcher.so
if [[ ! -f "${archer}" ]]; then
  echo "tsan.sh: ${archer} is missing (Debian's libomp-14-dev ships it)" >&2
  exit 1
fi

build="${root}/build-tsan"
# PACL_SIMD_TARGETS=NATIVE: the kernels for this machine's best SIMD target only (their threading does not depend on
# the target; the narrower targets are the ASan suite's): a third of the compile time.
cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_CXX_COMPILER=clang++-14 -DPACL_WARNINGS_AS_ERRORS=ON -DPACL_SANITIZE_THREAD=ON -DPACL_BUILD_BENCH=OFF \
  -DPACL_BUILD_EXAMPLES=OFF -DPACL_SIMD_TARGETS=NATIVE
cmake --build "${build}" --target system_tests runtime_tests base_tests tsan_canary

# halt_on_error: the first report ends the process with exitcode 66. ignore_noninstrumented_modules: calls made by
# the uninstrumented libomp itself are not checked (Archer's recommendation).
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 ignore_noninstrumented_modules=1"
if [[ -x /usr/lib/llvm-14/bin/llvm-symbolizer ]]; then
  TSAN_OPTIONS+=" external_symbolizer_path=/usr/lib/llvm-14/bin/llvm-symbolizer"
fi
export OMP_TOOL_LIBRARIES="${archer}"
export ARCHER_OPTIONS="verbose=1"
# At least two OpenMP threads, whatever the machine, so that ParallelFor runs its chunks on OpenMP threads. Idle
# OpenMP threads sleep instead of spinning (spinning under TSan on two cores would only slow the run down).
export ACLNN_NUM_THREADS=3
export OMP_WAIT_POLICY=passive

echo "=== canary: correct ParallelFor code must give no report"
clean_log="${build}/tsan_canary_clean.log"
if ! "${build}/tests/system/tsan_canary" clean > "${clean_log}" 2>&1; then
  cat "${clean_log}"
  echo "tsan.sh: the canary's correct code was reported (or failed): the TSan + OpenMP setup is not sound" >&2
  exit 1
fi
if ! grep -q "Archer detected OpenMP application with TSan" "${clean_log}"; then
  cat "${clean_log}"
  echo "tsan.sh: Archer did not load (OMP_TOOL_LIBRARIES=${archer}): OpenMP regions would give false reports" >&2
  exit 1
fi
cat "${clean_log}"

echo "=== canary: a data race inside ParallelFor must be reported"
racy_log="${build}/tsan_canary_racy.log"
racy_status=0
"${build}/tests/system/tsan_canary" racy > "${racy_log}" 2>&1 || racy_status=$?
if [[ ${racy_status} -ne 66 ]] || ! grep -q "WARNING: ThreadSanitizer: data race" "${racy_log}"; then
  cat "${racy_log}"
  echo "tsan.sh: the canary's deliberate race was not reported (exit ${racy_status}): TSan would miss real races" >&2
  exit 1
fi
echo "reported, as it must be (exit ${racy_status})"

echo "=== runtime_tests under TSan"
"${build}/tests/runtime_tests" --gtest_brief=1
# NumThreadsTest and ParallelForProcessTest run their parallel code in child processes that drop every OMP_*
# variable (so Archer is not loaded there, and TSan would report its false positives): left out here; the other
# ParallelFor tests (concurrent callers, nesting, exceptions) run in-process.
echo "=== base_tests under TSan"
"${build}/tests/base_tests" --gtest_brief=1 --gtest_filter='-NumThreadsTest.*:ParallelForProcessTest.*'

echo "=== system_tests under TSan"
"${build}/tests/system/system_tests" --gtest_brief=1
echo "=== TSan: no reports"
