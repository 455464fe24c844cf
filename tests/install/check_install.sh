#!/usr/bin/env bash
# Installs a portable-aclnn build into a temporary prefix and checks that programs build and run against it:
#   1. the installed layout (CANN's include tree, versioned shared libraries, CMake package, pkg-config file),
#      and that nothing private (src/internal headers, Highway, OpenMP, sanitizers) leaks into the interface;
#   2. examples/sample built with find_package(PortableAclnn) (CMAKE_PREFIX_PATH) and run;
#   3. the same main.cpp built with the plain g++ line of README.md and run with LD_LIBRARY_PATH, and so are the
#      CANN-style programs of the operators (src/ops/<op>/test/<op>_cann_style.cpp, with cann_style/cann_style.h:
#      forward and backward, null strides, a fresh workspace per call); then all of these again with ACLNN_STRICT=1, which must report nothing
#      (docs/strict_mode.md); and the sample programs of the specification's source documents (the CANN operator
#      documents in ../shared/spec/seeds, or PACL_SEEDS_DIR), extracted unchanged, built the same way and run in both
#      modes with the same output;
#   4. the same main.cpp built with pkg-config's flags and run (rpath from pkg-config's libdir);
#   5. every public header compiled alone and all together as C11 and as C++11 with -Wall -Wextra -Wpedantic
#      -Werror, linked and run.
# Run by ctest (test install_package), or by hand: tests/install/check_install.sh <build-dir>
# In a sanitizer build (PACL_SANITIZE=ON) the installed libraries need the ASan runtime loaded first: the
# programs then run with LD_PRELOAD=<the compiler's libasan.so>; exit code 77 (skipped) if it cannot be found.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build_dir="${PACL_BUILD_DIR:-${1:-}}"
if [[ -z "${build_dir}" ]]; then
  echo "usage: $0 <build-dir>  (or set PACL_BUILD_DIR)" >&2
  exit 2
fi
build_dir="$(cd "${build_dir}" && pwd)"
source_dir="${PACL_SOURCE_DIR:-$(cd "${script_dir}/../.." && pwd)}"
cc="${PACL_CC:-gcc}"
cxx="${PACL_CXX:-g++}"
cmake_cmd="${PACL_CMAKE:-cmake}"
generator="${PACL_GENERATOR:-}"
if [[ -z "${generator}" ]] && command -v ninja > /dev/null; then generator="Ninja"; fi
if [[ -z "${PACL_SANITIZE:-}" ]]; then
  PACL_SANITIZE="$(sed -n 's/^PACL_SANITIZE:BOOL=//p' "${build_dir}/CMakeCache.txt")"
fi
if [[ -z "${PACL_VERSION:-}" ]]; then
  PACL_VERSION="$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "${build_dir}/CMakeCache.txt")"
fi

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
step() { echo "=== $*"; }

