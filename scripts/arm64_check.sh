#!/usr/bin/env bash
# Arm (aarch64) on an x86-64 Debian machine: cross-builds the libraries and the suites that run here in
# build-arm64/ with Debian's cross compiler and arm64 multiarch packages (cmake/toolchains/aarch64-linux-gnu.cmake,
# warnings as errors, every Highway target: NEON, SVE, SVE2, SVE_256, SVE2_128), then runs under qemu-user:
#   - the glue suite (base_tests: conversions, the canonical multiply-adds, sums and exponential on every target)
#     and the conformance suite (every operator, dtype, layout and mode variant against the float64 references,
#     and the output digests, which must equal x86's: src/ops/<op>/test/output_digests.txt) on three emulated CPUs:
#     NEON only (QEMU_CPU=max,sve=off), SVE2 with 128-bit vectors and SVE2 with 512-bit vectors
#     (sve-default-vector-length=16 and 64 bytes); every run also compares each SIMD target it can run against the
#     others (cross-target tests, child processes through qemu). The operator suites' sweeps are x86's (the same
#     code, and the digests prove the same bits);
#   - the runtime suite and strict mode's tests, once;
#   - an installed prefix (cmake --install) and, built against it with the plain cross g++ line, the sample, the
#     CANN-style programs of the install test and the seeds' CANN sample programs (when ../shared/spec/seeds or
#     PACL_SEEDS_DIR is there), once each in strict mode on the NEON-only CPU (the x86 install test runs them in
#     both modes), printing the same as on x86 (normal mode) where build/ has x86 builds of them to compare with.
# Speed is not measured here (emulated). Works on a fresh Debian 12 machine (installs the missing packages with
# apt-get, adding the arm64 architecture to dpkg; needs root or sudo for that). PACL_ARM64_QEMU_CPUS overrides the
# list of QEMU_CPU settings (space-separated); PACL_ARM64_OP_TESTS=1 also runs the operator suite under each.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "${root}/scripts/packages.sh"

if command -v dpkg > /dev/null && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  sudo=()
  [[ "$(id -u)" -ne 0 ]] && sudo=(sudo)
  "${sudo[@]}" dpkg --add-architecture arm64
fi
pacl_ensure_packages cmake ninja-build g++-aarch64-linux-gnu qemu-user python3 libc6:arm64 libstdc++6:arm64 \
  libgomp1:arm64 libhwy-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64

build="${root}/build-arm64"
# docs/arm.md's line as written (plus warnings as errors): on a machine with an x86 nvcc, PACL_CUDA=AUTO must leave
# the CUDA backend out of the aarch64 build, and say so, rather than link x86's CUDA runtime.
cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_TOOLCHAIN_FILE="${root}/cmake/toolchains/aarch64-linux-gnu.cmake" \
  -DPACL_BUILD_BENCH=OFF -DPACL_WARNINGS_AS_ERRORS=ON | tee "${build}.configure.log"
if command -v nvcc > /dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  grep -q "CUDA backend: left out (PACL_CUDA=AUTO): cross-compiling for aarch64" "${build}.configure.log" ||
    { echo "FAIL: the aarch64 build did not leave out the host's CUDA toolkit" >&2; exit 1; }
fi
rm -f "${build}.configure.log"
suites=(base_tests system/conformance_tests runtime_tests strict_tests)
if [[ "${PACL_ARM64_OP_TESTS:-0}" == 1 ]]; then suites+=(op_tests); fi
cmake --build "${build}" --target ascendcl nnopbase opapi $(for suite in "${suites[@]}"; do basename "${suite}"; done)

qemu_cpus=(${PACL_ARM64_QEMU_CPUS:-"max,sve=off" "max,sve-default-vector-length=16" "max,sve-default-vector-length=64"})
run_suite() {  # QEMU_CPU, binary, arguments...
  local cpu="$1" binary="$2" start="${SECONDS}"
  shift 2
  echo "=== QEMU_CPU=${cpu} $(basename "${binary}") $*"
  QEMU_CPU="${cpu}" qemu-aarch64 "${build}/tests/${binary}" --gtest_brief=1 "$@" 2>&1 | tail -n 4
  # (the pipe: gtest's brief output still lists every failure; the status is the binary's)
  [[ "${PIPESTATUS[0]}" -eq 0 ]] || { echo "FAIL: ${binary} under QEMU_CPU=${cpu}" >&2; return 1; }
  echo "    ($((SECONDS - start)) s)"
}
suites_on() {  # QEMU_CPU: the suites of one emulated CPU, one after the other
  local cpu="$1"
  echo "=== Highway targets under QEMU_CPU=${cpu}:"
  QEMU_CPU="${cpu}" qemu-aarch64 "${build}/tests/base_tests" --gtest_filter=ConvertTargetsTest.Dispatch* |
    grep "Highway targets"
  run_suite "${cpu}" base_tests || return 1
  run_suite "${cpu}" system/conformance_tests || return 1
  if [[ "${PACL_ARM64_OP_TESTS:-0}" == 1 ]]; then run_suite "${cpu}" op_tests || return 1; fi
}
# The emulated CPUs' suites run side by side (qemu-user runs a guest mostly on one host core: the base suite is
# single-threaded, and the conformance suite's small cases keep about 1.2 cores busy), each into its own log, printed
# in order once all are done.
logs="$(mktemp -d)"
pids=()
for i in "${!qemu_cpus[@]}"; do
  suites_on "${qemu_cpus[i]}" > "${logs}/${i}.log" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!qemu_cpus[@]}"; do
  wait "${pids[i]}" || failed=1
  cat "${logs}/${i}.log"
