#!/usr/bin/env bash
# The Python package as a user installs it (CI runs this from the repository root): in a fresh virtual environment
# (Debian's /usr/bin/python3 -m venv --system-site-packages, so numpy, torch and pytest are python3-numpy,
# python3-torch and python3-pytest from apt), `pip wheel .` offline (the repository's own build backend: CMake
# builds the libraries in a temporary directory; the CUDA backend when nvcc is found, or as PORTABLE_ACLNN_CUDA says),
# the wheel's size and contents, `pip wheel ./python` (the pure-Python wheel), `pip install` of the first wheel, a
# check that neither build wrote into the source tree (git status --ignored), then
# every test of tests/python (the package's, the DETR drop-in's, the 2-process DDP one) and each operator's
# src/ops/<op>/test/test_<op>_python.py copied to a directory
# outside the source tree and run there against the installed package, with PYTHONPATH and
# PORTABLE_ACLNN_LIBRARY_DIR unset. Exit status non-zero on any failure. Installs python3-venv, python3-numpy,
# python3-torch and python3-pytest when missing (apt-get; root or sudo).
#
#   scripts/python_package_check.sh                  # PORTABLE_ACLNN_CUDA=AUTO|ON|OFF, as pip install . takes it
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
source "${root}/scripts/packages.sh"
pacl_ensure_packages python3-venv python3-numpy python3-torch python3-pytest cmake ninja-build g++ pkg-config \
  libhwy-dev

python=/usr/bin/python3
work="$(mktemp -d "${TMPDIR:-/tmp}/portable-aclnn-package.XXXXXX")"
trap 'rm -rf "${work}"' EXIT
tree_before="$(git status --porcelain --ignored 2> /dev/null || true)"

echo "=== a fresh virtual environment (${python} -m venv --system-site-packages)"
"${python}" -m venv --system-site-packages "${work}/venv"
venv_python="${work}/venv/bin/python"

echo "=== pip wheel . (offline, CUDA backend: ${PORTABLE_ACLNN_CUDA:-AUTO})"
start=$(date +%s)
"${venv_python}" -m pip wheel --no-index --no-deps --wheel-dir "${work}/wheels" "${root}"
build_seconds=$(( $(date +%s) - start ))
wheel="$(ls "${work}"/wheels/portable_aclnn-*.whl)"

echo "=== the wheel"
"${venv_python}" - "${wheel}" << 'EOF'
import os, sys, zipfile
path = sys.argv[1]
with zipfile.ZipFile(path) as wheel:
    for info in wheel.infolist():
        print(f"{info.file_size:>10}  {info.compress_size:>10}  {info.filename}")
    total = sum(info.file_size for info in wheel.infolist())
print(f"{os.path.basename(path)}: {os.path.getsize(path) / 1e6:.2f} MB compressed, {total / 1e6:.2f} MB installed")
EOF

echo "=== pip wheel ./python (the Python files alone, a pure-Python wheel: no libraries inside)"
"${venv_python}" -m pip wheel --no-index --no-deps --wheel-dir "${work}/pure" "${root}/python"
"${venv_python}" - "${work}"/pure/portable_aclnn-*-py3-none-any.whl << 'EOF'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
assert "portable_aclnn/__init__.py" in names and not any("/lib/" in n for n in names), names
print(f"{len(names)} files, no libraries")
EOF

echo "=== pip install of the wheel"
start=$(date +%s)
"${venv_python}" -m pip install --no-index "${wheel}"
install_seconds=$(( $(date +%s) - start ))
cuda_built="$(cd "${work}" && env -u PYTHONPATH "${venv_python}" -c \
  'from portable_aclnn import _build_info; print("ON" if _build_info.CUDA else "OFF")')"
echo "installed; its CUDA backend: ${cuda_built}"

echo "=== the source tree is as it was (git status --ignored)"
tree_after="$(git status --porcelain --ignored 2> /dev/null || true)"
if [[ "${tree_before}" != "${tree_after}" ]]; then
  echo "the package build wrote into the source tree:" >&2
  diff <(echo "${tree_before}") <(echo "${tree_after}") >&2 || true
  exit 1
fi

echo "=== tests/python against the installed package, from ${work}/tests"
cp -r "${root}/tests/python" "${work}/tests"
cp "${root}"/src/ops/*/test/test_*_python.py "${work}/tests/"  # each operator's; package_test_util beside them
cd "${work}/tests"
start=$(date +%s)
status=0
env -u PYTHONPATH -u PORTABLE_ACLNN_LIBRARY_DIR PORTABLE_ACLNN_EXPECT_INSTALLED=1 \
  "${venv_python}" -m pytest -q -rs -p no:cacheprovider . || status=$?
test_seconds=$(( $(date +%s) - start ))

echo "=== summary: wheel (CUDA backend ${cuda_built}) built in ${build_seconds} s, installed in ${install_seconds} s," \
     "$(du -k "${wheel}" | cut -f1) KiB ($(basename "${wheel}")); tests ${test_seconds} s, exit status ${status}"
exit "${status}"
