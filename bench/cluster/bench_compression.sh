#!/usr/bin/env bash
# Gradient compression where the wire is slow: brings up N namespace-hosts at a link rate (bench/cluster/cluster.sh),
# one rank per host, and trains the same model for --epochs with the dense ring, the ring with a bfloat16 wire and
# the ring carrying each compressor of --runs (error feedback on unless the run says /noef). Every run reports the
# bytes each step put on the wire (train's wire_bytes_per_step, counted, not computed) and its test accuracy per
# epoch; the report sets them against the dense ring's.
# The cluster is always torn down at the end, also on failure or Ctrl-C.
# Usage (root): bench/cluster/bench_compression.sh [--hosts 2] [--rate 1gbit] [--hidden 1024,1024] [--batch 1024]
#                 [--epochs 5] [--lr 0.2] [--target 0.95] [--runs "ring ring-bf16 powersgd:4 topk:0.01 sign"]
#                 [--data DIR] [--out DIR]
# A run is `ring`, `ring-bf16` or a --compress value (NAME[:PARAM], carried by the ring), with /noef for the
# ablation without error feedback (topk:0.01/noef); or `ps` (the parameter server, bsp, one server on the first host)
# and `ps+NAME[:PARAM]` (its workers push compressed), which the report sets against the dense `ps` run.
# Writes to DIR (default results/compression-DATE): compression.csv (train --csv rows), epochs.csv (train
# --epoch-csv rows), compression.txt (the table below), the chart time_to_accuracy.png/svg, logs/ with each run.
# Exit status 1 if a run failed. GRADSYNC_TIMEOUT (seconds) replaces the per-run time limit.
set -euo pipefail
# shellcheck source=bench/cluster/drivers.sh
source "$(dirname "${BASH_SOURCE[0]}")/drivers.sh"

hosts=2
rate=1gbit
hidden=1024,1024
batch=1024
epochs=5
lr=0.2
target=0.95
runs="ring ring-bf16 powersgd:4 topk:0.01 sign"
data_dir="$GRADSYNC_ROOT/data/mnist"
out=""
parse_flags bench_compression.sh \
  "--hosts hosts uint 2" \
  "--rate rate" \
  "--hidden hidden match ^[0-9]+(,[0-9]+)*$ --hidden needs widths like 1024,1024" \
  "--batch batch uint 1" \
  "--epochs epochs uint 1" \
  "--lr lr" \
  "--target target match ^0?\.[0-9]+$ --target is an accuracy between 0 and 1, got '%s'" \
  "--runs runs" \
  "--data data_dir" \
  "--out out" \
  -- "$@"
need_bins train
absolute_mnist data_dir
# Every run is checked before the cluster comes up: a typo should not cost the runs before it.
known="$("$BIN/train" --list-compressors | cut -f1 | sed 's/:.*//')"
for run in $runs; do
  name="${run%/noef}"
  name="${name#ps+}"
  case "$name" in
    ring | ring-bf16 | ps) [ "$name" = "$run" ] || die "--runs: '$run': /noef needs a compressor (it drops the residual)" ;;
    *) grep -qx "${name%%:*}" <<<"$known" \
      || die "--runs: '$run' is neither ring, ring-bf16, ps nor a compressor ($(paste -sd' ' <<<"$known"))" ;;
  esac
done
why="$("$CLUSTER" check)" || die "$why"

cluster_results compression compression.csv epochs.csv
cluster_up "$hosts" --rate "$rate"

for run in $runs; do
  args=(--sync ring)
  compressor="$run"
  case "$run" in
    ps | ps+*) args=(--sync ps) compressor="${run#ps}" compressor="${compressor#+}" ;;
  esac
  case "$compressor" in
    "" | ring) ;;
    ring-bf16) args=(--sync ring-bf16) ;;
    */noef) args+=(--compress "${compressor%/noef}" --error-feedback 0) ;;
    *) args+=(--compress "$compressor") ;;
  esac
  log="train_$(tr ':/' '__' <<<"$run")"
  cluster_run "$log" $((300 + 300 * epochs)) -- "$BIN/train" "${args[@]}" --model mlp --hidden "$hidden" \
    --batch "$batch" --lr "$lr" --epochs "$epochs" --data "$data_dir" --quiet \
    --csv "$out/compression.csv" --epoch-csv "$out/epochs.csv"
  grep '^done:' "$out/logs/$log.log" >&2 || true
done
cluster_down

# The targets, as ratios to the dense ring of this run: bytes per step, time to the target accuracy (epoch
# granularity: the first epoch that reached it), accuracy after the last epoch.
{
  results_header "bench_compression: $hosts emulated hosts at $rate, one rank each, MLP $hidden, batch $batch per worker,"\
" $epochs epochs"
  python3 "$CLUSTER_DIR/compression_report.py" --runs "$out/compression.csv" --epochs "$out/epochs.csv" \
    --target "$target"
} >"$out/compression.txt"
cat "$out/compression.txt" >&2
if command -v gnuplot >/dev/null; then
  gnuplot -e "data='$out/epochs.csv'; outdir='$out'; target=$target; subtitle='$(cpu_summary | cut -d, -f1) - $(date -u +%Y-%m-%d)'" \
    "$GRADSYNC_ROOT/plots/time_to_accuracy.gp" >&2 \
    || failed+=("chart time_to_accuracy")
fi
say "results in $out"
exit_if_cluster_failed
