#!/usr/bin/env bash
# The emulated-cluster benchmark: brings up N namespace-hosts at a link rate (bench/cluster/cluster.sh), measures
# a ping-pong sweep between two hosts (alpha and beta), the reduction kernel on one core (gamma), and
# bench_allreduce across all hosts for ring, ps, ps-sharded and MPI_Allreduce (Open MPI's default choice, and its
# ring as mpi-ring) under each Open MPI setting of --settings, optionally a mid-size comparison of TCP settings,
# then fits and checks the cost model (bench/cluster/fit_cost_model.py) against each sweep. The cluster is always
# torn down at the end, also on failure or Ctrl-C.
# Usage (root): bench/cluster/bench_cluster.sh [--hosts 4] [--rate 1gbit] [--queue small-first|fifo]
#                 [--min-bytes 64K] [--max-bytes 64M]
#                 [--step-factor 2] [--reps 3] [--settings "default eager4M"] [--ring-chunks 1M,16M]
#                 [--tcp-settings] [--train-epochs 1] [--data DIR]
#                 [--compute-us-per-sample X] [--out DIR]
# Settings: default (Open MPI's own), eager4M (btl_tcp eager, rendezvous-eager and max-send limits at 4 MiB),
# progress_thread (btl_tcp_progress_thread 1), eager4M_progress (both). --ring-chunks: the ring's chunk sizes
# (bench_allreduce --chunk-bytes); 16M is gradsync's default across hosts and sends each ring step as one message up to 64 MiB
# on 4 hosts, as Open MPI's ring does; 1M is its default on one node.
# --train-epochs E: constant-work training (MLP-128, batch 32, --iterations-per-epoch auto) with ring, mpi, ps
# and ring-bf16 across the hosts, E epochs each (0 skips), on MNIST from --data (default data/mnist); the model
# then compares each run's sync time per step with its allreduce prediction (ring-bf16's is not modelled).
# Writes to DIR (default results/cluster-DATE): pingpong.csv, membw.txt, train.csv, allreduce_SETTING.csv (columns of
# bench_allreduce --csv), tcp_settings.csv (with --tcp-settings: a setting column, then the same columns), and per
# setting model_SETTING/ (params.csv, model_vs_measured.csv, extrapolation.csv, train_vs_model.csv, report.txt),
# and with gnuplot the charts cluster_busbw_SETTING.png and cost_model.png; logs/ has each run.
# Exit status 1 if a run failed or a row has wrong != 0; the model's checks are reported, not enforced.
# GRADSYNC_TIMEOUT (seconds) replaces the per-run time limit.
set -euo pipefail
# shellcheck source=bench/cluster/drivers.sh
source "$(dirname "${BASH_SOURCE[0]}")/drivers.sh"

hosts=4
rate=1gbit
queue=small-first
min_bytes=64K
max_bytes=64M
step=2
reps=3
tcp_settings=0
settings="default eager4M"
ring_chunks="1M,16M"
model_failed=()
compute_us=""
train_epochs=1
data_dir="$GRADSYNC_ROOT/data/mnist"
out=""
parse_flags bench_cluster.sh \
  "--hosts hosts uint 2" \
  "--rate rate" \
  "--queue queue" \
  "--min-bytes min_bytes match ^[0-9]+[KMG]?$ --min-bytes needs a size like 64K" \
  "--max-bytes max_bytes match ^[0-9]+[KMG]?$ --max-bytes needs a size like 64M" \
  "--step-factor step" \
  "--reps reps uint 1" \
  "--tcp-settings tcp_settings switch" \
  "--settings settings" \
  "--ring-chunks ring_chunks" \
  "--train-epochs train_epochs uint 0" \
  "--data data_dir" \
  "--compute-us-per-sample compute_us" \
  "--out out" \
  -- "$@"
need_bins bench_allreduce bench_membw
mpi_setup   # cluster.sh run uses the same launcher (GRADSYNC_MPIEXEC)
export GRADSYNC_MPIEXEC="$MPIEXEC"
if [ "$MPI_FLAVOUR" = mpich ]; then
  # The settings compared here are Open MPI's TCP transport's, and an MPICH tree's bytes between namespace-hosts
  # go through shared memory (cluster.sh): its numbers would not describe the links.
  die "bench_cluster.sh measures the emulated links with Open MPI; $BUILD_DIR is built against MPICH (use build/)"
fi
command -v python3 >/dev/null || die "python3 is needed for the cost model"
why="$("$CLUSTER" check)" || die "$why"
if [ "$train_epochs" -gt 0 ]; then
  need_bins train
  absolute_mnist data_dir "or --train-epochs 0 skips training"
fi

cluster_results cluster pingpong.csv
need_bins pingpong
pingpong="$BIN/pingpong"

# Teardown always runs: normal end, a failed run (set -e), or an interrupt.
cluster_up "$hosts" --rate "$rate" --queue "$queue"

# run NAME LIMIT_S [MPIRUN_ARGS...] -- CMD...: cluster_run, then the run's table on the terminal.
run() {
  cluster_run "$@"
  grep -v '^\s*$' "$out/logs/$1.log" | grep -E '^(#|  )' >&2 || true
}

bench=("$BIN/bench_allreduce" --min-bytes "$min_bytes" --max-bytes "$max_bytes" --step-factor "$step"
       --iters 1 --warmup 1 --reps "$reps")
# The Open MPI settings the allreduce sweep runs under (drivers.sh).
read_settings "$settings" default eager4M progress_thread eager4M_progress

