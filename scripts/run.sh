#!/usr/bin/env bash
# The main job: installs what is missing, builds, fetches MNIST, trains the MLP on real MNIST with every sync
# method on this machine's cores, and prints one comparison table. Results go to results/run-DATE/.
# Usage: scripts/run.sh [--np N] [--epochs E] [--batch B]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

np=$(( $(cores) < 2 ? 2 : $(cores) ))
epochs=5
batch=32
while [ $# -gt 0 ]; do
  case "$1" in
    --np) np="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    *) die "run.sh: unknown option '$1' (use --np N, --epochs E, --batch B)" ;;
  esac
done

"$GRADSYNC_ROOT/scripts/setup.sh"
"$GRADSYNC_ROOT/scripts/fetch_mnist.sh"
out="$GRADSYNC_ROOT/results/run-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
csv="$out/train.csv"
common=(--model mlp --hidden 128 --epochs "$epochs" --batch "$batch" --lr 0.1 --iterations-per-epoch auto --csv "$csv")
note=""
[ "$np" -gt "$(cores)" ] && note=" (oversubscribed: $np ranks on $(cores) cores; timings are not honest)"

say "serial baseline"
"$BIN/train" --sync serial "${common[@]}" --quiet
for method in "ring" "mpi" "ps --ps-mode bsp" "ps --ps-mode ssp --staleness 2" "ring --average-every 4"; do
  say "mpirun -n $np train --sync $method$note"
  # shellcheck disable=SC2086
  mpirun -n "$np" "${MPIRUN_FLAGS[@]}" "$BIN/train" --sync $method "${common[@]}" --quiet
done
echo
echo "MNIST, MLP 784-128-10, $epochs epochs, batch $batch per worker, constant total work$note"
"$GRADSYNC_ROOT/bench/compare_table.sh" "$csv"
echo "results: $csv"
