#!/usr/bin/env bash
# Throughput kept through churn, as TorchFT measures it: `train` on --np ranks under the ULFM MPI (build-ulfm/,
# --with-ft ulfm) for about --seconds, once without failures and once with a rank SIGKILLed (--inject-kill) about
# every --every seconds, ranks 1..np-1 in turn, each replaced by a successor (--respawn) so that the run stays at its
# size. The kill steps come from the failure-free run's rate (a run's kills are named by step). Each epoch is about
# a third of --every; its images/s, over the epochs' training time, draws the chart (steps per second against time,
# the failures marked) and the efficiency is the run's training rate with failures over the rate without.
# On one node the ranks share its cores (say so beside any figure above np = 2); the seconds are this machine's.
# With --hosts N the run is on N emulated hosts instead (bench/cluster/cluster.sh: one rank a network namespace, links
# of --rate, TCP between every pair, a successor where the launcher places it), as root; the hosts share this
# machine's cores, so the figures are the links' where the links bind. --victims lists the ranks killed in turn
# (default 1 .. np-1; for the parameter server, its workers: a successor is a worker, so a lost server is not
# replaced), --args adds train flags (the family's: "--servers 2 --replicas 2", "--topology ring"). With Open MPI 5.0.7
# the second join across hosts does not complete (docs/reliability.md): there, one loss is all it measures.
# Usage: bench/inplace_churn.sh [--np 4] [--seconds 300] [--every 30] [--method ring] [--hidden 128]
#          [--hosts 0] [--rate 1gbit] [--victims "1 2 3"] [--args "..."] [--out DIR]
# Writes into DIR (default results/inplace-churn-DATE): epochs.csv (train --epoch-csv rows of both runs, method
# "<method>" and "<method>+churn"), joins.csv (step,lost_rank,recovery_s,join_s), churn.txt (the summary),
# steps_per_s.png/svg and logs/. Needs build-ulfm/ (bash scripts/ulfm.sh build).
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

np=4
seconds=300
every=30
method=ring
hidden=128
hosts=0
rate=1gbit
victims=""
extra=""
out=""
parse_flags inplace_churn.sh "--np np uint 2" "--seconds seconds uint 10" "--every every uint 2" "--method method" \
  "--hidden hidden uint 1" "--hosts hosts uint 0" "--rate rate" "--victims victims" "--args extra" "--out out" -- "$@"
[ "$hosts" -eq 0 ] || np=$hosts
[ -n "$victims" ] || victims="$(seq -s ' ' 1 $((np - 1)))"
read -ra victim_list <<<"$victims"
for v in "${victim_list[@]}"; do
  need_uint --victims "$v" 0
  [ "$v" -lt "$np" ] || die "--victims: no rank $v among $np"
done
read -ra extra_args <<<"$extra"
[ "$every" -lt "$seconds" ] || die "--every $every: at least one failure must fit in --seconds $seconds"
ulfm_bin="$GRADSYNC_ROOT/build-ulfm/bin"
[ -x "$ulfm_bin/train" ] || die "$ulfm_bin/train is missing: bash scripts/ulfm.sh build"
prefix="$("$GRADSYNC_ROOT/scripts/ulfm.sh" prefix)" || die "no ULFM MPI installed: bash scripts/ulfm.sh build"
BUILD_DIR="$GRADSYNC_ROOT/build-ulfm" BIN="$ulfm_bin"
driver_results inplace-churn epochs.csv joins.csv
if [ "$hosts" -eq 0 ]; then
  launcher=("$prefix/bin/mpirun" --with-ft ulfm --oversubscribe --bind-to none --mca mpi_yield_when_idle 1 -n "$np")
  [ "$(id -u)" -ne 0 ] || launcher+=(--allow-run-as-root)
  where="on one node$( [ "$np" -gt 2 ] && echo " (oversubscribed: $np ranks on $(cores) cores)")"
else
  # A cluster of its own (prefix, subnet and state apart from a benchmark's or a test's), taken down at the end.
  cluster="$GRADSYNC_ROOT/bench/cluster/cluster.sh"
  export GS_CLUSTER_PREFIX=ch GS_CLUSTER_SUBNET=10.96.0 GS_CLUSTER_STATE=/run/gradsync-cluster-churn
  export GRADSYNC_MPIEXEC="$prefix/bin/mpirun"
  why="$("$cluster" check 2>&1)" || die "$why"
  "$cluster" down >/dev/null 2>&1 || true
  "$cluster" up "$hosts" --rate "$rate" >"$logs/cluster-up.log" 2>&1 || die "cluster.sh up failed (see $logs/cluster-up.log)"
  at_exit cluster "'$cluster' down >/dev/null 2>&1"
  launcher=("$cluster" run --with-ft ulfm --)
  where="on $hosts emulated hosts at $rate (one rank a host, TCP; the hosts share $(cores) cores)"
