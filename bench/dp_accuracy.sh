#!/usr/bin/env bash
# Privacy against accuracy, at TensorFlow Privacy's published MNIST settings: each row of --rows (learning rate,
# noise multiplier sigma, epochs; clip 1, batch 256 of 60,000, delta 1e-5) trains --model with DP-SGD (train
# --dp-clip 1 --dp-noise SIGMA) serially and on --np ranks (--global-batch 256, --iterations-per-epoch auto so that an
# epoch is one pass of 234 steps as serially, each worker adding its share of the
# noise), and once without DP at the same settings. Epsilon comes from train's accountant (improved conversion) and
# from dp_epsilon --conversion classic, the conversion TF Privacy's table was computed with. TF Privacy's table
# (tutorials/README.md, a CNN, accuracy averaged over 10 runs): lr 0.08 sigma 1.12 60 epochs: eps 2.92, 96.6 %;
# lr 0.4 sigma 0.6 30 epochs: 9.74, 97.3 %; lr 0.32 sigma 1.2 10 epochs: 1.20, 95.0 %.
# Accuracy does not depend on timing; no time is reported.
# Usage: bench/dp_accuracy.sh [--np 2] [--model mlp] [--rows "0.08,1.12,60 0.4,0.6,30 0.32,1.2,10"] [--out DIR]
# Writes into DIR (default results/dp-accuracy-DATE): dp.csv (run,lr,sigma,epochs,test_accuracy,epsilon,
# epsilon_classic), dp.txt (the table beside TF Privacy's), logs/. Exit status 1 if a run failed.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

np=2
model=mlp
rows="0.08,1.12,60 0.4,0.6,30 0.32,1.2,10"
out=""
parse_flags dp_accuracy.sh "--np np uint 2" "--model model" "--rows rows" "--out out" -- "$@"
read -ra row_list <<<"$rows"
[ "${#row_list[@]}" -gt 0 ] || die "--rows is empty"
for r in "${row_list[@]}"; do
  [[ $r =~ ^[0-9.]+,[0-9.]+,[1-9][0-9]*$ ]] || die "--rows: '$r' is not LR,SIGMA,EPOCHS"
done
need_bins train dp_epsilon
mpi_setup
driver_results dp-accuracy dp.csv dp.txt
echo "run,lr,sigma,epochs,test_accuracy,epsilon,epsilon_classic" >"$out/dp.csv"

failed=()
for r in "${row_list[@]}"; do
  IFS=, read -r lr sigma epochs <<<"$r"
  classic="$("$BIN/dp_epsilon" --noise "$sigma" --batch 256 --examples 60000 --epochs "$epochs" --delta 1e-5 \
    --conversion classic | sed -n 's/^epsilon \([0-9.]*\) .*/\1/p')"
  for run in serial-dp ring-dp serial-nodp; do
    tag="$run-lr$lr-s$sigma-e$epochs"
    args=(--model "$model" --lr "$lr" --epochs "$epochs" --quiet)
    [ "$run" = serial-nodp ] || args+=(--dp-clip 1 --dp-noise "$sigma" --dp-delta 1e-5)
    if [ "$run" = ring-dp ]; then
      mpirun_flags "$np"
      launch=("$MPIEXEC" -n "$np" "${MPIRUN_FLAGS[@]}" "$BIN/train" --sync ring --global-batch 256 --iterations-per-epoch auto)
    else
      launch=("$BIN/train" --sync serial --batch 256)
    fi
    rc=0
    run_limited 3600 "$logs/$tag.log" "${launch[@]}" "${args[@]}" || rc=$?
    accuracy="$(sed -n 's/^done: .*test accuracy \([0-9.]*\),.*/\1/p' "$logs/$tag.log")"
    epsilon="$(sed -n 's/^privacy: epsilon \([0-9.]*\) at delta.*/\1/p' "$logs/$tag.log")"
    if [ "$rc" -ne 0 ] || [ -z "$accuracy" ]; then
      failed+=("$tag")
      say_failed "$logs/$tag.log"
      continue
    fi
    [ "$run" != serial-nodp ] || epsilon=""
    echo "$run,$lr,$sigma,$epochs,$accuracy,$epsilon,$([ "$run" = serial-nodp ] || echo "$classic")" >>"$out/dp.csv"
    say "$run lr $lr sigma $sigma $epochs epochs: accuracy $accuracy${epsilon:+, epsilon $epsilon (classic $classic)}"
  done
done

{
  results_header "dp_accuracy: DP-SGD on $model, MNIST, clip 1, batch 256 (serial, and ring on $np ranks with --global-batch 256$( [ "$np" -gt "$(cores)" ] && echo ", oversubscribed: accuracy does not depend on timing")), delta 1e-5, seed 1"
  echo "# TF Privacy's MNIST tutorial (a CNN, 10 runs averaged): 0.08,1.12,60: eps 2.92, 96.6 %; 0.4,0.6,30: 9.74, 97.3 %; 0.32,1.2,10: 1.20, 95.0 %"
  awk -F, 'NR > 1 { printf "%-12s lr %-5s sigma %-5s %3d epochs  accuracy %.4f", $1, $2, $3, $4, $5
    if ($6 != "") printf "  epsilon %.2f (classic conversion %.2f)", $6, $7
    printf "\n" }' "$out/dp.csv"
} >"$out/dp.txt"
cat "$out/dp.txt" >&2
say "results in $out"
[ "${#failed[@]}" -eq 0 ] || die "failed: ${failed[*]} (see $logs)"
