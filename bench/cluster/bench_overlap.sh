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
#   setting,hosts,method,timed,compute_us,sync_us,hidden_us,step_us,step_ratio,allreduce,mode
# (step_ratio: the step over the blocking step of the same allreduce in the same run; allreduce and mode: bench_sync
# --csv's dimension columns), overlap_train.csv (train
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
methods=ring,ring+buckets,ring+buckets+thread,ring+pipe,ring+pipe+thread,mpi,mpi+pipe,mpi+pipe+thread
n_methods="$(tr ',' '\n' <<<"$methods" | wc -l)"
steps=$((blocks * block * n_methods))
echo "setting,hosts,method,timed,compute_us,sync_us,hidden_us,step_us,step_ratio,allreduce,mode" \
  >"$out/overlap_steps.csv"
for s in "${setting_list[@]}"; do
  setting_args "$s"
  rm -f "$out/logs/steps_$s.csv"  # --csv appends
  cluster_run "steps_$s" 1800 ${extra[@]+"${extra[@]}"} -- "$BIN/bench_sync" --methods "$methods" --hidden "$hidden" \
    --batch "$batch" --steps "$steps" --block "$block" --settle 1 --data "$data_dir" --csv "$out/logs/steps_$s.csv"
  # bench_sync's rows by column name. step_ratio is over the blocking row of the same allreduce method.
  awk -F, -v s="$s" -v h="$hosts" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { line[++n] = $(c["method"]) "," $(c["timed"]) "," $(c["compute_us"]) "," $(c["sync_us"]) "," $(c["hidden_us"])
      ar[n] = $(c["allreduce"]); mode[n] = $(c["mode"]); step[n] = $(c["step_us"])
      if (mode[n] == "blocking" && $(c["compressor"]) == "") blocking[ar[n]] = step[n] }
    END { for (i = 1; i <= n; i++) printf "%s,%s,%s,%s,%.3f,%s,%s\n", s, h, line[i], step[i],
      (blocking[ar[i]] > 0 ? step[i] / blocking[ar[i]] : 0), ar[i], mode[i] }' \
    "$out/logs/steps_$s.csv" >>"$out/overlap_steps.csv"
  grep -A20 '^bench_sync:' "$out/logs/steps_$s.log" >&2 || true
done

# 2. Accuracy after the same epochs, blocking against pipelined.
if [ "$epochs" -gt 0 ]; then
  for sync in ring ps; do
    for pipeline in 0 1; do
      overlap=()  # train refuses --progress on a blocking run: nothing would be in flight to progress
      [ "$pipeline" = 0 ] || overlap=(--pipeline 1 --progress "$progress")
      cluster_run "train_${sync}_pipe$pipeline" $((300 + 300 * epochs)) -- "$BIN/train" --sync "$sync" --model mlp \
        --hidden "$hidden" --batch "$batch" --lr "$lr" --momentum "$momentum" --epochs "$epochs" \
        "${overlap[@]}" --data "$data_dir" --csv "$out/overlap_train.csv"
      grep '^done:' "$out/logs/train_${sync}_pipe$pipeline.log" >&2 || true
    done
  done
fi
cluster_down

# The targets, as ratios within this run.
{
  results_header "bench_overlap: $hosts emulated hosts at $rate, MLP $hidden, batch $batch per worker"
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { key = $(c["setting"]) "," $(c["method"]); step[key] = $(c["step_us"]); comp[key] = $(c["compute_us"])
      sync[key] = $(c["sync_us"]); ar[key] = $(c["allreduce"])
      if ($(c["mode"]) == "blocking") blocking[$(c["setting"]) "," ar[key]] = key; else overlapped[key] = 1 }
    END { for (m in overlapped) { split(m, k, ","); bk = blocking[k[1] "," ar[m]]
        mx = comp[bk] > sync[bk] ? comp[bk] : sync[bk]
        printf "%s %-22s step %8.1f ms  / blocking %.3f  / max(compute, comm) of blocking %.3f\n", k[1], k[2],
          step[m] / 1e3, step[m] / step[bk], step[m] / mx } }' "$out/overlap_steps.csv" | sort
  if [ -s "$out/overlap_train.csv" ]; then
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
      { printf "train %-14s accuracy %.4f  wall %.1f s  comm %.1f s  hidden %.1f s\n", $h["sync"],
          $h["test_accuracy"], $h["wall_s"], $h["comm_s"], $h["hidden_s"] }' "$out/overlap_train.csv"
  fi
} >"$out/overlap.txt"
cat "$out/overlap.txt" >&2
if command -v gnuplot >/dev/null; then
  subtitle="$(sed -n "1s/^# *//p" "$out/host.txt" | tr -d "'")"  # the CPU and the date, as the other cluster charts
  gnuplot -e "data='$out/overlap_steps.csv'; outdir='$out'; subtitle='$subtitle'" "$GRADSYNC_ROOT/plots/overlap.gp" \
    >&2 || failed+=("chart overlap")
fi
say "results in $out"
exit_if_cluster_failed
