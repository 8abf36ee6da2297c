#!/usr/bin/env bash
# Straggler experiment: one worker (the last rank) sleeps MS milliseconds every step, and each sync method shows
# what that costs: BSP and the ring wait for it every step, SSP lets the others run up to S steps ahead, ASP never
# waits. Constant total work, as in bench/scaling.sh.
# Usage: bench/straggler.sh [--ms 5] [--kind fixed|random] [--np 4] [--epochs 2] [--batch 32]
# --kind fixed: the last rank is slow at every step (a persistent straggler; every worker owns an equal share of
# the data, so no mode can finish an epoch before it). --kind random: each step one worker, drawn from the seed,
# is slow (a transient straggler: BSP pays it every step, SSP absorbs it).
#     [--methods "ps ps+mode=ssp+staleness=2 ps+mode=ssp+staleness=4 ps+mode=asp ring"] [--out DIR]
# The methods are train's sync specs (train --spec; train --help lists the modifiers); the tables name each run as
# train does (ps-bsp, ps-ssp2).
# Writes into DIR (default results/straggler-DATE): straggler.csv (train CSV, a row per run), straggler_epochs.csv
# (a row per epoch), staleness.csv (method,np,staleness_bound,images_per_s,staleness_mean,staleness_max,
# test_accuracy: the last epoch of each parameter-server run) and logs/straggler/. Prints time per epoch, staleness
# and accuracy per method. Exit status 1 if a run failed or timed out.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

TRAIN_ROWS=60000
MODEL=(--model mlp --hidden 128 --lr 0.1 --iterations-per-epoch auto)

ms=5
kind=fixed
np=4
epochs=2
batch=32
methods="ps ps+mode=ssp+staleness=2 ps+mode=ssp+staleness=4 ps+mode=asp ring"
out=""
# --np: a server and two workers at least: with one worker there is nobody to wait for the straggler.
parse_flags straggler.sh \
  "--ms ms uint" \
  "--kind kind match ^(fixed|random)$ --kind: '%s' is neither fixed nor random" \
  "--np np uint 3" \
  "--epochs epochs uint 1" \
  "--batch batch uint 1" \
  "--methods methods" \
  "--out out" \
  -- "$@"
read -ra toks <<<"$methods"
[ "${#toks[@]}" -gt 0 ] || die "--methods is empty"
need_bins train
names=()
for m in "${toks[@]}"; do
  spec_run "$m"
  [ "$run_name" != serial ] || die "--methods: serial has no other worker to wait for"
  [ "$np" -gt "$run_min_np" ] ||
    die "--methods: $m needs more than $run_min_np ranks for a straggler to have a peer (--np is $np)"
  names+=("$run_name")
done
mpi_setup

driver_results straggler straggler.csv straggler_epochs.csv staleness.csv

ncores=$(cores)
slow=$((np - 1))   # the last rank is a worker for every method (the parameter server is rank 0)
note=""
[ "$np" -le "$ncores" ] || note=" -- OVERSUBSCRIBED: $np ranks on $ncores cores, timings are not honest"
# The straggler's sleeps alone take up to ms * rows/batch per epoch; the rest is generous slack.
limit=$((120 + epochs * (60 + ms * TRAIN_ROWS / batch / 1000)))
if [ "$kind" = random ]; then who="random"; what="one random worker"; else who="$slow"; what="rank $slow"; fi
say "straggler: np=$np, $what sleeps ${ms} ms per step, $epochs epoch(s), batch $batch per worker$note"

failed=()
i=0
for m in "${toks[@]}"; do
  name="${names[$i]}"
  i=$((i + 1))
  tag="$name"
  rc=0
  mpirun_flags "$np"
  run_limited "$limit" "$logs/$tag.log" "$MPIEXEC" -n "$np" "${MPIRUN_FLAGS[@]}" "$BIN/train" --spec "$m" "${MODEL[@]}" \
    --epochs "$epochs" --batch "$batch" --straggler "$who:$ms" --csv "$work/$tag.csv" --epoch-csv "$work/$tag.epochs.csv" || rc=$?
  where="[$i/${#toks[@]}] $name np=$np"
  wrote=""
  [ "$(lines "$work/$tag.csv")" -eq 2 ] || wrote="wrote no CSV row"
  if ! check_run "$where" "$rc" "$limit" "$logs/$tag.log" "$wrote"; then
    say_failed "$logs/$tag.log"
    continue
  fi
  append_rows "$work/$tag.csv" "$out/straggler.csv"
  append_rows "$work/$tag.epochs.csv" "$out/straggler_epochs.csv"
  awk -F, -v w="$where" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { printf "==> %s: %.2f s/epoch, acc %.4f\n", w, $c["wall_s"] / $c["epochs"], $c["test_accuracy"] }' "$work/$tag.csv" >&2
done

if [ -s "$out/straggler_epochs.csv" ]; then
  # The last epoch of each run: the staleness a method settles into, not its start-up. Runs without a parameter
  # server (bound -2) have no staleness to show.
  awk -F, '
    NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i
              print "method,np,staleness_bound,images_per_s,staleness_mean,staleness_max,test_accuracy,clock_gap_max"; next }
    { k = $c["method"] SUBSEP $c["np"]; if (!(k in last)) order[++n] = k; last[k] = $0 }
    END {
      for (i = 1; i <= n; i++) {
        split(last[order[i]], f, ",")
        if (f[c["staleness_bound"]] + 0 < -1) continue
        print f[c["method"]] "," f[c["np"]] "," f[c["staleness_bound"]] "," f[c["images_per_s"]] "," \
              f[c["staleness_mean"]] "," f[c["staleness_max"]] "," f[c["test_accuracy"]] "," f[c["clock_gap_max"]]
      }
    }' "$out/straggler_epochs.csv" >"$work/staleness.csv"
  mv "$work/staleness.csv" "$out/staleness.csv"

  echo "Straggler ($kind): $what of $np ranks sleeps $ms ms per step; $epochs epoch(s), batch $batch per worker, constant total work$note"
  # Staleness comes from the last epoch; time per epoch and throughput from the whole run.
  awk -F, '
    FNR == 1 { for (i = 1; i <= NF; i++) c[FILENAME, $i] = i; next }
    FILENAME == ARGV[1] { k = $c[FILENAME, "method"]; bound[k] = $c[FILENAME, "staleness_bound"]
                          smean[k] = $c[FILENAME, "staleness_mean"]; smax[k] = $c[FILENAME, "staleness_max"]; next }
    { rows[++n] = $0; file = FILENAME }
    END {
      printf "%-10s %3s %7s %9s %9s %7s %10s %9s %7s\n", "method", "np", "workers", "s/epoch", "img/s", "bound", "stale_mean", "stale_max", "acc"
      for (r = 1; r <= n; r++) {
        split(rows[r], f, ",")
        m = f[c[file, "sync"]]
        b = !(m in bound) ? "-" : bound[m] < 0 ? "none" : bound[m]
        printf "%-10s %3d %7d %9.2f %9.0f %7s %10s %9s %7.4f\n", m, f[c[file, "np"]], f[c[file, "workers"]],
               f[c[file, "wall_s"]] / f[c[file, "epochs"]], f[c[file, "images_per_s"]], b,
               (m in bound) ? sprintf("%.2f", smean[m]) : "-", (m in bound) ? smax[m] : "-", f[c[file, "test_accuracy"]]
      }
    }' "$out/staleness.csv" "$out/straggler.csv"
  echo "results: $out/straggler.csv, $out/staleness.csv, $out/straggler_epochs.csv"
fi
exit_if_failed "run(s) failed"
