#!/usr/bin/env bash
# Decentralized SGD against allreduce, the parameter server and local SGD, on an emulated cluster that may be uneven:
# brings up N namespace-hosts at a link rate (bench/cluster/cluster.sh), one rank per host, optionally one host behind
# a slower link (--slow-host, --slow-rate) or one rank sleeping every step (--straggler), and trains the same MLP with
# every run of --runs. Each run evaluates its model every --iterations-per-epoch steps, --epochs times (for gossip the
# mean of the ranks' models), and reports the training time and global steps at which the test accuracy first
# reached --target (train --target-accuracy: interpolated between two evaluations), its final accuracy, the bytes a
# step put on the wire (counted by train) and its time to the target over the `ring` run's.
# The cluster is always torn down at the end, also on failure or Ctrl-C.
# Usage (root): bench/cluster/bench_decentralized.sh [--hosts 4] [--rate 1gbit] [--slow-host I --slow-rate R]
#                 [--straggler RANK:MS] [--hidden 256] [--batch 256] [--lr 0.2] [--momentum 0.9] [--epochs 10]
#                 [--iterations-per-epoch 20] [--target 0.95] [--runs "RUN ..."] [--data DIR] [--out DIR]
# A run is a train sync spec (train --spec; train --help lists the modifiers; N workers, one per host, unless said),
# named in the table and the CSVs as train names it:
#   gossip+topology=TOPO        D-PSGD (gossip-TOPO): TOPO is ring, torus, exp, exp1 or complete; every rank keeps
#                               its own model and averages it with its graph neighbours' each step
#   gossip+topology=TOPO+async  AD-PSGD (gossip-TOPO-async): even ranks average with one odd neighbour a step, no
#                               barrier
#   gossip+topology=TOPO+compress=topk:F (or sign)[+gamma=G]
#                               CHOCO-SGD (gossip-TOPO-topkF, gossip-TOPO-sign; not in the default runs): each rank
#                               sends its neighbours the compressed difference between its model and its public copy
#                               instead of the model (docs/decentralized.md)
#   ring, auto, mpi, rd, rhd, hier, ring-bf16
#                               the gradient allreduced every step (bench_allreduce --list-methods); `ring` is the
#                               baseline of the table's ratio column
#   ps, ps+mode=asp, ps+mode=ssp+staleness=S
#                               one server on the first host (rank 0): N-1 workers, so a global batch of (N-1) x
#                               --batch (the table says so); bsp, asp, or ssp with staleness S
#   ring+average=H              local SGD (ring-avgH): the models averaged every H steps
#   ring+average=H+outer-lr=LR+outer-momentum=MU
#                               the same with the outer optimizer (Nesterov): ring-avgH-outerLRmMU
# Default runs: gossip+topology=ring gossip+topology=torus gossip+topology=exp gossip+topology=exp1
#   gossip+topology=complete gossip+topology=ring+async gossip+topology=exp+async ring auto ps ring+average=8
#   ring+average=8+outer-lr=0.7+outer-momentum=0.9. On 4 hosts the 2 x 2 torus gives every rank the ring's two
#   neighbours, and exp (+-1, +-2) the complete graph's three: train prints each graph and its spectral gap in the
#   run's log.
# Scenarios (the same runs; host I runs rank I):
#   uniform             every link at --rate
#   --slow-host I --slow-rate R
#                       host I's link at R in both directions (cluster.sh up --slow-host), the others at --rate;
#                       with ps, host 0 is the server's
#   --straggler RANK:MS train --straggler: that rank (or random:MS, a worker drawn each step) sleeps MS ms every step;
#                       not rank 0 when --runs has a ps run (rank 0 is its server)
# The defaults (MLP 256, batch 256 per worker, momentum 0.9: about 80-120 global steps to 0.95 on 4 workers; 200
# steps in 10 evaluations) keep a scenario of the default runs within about 10 minutes on a 2-core machine, where 4
# hosts are oversubscribed (the results header says so); time counts training only, not the evaluations.
# Writes to DIR (default results/decentralized-DATE): host.txt (machine, CPU, commit, date, scenario), runs.csv
# (run,log,exit_status), decentralized.csv (train --csv rows), epochs.csv (train --epoch-csv rows), decentralized.txt
# (the table), the chart time_to_accuracy.png/svg, logs/ with each run's output and its own CSVs (RUN.csv,
# RUN.epochs.csv).
# Exit status 1 if a run failed. GRADSYNC_TIMEOUT (seconds) replaces the per-run time limit.
set -euo pipefail
# shellcheck source=bench/cluster/drivers.sh
source "$(dirname "${BASH_SOURCE[0]}")/drivers.sh"

