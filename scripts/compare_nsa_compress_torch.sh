#!/usr/bin/env bash
# NsaCompress against PyTorch on this machine, in one run: builds aclnn_bench (Release, in build/ or $PACL_BUILD_DIR),
# times our NsaCompress and NsaCompressGrad cases, then PyTorch's float32 composite (per sequence unfold + einsum
# with the weight, concatenated; autograd for the backward) on the same cases with the same thread count
# (bench/torch_nsa_compress.py, Debian's python3-torch), and prints the speed-up table. Installs the missing Debian 12
# packages with apt-get (root or sudo needed for that).
#
#   scripts/compare_nsa_compress_torch.sh [--threads N] [--filter REGEX] [--repetitions R]
#
# --threads: ACLNN_NUM_THREADS for aclnn_bench and torch.set_num_threads for PyTorch (default 2);
# --filter: only the cases whose name matches (e.g. 'Grad/FLOAT16/8x4096'); --repetitions: per side (default 5).
set -euo pipefail
# shellcheck source=scripts/torch_comparison.sh
source "$(dirname "${BASH_SOURCE[0]}")/torch_comparison.sh"
pacl_compare_with_torch NsaCompress bench/torch_nsa_compress.py required "$@"
