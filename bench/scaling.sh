#!/usr/bin/env bash
# Scaling benchmark: trains the MLP (or, with --model softmax, softmax regression) on MNIST for every (np, method)
# at constant total work (one pass over the training set per epoch, split across the workers: the lab's
# convention), R times each, and reduces the runs to one median row per point. The serial run is always measured
# first: it is the baseline of every speedup.
# Usage: bench/scaling.sh [--np-list "1 2 3 4"] [--methods "ring mpi ps ps+mode=ssp+staleness=2 ring+average=4"]
#                         [--epochs E] [--batch B] [--reps R] [--model mlp|softmax] [--hostfile F] [--out DIR]
# Methods are train's sync specs (train --spec; train --help lists the modifiers): ring, mpi, ring-bf16, ps (bsp),
# ps+mode=asp, ps+mode=ssp+staleness=S, ps+servers=K, ring+average=H, gossip+topology=exp1, ring+buckets, ... A
# method runs at the np of --np-list that train accepts it on (ps+servers=K: K + 1 and up); the tables and CSVs name
# it as train does (ps-ssp2, ring-avg4).
# Writes into DIR (default results/scaling-DATE): train.csv (a row per run), epochs.csv (a row per epoch),
# scaling.csv (a row per point: method,np,workers,oversubscribed,wall_s,speedup,efficiency,compute_s,sync_s,
# steps,test_accuracy,wall_min_s,wall_max_s,runs,left_out,host_state), train_median.csv and epochs_median.csv (the
# median run of each point: what the charts draw, see plots/make_charts.sh), host_state.csv (run,method,np,rep,
# xcore_before_us,xcore_after_us: train.csv's row run, between two cross-core probes), host.txt (the machine) and
# logs/scaling/ (each run's output). Refuses a DIR that already holds these.
# The host's state: a cross-core probe (scripts/common.sh xcore_probe) before the first run and after each. A run
# whose probes are both within 2x the fastest probe of the whole driver saw the fast state, both above it the
# slow one, one of each a change. Each point's median and its runs column count only the runs in the state most
# of its runs saw (host_state); the others are listed under the table and counted in left_out, never mixed in
# silently. wall_min_s and wall_max_s range over all its runs. With --hostfile the ranks are not on this node's
# cores: no probes (host_state "unprobed").
# Progress goes to stderr, the final table to stdout. Failed or timed-out runs are listed and make the exit
# status 1; the points that did run are still written.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

TRAIN_ROWS=60000                                  # MNIST training images: per-worker steps follow from it

np_list="1 2 3 4"
methods="ring mpi ps ps+mode=ssp+staleness=2 ring+average=4"
epochs=5
batch=32
reps=3
model=mlp
hostfile=""
out=""
parse_flags scaling.sh \
  "--np-list np_list" \
  "--methods methods" \
  "--epochs epochs uint 1" \
  "--batch batch uint 1" \
  "--reps reps uint 1" \
  "--model model" \
  "--hostfile hostfile" \
  "--out out" \
  -- "$@"
case "$model" in
  mlp) MODEL=(--model mlp --hidden 128); model_name="MLP 784-128-10" ;;
  softmax) MODEL=(--model softmax); model_name="softmax regression 784-10" ;;
  *) die "scaling.sh: --model '$model': expected mlp or softmax" ;;
esac
MODEL+=(--lr 0.1 --iterations-per-epoch auto)

read_np_list "$np_list" 1
need_bins train bench_allreduce
read -ra toks <<<"$methods"
# Each spec's name and fewest ranks, as train says (scripts/common.sh spec_run).
declare -A name_of min_np_of
for m in serial "${toks[@]}"; do
  spec_run "$m"
  name_of[$m]="$run_name"
  min_np_of[$m]="$run_min_np"
done
for m in "${toks[@]}"; do
  [ "${name_of[$m]}" != serial ] || die "--methods: serial is always measured; list only the parallel methods"
done
mpi_setup
mpi_extra=()
if [ -n "$hostfile" ]; then
  [ -r "$hostfile" ] || die "--hostfile: cannot read '$hostfile'"
  hostfile_flags "$(cd "$(dirname "$hostfile")" && pwd)/$(basename "$hostfile")"
  mpi_extra=("${HOSTFILE_FLAGS[@]}")
fi
driver_results scaling train.csv epochs.csv scaling.csv train_median.csv epochs_median.csv host_state.csv

ncores=$(cores)
# Oversubscribed ranks time-share cores, so their timings describe the scheduler, not the method. A hostfile
# spreads ranks over machines: the caller vouches for enough slots.
oversub() { [ -z "$hostfile" ] && [ "$1" -gt "$ncores" ]; }
# Generous: a serial epoch takes about a second here, an oversubscribed one a few.
limit=$((120 + 60 * epochs))

# The run list: rep is the outer loop so slow drift of the machine (other users, heat) spreads over all points.
runs=()
skipped=()
for ((r = 1; r <= reps; r++)); do
  runs+=("1 serial $r")
  for n in "${nps[@]}"; do
    for m in "${toks[@]}"; do
      if [ "$n" -lt "${min_np_of[$m]}" ]; then
        [ "$r" -gt 1 ] || skipped+=("$m at np=$n (train accepts it on ${min_np_of[$m]} ranks and more)")
        continue
      fi
      runs+=("$n $m $r")
    done
  done
done
for s in "${skipped[@]+"${skipped[@]}"}"; do say "skip $s"; done
note=""
for n in "${nps[@]}"; do
  if oversub "$n"; then note=" (np > $ncores cores is oversubscribed: those timings are not honest)"; fi
