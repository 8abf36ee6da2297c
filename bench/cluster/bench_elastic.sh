#!/usr/bin/env bash
# Losing a host mid-run, measured: MLP-128, 5 epochs, each sync method on an emulated 4-host cluster under
# scripts/elastic.sh, once with one host taken away (its processes killed, then its link: a crashed machine) at a
# step drawn from the seed, once without; and, first, the cost of checkpointing on one node.
#   1. overhead: serial MLP-128, 5 epochs of batch 32 on this node, a checkpoint every 500 steps: each write timed
#      inside the run, against the training time of the same run (in-run ratios; the host is shared and noisy, so
#      separate runs are not compared); the overhead at the default interval (train's --checkpoint-seconds) is the
#      largest write of the run over that interval. --overhead-runs runs; checkpoint_overhead.csv:
#        run,checkpoints,mean_ms,max_ms,training_s,overhead_every_500_steps,default_s,overhead_at_default
#   2. loss: for each method, --global-batch 96 (kept when 4 hosts become 3), --checkpoint-steps INTERVAL; the
#      failure run pauses every worker after the drawn step (train --inject-pause) and the host is killed there;
#      recovery_s runs from that kill to the first training step on the survivors (train's "resumed state" line,
#      stamped by elastic.sh). elastic.csv:
#        sync,hosts_before,hosts_after,lost_host,kill_step,resume_step,lost_steps,recovery_s,final_accuracy,baseline_accuracy
# Usage (root): bench/cluster/bench_elastic.sh [--methods "ring mpi ring-bf16 ps"] [--interval 200] [--seed 7]
#                 [--epochs 5] [--overhead-runs 3] [--only overhead|loss] [--data DIR] [--out DIR]
# The cluster (prefix eb, subnet 10.98.2) is torn down at the end, also on failure or Ctrl-C.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
HERE="$GRADSYNC_ROOT/bench/cluster"
CLUSTER="$HERE/cluster.sh"
ELASTIC="$GRADSYNC_ROOT/scripts/elastic.sh"
methods="ring mpi ring-bf16 ps"
interval=200
seed=7
epochs=5
overhead_runs=3
only=""
data_dir="$GRADSYNC_ROOT/data/mnist"
out=""
parse_flags bench_elastic.sh \
  "--methods methods" \
  "--interval interval uint 1" \
  "--seed seed uint" \
  "--epochs epochs uint 2" \
  "--overhead-runs overhead_runs uint" \
  "--only only" \
  "--data data_dir" \
  "--out out" \
  -- "$@"
out="${out:-$GRADSYNC_ROOT/results/elastic-$(date -u +%Y%m%d-%H%M%S)}"
mkdir -p "$out"
[ -z "$only" ] || [ "$only" = overhead ] || [ "$only" = loss ] || die "--only takes overhead or loss, got '$only'"
[ "$only" = loss ] || refuse_existing "$out" checkpoint_overhead.csv
[ "$only" = overhead ] || refuse_existing "$out" elastic.csv
driver_folders "$out" elastic
host_txt "$out" bench_elastic
[ -x "$BIN/train" ] || die "$BIN/train is missing (build first, or set BUILD_DIR)"
mpi_setup
export GRADSYNC_MPIEXEC="$MPIEXEC"

# --- 1. checkpoint overhead on one node ------------------------------------------------------------------------
if [ "$only" != loss ]; then
default_s="$(sed -n 's/.*kDefaultCheckpointSeconds = \([0-9.]*\);.*/\1/p' "$GRADSYNC_ROOT/trainers/config/train_config.hpp")"
echo "run,checkpoints,mean_ms,max_ms,training_s,overhead_every_500_steps,default_s,overhead_at_default" \
  >"$out/checkpoint_overhead.csv"
for run in $(seq "$overhead_runs"); do
  log="$logs/overhead-$run.log"
  "$BIN/train" --model mlp --hidden 128 --epochs 5 --batch 32 --lr 0.1 --checkpoint "$work/overhead-$run" \
    --checkpoint-steps 500 --data "$data_dir" >"$log" 2>&1 || die "overhead run $run failed: $log"
  # The checkpoints inside the timed epochs (the one after the last epoch is outside train's wall_s).
  awk -v run="$run" -v d="$default_s" '
    /^checkpoint: step/ { n++; ms[n] = $(NF - 1) }
    /^done:/ { for (i = 1; i <= NF; i++) if ($i == "training") t = $(i - 1); sub(/s$/, "", t) }
    END { total = 0; max = 0; for (i = 1; i < n; i++) { total += ms[i]; if (ms[i] > max) max = ms[i] }
          printf "%s,%d,%.2f,%.2f,%.3f,%.4f,%s,%.5f\n", run, n - 1, total / (n - 1), max, t, total / (t * 1000), d,
                 max / (d * 1000) }' "$log" >>"$out/checkpoint_overhead.csv"
  rm -rf "$work/overhead-$run"
