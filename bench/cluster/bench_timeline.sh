#!/usr/bin/env bash
# A timeline of overlap across emulated hosts: brings up N namespace-hosts at a link rate (bench/cluster/cluster.sh),
# one rank per host, trains the overlap benchmark's model for a few steps with `train --trace`, and draws the last
# steps as a Gantt chart (plots/timeline.gp via plots/make_charts.sh): ranks as rows, compute above, allreduces in
# flight below, so that what overlaps what is visible. The cluster is always torn down at the end.
# Usage (root): bench/cluster/bench_timeline.sh [--hosts 2] [--rate 1gbit] [--hidden 1024,1024] [--batch 1024]
#                 [--steps 12] [--overlap "--sync ring --buckets"] [--data DIR] [--out DIR]
# Writes to DIR (default results/timeline-DATE): README.md (the header and the clock alignment), trace.json (open it in https://ui.perfetto.dev), timeline.csv,
# timeline.png/svg, logs/.
set -euo pipefail
# shellcheck source=bench/cluster/drivers.sh
source "$(dirname "${BASH_SOURCE[0]}")/drivers.sh"

hosts=2
rate=1gbit
hidden=1024,1024
batch=1024
steps=12
overlap="--sync ring --buckets"
data_dir="$GRADSYNC_ROOT/data/mnist"
out=""
parse_flags bench_timeline.sh \
  "--hosts hosts uint 2" \
  "--rate rate" \
  "--hidden hidden match ^[0-9]+(,[0-9]+)*$ --hidden needs widths like 1024,1024" \
  "--batch batch uint 1" \
  "--steps steps uint 3" \
  "--overlap overlap" \
  "--data data_dir" \
  "--out out" \
  -- "$@"
need_bins train
absolute_mnist data_dir
read -ra overlap_args <<<"$overlap"
why="$("$CLUSTER" check)" || die "$why"

cluster_results timeline trace.json
cluster_up "$hosts" --rate "$rate"
cluster_run train 600 -- "$BIN/train" "${overlap_args[@]}" --model mlp --hidden "$hidden" --batch "$batch" --epochs 1 \
  --iterations-per-epoch "$steps" --data "$data_dir" --trace "$out/trace.json"
cluster_down
exit_if_cluster_failed
{
  results_header "bench_timeline: $hosts emulated hosts at $rate, one rank each, train $overlap,"\
" MLP $hidden, batch $batch, $steps steps"
  grep -A"$hosts" '^trace: clock offsets' "$out/logs/train.log" || true
} >"$out/README.md"
"$GRADSYNC_ROOT/plots/make_charts.sh" "$out" "$out" >&2
say "results in $out"
