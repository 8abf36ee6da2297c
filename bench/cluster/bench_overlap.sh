#!/usr/bin/env bash
# Overlap of communication with computation on the emulated cluster: brings up N namespace-hosts at a link rate
# (bench/cluster/cluster.sh), one rank per host, and
#   1. steps: bench_sync alternates the blocking ring and mpi with their bucketed and pipelined forms (progress by
#      calls between kernels, or by a communication thread) inside one training run, under each Open MPI setting of
#      --settings, and reports per step compute, the communication waited for and the communication hidden;
#   2. accuracy: train runs the same model for --epochs with ring and ps, blocking and pipelined (--pipeline 1),
#      and records test accuracy, step time and hidden time.
# The cluster is always torn down at the end, also on failure or Ctrl-C.
# Usage (root): bench/cluster/bench_overlap.sh [--hosts 2] [--rate 1gbit] [--hidden 1024,1024] [--batch 1024]
#                 [--blocks 6] [--block 4] [--epochs 5] [--lr 0.2] [--momentum 0]
#                 [--settings "default progress_thread"] [--progress thread] [--data DIR] [--out DIR]
# Settings: default (Open MPI's own TCP transport, which moves data only while some thread is inside MPI) and
# progress_thread (btl_tcp_progress_thread 1: Open MPI's own thread moves TCP data in the background).
# --progress: how train's pipelined runs are progressed (bench_sync measures both). The training defaults keep
# momentum off: a one-step-late gradient under momentum 0.9 trains markedly slower in the first epochs
# (docs/overlap.md), which is a property of pipelined SGD, not of the transport measured here.
# Writes to DIR (default results/overlap-DATE): overlap_steps.csv
#   setting,hosts,method,timed,compute_us,sync_us,hidden_us,step_us,step_ratio
# (step_ratio: the step over the blocking step of the same allreduce in the same run), overlap_train.csv (train
# --csv rows), overlap.txt (the targets as ratios), the chart overlap.png/svg, logs/ with each run.
# Exit status 1 if a run failed. GRADSYNC_TIMEOUT (seconds) replaces the per-run time limit.
set -euo pipefail
# shellcheck source=bench/cluster/drivers.sh
source "$(dirname "${BASH_SOURCE[0]}")/drivers.sh"

hosts=2
rate=1gbit
hidden=1024,1024
batch=1024
blocks=6
block=4
epochs=5
lr=0.2
momentum=0
settings="default progress_thread"
progress=thread
data_dir="$GRADSYNC_ROOT/data/mnist"
out=""
parse_flags bench_overlap.sh \
  "--hosts hosts uint 2" \
  "--rate rate" \
  "--hidden hidden match ^[0-9]+(,[0-9]+)*$ --hidden needs widths like 1024,1024" \
  "--batch batch uint 1" \
  "--blocks blocks uint 1" \
  "--block block uint 2" \
  "--epochs epochs uint 0" \
  "--lr lr" \
  "--momentum momentum" \
  "--settings settings" \
  "--progress progress match ^(calls|thread)$ --progress is calls or thread, got '%s'" \
  "--data data_dir" \
  "--out out" \
  -- "$@"
need_bins bench_sync train
absolute_mnist data_dir
read_settings "$settings" default progress_thread
why="$("$CLUSTER" check)" || die "$why"

cluster_results overlap overlap_steps.csv overlap_train.csv
cluster_up "$hosts" --rate "$rate"


# 1. Steps, alternated inside one run per setting.
methods=ring,ring-buckets,ring-buckets-thread,ring-pipe,ring-pipe-thread,mpi,mpi-pipe,mpi-pipe-thread
n_methods="$(tr ',' '\n' <<<"$methods" | wc -l)"
steps=$((blocks * block * n_methods))
echo "setting,hosts,method,timed,compute_us,sync_us,hidden_us,step_us,step_ratio" >"$out/overlap_steps.csv"
for s in "${setting_list[@]}"; do
  setting_args "$s"
  cluster_run "steps_$s" 1800 ${extra[@]+"${extra[@]}"} -- "$BIN/bench_sync" --methods "$methods" --hidden "$hidden" \
    --batch "$batch" --steps "$steps" --block "$block" --settle 1 --data "$data_dir"
  # bench_sync's table: method timed compute sync hidden step step/first. step_ratio is over the blocking row of
  # the same allreduce (ring-* over ring, mpi-* over mpi).
  awk -v s="$s" -v h="$hosts" '
    (NF == 7 || NF == 8) && $2 ~ /^[0-9]+$/ { base = $1; sub(/-.*/, "", base); if ($1 == base) blocking[base] = $6
      line[++n] = $0; b[n] = base }
    END { for (i = 1; i <= n; i++) { split(line[i], f, " "); r = blocking[b[i]] > 0 ? f[6] / blocking[b[i]] : 0
      printf "%s,%s,%s,%s,%s,%s,%s,%s,%.3f\n", s, h, f[1], f[2], f[3], f[4], f[5], f[6], r } }' \
    "$out/logs/steps_$s.log" >>"$out/overlap_steps.csv"
  grep -A20 '^bench_sync:' "$out/logs/steps_$s.log" >&2 || true
done

# 2. Accuracy after the same epochs, blocking against pipelined.
if [ "$epochs" -gt 0 ]; then
  for sync in ring ps; do
    for pipeline in 0 1; do
      cluster_run "train_${sync}_pipe$pipeline" $((300 + 300 * epochs)) -- "$BIN/train" --sync "$sync" --model mlp \
        --hidden "$hidden" --batch "$batch" --lr "$lr" --momentum "$momentum" --epochs "$epochs" \
        --pipeline "$pipeline" --progress "$progress" --data "$data_dir" \
        --csv "$out/overlap_train.csv"
      grep '^done:' "$out/logs/train_${sync}_pipe$pipeline.log" >&2 || true
    done
  done
fi
cluster_down

# The targets, as ratios within this run.
{
  results_header "bench_overlap: $hosts emulated hosts at $rate, MLP $hidden, batch $batch per worker"
  awk -F, 'NR > 1 { key = $1 "," $3; step[key] = $8; comp[key] = $5; sync[key] = $6; set[$1] = 1 }
    END { for (s in set) {
      for (m in step) { split(m, k, ","); if (k[1] != s) continue; base = k[2]; sub(/-.*/, "", base)
        if (k[2] == base) continue
        bk = s "," base; mx = comp[bk] > sync[bk] ? comp[bk] : sync[bk]
        printf "%s %-22s step %8.1f ms  / blocking %.3f  / max(compute, comm) of blocking %.3f\n", s, k[2],
          step[m] / 1e3, step[m] / step[bk], step[m] / mx } } }' "$out/overlap_steps.csv" | sort
  if [ -s "$out/overlap_train.csv" ]; then
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
      { printf "train %-14s accuracy %.4f  wall %.1f s  comm %.1f s  hidden %.1f s\n", $h["sync"],
          $h["test_accuracy"], $h["wall_s"], $h["comm_s"], $h["hidden_s"] }' "$out/overlap_train.csv"
  fi
} >"$out/overlap.txt"
cat "$out/overlap.txt" >&2
if command -v gnuplot >/dev/null; then
  gnuplot -e "data='$out/overlap_steps.csv'; outdir='$out'" "$GRADSYNC_ROOT/plots/overlap.gp" >&2 || failed+=("chart overlap")
fi
say "results in $out"
exit_if_cluster_failed