fi
common=(--sync "$method" --model mlp --hidden "$hidden" --batch 32 --quiet "${extra_args[@]}")

# The failure-free rate, from a short run: how many steps make --seconds and --every.
run_limited 300 "$logs/rate.log" "${launcher[@]}" "$ulfm_bin/train" "${common[@]}" --epochs 1 \
  --iterations-per-epoch 300 --csv "$out/rate.csv" || die "the rate run failed (see $logs/rate.log)"
rate="$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i } NR == 2 { print $c["images_per_s"] / ($c["workers"] * $c["batch"]) }' "$out/rate.csv")"
rm -f "$out/rate.csv"
per_epoch="$(awk -v r="$rate" -v e="$every" 'BEGIN { n = int(r * e / 3); print n < 10 ? 10 : n }')"
epochs=$(((seconds / every) * 3))
kills=()
for k in $(seq $((seconds / every - 1))); do
  kills+=("$((k * 3 * per_epoch)):${victim_list[$(((k - 1) % ${#victim_list[@]}))]}")
done
kill_list="$(IFS=,; echo "${kills[*]}")"
say "failure-free rate $rate steps/s: $epochs epochs of $per_epoch steps, a kill every $((3 * per_epoch)) steps"

for run in plain churn; do
  args=()
  [ "$run" = plain ] || args=(--respawn --inject-kill "$kill_list")
  run_limited $((seconds * 4 + 300)) "$logs/$run.log" "${launcher[@]}" "$ulfm_bin/train" "${common[@]}" \
    --epochs "$epochs" --iterations-per-epoch "$per_epoch" --epoch-csv "$out/$run-epochs.csv" "${args[@]}" || true
  grep -q '^done: ' "$logs/$run.log" || die "$run: the run did not finish (see $logs/$run.log)"
done
# One epoch CSV, the churn run's rows named apart.
{ cat "$out/plain-epochs.csv"; tail -n +2 "$out/churn-epochs.csv" | sed "s/^$method,/$method+churn,/"; } >"$out/epochs.csv"
rm -f "$out/plain-epochs.csv" "$out/churn-epochs.csv"
echo "step,lost_rank,recovery_s,join_s" >"$out/joins.csv"
paste -d, <(sed -n 's/^recovered in place: lost rank \([0-9]*\) .* from step \([0-9]*\),.*; \([0-9.]*\) s from.*/\2,\1,\3/p' "$logs/churn.log") \
  <(sed -n 's/^joined in place: .*; \([0-9.]*\) s to spawn.*/\1/p' "$logs/churn.log") >>"$out/joins.csv"
train_s() { sed -n 's/.* \([0-9.]*\)s training .*/\1/p' "$logs/$1.log"; }
{
  results_header "inplace_churn: $method${extra:+ ($extra)} on $np ranks under --with-ft ulfm $where, MLP $hidden, batch 32, $epochs epochs of $per_epoch steps; a rank of ${victims// /, } killed every $((3 * per_epoch)) steps (about ${every} s) and replaced (--respawn)"
  plain="$(train_s plain)" churn="$(train_s churn)"
  failures=$(($(wc -l <"$out/joins.csv") - 1))
  awk -v p="$plain" -v c="$churn" -v f="$failures" -v n="$(( epochs * per_epoch ))" 'BEGIN {
    printf "steps %d; training without failures %.2f s (%.1f steps/s), with %d failures and joins %.2f s (%.1f steps/s)\n", n, p, n / p, f, c, n / c
    printf "efficiency: %.1f %% of the failure-free rate (target: at least 95 %%; a third-party TorchFT run kept 97.7 %%)\n", 100 * p / c }'
  awk -F, 'NR > 1 { r += $3; j += $4; n++; if ($3 > mr) mr = $3; if ($4 > mj) mj = $4 } END { if (n) printf "recovery %.3f s mean, %.3f s max (target 1 s); join %.3f s mean, %.3f s max (target 2 s)\n", r / n, mr, j / n, mj }' "$out/joins.csv"
  sed -n 's/^in place: /summary: /p' "$logs/churn.log"
} >"$out/churn.txt"
cat "$out/churn.txt" >&2
if command -v gnuplot >/dev/null; then
  gnuplot -e "data='$out/epochs.csv'; joins='$out/joins.csv'; outdir='$out'; method='$method'; per_epoch=$per_epoch; subtitle='$(cpu_summary | cut -d, -f1) - $(date -u +%Y-%m-%d)'" \
    "$GRADSYNC_ROOT/plots/inplace_churn.gp" >&2 || say "warning: the chart failed"
fi
say "results in $out"