done
rm -rf "${logs}"
[[ "${failed}" -eq 0 ]] || { echo "FAIL: a suite under qemu failed (above)" >&2; exit 1; }
run_suite "${qemu_cpus[-1]}" runtime_tests || exit 1
ACLNN_STRICT=1 run_suite "${qemu_cpus[-1]}" strict_tests || exit 1

echo "=== the installed package: sample, CANN-style and seed programs built with the plain cross g++ line"
work="$(mktemp -d "${build}/programs.XXXXXX")"
cmake --install "${build}" --prefix "${work}/prefix" > /dev/null
programs=("${root}/examples/sample/main.cpp" "${root}"/src/ops/*/test/*_cann_style.cpp)
seed_programs="$(python3 "${root}/tests/install/extract_seed_program.py" "${work}")"
read -r -d '' -a seed_list <<< "${seed_programs}" || true
programs+=("${seed_list[@]}")
for source in "${programs[@]}"; do
  name="$(basename "${source}" .cpp)"
  name="${name%_cann_style}"
  [[ "${source}" == */examples/sample/* ]] && name="sample"
  aarch64-linux-gnu-g++ -std=c++17 -O2 "${source}" -I"${root}/tests/install/cann_style" -I"${work}/prefix/include" \
    -I"${work}/prefix/include/aclnnop" \
    -L"${work}/prefix/lib" -lascendcl -lnnopbase -lopapi -o "${work}/${name}"
  # Once, in strict mode (its checks on every pointer and size, the same kernels), on the first emulated CPU (NEON
  # only: qemu emulates it about twice as fast as SVE at 512 bits, and the NSA attention programs take minutes a
  # run; the SVE targets' kernels are the conformance suite's above, digests included). No strict-mode report, and
  # the output equal to x86's normal run's below.
  ACLNN_STRICT=1 QEMU_CPU="${qemu_cpus[0]}" LD_LIBRARY_PATH="${work}/prefix/lib" \
    qemu-aarch64 "${work}/${name}" > "${work}/${name}.strict" 2>&1 ||
    { tail -20 "${work}/${name}.strict"; echo "FAIL: ${name} (strict) on aarch64" >&2; exit 1; }
  if grep -q "ACLNN_STRICT:" "${work}/${name}.strict"; then
    grep -A12 "ACLNN_STRICT:" "${work}/${name}.strict" | head -40
    echo "FAIL: ${name} got a strict-mode report on aarch64" >&2
    exit 1
  fi
  same_as_x86=""
  if [[ -f "${root}/build/libopapi.so" ]]; then
    g++ -std=c++17 -O2 "${source}" -I"${root}/tests/install/cann_style" -I"${root}/include" \
      -I"${root}/build/include" -I"${root}/include/aclnnop" -L"${root}/build" -lascendcl \
      -lnnopbase -lopapi -o "${work}/${name}.x86"
    LD_LIBRARY_PATH="${root}/build" "${work}/${name}.x86" > "${work}/${name}.x86_out" 2>&1 ||
      { echo "FAIL: ${name} on x86 (build/)" >&2; exit 1; }
    cmp -s "${work}/${name}.strict" "${work}/${name}.x86_out" ||
      { diff "${work}/${name}.strict" "${work}/${name}.x86_out" | head; echo "FAIL: ${name}: aarch64 and x86 differ" >&2
        exit 1; }
    same_as_x86=", the same as x86's"
  fi
  echo "${name}: ran on aarch64 in strict mode, $(wc -l < "${work}/${name}.strict") lines of output${same_as_x86}"
  rm -f "${work}/${name}".*
done
rm -rf "${work}"
echo "=== aarch64: all passed"
