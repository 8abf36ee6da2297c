#!/usr/bin/env bash
# Collective sweep: bench_allreduce for every method (ring, ps, ps-sharded, mpi) at each np, plus MPI_Allreduce
# forced to Open MPI's ring algorithm (rows named mpi-ring), so the hand-written ring is compared with a ring of
# the same shape and not only with whatever algorithm Open MPI picks per size.
# Usage: bench/collective_sweep.sh [--np-list "2 4"] [--max-bytes 64M] [--min-bytes 4] [--step-factor 2]
#                                  [--iters N] [--out DIR]
# Writes DIR/allreduce.csv (default DIR results/collectives-DATE; columns method,np,bytes,count,chunk_bytes,
# time_us,algbw_gbps,busbw_gbps,wrong) and each run's output to DIR/logs/collectives/. Prints bench_allreduce's
# tables and a peak-bandwidth summary. Exit status 1 if a run failed or any row has wrong != 0.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

ALL_METHODS="ring,ps,ps-sharded,mpi"

np_list="2 4"
max_bytes=64M
min_bytes=4
step=2
iters=0
out=""
parse_flags collective_sweep.sh \
  "--np-list np_list" \
  "--max-bytes max_bytes match ^[0-9]+[KMG]?$ --max-bytes needs a size like 4096, 1K, 64M; got '%s'" \
  "--min-bytes min_bytes match ^[0-9]+[KMG]?$ --min-bytes needs a size like 4, 1K, 1M; got '%s'" \
  "--step-factor step above 1 --step-factor needs a number above 1, got '%s'" \
  "--iters iters uint" \
  "--out out" \
  -- "$@"
# busbw is 0 by definition at np = 1 and the parameter server needs a server and a worker.
read_np_list "$np_list" 2
need_bins bench_allreduce
mpi_setup   # FORCED_RING: MPI_Allreduce on the launcher's own ring algorithm

driver_results collectives allreduce.csv

ncores=$(cores)
# bench_allreduce moves ~1 GiB per row: minutes at 64M with oversubscribed ranks, so the limit is wide.
limit=1800
bench=("$BIN/bench_allreduce" --min-bytes "$min_bytes" --max-bytes "$max_bytes" --step-factor "$step" --iters "$iters")
failed=()
parts=()
for n in "${nps[@]}"; do
  note=""
  [ "$n" -le "$ncores" ] || note=" -- OVERSUBSCRIBED: $n ranks on $ncores cores, timings are not honest"
  mpirun_flags "$n"
  for kind in all mpi-ring; do
    if [ "$kind" = all ]; then
      cmd=("$MPIEXEC" -n "$n" "${MPIRUN_FLAGS[@]}" "${bench[@]}" --methods "$ALL_METHODS")
      what="ring, ps, ps-sharded, mpi"
    else
      cmd=("$MPIEXEC" -n "$n" "${MPIRUN_FLAGS[@]}" "${FORCED_RING[@]}" "${bench[@]}" --methods mpi)
      what="MPI_Allreduce forced to the ring algorithm (mpi-ring)"
    fi
    tag="np$n-$kind"
    say "bench_allreduce np=$n: $what, $min_bytes..$max_bytes$note"
    rc=0
    run_limited "$limit" "$logs/$tag.log" "${cmd[@]}" --csv "$work/$tag.csv" || rc=$?
    echo
    echo "## np=$n: $what$note"
    cat "$logs/$tag.log"
    wrote=""
    [ "$(lines "$work/$tag.csv")" -ge 2 ] || wrote="wrote no CSV rows"
    if check_run "np=$n $kind" "$rc" "$limit" "$logs/$tag.log" "$wrote"; then
      parts+=("$work/$tag.csv")
    else
      say "FAILED ${failed[-1]}"
    fi
  done
done

if [ "${#parts[@]}" -gt 0 ]; then
  awk 'FNR == 1 && NR > 1 { next } { print }' "${parts[@]}" >"$work/allreduce.csv"
  mv "$work/allreduce.csv" "$out/allreduce.csv"
  echo
  echo "Peak bus bandwidth per method (GB/s; busbw = algbw * 2(P-1)/P):"
  awk -F, -v ncores="$ncores" '
    NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    {
      k = $c["np"] SUBSEP $c["method"]
      if (!(k in peak)) { keys[++nk] = k; peak[k] = -1 }
      if ($c["busbw_gbps"] + 0 > peak[k]) { peak[k] = $c["busbw_gbps"] + 0; at[k] = $c["bytes"] }
      if ($c["bytes"] + 0 >= big[k]) { big[k] = $c["bytes"] + 0; bigbw[k] = $c["busbw_gbps"] + 0 }
      wrong += $c["wrong"]
    }
    END {
      printf "  %3s  %-12s %10s %12s %14s\n", "np", "method", "peak", "at bytes", "at largest"
      for (i = 1; i <= nk; i++) {
        split(keys[i], f, SUBSEP)
        printf "  %3d  %-12s %10.3f %12d %14.3f%s\n", f[1], f[2], peak[keys[i]], at[keys[i]], bigbw[keys[i]],
               (f[1] > ncores ? "  oversubscribed" : "")
      }
      if (wrong > 0) printf "  %d WRONG element(s) in total: a method returned an incorrect sum, see the rows with wrong != 0\n", wrong
      else print "  every row checked: 0 wrong elements"
      exit wrong > 0
    }' "$out/allreduce.csv" || failed+=("some rows have wrong != 0 (see $out/allreduce.csv)")
  echo "results: $out/allreduce.csv"
fi
exit_if_failed "problem(s)"
