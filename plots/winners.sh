#!/usr/bin/env bash
# The winners map from the measured and simulated allreduce sweeps the repository holds (plots/winners.py): one
# node at np 2, 4 emulated hosts at 1 Gbit/s, and the simulated 10 Gbit/s fat tree at p = 8 to 1024.
# Usage: plots/winners.sh [OUT_DIR]   (default plots/results/winners)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${1:-plots/results/winners}"
sim=plots/results/sim-scale/fattree-10g-1pn
views=("1 node=plots/results/allreduce-1node/allreduce_np2.csv"
       "4 emulated hosts 1 Gbit/s=plots/results/algorithms-4hosts/flat.csv")
for n in 8 16 32 64 128 256 512 1024; do
  [ ! -f "$sim/np$n.csv" ] || views+=("fat tree 10 Gbit/s (SMPI)=$sim/np$n.csv")
done
python3 plots/winners.py --out "$out" \
  --subtitle "measured 2026-11-28 on AMD EPYC family 0x19 model 0x11, simulated 2026-11-27 on family 0x1a; mpi in SMPI: its Open MPI selection" \
  "${views[@]}"
