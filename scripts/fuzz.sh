#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/fuzz_create_tensor.cpp and each operator's src/ops/<op>/fuzz/fuzz_<op>.cpp;
# clang 14, ASan + UBSan, in build-fuzz/) and runs each for a bounded time from a copy of its checked-in corpus
# (fuzz/corpus/fuzz_create_tensor/, src/ops/<op>/fuzz/corpus/; the tree is never modified). Exits non-zero if any
# harness finds a crash, a leak, a timeout or an out-of-memory; prints a summary (executions, coverage) either way.
#
#   scripts/fuzz.sh [seconds_per_harness]     (default 30; harnesses run in parallel, one per CPU)
#
# A failing input is kept in build-fuzz/fuzz-artifacts/<harness>/; replay it with
#   PACL_FUZZ_VERBOSE=1 build-fuzz/fuzz/<harness> build-fuzz/fuzz-artifacts/<harness>/crash-...
# (see fuzz/README.md for turning it into a regression test).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${root}/scripts/packages.sh"

seconds="${1:-30}"
if ! [[ "${seconds}" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/fuzz.sh [seconds_per_harness]" >&2
  exit 2
fi

# clang-14 with its libFuzzer / sanitizer runtimes (libclang-rt-14-dev) and OpenMP runtime (libomp-14-dev).
pacl_ensure_packages cmake ninja-build pkg-config libhwy-dev clang-14 libclang-rt-14-dev libomp-14-dev

build="${root}/build-fuzz"
# PACL_SIMD_TARGETS=NATIVE: the kernels for this machine's best SIMD target only, the one a default build would run
# here (the narrower targets are the ASan suite's, pinned): a third of the compile time.
cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DPACL_WARNINGS_AS_ERRORS=ON -DPACL_SIMD_TARGETS=NATIVE \
  -DPACL_BUILD_FUZZERS=ON -DPACL_BUILD_TESTS=OFF -DPACL_BUILD_BENCH=OFF -DPACL_BUILD_EXAMPLES=OFF
cmake --build "${build}" --target pacl_fuzzers

# "<harness> <corpus directory>" per line, written by fuzz/CMakeLists.txt from the operators' folders.
declare -A corpus_of
harnesses=()
while read -r harness corpus; do
  harnesses+=("${harness}")
  corpus_of["${harness}"]="${corpus}"
done < "${build}/fuzz/harnesses.txt"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
artifacts="${build}/fuzz-artifacts"
rm -rf "${artifacts}"

# The kernels run single-threaded (fast iterations); leaks are checked after every input that allocated more
# than it freed.
export ACLNN_NUM_THREADS=1
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0:handle_abort=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

run_one() {
  local harness="$1"
  mkdir -p "${work}/corpus/${harness}" "${artifacts}/${harness}"
  cp -r "${corpus_of[${harness}]}/." "${work}/corpus/${harness}/" 2> /dev/null || true
  local status=0
  "${build}/fuzz/${harness}" -max_total_time="${seconds}" -timeout=20 -rss_limit_mb=2048 -max_len=512 \
    -print_final_stats=1 -artifact_prefix="${artifacts}/${harness}/" "${work}/corpus/${harness}" \
    > "${work}/${harness}.log" 2>&1 || status=$?
  echo "${status}" > "${work}/${harness}.status"
}

jobs="$(nproc)"
running=0
for harness in "${harnesses[@]}"; do
  run_one "${harness}" &
  running=$((running + 1))
  if [[ "${running}" -ge "${jobs}" ]]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true

failed=0
echo "=== fuzz summary (${seconds} s per harness)"
printf '%-28s %-6s %12s %8s %8s %8s\n' harness result executions exec/s cov corpus
for harness in "${harnesses[@]}"; do
  log="${work}/${harness}.log"
  status="$(cat "${work}/${harness}.status" 2> /dev/null || echo 1)"
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "${log}" | tail -1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "${log}" | tail -1)"
  last="$(grep -E '^#[0-9]+' "${log}" | tail -1 || true)"
  cov="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "${last}")"
  corpus="$(sed -n 's/.* corp: \([0-9]*\/[0-9]*[a-zA-Z]*\).*/\1/p' <<< "${last}")"
  result=ok
  if [[ "${status}" -ne 0 ]] || grep -qE '^==[0-9]+==ERROR|^SUMMARY: |runtime error:|^fuzz oracle:' "${log}"; then
    result=FAIL
    failed=1
  fi
  printf '%-28s %-6s %12s %8s %8s %8s\n' "${harness}" "${result}" "${execs:-?}" "${rate:-?}" "${cov:-?}" \
    "${corpus:-?}"
done
if [[ "${failed}" -ne 0 ]]; then
  for harness in "${harnesses[@]}"; do
    if [[ "$(cat "${work}/${harness}.status" 2> /dev/null || echo 1)" -ne 0 ]] ||
      grep -qE '^==[0-9]+==ERROR|^SUMMARY: |runtime error:|^fuzz oracle:' "${work}/${harness}.log"; then
      echo "=== ${harness} failed (exit $(cat "${work}/${harness}.status" 2> /dev/null || echo '?')): end of its log"
      tail -n 60 "${work}/${harness}.log"
      echo "=== inputs kept in ${artifacts}/${harness}/:"
      ls -l "${artifacts}/${harness}/" || true
    fi
  done
  echo "=== fuzzing FAILED"
  exit 1
fi
echo "=== fuzzing passed"
