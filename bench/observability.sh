#!/usr/bin/env bash
# What looking inside a run costs and whether it names the right rank, on one node:
#   1. tracing's cost: bench_sync on 2 ranks alternates the blocking ring with and without the trace recorder
#      (--methods ring,ring+traced, rows ring and ring-traced) inside one run, --reps runs; the host's cross-core
#      state (bench_allreduce's xcore at 1 MiB) is probed before and after each, so a run that saw the slow state is
#      marked, not mixed in silently;
#   2. the slow-rank report: --runs runs of train on --np ranks with --straggler RANK:MS, and --runs without, each
#      with --slow-ranks: how often the injected rank was named, and how often a rank was named without one;
#   3. clock alignment: the offset error bounds every traced run printed (ping-pongs with rank 0, before and after).
# Usage: bench/observability.sh [--reps 3] [--steps 6144] [--block 32] [--runs 10] [--np 4] [--straggler 3:5]
#                               [--out DIR]
# Writes into DIR (default results/observability-DATE): trace_cost.csv (rep,method,timed,compute_us,sync_us,step_us,
# xcore_before_us,xcore_after_us), straggler.csv (run,injected,named), clock.csv (source,rank,error_us), the summary
# observability.txt and logs/observability/. Exit status 1 if a run failed.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

reps=3
steps=6144
block=32
runs=10
np=4
straggler=3:5
out=""
parse_flags observability.sh \
  "--reps reps uint 1" \
  "--steps steps uint 64" \
  "--block block uint 8" \
  "--runs runs uint 1" \
  "--np np uint 2" \
  "--straggler straggler match ^[0-9]+:[0-9.]+$ --straggler is RANK:MS, got '%s'" \
  "--out out" \
  -- "$@"
slow_rank="${straggler%%:*}"
[ "$slow_rank" -lt "$np" ] || die "--straggler $straggler: rank $slow_rank is not one of --np $np ranks"
need_bins bench_sync bench_allreduce train
mpi_setup
driver_results observability trace_cost.csv straggler.csv clock.csv

ncores=$(cores)
over=""
[ "$np" -le "$ncores" ] || over=" (OVERSUBSCRIBED: $np ranks on $ncores cores)"
failed=()

# run NAME LIMIT NP CMD...: one launch, its output in the log NAME; a failure is recorded and the driver goes on.
run() {
  local name="$1" limit="$2" n="$3" rc=0
  shift 3
  mpirun_flags "$n"
  run_limited "$limit" "$logs/$name.log" "$MPIEXEC" -n "$n" "${MPIRUN_FLAGS[@]}" "$@" || rc=$?
  check_run "$name" "$rc" "$limit" "$logs/$name.log" || return 1
}

# The host's cross-core state now (scripts/common.sh xcore_probe), us.
probe() { xcore_probe "$logs/probe_$1.log"; }

# Rank r's clock error bounds from a traced run's log ("rank 1: start +3.1 us +- 4.2 us, end ... +- 0.6 us").
clock_rows() {
  sed -n 's/^  rank \([0-9]*\): start .* +- \([0-9.]*\) us, end .* +- \([0-9.]*\) us.*/\1 \2 \3/p' "$logs/$1.log" |
    while read -r rank a b; do echo "$1,$rank,$a"; echo "$1,$rank,$b"; done
}

echo "rep,method,timed,compute_us,sync_us,step_us,xcore_before_us,xcore_after_us" >"$out/trace_cost.csv"
echo "source,rank,error_us" >"$out/clock.csv"
for rep in $(seq 1 "$reps"); do
  before="$(probe "before_$rep")"
  run "cost_$rep" 1200 2 "$BIN/bench_sync" --methods ring,ring+traced --batch 32 --hidden 128 --steps "$steps" \
    --block "$block" --trace "$work/cost_$rep.json" || continue
  after="$(probe "after_$rep")"
  awk -v r="$rep" -v b="$before" -v a="$after" '(NF == 7 || NF == 8) && $2 ~ /^[0-9]+$/ {
      printf "%s,%s,%s,%s,%s,%s,%s,%s\n", r, $1, $2, $3, $4, $6, b, a }' "$logs/cost_$rep.log" >>"$out/trace_cost.csv"
  clock_rows "cost_$rep" >>"$out/clock.csv"
done

echo "run,injected,named" >"$out/straggler.csv"
for i in $(seq 1 "$runs"); do
  for injected in "$slow_rank" none; do
    name="slow_${i}_$injected"
    extra=()
    [ "$injected" = none ] || extra=(--straggler "$straggler")
    run "$name" 300 "$np" "$BIN/train" --sync ring --model mlp --hidden 128 --batch 32 --epochs 1 \
      --iterations-per-epoch 200 --quiet --slow-ranks --trace "$work/$name.json" "${extra[@]+"${extra[@]}"}" || continue
    named="$(sed -n 's/^rank \([0-9]*\) was last into.*/\1/p' "$logs/$name.log")"
    echo "$i,$injected,${named:-none}" >>"$out/straggler.csv"
    clock_rows "$name" >>"$out/clock.csv"
  done
done

{
  results_header "bench/observability.sh"
  echo "## Tracing's cost: bench_sync, 2 ranks, MLP-128, batch 32, ring vs ring-traced alternated in blocks of $block"
  awk -F, 'NR == 1 { next } { step[$1, $2] = $6; b[$1] = $7; a[$1] = $8; if ($1 > n) n = $1 }
    END { for (r = 1; r <= n; r++) if ((r, "ring") in step)
      printf "rep %d: ring %.1f us, ring-traced %.1f us: %+.2f%%  (xcore 1 MiB before %s us, after %s us)\n", r,
        step[r, "ring"], step[r, "ring-traced"], 100 * (step[r, "ring-traced"] / step[r, "ring"] - 1), b[r], a[r] }' \
    "$out/trace_cost.csv"
  echo "## The slow-rank report: train, $np ranks$over, ring, MLP-128, batch 32, 200 steps; straggler $straggler"
  awk -F, -v s="$slow_rank" 'NR == 1 { next } $2 == s { n1++; ok += $3 == s } $2 == "none" { n0++; quiet += $3 == "none" }
    END { printf "injected rank %s named in %d of %d runs; no rank named in %d of %d runs without a straggler\n",
      s, ok, n1, quiet, n0 }' "$out/straggler.csv"
  echo "## Clock alignment: error bounds (half the shortest ping-pong round trip), every traced run, every rank"
  for group in "cost:2 ranks" "slow:$np ranks$over"; do
    grep "^${group%%:*}_" "$out/clock.csv" | cut -d, -f3 | sort -g | awk -v g="${group#*:}" '{ v[++n] = $1 }
      END { if (!n) { print g ": no clock lines"; exit }
        printf "%s: %d bounds, median %.1f us, max %.1f us\n", g, n, v[int((n + 1) / 2)], v[n] }'
  done
} >"$out/observability.txt"
cat "$out/observability.txt"
exit_if_failed "run(s) failed"