hosts=4
rate=1gbit
slow_host=""
slow_rate=""
straggler=""
hidden=256
batch=256
lr=0.2
momentum=0.9
epochs=10
every=20
target=0.95
runs="gossip+topology=ring gossip+topology=torus gossip+topology=exp gossip+topology=exp1 gossip+topology=complete"
runs+=" gossip+topology=ring+async gossip+topology=exp+async ring auto ps ring+average=8"
runs+=" ring+average=8+outer-lr=0.7+outer-momentum=0.9"
data_dir="$GRADSYNC_ROOT/data/mnist"
out=""
rate_re='^[0-9]+(\.[0-9]+)?([kKmMgG]bit)(/s|ps)?$'
parse_flags bench_decentralized.sh \
  "--hosts hosts uint 2" \
  "--rate rate match $rate_re --rate needs a rate like 100mbit, 1gbit; got '%s'" \
  "--slow-host slow_host uint 0" \
  "--slow-rate slow_rate match $rate_re --slow-rate needs a rate like 100mbit, 1gbit; got '%s'" \
  "--straggler straggler match ^([0-9]+|random):[0-9]+(\.[0-9]+)?$ --straggler needs RANK:MS or random:MS, got '%s'" \
  "--hidden hidden match ^[0-9]+(,[0-9]+)*$ --hidden needs widths like 256 or 1024,1024, got '%s'" \
  "--batch batch uint 1" \
  "--lr lr above 0 --lr needs a positive number, got '%s'" \
  "--momentum momentum match ^(0|0?\.[0-9]+)$ --momentum needs a number in [0, 1), got '%s'" \
  "--epochs epochs uint 1" \
  "--iterations-per-epoch every uint 1" \
  "--target target match ^0?\.[0-9]+$ --target is an accuracy between 0 and 1, got '%s'" \
  "--runs runs" \
  "--data data_dir" \
  "--out out" \
  -- "$@"
need_bins train bench_allreduce
absolute_mnist data_dir
slow_host_args "$hosts" "$slow_host" "$slow_rate"

# Every run and the scenario are checked before the cluster comes up: a typo should not cost the runs before it.
read -ra run_list <<<"$runs"
[ "${#run_list[@]}" -gt 0 ] || die "--runs is empty"
if [ -n "$straggler" ]; then
  straggler_rank="${straggler%%:*}"
  [ "$straggler_rank" = random ] || [ "$straggler_rank" -lt "$hosts" ] \
    || die "--straggler $straggler: there is no rank $straggler_rank among the $hosts ranks (0 to $((hosts - 1)))"
fi
# Each run as train names it (its log's name), asked with the straggler, which train refuses on a server's rank.
with=()
[ -z "$straggler" ] || with=(--straggler "$straggler")
names=()
seen=" "
for run in "${run_list[@]}"; do
  spec_run "$run" --runs "${with[@]+"${with[@]}"}"
  [ "$run_min_np" -le "$hosts" ] || die "--runs: $run needs $run_min_np ranks, one a host: --hosts is $hosts"
  [[ $seen != *" $run_name "* ]] || die "--runs: '$run' is given twice (train names both $run_name)"
  seen+="$run_name "
  names+=("$run_name")
done
why="$("$CLUSTER" check)" || die "$why"