# How the test programs run: plain, or with the ASan runtime first when the libraries are instrumented.
run_env=()
if [[ "${PACL_SANITIZE}" == "ON" ]]; then
  asan_runtime="$("${cxx}" -print-file-name=libasan.so)"
  if [[ "${asan_runtime}" != /* || ! -e "${asan_runtime}" ]]; then
    echo "SKIPPED: sanitizer build, and ${cxx} -print-file-name=libasan.so gave no ASan runtime to preload" >&2
    exit 77
  fi
  run_env=(env "LD_PRELOAD=${asan_runtime}")
  echo "sanitizer build: running the programs with LD_PRELOAD=${asan_runtime}"
fi
run() { "${run_env[@]}" "$@"; }

work="$(mktemp -d "${build_dir}/install-check.XXXXXX")"
prefix="${work}/prefix"
# Kept on failure for inspection; removed when every check passed.
cleanup() {
  local status=$?
  if [[ ${status} -eq 0 ]]; then rm -rf "${work}"; else echo "work files kept in ${work}" >&2; fi
}
trap cleanup EXIT

step "install into ${prefix}"
"${cmake_cmd}" --install "${build_dir}" --prefix "${prefix}" > "${work}/install.log" ||
  {
    cat "${work}/install.log"
    fail "cmake --install ${build_dir} failed: is the build complete (cmake --build ${build_dir})?"
  }

step "installed layout"
# The header tree is include/ of the source tree (CANN's paths, nothing from src/internal) plus, for every operator
# header aclnnop/aclnn_xxx.h, the forwarder aclnnop/level2/aclnn_xxx.h that includes it.
diff -r -x level2 "${source_dir}/include" "${prefix}/include" ||
  fail "installed headers differ from ${source_dir}/include"
for header in "${source_dir}"/include/aclnnop/*.h; do
  level2="${prefix}/include/aclnnop/level2/$(basename "${header}")"
  grep -q "#include \"../$(basename "${header}")\"" "${level2}" || fail "${level2} does not forward to its header"
done
[[ "$(ls "${prefix}/include/aclnnop/level2" | wc -l)" -eq "$(ls "${source_dir}"/include/aclnnop/*.h | wc -l)" ]] ||
  fail "aclnnop/level2 has other headers than aclnnop"
for header in acl/acl.h acl/acl_base.h acl/acl_rt.h aclnn/acl_meta.h aclnn/aclnn_base.h aclnn/opdev/op_errno.h \
              aclnnop/aclnn_scaled_masked_softmax.h aclnnop/aclnn_scaled_masked_softmax_backward.h \
              aclnnop/level2/aclnn_scaled_masked_softmax.h aclnnop/level2/aclnn_scaled_masked_softmax_backward.h; do
  [[ -f "${prefix}/include/${header}" ]] || fail "missing ${prefix}/include/${header}"
done
[[ ! -e "${prefix}/include/pacl" ]] || fail "internal headers were installed"
major="${PACL_VERSION%%.*}"
for lib in ascendcl nnopbase opapi; do
  so="${prefix}/lib/lib${lib}.so"
  [[ -L "${so}" ]] || fail "${so} is not a symlink to the versioned library"
  [[ -f "${so}.${PACL_VERSION}" ]] || fail "missing ${so}.${PACL_VERSION}"
  [[ "$(readlink -f "${so}")" == "$(readlink -f "${so}.${PACL_VERSION}")" ]] ||
    fail "${so} does not point at ${so}.${PACL_VERSION}"
  soname="$(readelf -d "${so}" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
  [[ "${soname}" == "lib${lib}.so.${major}" ]] || fail "SONAME of ${so} is '${soname}', expected lib${lib}.so.${major}"
  [[ -e "${prefix}/lib/${soname}" ]] || fail "missing ${prefix}/lib/${soname}"
done
pkgdir="${prefix}/lib/cmake/PortableAclnn"
for f in PortableAclnnConfig.cmake PortableAclnnConfigVersion.cmake PortableAclnnTargets.cmake; do
  [[ -f "${pkgdir}/${f}" ]] || fail "missing ${pkgdir}/${f}"
done
[[ -f "${prefix}/lib/pkgconfig/portable-aclnn.pc" ]] || fail "missing lib/pkgconfig/portable-aclnn.pc"
# Private dependencies stay private: nothing of Highway, OpenMP or the sanitizers in the targets' INTERFACE_*
# properties or in the .pc file. (CMake may still list a PRIVATE shared dependency such as hwy::hwy under
# IMPORTED_LINK_DEPENDENT_LIBRARIES, a linker rpath-link hint that consumers without that target ignore;
# step (a) builds a consumer that has never heard of Highway.)
private_pattern='hwy|OpenMP|gomp|fopenmp|sanitize|pacl_build_flags|src/internal'
if grep -nE "INTERFACE_.*(${private_pattern})" "${pkgdir}"/*.cmake ||
   grep -nE "${private_pattern}" "${prefix}/lib/pkgconfig/portable-aclnn.pc"; then
  fail "a private dependency leaks into the installed package interface (lines above)"
fi
# No path of the build or source tree in the package files (it must work wherever it is installed).
if grep -nF -e "${build_dir}" -e "${source_dir}/" "${pkgdir}"/*.cmake "${prefix}/lib/pkgconfig/portable-aclnn.pc"; then
  fail "the installed package files refer to the build or source tree (lines above)"
fi

sample_src="${source_dir}/examples/sample/main.cpp"

step "(a) examples/sample with find_package(PortableAclnn)"
generator_args=()
[[ -n "${generator}" ]] && generator_args=(-G "${generator}")
"${cmake_cmd}" -S "${source_dir}/examples/sample" -B "${work}/sample-build" "${generator_args[@]}" \
  -DCMAKE_PREFIX_PATH="${prefix}" -DCMAKE_CXX_COMPILER="${cxx}" -DCMAKE_BUILD_TYPE=Release \
  > "${work}/sample-configure.log" || { cat "${work}/sample-configure.log"; fail "configuring examples/sample"; }
found_dir="$(sed -n 's/^PortableAclnn_DIR:PATH=//p' "${work}/sample-build/CMakeCache.txt")"
[[ "${found_dir}" == "${pkgdir}" ]] || fail "find_package found PortableAclnn in '${found_dir}', not in ${pkgdir}"
"${cmake_cmd}" --build "${work}/sample-build" > "${work}/sample-build.log" ||
  { cat "${work}/sample-build.log"; fail "building examples/sample"; }
run "${work}/sample-build/aclnn_sample" || fail "examples/sample (CMake package build) failed"

step "(b) plain g++ line, LD_LIBRARY_PATH"
(cd "${work}" && "${cxx}" "${sample_src}" -I"${prefix}/include" -I"${prefix}/include/aclnnop" -L"${prefix}/lib" \
   -lascendcl -lnnopbase -lopapi -o sample_plain) || fail "building main.cpp with the plain g++ line"
LD_LIBRARY_PATH="${prefix}/lib" run "${work}/sample_plain" || fail "main.cpp (plain g++ build) failed"

step "(b2) the operators' CANN-style programs (src/ops/<op>/test/<op>_cann_style.cpp), plain g++ line"
# Written as CANN's samples are (CHECK_RET, null strides, a fresh workspace per call), each forward and backward,
# checked against double precision. (The sample itself is the softmax's.)
cann_programs=()
for source in "${source_dir}"/src/ops/*/test/*_cann_style.cpp; do
  program="cann_$(basename "${source}" _cann_style.cpp)"
  (cd "${work}" && "${cxx}" -std=c++17 -Wall -Wextra -Werror "${source}" -I"${script_dir}/cann_style" \
     -I"${prefix}/include" -I"${prefix}/include/aclnnop" -L"${prefix}/lib" -lascendcl -lnnopbase -lopapi \
     -o "${program}") || fail "building the CANN-style $(basename "${source}") with the plain g++ line"
  LD_LIBRARY_PATH="${prefix}/lib" run "${work}/${program}" || fail "the CANN-style ${program} program failed"
  cann_programs+=("${program}")
done
[[ ${#cann_programs[@]} -ge 3 ]] || fail "expected the CANN-style programs of at least three operators"

step "(b3) the sample and the CANN-style programs again in strict mode (ACLNN_STRICT=1): they run, nothing reported"
for program in sample_plain "${cann_programs[@]}"; do
  LD_LIBRARY_PATH="${prefix}/lib" ACLNN_STRICT=1 run "${work}/${program}" > "${work}/strict.out" 2>&1 ||
    { cat "${work}/strict.out"; fail "${program} failed in strict mode"; }
  if grep -q "ACLNN_STRICT:" "${work}/strict.out"; then
    cat "${work}/strict.out"
    fail "${program} got a strict-mode report"
  fi
done

step "(b4) the seeds' sample programs (CANN's own calling examples), unchanged: plain g++ line, normal and strict"
seed_programs="$(python3 "${script_dir}/extract_seed_program.py" "${work}")" || fail "extracting the seeds' programs"
# The programs are CANN's, unchanged, and one of them (NsaCompressGrad's) never destroys its aclIntArray: in a
# sanitizer build LeakSanitizer would report that program's own leak, so leak detection is off for these runs
# (the library's own leaks are checked by the suites and the other programs above).
seed_env=()
[[ "${PACL_SANITIZE}" == "ON" ]] && seed_env=(env "ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0")
for source in ${seed_programs}; do
  name="$(basename "${source}" .cpp)"
  (cd "${work}" && "${cxx}" -std=c++17 "${source}" -I"${prefix}/include" -I"${prefix}/include/aclnnop" \
     -L"${prefix}/lib" -lascendcl -lnnopbase -lopapi -o "${name}") ||
    fail "building ${name}.cpp (the seed's sample program) with the plain g++ line"
  LD_LIBRARY_PATH="${prefix}/lib" run "${seed_env[@]}" "${work}/${name}" > "${work}/${name}.out" 2>&1 ||
    { tail -20 "${work}/${name}.out"; fail "${name} failed"; }
  LD_LIBRARY_PATH="${prefix}/lib" ACLNN_STRICT=1 run "${seed_env[@]}" "${work}/${name}" > "${work}/${name}.strict" \
    2>&1 || { tail -20 "${work}/${name}.strict"; fail "${name} failed in strict mode"; }
  if grep -q "ACLNN_STRICT:" "${work}/${name}.strict"; then
    grep -A12 "ACLNN_STRICT:" "${work}/${name}.strict" | head -40
    fail "${name} got a strict-mode report"
  fi
  cmp -s "${work}/${name}.out" "${work}/${name}.strict" || fail "${name} printed other results in strict mode"
  echo "${name}: $(wc -l < "${work}/${name}.out") lines of output, the same in strict mode"
  rm -f "${work}/${name}.out" "${work}/${name}.strict"
done

step "(c) pkg-config"
command -v pkg-config > /dev/null || fail "pkg-config is not installed (apt-get install pkg-config)"
export PKG_CONFIG_PATH="${prefix}/lib/pkgconfig"
pc_version="$(pkg-config --modversion portable-aclnn)" || fail "pkg-config cannot find portable-aclnn"
[[ "${pc_version}" == "${PACL_VERSION}" ]] || fail "pkg-config version ${pc_version}, expected ${PACL_VERSION}"
read -r -a pc_flags <<< "$(pkg-config --cflags --libs portable-aclnn)"
echo "pkg-config --cflags --libs portable-aclnn: ${pc_flags[*]}"
pc_libdir="$(pkg-config --variable=libdir portable-aclnn)"
[[ "$(cd "${pc_libdir}" && pwd)" == "${prefix}/lib" ]] || fail "pkg-config libdir ${pc_libdir} is not ${prefix}/lib"
"${cxx}" "${sample_src}" "${pc_flags[@]}" -Wl,-rpath,"${pc_libdir}" -o "${work}/sample_pkgconfig" ||
  fail "building main.cpp with pkg-config's flags"
run "${work}/sample_pkgconfig" || fail "main.cpp (pkg-config build) failed"

step "(d) public headers as C11 and C++11"
strict=(-Wall -Wextra -Wpedantic -Wshadow -Werror)
mapfile -t headers < <(cd "${prefix}/include" && find . -name '*.h' | sed 's|^\./||' | LC_ALL=C sort)
[[ ${#headers[@]} -ge 10 ]] || fail "only ${#headers[@]} headers installed"
# Each header on its own: it must include what it needs.
for header in "${headers[@]}"; do
  printf '#include "%s"\n' "${header}" > "${work}/one.c"
  cp "${work}/one.c" "${work}/one.cpp"
  "${cc}" -std=c11 "${strict[@]}" -I"${prefix}/include" -fsyntax-only "${work}/one.c" ||
    fail "${header} does not compile alone as C11"
  "${cxx}" -std=c++11 "${strict[@]}" -I"${prefix}/include" -fsyntax-only "${work}/one.cpp" ||
    fail "${header} does not compile alone as C++11"
done
# All together, twice over (include guards), then a few calls so the C linkage is checked too.
{
  for header in "${headers[@]}" "${headers[@]}"; do printf '#include "%s"\n' "${header}"; done
  cat << 'CSOURCE'
#include <stdio.h>

int main(void) {
  int32_t major = 0, minor = 0, patch = 0;
  aclDataType dtype = ACL_FLOAT;
  aclFormat format = ACL_FORMAT_ND;
  aclTensor *tensor = NULL;
  aclOpExecutor *executor = NULL;
  aclnnStatus status = ACLNN_SUCCESS;
  uint64_t workspace = 0;
  const char *message = NULL;
  (void)format;
  if (aclrtGetVersion(&major, &minor, &patch) != ACL_SUCCESS) return 1;
  if (aclDataTypeSize(dtype) != 4 || aclDataTypeSize(ACL_FLOAT16) != 2 || aclDataTypeSize(ACL_BF16) != 2) return 2;
  /* Null arguments are refused with CANN's status codes, never a crash. */
  status = aclnnScaledMaskedSoftmaxGetWorkspaceSize(tensor, tensor, 1.0, false, tensor, &workspace, &executor);
  if (status != ACLNN_ERR_PARAM_NULLPTR) return 3;
  message = aclGetRecentErrMsg();
  if (message == NULL) return 4; /* a refused call leaves a message */
  printf("C11: acl version %d.%d.%d, null tensor -> %d (%s)\n", (int)major, (int)minor, (int)patch, (int)status,
         message);
  return 0;
}
CSOURCE
} > "${work}/all_headers.c"
"${cc}" -std=c11 "${strict[@]}" -I"${prefix}/include" "${work}/all_headers.c" -L"${prefix}/lib" \
  -lascendcl -lnnopbase -lopapi -Wl,-rpath,"${prefix}/lib" -o "${work}/all_headers_c" ||
  fail "the public headers do not compile together as C11"
