# shellcheck shell=bash
# Sourced by demo.sh and test.sh: the one configuration of build/ that both use, so that running one after the other
# builds only what the second needs (a different flag would rebuild everything), and the malloc setting both run
# with (pacl_reuse_big_blocks, below). Release, warnings as errors, and the CUDA backend when nvcc is found (on the
# PATH, or /usr/local/cuda/bin/nvcc), for sm_90: PACL_CUDA=ON in the environment makes a missing nvcc an error,
# PACL_CUDA=OFF leaves the backend out. Prints which it built.

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

# pacl_reuse_big_blocks: exports GLIBC_TUNABLES (unless set) for the programs run next. The suites and the demo
# allocate and free vectors of megabytes over and over. By default glibc maps each block above a moving threshold
# fresh from the kernel and unmaps it on free, so every such vector costs its page faults again, expensive on a VM
# (a fifth of the demo's time). A fixed 32 MiB threshold and a heap that keeps up to 256 MiB free at its top make
# those blocks reuse memory (a process keeps at most 256 MiB of freed heap); bigger ones (the big-tensor tests') are
# still mapped and returned. (glibc only; ignored elsewhere and under the sanitizers, whose allocator is their own.)
pacl_reuse_big_blocks() {
  export GLIBC_TUNABLES="${GLIBC_TUNABLES:-glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=268435456:glibc.malloc.top_pad=67108864}"
}