cores="$(nproc)"
scenario="$hosts emulated hosts at $rate${slow_host:+ (host $slow_host at $slow_rate)}, one rank each"
[ "$hosts" -le "$cores" ] || scenario+=" ($hosts ranks on $cores cores: oversubscribed)"
scenario+="${straggler:+, straggler $straggler (rank:ms per step)}, MLP $hidden, batch $batch per worker, lr $lr,"
scenario+=" momentum $momentum, $epochs evaluations $every steps apart, target $target"

cluster_results decentralized runs.csv decentralized.csv epochs.csv
provenance_txt "$out"
printf '# scenario: %s\n' "$scenario" >>"$out/host.txt"
echo "run,log,exit_status" >"$out/runs.csv"
cluster_up "$hosts" --rate "$rate" ${slow_args[@]+"${slow_args[@]}"}

common=(--model mlp --hidden "$hidden" --batch "$batch" --lr "$lr" --momentum "$momentum" --epochs "$epochs"
        --iterations-per-epoch "$every" --target-accuracy "$target" --data "$data_dir" --quiet)
[ -z "$straggler" ] || common+=(--straggler "$straggler")
# A run's time limit: 300 s for the launch and the evaluations, and 2 s a step (a dense ring step on 4 hosts at
# 1gbit takes about 30 ms here, and 1 s at 10mbit).
limit=$((300 + 2 * every * epochs))
for i in "${!run_list[@]}"; do
  run="${run_list[$i]}"
  log="train_${names[$i]}"
  rc=0
  # Open MPI's rsh launch into the namespaces now and then hangs before MPI_Init with a daemon missing
  # (cluster_test.sh): a run whose train never started (no "gradsync train:" line) is launched again, twice at most.
  for attempt in 1 2 3; do
    rm -f "$out/logs/$log.csv" "$out/logs/$log.epochs.csv"
    if [ "$attempt" = 1 ]; then say "$run"; else say "$run (attempt $attempt of 3)"; fi
    rc=0
    run_limited "$limit" "$out/logs/$log.log" "$CLUSTER" run -- "$BIN/train" --spec "$run" "${common[@]}" \
      --csv "$out/logs/$log.csv" --epoch-csv "$out/logs/$log.epochs.csv" || rc=$?
    if [ "$rc" -eq 0 ] || grep -q '^gradsync train:' "$out/logs/$log.log"; then break; fi
    mv "$out/logs/$log.log" "$out/logs/$log.attempt$attempt.log"
    say "$run: the launch failed before train started (exit $rc; log: logs/$log.attempt$attempt.log)"
  done
  echo "$run,$log,$rc" >>"$out/runs.csv"
  if [ "$rc" -ne 0 ]; then
    failed+=("$run (exit $rc$( [ "$rc" -eq 124 ] && echo ", out of time"); log: $out/logs/$log.log)")
    tail -n 5 "$out/logs/$log.log" | sed 's/^/    /' >&2
  fi
  [ ! -s "$out/logs/$log.csv" ] || append_rows "$out/logs/$log.csv" "$out/decentralized.csv"
  [ ! -s "$out/logs/$log.epochs.csv" ] || append_rows "$out/logs/$log.epochs.csv" "$out/epochs.csv"
  grep -E '^(done:|target |topology )' "$out/logs/$log.log" >&2 || true
done
cluster_down

{
  results_header "bench_decentralized: $scenario"
  tail -n +2 "$out/host.txt"
  python3 "$CLUSTER_DIR/decentralized_report.py" --runs "$out/runs.csv" --logs "$out/logs" --target "$target" \
    --hosts "$hosts" --batch "$batch" --every "$every"
} >"$out/decentralized.txt"
cat "$out/decentralized.txt" >&2
if command -v gnuplot >/dev/null && [ -s "$out/epochs.csv" ]; then
  gnuplot -e "data='$out/epochs.csv'; outdir='$out'; target=$target; subtitle='$(cpu_summary | cut -d, -f1) - $(date -u +%Y-%m-%d)'" \
    "$GRADSYNC_ROOT/plots/time_to_accuracy.gp" >&2 \
    || failed+=("chart time_to_accuracy")
fi
say "results in $out"
exit_if_cluster_failed
