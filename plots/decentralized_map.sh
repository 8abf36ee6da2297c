#!/usr/bin/env bash
# The decentralized winners map (plots/decentralized_map.py) from the results the repository holds: 4 emulated hosts
# (uniform, a 5 ms straggler, one host at 100 Mbit/s, and CHOCO-SGD's run there; time to 97 % test accuracy) and the SMPI simulation at p = 64
# and 256 (flat 1 Gbit/s, one slow host, the 10 Gbit/s fat tree; time of a step).
# Usage: plots/decentralized_map.sh [OUT_DIR]   (default plots/results/decentralized-map)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${1:-plots/results/decentralized-map}"
r=plots/results
sim=$r/sim-gossip-fattree/after/gossip_scale.csv
python3 plots/decentralized_map.py --out "$out" \
  --subtitle "4 emulated hosts (4 ranks on 2 cores) and SMPI; AMD EPYC family 0x19 model 0x11; 2026-11-27/28" \
  "4 hosts, 1 Gbit/s: time to 97 %=$r/decentralized-uniform-97/decentralized.txt" \
  "4 hosts, a 5 ms straggler: time to 97 %=$r/decentralized-straggler-97/decentralized.txt" \
  "4 hosts, one at 100 Mbit/s: time to 97 %=$r/decentralized-slowhost-97/quiet/decentralized.txt" \
  "4 hosts, 100 Mbit/s, CHOCO run: to 97 %=$r/decentralized-choco-slowhost/decentralized.txt" \
  "SMPI p = 64, flat 1 Gbit/s: step=$sim@flat-1g,64" \
  "SMPI p = 64, one slow host: step=$sim@flat-1g-slow3,64" \
  "SMPI p = 64, fat tree 10 Gbit/s: step=$sim@fattree-10g-1pn,64" \
  "SMPI p = 256, flat 1 Gbit/s: step=$sim@flat-1g,256" \
  "SMPI p = 256, one slow host: step=$sim@flat-1g-slow3,256" \
  "SMPI p = 256, fat tree 10 Gbit/s: step=$sim@fattree-10g-1pn,256"