run "${work}/all_headers_c" || fail "the C11 program failed (exit $?)"
{
  for header in "${headers[@]}" "${headers[@]}"; do printf '#include "%s"\n' "${header}"; done
  cat << 'CXXSOURCE'
#include <cstdio>

int main() {
  // CANN's samples name the enumerators through their enum types.
  float storage[6] = {1, 2, 3, 4, 5, 6};
  const int64_t shape[2] = {2, 3};
  const int64_t strides[2] = {3, 1};
  aclTensor* tensor = aclCreateTensor(shape, 2, aclDataType::ACL_FLOAT, strides, 0, aclFormat::ACL_FORMAT_ND, shape, 2,
                                      storage);
  if (tensor == nullptr) return 1;
  aclDataType dtype = aclDataType::ACL_DT_UNDEFINED;
  aclFormat format = aclFormat::ACL_FORMAT_UNDEFINED;
  if (aclGetDataType(tensor, &dtype) != ACLNN_SUCCESS || dtype != aclDataType::ACL_FLOAT) return 2;
  if (aclGetFormat(tensor, &format) != ACLNN_SUCCESS || format != aclFormat::ACL_FORMAT_ND) return 3;
  if (aclDestroyTensor(tensor) != ACLNN_SUCCESS) return 4;
  aclrtMemcpyKind kind = aclrtMemcpyKind::ACL_MEMCPY_HOST_TO_DEVICE;
  aclrtMemMallocPolicy policy = aclrtMemMallocPolicy::ACL_MEM_MALLOC_HUGE_FIRST;
  std::printf("C++11: tensor dtype %d format %d, memcpy kind %d, malloc policy %d\n", static_cast<int>(dtype),
              static_cast<int>(format), static_cast<int>(kind), static_cast<int>(policy));
  return 0;
}
CXXSOURCE
} > "${work}/all_headers.cpp"
"${cxx}" -std=c++11 "${strict[@]}" -I"${prefix}/include" "${work}/all_headers.cpp" -L"${prefix}/lib" \
  -lascendcl -lnnopbase -lopapi -Wl,-rpath,"${prefix}/lib" -o "${work}/all_headers_cxx" ||
  fail "the public headers do not compile together as C++11"
