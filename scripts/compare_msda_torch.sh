#!/usr/bin/env bash
# MultiScaleDeformableAttention against PyTorch on this machine, in one run: builds aclnn_bench (Release, in build/
# or $PACL_BUILD_DIR), times our Msda cases, then PyTorch's pure-PyTorch composite (per-level grid_sample, weighted
# sum; autograd for the backward) on the same cases with the same thread count (bench/torch_msda.py, Debian's
# python3-torch), and prints the speed-up table. Installs the missing Debian 12 packages with apt-get (root or sudo
# needed for that). Without an importable torch it prints our times alone and says the comparison was skipped.
#
#   scripts/compare_msda_torch.sh [--threads N] [--filter REGEX] [--repetitions R]
#
# --threads: ACLNN_NUM_THREADS for aclnn_bench and torch.set_num_threads for PyTorch (default 2);
# --filter: only the cases whose name matches (e.g. 'Backward/FLOAT/encoder'); --repetitions: per side (default 5).
set -euo pipefail
# shellcheck source=scripts/torch_comparison.sh
source "$(dirname "${BASH_SOURCE[0]}")/torch_comparison.sh"
pacl_compare_with_torch Msda bench/torch_msda.py optional "$@"
