#!/usr/bin/env bash
# The all-views figure (plots/all_views.py, plots/all_views.gp): every allreduce method's time over MPI_Allreduce's
# against the message size, in three views of the network: one node (np 2), 4 emulated hosts at 1 Gbit/s, and the
# simulated 10 Gbit/s fat tree at p = 256, the largest p at which every method, the ring included, was simulated.
# Usage: plots/all_views.sh [OUT_DIR]   (default plots/results/all-views)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${1:-plots/results/all-views}"
# Neither measured folder records its CPU; plots/results/compute, measured on the same VM the same day, names it.
cpu="AMD EPYC family 0x1a model 0x02"
python3 plots/all_views.py --out "$out" \
  --subtitle "measured 2026-11-23 and simulated 2026-11-27 on an $cpu (AVX-512); mpi in SMPI: its Open MPI selection" \
  "one node, 2 ranks|plots/results/algorithms-1node/allreduce_np2.csv|plots/results/algorithms-1node|$cpu|2026-11-23" \
  "4 emulated hosts at 1 Gbit/s|plots/results/algorithms/flat.csv|plots/results/algorithms (flat.csv)|$cpu|2026-11-23" \
  "fat tree of 10 Gbit/s links (SMPI)|plots/results/sim-scale/fattree-10g-1pn/np256.csv|plots/results/sim-scale/fattree-10g-1pn|SimGrid 3.32 on an $cpu|2026-11-27"
