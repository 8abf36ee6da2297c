#!/usr/bin/env bash
# Serial training time of the compute targets (MLP-128 batch 256, MLP-128 batch 32, softmax batch 32 and 256 on real
# MNIST), each configuration run on the per-shape kernel plan and on BLIS's default kernel set alone (the fixed
# choice, BLIS_ARCH_TYPE=<default set>), and with --before BIN also on another build's train (e.g. the tree before
# a change), all alternating run for run so that the host's drift hits every variant alike. One rank, one core.
# Writes train_<variant>.csv (train's --csv rows) and summary.txt (medians and ratios) to DIR.
# With --only MODEL:BATCH (e.g. mlp:32) just that configuration. The before/plan column is the median of the
# runs' own ratios (before and plan run back to back), which a drifting host moves less than a ratio of medians.
# Usage: bench/compute_train.sh --out DIR [--reps R] [--epochs E] [--before TRAIN_BINARY] [--only MODEL:BATCH]
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

reps=5
epochs=5
before=""
only=""
out=""
parse_flags compute_train.sh \
  "--reps reps uint 1" \
  "--epochs epochs uint 1" \
  "--before before" \
  "--only only" \
  "--out out" \
  -- "$@"
[ -n "$out" ] || die "--out DIR is required"
need_bins train
[ -z "$before" ] || [ -x "$before" ] || die "--before: '$before' is not an executable"
mkdir -p "$out"
host_txt "$out" "bench/compute_train.sh (serial train runs, alternated)"
configs=("mlp 256" "mlp 32" "softmax 32" "softmax 256")
if [ -n "$only" ]; then
  [[ "$only" =~ ^(mlp|softmax):[0-9]+$ ]] || die "--only: '$only' is not MODEL:BATCH (e.g. mlp:32)"
  configs=("${only/:/ }")
fi
# BLIS's default set for this process, as the run header names it.
default_set="$("$BIN/train" --model softmax --epochs 1 --iterations-per-epoch 1 --quiet |
  sed -n 's/^BLIS kernels: \([a-z0-9]*\) .*/\1/p')"
[ -n "$default_set" ] || die "could not read BLIS's kernel set from the run header of $BIN/train"
variants=(plan fixed)
[ -z "$before" ] || variants+=(before)

run() {  # variant model batch
  local cmd=("$BIN/train")
  [ "$1" != before ] || cmd=("$before")
  cmd+=(--data "$GRADSYNC_ROOT/data/mnist" --model "$2" --batch "$3" --epochs "$epochs" --quiet --csv "$out/train_$1.csv")
  if [ "$1" = fixed ]; then BLIS_ARCH_TYPE="$default_set" "${cmd[@]}"; else "${cmd[@]}"; fi >>"$out/train.log" 2>&1
}

for ((r = 1; r <= reps; r++)); do
  for c in "${configs[@]}"; do
    read -r model batch <<<"$c"
    # Rotate which variant goes first, so none always runs on the caches another one warmed.
    for ((i = 0; i < ${#variants[@]}; i++)); do
      run "${variants[(i + r) % ${#variants[@]}]}" "$model" "$batch"
    done
  done
done

# Median wall_s (column 10) per model (2) and batch (7) of one variant's CSV.
medians() {
  awk -F, 'NR > 1 { print $2 "," $7 "," $10 }' "$1" | sort -t, -k1,1 -k2,2n -k3,3g |
    awk -F, '{ k = $1 "," $2; v[k, ++n[k]] = $3 } END { for (k in n) print k "," v[k, int((n[k] + 1) / 2)] }' | sort
}
{
  echo "serial training, $epochs epochs, real MNIST, 1 rank, median wall_s of $reps runs per variant (alternating)"
  echo "plan: per-shape kernel plan; fixed: BLIS_ARCH_TYPE=$default_set for every shape${before:+; before: $before}"
  printf '%-9s %5s' model batch
  for v in "${variants[@]}"; do printf ' %9s' "$v"; done
  printf ' %12s%s\n' "fixed/plan" "${before:+   before/plan (median of paired runs)}"
  for c in "${configs[@]}"; do
    read -r model batch <<<"$c"
    name="$model"
    [ "$model" != mlp ] || name="mlp-128"
    printf '%-9s %5s' "$name" "$batch"
    declare -A m=()
    for v in "${variants[@]}"; do
      m[$v]="$(medians "$out/train_$v.csv" | awk -F, -v k="$name,$batch" '$1 "," $2 == k { print $3 }')"
      printf ' %9.3f' "${m[$v]}"
    done
    awk -v f="${m[fixed]}" -v p="${m[plan]}" 'BEGIN { printf " %11.2fx", f / p }'
    if [ -n "$before" ]; then
      # Row i of each CSV for this configuration is run i: before and plan ran back to back.
      paste -d, <(awk -F, -v k="$name,$batch" 'NR > 1 && $2 "," $7 == k { print $10 }' "$out/train_before.csv") \
        <(awk -F, -v k="$name,$batch" 'NR > 1 && $2 "," $7 == k { print $10 }' "$out/train_plan.csv") | awk -F, '{ print $1 / $2 }' | sort -g |
        awk '{ v[++n] = $1 } END { printf " %12.3fx", (v[int((n + 1) / 2)] + v[int(n / 2) + 1]) / 2 }'
    fi
    echo
  done
} | tee "$out/summary.txt"
