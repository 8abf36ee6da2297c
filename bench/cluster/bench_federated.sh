#!/usr/bin/env bash
# Wall time to a test accuracy on an emulated cluster: federated averaging against synchronous ring SGD and local
# SGD, all on the 2NN (784-200-200-10) and the same IID data, one rank per namespace-host at --rate. FedAvg talks
# once a round (one allreduce of the model's update) after its clients' local epochs; the ring once a step; local
# SGD once every H steps. Each run stops at the round or evaluation that reached --target (train --stop-at-target);
# the table gives its training time to the target (evaluations excluded), the rounds or steps it took, and the bytes
# each worker sent on the way (train --epoch-csv's wire_bytes_per_step times the steps).
# The cluster is always torn down at the end, also on failure or Ctrl-C; runs wait for /tmp/gradsync-cluster.lock
# (flock), which every user of the emulated cluster on this machine takes.
# Usage (root): bench/cluster/bench_federated.sh [--hosts 4] [--rate 100mbit] [--target 0.97]
#                 [--fedavg "--client-fraction 0.1 --local-epochs 1 --batch 10 --lr 0.1"]
#                 [--sgd "--batch 64 --lr 0.1 --momentum 0.9"] [--every 50] [--average-every 8] [--out DIR]
# --fedavg and --sgd are train flags added to those of the federated runs (100 clients, iid) and to the ring and
# local-SGD runs (evaluated every --every steps). Writes to DIR (default results/federated-cluster-DATE): host.txt,
# runs.csv (run,rounds_or_steps,seconds_to_target,bytes_per_worker,final_accuracy), epochs.csv, federated.txt (the
# table) and logs/.
set -euo pipefail
# shellcheck source=bench/cluster/drivers.sh
source "$(dirname "${BASH_SOURCE[0]}")/drivers.sh"

hosts=4
rate=100mbit
target=0.97
fedavg="--client-fraction 0.1 --local-epochs 1 --batch 10 --lr 0.1"
sgd="--batch 64 --lr 0.1 --momentum 0.9"
every=50
average_every=8
data_dir="$GRADSYNC_ROOT/data/mnist"
out=""
parse_flags bench_federated.sh \
  "--hosts hosts uint 2" \
  "--rate rate match ^[0-9]+(\.[0-9]+)?([kKmMgG]bit)$ --rate needs a rate like 100mbit, 1gbit; got '%s'" \
  "--target target match ^0?\.[0-9]+$ --target is an accuracy between 0 and 1, got '%s'" \
  "--fedavg fedavg" \
  "--sgd sgd" \
  "--every every uint 1" \
  "--average-every average_every uint 1" \
  "--data data_dir" \
  "--out out" \
  -- "$@"
need_bins train
absolute_mnist data_dir
why="$("$CLUSTER" check)" || die "$why"
read -ra fed_flags <<<"$fedavg"
read -ra sgd_flags <<<"$sgd"
model=(--model mlp --hidden 200,200 --data "$data_dir" --target-accuracy "$target" --stop-at-target --quiet)
declare -A run_flags=(
  [fedavg]="--sync fedavg --clients 100 --partition iid --rounds 1000"
  [ring]="--sync ring --iterations-per-epoch $every --epochs 400"
  ["avg:$average_every"]="--sync ring --average-every $average_every --iterations-per-epoch $every --epochs 400"
)
runs=(fedavg ring "avg:$average_every")

exec 9>/tmp/gradsync-cluster.lock
say "waiting for the emulated cluster (flock /tmp/gradsync-cluster.lock)"
flock 9
cluster_results federated-cluster runs.csv epochs.csv federated.txt
provenance_txt "$out"
scenario="$hosts emulated hosts at $rate, one rank each"
[ "$hosts" -le "$(nproc)" ] || scenario+=" ($hosts ranks on $(nproc) cores: oversubscribed)"
printf '# scenario: %s; fedavg: %s; ring and local SGD: %s\n' "$scenario" "$fedavg" "$sgd" >>"$out/host.txt"
echo "run,rounds_or_steps,seconds_to_target,bytes_per_worker,final_accuracy" >"$out/runs.csv"
cluster_up "$hosts" --rate "$rate"
for run in "${runs[@]}"; do
  read -ra args <<<"${run_flags[$run]}"
  if [ "$run" = fedavg ]; then args+=("${fed_flags[@]}"); else args+=("${sgd_flags[@]}"); fi
  log="$(tr ':' '_' <<<"$run")"
  cluster_run "$log" 3600 -- "$BIN/train" "${args[@]}" "${model[@]}" --epoch-csv "$out/logs/$log.epochs.csv"
  [ -s "$out/logs/$log.epochs.csv" ] || continue
  awk -F, -v run="$run" -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { steps = $c["global_steps"] - prev; prev = $c["global_steps"]; bytes += $c["wire_bytes_per_step"] * steps
      acc = $c["test_accuracy"] }
    END { print run, prev, "", bytes, acc }' "$out/logs/$log.epochs.csv" >"$out/logs/$log.row"
  # The time to the target is train's own interpolation ("target A reached after S s").
  seconds="$(sed -n 's/^target .* reached after \([0-9.]*\)s.*/\1/p' "$out/logs/$log.log")"
  awk -F, -v OFS=, -v s="$seconds" '{ $3 = s; print }' "$out/logs/$log.row" >>"$out/runs.csv"
  awk -F, -v run="$run" 'NR == 1 { if (!skip) print "run," $0; next } { print run "," $0 }' \
    skip="$([ -s "$out/epochs.csv" ] && echo 1)" "$out/logs/$log.epochs.csv" >>"$out/epochs.csv"
done
cluster_down
{
  results_header "bench_federated: $scenario, target $target"
  tail -n +2 "$out/host.txt"
  awk -F, 'NR == 1 { printf "%-10s %16s %18s %18s %10s\n", "run", "rounds or steps", "seconds to target",
                     "MB sent/worker", "accuracy"; next }
           { printf "%-10s %16s %18s %18.1f %10s\n", $1, $2, $3 == "" ? "not reached" : $3, $4 / 1e6, $5 }' \
    "$out/runs.csv"
} >"$out/federated.txt"
cat "$out/federated.txt" >&2
say "results in $out"
exit_if_cluster_failed