done
column -s, -t "$out/checkpoint_overhead.csv"
fi
[ "$only" != overhead ] || exit 0

# --- 2. losing a host on the emulated cluster -----------------------------------------------------------------
export GS_CLUSTER_PREFIX=eb GS_CLUSTER_SUBNET=10.98.2 GS_CLUSTER_STATE=/run/gradsync-cluster-bench-elastic
"$CLUSTER" down >/dev/null 2>&1 || true
at_exit cluster '"$CLUSTER" down >/dev/null 2>&1'
"$CLUSTER" up 4 --rate 1gbit >"$logs/up.log" 2>&1 || die "cluster.sh up failed: $logs/up.log"
ip_of() { echo "$GS_CLUSTER_SUBNET.$(($1 + 1))"; }
printf '%s slots=1\n' "$(ip_of 0)" "$(ip_of 1)" "$(ip_of 2)" "$(ip_of 3)" >"$work/hostfile"
global_batch=96
steps_total=$(( 60000 / global_batch * epochs ))
RANDOM=$seed
echo "sync,hosts_before,hosts_after,lost_host,kill_step,resume_step,lost_steps,recovery_s,final_accuracy,baseline_accuracy" \
  >"$out/elastic.csv"
lost_host_of() { case "$1" in ring) echo 0 ;; ps) echo 1 ;; mpi) echo 2 ;; *) echo 3 ;; esac; }  # ps: a server's host
accuracy() { grep -o "test accuracy [0-9.]*" "$1" | tail -1 | awk '{print $3}'; }

for method in $methods; do
  sync_args=(--sync "$method")
  [ "$method" != ps ] || sync_args=(--sync ps --servers 2)
  common=(--model mlp --hidden 128 --epochs "$epochs" --global-batch "$global_batch" --lr 0.1
          --iterations-per-epoch auto --checkpoint-steps "$interval" --timeout 20 --data "$data_dir")
  for h in 0 1 2 3; do "$CLUSTER" heal "$h" >/dev/null 2>&1; done
  base_log="$logs/$method-baseline.log"
  "$ELASTIC" --emulated --hostfile "$work/hostfile" --min-hosts 3 -- "$BIN/train" "${sync_args[@]}" "${common[@]}" \
    --checkpoint "$work/$method-baseline/%h" >"$base_log" 2>&1 || die "$method: the run without failure failed: $base_log"

  kill_step=$(( steps_total / 3 + RANDOM % (steps_total / 3) ))
  host=$(lost_host_of "$method")
  log="$logs/$method-loss.log"
  "$ELASTIC" --emulated --hostfile "$work/hostfile" --min-hosts 3 --max-restarts 2 --grace 5 \
    --log "$logs/$method-restarts.log" -- "$BIN/train" "${sync_args[@]}" "${common[@]}" \
    --checkpoint "$work/$method-loss/%h" --inject-pause "$kill_step:2" >"$log" 2>&1 &
  job=$!
  for _ in $(seq 3000); do grep -q "pausing after step $kill_step " "$log" && break; sleep 0.05; done
  grep -q "pausing after step $kill_step " "$log" || { kill "$job"; die "$method: never reached step $kill_step: $log"; }
  pids="$(ip netns pids "$GS_CLUSTER_PREFIX-h$host" 2>/dev/null || true)"
  [ -z "$pids" ] || kill -KILL $pids 2>/dev/null
  killed_at=$EPOCHREALTIME
  sleep 0.2
  "$CLUSTER" cut "$host" >/dev/null
  wait "$job" || die "$method: the elastic run failed: $log"
  resumed_line="$(grep -m1 "resumed state: step" "$log")"
  resume_step="$(echo "$resumed_line" | grep -o "step [0-9]*" | awk '{print $2}')"
  recovery="$(awk -v a="${resumed_line%% *}" -v b="$killed_at" 'BEGIN { printf "%.2f", a - b }')"
  printf '%s,4,3,%s,%s,%s,%s,%s,%s,%s\n' "$method" "$(ip_of "$host")" "$kill_step" "$resume_step" \
    "$((kill_step - resume_step))" "$recovery" "$(accuracy "$log")" "$(accuracy "$base_log")" >>"$out/elastic.csv"
  tail -1 "$out/elastic.csv"
done
column -s, -t "$out/elastic.csv"
echo "results in $out"