run pingpong 300 -np 2 -- "$pingpong" --min-bytes 0 --max-bytes 16M --step-factor 2 --reps 5 --csv "$out/pingpong.csv"
say "reduction kernel (gamma): bench_membw on one rank"
run_limited 120 "$out/membw.txt" "$MPIEXEC" -n 1 "$BIN/bench_membw" --bytes 64M || failed+=("bench_membw")
cat "$out/membw.txt" >&2
for s in "${setting_list[@]}"; do
  setting_args "$s"
  run "allreduce_$s" 1800 ${extra[@]+"${extra[@]}"} -- "${bench[@]}" --methods ring,ps,ps-sharded,mpi \
    --chunk-bytes "$ring_chunks" --csv "$out/logs/allreduce_$s.csv"
  run "allreduce_${s}_mpi_ring" 900 ${extra[@]+"${extra[@]}"} "${FORCED_RING[@]}" -- "${bench[@]}" --methods mpi \
    --csv "$out/logs/allreduce_${s}_mpi_ring.csv"
  {
    cat "$out/logs/allreduce_$s.csv" 2>/dev/null || echo "method,np,bytes,count,chunk_bytes,time_us,algbw_gbps,busbw_gbps,wrong"
    tail -n +2 "$out/logs/allreduce_${s}_mpi_ring.csv" 2>/dev/null || true
  } >"$out/allreduce_$s.csv"
done

# Mid sizes under every setting (with --tcp-settings). Rows get the setting's name prepended.
if [ "$tcp_settings" = 1 ]; then
  echo "setting,method,np,bytes,count,chunk_bytes,time_us,algbw_gbps,busbw_gbps,wrong" >"$out/tcp_settings.csv"
  for s in default eager4M progress_thread eager4M_progress; do
    setting_args "$s"
    run "tcp_$s" 900 ${extra[@]+"${extra[@]}"} -- "$BIN/bench_allreduce" --min-bytes 16K --max-bytes 4M \
      --step-factor 4 --iters 3 --warmup 1 --reps "$reps" --methods ring,ps,mpi --csv "$out/logs/tcp_$s.csv"
    tail -n +2 "$out/logs/tcp_$s.csv" 2>/dev/null | sed "s/^/$s,/" >>"$out/tcp_settings.csv" || true
  done
fi

# Constant-work training per method across the hosts: the allreduce of a real gradient between real steps.
if [ "$train_epochs" -gt 0 ]; then
  for sync in ring mpi ps ring-bf16; do
    # The limit is far above an epoch's time; it only bounds a launch that hangs (see cluster_test.sh).
    run "train_$sync" $((120 + 60 * train_epochs)) -- "$BIN/train" --sync "$sync" --model mlp --hidden 128 --lr 0.1 --batch 32 \
      --epochs "$train_epochs" --iterations-per-epoch auto --data "$data_dir" --csv "$out/train.csv"
  done
fi

"$CLUSTER" status >"$out/logs/cluster_status.txt" 2>&1 || true
cluster_down

link_gbps="$(rate_gbps "$rate")"
for s in "${setting_list[@]}"; do
  say "cost model against the $s sweep"
  fit_args=(--pingpong "$out/pingpong.csv" --membw "$out/membw.txt" --allreduce "$out/allreduce_$s.csv"
            --out "$out/model_$s" --link-gbps "$link_gbps")
  [ -z "$compute_us" ] || fit_args+=(--compute-us-per-sample "$compute_us")
  [ ! -s "$out/train.csv" ] || fit_args+=(--train "$out/train.csv")
  python3 "$CLUSTER_DIR/fit_cost_model.py" "${fit_args[@]}" >"$out/logs/model_$s.log" 2>&1 || model_failed+=("$s")
  sed -n '/^## Checks/,/^## Extrapolation/p' "$out/logs/model_$s.log" | grep -v '^## Extrapolation' >&2 || true
done

if command -v gnuplot >/dev/null; then
  link_gbytes="$(awk -v g="$link_gbps" 'BEGIN { print g / 8 }')"
  # The subtitle names the CPU and date: host.txt's first line (cluster_results wrote it), without quotes for gnuplot.
  subtitle="$(sed -n "1s/^# *//p" "$out/host.txt" | tr -d "'")"
  for s in "${setting_list[@]}"; do
    [ -s "$out/model_$s/model_vs_measured.csv" ] || continue
    gnuplot -e "data='$out/model_$s/model_vs_measured.csv'; outdir='$out'; link=$link_gbytes; name='cluster_busbw_$s'; subtitle='$subtitle'" \
      "$GRADSYNC_ROOT/plots/cluster_busbw.gp" >&2 || failed+=("chart cluster_busbw_$s")
  done
  ext="$out/model_${setting_list[0]}/extrapolation.csv"
  [ ! -s "$ext" ] || gnuplot -e "data='$ext'; outdir='$out'; subtitle='$subtitle'" "$GRADSYNC_ROOT/plots/cost_model.gp" >&2 \
    || failed+=("chart cost_model")
else
  say "gnuplot not found: no charts (apt-get install gnuplot-nox)"
fi

wrong="$(cat "$out"/allreduce_*.csv | awk -F, '$1 != "method" && $9 != 0 { n++ } END { print n + 0 }')"
[ "$wrong" -eq 0 ] || failed+=("$wrong allreduce row(s) with wrong != 0")
say "results in $out"
[ "${#model_failed[@]}" -eq 0 ] || say "model checks not met for: ${model_failed[*]} (see model_*/report.txt)"
exit_if_cluster_failed