done
say "scaling: ${#runs[@]} runs, $epochs epoch(s), batch $batch per worker, $reps rep(s), results in $out$note"
[ -n "$hostfile" ] || say "parallel runs that fit the cores: $MPIEXEC ${TRAINING_SHM_FLAGS[*]} (scripts/mpi.sh)"

# probe TAG: the cross-core probe now (us), logged as logs/scaling/probe_TAG; "unprobed" with a hostfile.
probe() { if [ -n "$hostfile" ]; then echo unprobed; else xcore_probe "$logs/probe_$1.log"; fi; }
echo "run,method,np,rep,xcore_before_us,xcore_after_us" >"$out/host_state.csv"
before="$(probe 0)"
failed=()
i=0
row=0
for run in "${runs[@]}"; do
  read -r n m r <<<"$run"
  i=$((i + 1))
  name="${name_of[$m]}"
  tag="$name-np$n-r$r"
  csv="$work/$tag.csv"
  ecsv="$work/$tag.epochs.csv"
  cmd=("$BIN/train" --spec "$m" "${MODEL[@]}" --epochs "$epochs" --batch "$batch" --csv "$csv" --epoch-csv "$ecsv")
  if oversub "$n"; then
    mpirun_flags "$n"
  elif [ -n "$hostfile" ]; then
    mpirun_flags "$n" bound
  else
    mpirun_flags "$n" bound
    MPIRUN_FLAGS+=("${TRAINING_SHM_FLAGS[@]}")  # one node, ranks on their own cores
  fi
  [ "$name" = serial ] || cmd=("$MPIEXEC" -n "$n" "${MPIRUN_FLAGS[@]}" "${mpi_extra[@]+"${mpi_extra[@]}"}" "${cmd[@]}")
  where="[$i/${#runs[@]}] $name np=$n rep $r/$reps"
  rc=0
  run_limited "$limit" "$logs/$tag.log" "${cmd[@]}" || rc=$?
  after="$(probe "$i")"
  prev="$before"
  before="$after"
  wrote=""
  if [ "$(lines "$csv")" -ne 2 ]; then
    wrote="wrote no CSV row"
  elif [ "$(lines "$ecsv")" -ne $((epochs + 1)) ]; then
    wrote="wrote $(( $(lines "$ecsv") > 0 ? $(lines "$ecsv") - 1 : 0 )) epoch rows, not $epochs"
  fi
  if ! check_run "$where" "$rc" "$limit" "$logs/$tag.log" "$wrote"; then
    say_failed "$logs/$tag.log"
    [ "$name" != serial ] || die "the serial baseline failed, so no speedup can be computed (log: $logs/$tag.log)"
    continue
  fi
  append_rows "$csv" "$out/train.csv"
  append_rows "$ecsv" "$out/epochs.csv"
  row=$((row + 1))
  echo "$row,$name,$n,$r,$prev,$after" >>"$out/host_state.csv"
  awk -F, -v w="$where" -v tok="$name" -v ov="$(if oversub "$n"; then echo ", oversubscribed"; fi)" \
    -v xc="$(if [ -z "$hostfile" ]; then echo ", xcore $prev/$after us"; fi)" '
    NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { b = $c["compute_s"] + $c["comm_s"]
      printf "==> %s%s: wall %.2fs, acc %.4f, sync %.0f%%%s%s\n", w, ($c["sync"] == tok ? "" : " (" $c["sync"] ")"),
             $c["wall_s"], $c["test_accuracy"], (b > 0 ? 100 * $c["comm_s"] / b : 0), ov, xc }' "$csv" >&2
done

[ -s "$out/train.csv" ] || die "no run succeeded; see the logs in $logs"
awk -F, -v ncores="$ncores" -v hostfile="$hostfile" -v rows="$TRAIN_ROWS" -v runlist="$work/median_runs" \
  -v oddlist="$work/odd_runs" -f "$GRADSYNC_ROOT/scripts/host_state.awk" -f "$GRADSYNC_ROOT/bench/scaling_median.awk" \
  "$out/host_state.csv" "$out/train.csv" >"$work/scaling.csv"
# The median run of each point, whole: charts that draw runs (train_time, time_to_accuracy) show one per point
# instead of every repetition. Run k is train.csv data row k and epochs.csv data rows (k-1)*E+1 .. k*E, as each
# run appended one row and exactly E epoch rows.
awk -F, 'NR == FNR { want[++n] = $1; next }
  FNR == 1 { print; next }
  { line[FNR - 1] = $0 }
  END { for (i = 1; i <= n; i++) print line[want[i]] }' "$work/median_runs" "$out/train.csv" >"$work/train_median.csv"
awk -F, -v e="$epochs" 'NR == FNR { want[++n] = $1; next }
  FNR == 1 { print; next }
  { line[FNR - 1] = $0 }
  END { for (i = 1; i <= n; i++) for (j = 1; j <= e; j++) print line[(want[i] - 1) * e + j] }' \
  "$work/median_runs" "$out/epochs.csv" >"$work/epochs_median.csv"
for f in scaling train_median epochs_median; do mv "$work/$f.csv" "$out/$f.csv"; done

cat "$out/host.txt"
echo "MNIST, $model_name, $epochs epoch(s), batch $batch per worker, constant total work, median of $reps run(s)"
"$GRADSYNC_ROOT/bench/compare_table.sh" "$out/scaling.csv"
if [ -s "$work/odd_runs" ]; then
  echo "runs that saw another host state than the rest of their point (in the range, not in the median):"
  sed 's/^/  /' "$work/odd_runs"
fi
echo "results: $out/scaling.csv (medians), $out/train.csv (every run), $out/epochs.csv (every epoch)"
exit_if_failed "run(s) failed"