run "${work}/all_headers_cxx" || fail "the C++11 program failed"

step "(e) the Python package from the prefix (PYTHONPATH=<prefix>/python), NumPy only"
if [[ ! -x /usr/bin/python3 ]] || ! /usr/bin/python3 -c 'import numpy' 2> /dev/null; then
  echo "no /usr/bin/python3 with NumPy: step skipped"
elif [[ "${PACL_SANITIZE}" == "ON" ]]; then
  echo "sanitizer build: step skipped (the interpreter would need the ASan runtime first)"
else
  [[ -f "${prefix}/python/portable_aclnn/__init__.py" && -f "${prefix}/python/portable_aclnn/_install_dir.py" ]] ||
    fail "the Python package is not installed under ${prefix}/python"
  (cd "${work}" && env -u PORTABLE_ACLNN_LIBRARY_DIR PYTHONPATH="${prefix}/python" /usr/bin/python3 -c '
import sys
sys.modules["torch"] = None  # the NumPy interface must not need PyTorch
import os, numpy as np, portable_aclnn as pa, portable_aclnn._install_dir as installed
y = pa.scaled_masked_softmax(np.array([[[[0.0, 0.0, 1.0, 5.0]]]], np.float32), np.array([[[[0, 0, 0, 1]]]], bool))
e = np.exp([0.0, 0.0, 1.0]); expected = np.append(e / e.sum(), 0.0)
assert np.allclose(y, expected, rtol=1e-6, atol=1e-7), y
assert os.path.exists(os.path.join(installed.LIBRARY_DIR, "libopapi.so")), installed.LIBRARY_DIR
print("python package: softmax", y.ravel(), "with the libraries of", os.path.realpath(installed.LIBRARY_DIR))
') || fail "the installed Python package failed"
fi

echo "install test PASSED"
