#!/usr/bin/env bash
# GridSampler2D against PyTorch on this machine, in one run: builds aclnn_bench (Release, in build/ or
# $PACL_BUILD_DIR), times our GridSampler2D cases, then PyTorch's CPU grid_sample / grid_sampler_2d_backward on the
# same cases with the same thread count (bench/torch_grid_sampler2d.py, Debian's python3-torch), and prints the
# speed-up table. Installs the missing Debian 12 packages with apt-get (root or sudo needed for that).
#
#   scripts/compare_grid_sampler_torch.sh [--threads N] [--filter REGEX] [--repetitions R]
#
# --threads: ACLNN_NUM_THREADS for aclnn_bench and torch.set_num_threads for PyTorch (default 2);
# --filter: only the cases whose name matches (e.g. 'Backward.*4x32'); --repetitions: per side (default 5).
set -euo pipefail
# shellcheck source=scripts/torch_comparison.sh
source "$(dirname "${BASH_SOURCE[0]}")/torch_comparison.sh"
pacl_compare_with_torch GridSampler2D bench/torch_grid_sampler2d.py required "$@"
