# shellcheck shell=bash
# Sourced by demo.sh and test.sh: the one configuration of build/ that both use, so that running one after the other
# builds only what the second needs (a different flag would rebuild everything). Release, warnings as errors, and the
# CUDA backend when nvcc is found (on the PATH, or /usr/local/cuda/bin/nvcc), for sm_90: PACL_CUDA=ON in the
# environment makes a missing nvcc an error, PACL_CUDA=OFF leaves the backend out. Prints which it built.

# pacl_configure_build ROOT BUILD_DIR
pacl_configure_build() {
  local root="$1" build="$2"
  local cuda_args=(-DPACL_CUDA="${PACL_CUDA:-AUTO}")
  if ! command -v nvcc > /dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
    cuda_args+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
  fi
  cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPACL_WARNINGS_AS_ERRORS=ON \
    "${cuda_args[@]}" > "${build}.configure.log" 2>&1 || { cat "${build}.configure.log"; return 1; }
  grep -E "portable-aclnn CUDA backend" "${build}.configure.log" | sed 's/^-- /=== /'
  rm -f "${build}.configure.log"
}
