#!/usr/bin/env bash
# The all-views figure (plots/all_views.py, plots/all_views.gp): every allreduce method's time over MPI_Allreduce's
# against the message size, in three views of the network: one node (np 2), 4 emulated hosts at 1 Gbit/s, and the
# simulated 10 Gbit/s fat tree at p = 256, the largest p at which every method, the ring included, was simulated.
# Usage: plots/all_views.sh [OUT_DIR]   (default plots/results/all-views)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${1:-plots/results/all-views}"
# The measured folders name their CPU (host.txt); the simulation's computation was timed on another CPU.
cpu="AMD EPYC family 0x19 model 0x11"
sim_cpu="AMD EPYC family 0x1a model 0x02"
python3 plots/all_views.py --out "$out" \
  --subtitle "measured 2026-11-28 on an $cpu (AVX-512/256), simulated 2026-11-27 on an $sim_cpu; mpi in SMPI: its Open MPI selection" \
  "one node, 2 ranks|plots/results/allreduce-1node/allreduce_np2.csv|plots/results/allreduce-1node|$cpu|2026-11-28" \
  "4 emulated hosts at 1 Gbit/s|plots/results/algorithms-4hosts/flat.csv|plots/results/algorithms-4hosts (flat.csv)|$cpu|2026-11-28" \
  "fat tree of 10 Gbit/s links (SMPI)|plots/results/sim-scale/fattree-10g-1pn/np256.csv|plots/results/sim-scale/fattree-10g-1pn|SimGrid 3.32 on an $sim_cpu|2026-11-27"
