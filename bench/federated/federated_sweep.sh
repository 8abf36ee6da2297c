#!/usr/bin/env bash
# Federated averaging's rounds to a target accuracy (McMahan et al. 2017, Tables 1 and 2): for every partition of
# --partitions, local-epochs:batch pair of --settings (batch "all": one full-batch step a local epoch) and client
# fraction of --fractions, train --sync fedavg at each learning rate of the batch's grid (--lrs-10 for a numeric
# batch, --lrs-all for all) until the target or --max-rounds, and keep the best learning rate's count. Per-round
# convergence does not depend on timing, so it may run oversubscribed or beside other work; the times in runs.csv do.
# Usage: bench/federated/federated_sweep.sh [--model "mlp 200,200"] [--clients 100] [--fractions "0 0.1 0.2 0.5 1"]
#          [--settings "1:10 1:all"] [--partitions "iid shards:2"] [--lrs-10 "0.05 0.1 0.2"] [--lrs-all "0.2 0.5 1"]
#          [--target 0.97] [--max-rounds 4000] [--max-rounds-all 2000] [--np 1] [--literature 2nn]
#          [--round-seconds 2] [--out DIR]
# --model is train's --model and, for an mlp, its --hidden. A run's time limit is 600 s plus --round-seconds a round
# of its cap (the 2NN takes well under a second a round; the CNN at E = 5, B = 10 about 20 s on 2 ranks). Writes into DIR (default
# results/federated-DATE): runs.csv (one row a run: partition, E, B, C, lr, rounds to the target or empty, best
# accuracy, rounds run, seconds), epochs.csv (train --epoch-csv rows behind the same five columns), table.md and
# chart.png/svg (federated_report.py), logs/. Exit status 1 if a run failed or timed out.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"

model="mlp 200,200"
clients=100
fractions="0 0.1 0.2 0.5 1"
settings="1:10 1:all"
partitions="iid shards:2"
lrs_10="0.05 0.1 0.2"
lrs_all="0.2 0.5 1"
target=0.97
max_rounds=4000
max_rounds_all=2000
np=1
literature=2nn
round_seconds=2
out=""
parse_flags federated_sweep.sh \
  "--model model" \
  "--clients clients uint 1" \
  "--fractions fractions" \
  "--settings settings" \
  "--partitions partitions" \
  "--lrs-10 lrs_10" \
  "--lrs-all lrs_all" \
  "--target target" \
  "--max-rounds max_rounds uint 1" \
  "--max-rounds-all max_rounds_all uint 1" \
  "--np np uint 1" \
  "--literature literature" \
  "--round-seconds round_seconds uint 1" \
  "--out out" \
  -- "$@"
read -r model_name hidden <<<"$model"
model_flags=(--model "$model_name")
[ -z "${hidden:-}" ] || model_flags+=(--hidden "$hidden")
for s in $settings; do
  [[ $s =~ ^[0-9]+:([0-9]+|all)$ ]] || die "--settings: '$s' is not E:B (e.g. 1:10 or 5:all)"
done
need_bins train
mpi_setup
driver_results federated runs.csv epochs.csv table.md
echo "partition,local_epochs,batch,fraction,lr,rounds_to_target,best_accuracy,rounds_run,seconds" >"$out/runs.csv"

failed=()
for partition in $partitions; do
  for s in $settings; do
    e=${s%%:*} b=${s##*:}
    if [ "$b" = all ]; then lrs=$lrs_all cap=$max_rounds_all; else lrs=$lrs_10 cap=$max_rounds; fi
    for c in $fractions; do
      for lr in $lrs; do
        tag="$partition-E$e-B$b-C$c-lr$lr"
        tag=${tag//:/}
        mpirun_flags "$np"
        limit=$((600 + cap * round_seconds))
        rc=0
        t0=$SECONDS
        run_limited "$limit" "$logs/$tag.log" "$MPIEXEC" -n "$np" "${MPIRUN_FLAGS[@]}" "$BIN/train" --sync fedavg \
          "${model_flags[@]}" --clients "$clients" --client-fraction "$c" --local-epochs "$e" --batch "$b" \
          --partition "$partition" --lr "$lr" --rounds "$cap" --target-accuracy "$target" --stop-at-target \
          --epoch-csv "$work/$tag.epochs.csv" --quiet || rc=$?
        if ! check_run "$tag" "$rc" "$limit" "$logs/$tag.log"; then
          say_failed "$logs/$tag.log"
          # The rounds it did take are kept beside its log: a run out of time has still measured them.
          [ ! -s "$work/$tag.epochs.csv" ] || cp "$work/$tag.epochs.csv" "$logs/$tag.epochs.csv"
          continue
        fi
        rounds=$(sed -n "s/^rounds to [0-9.]*: //p" "$logs/$tag.log")
        best=$(awk -F, 'NR > 1 && $5 > b { b = $5 } END { printf "%.4f", b }' "$work/$tag.epochs.csv")
        ran=$(($(lines "$work/$tag.epochs.csv") - 1))
        echo "$partition,$e,$b,$c,$lr,$rounds,$best,$ran,$((SECONDS - t0))" >>"$out/runs.csv"
        awk -v p="$partition,$e,$b,$c,$lr" 'NR == 1 { if (!skip) print "partition,local_epochs,batch,fraction,lr," $0; next }
          { print p "," $0 }' skip="$([ -s "$out/epochs.csv" ] && echo 1)" "$work/$tag.epochs.csv" >>"$out/epochs.csv"
        say "$tag: ${rounds:-not reached in $ran} rounds to $target (best $best)"
      done
    done
  done
done

/usr/bin/python3 "$GRADSYNC_ROOT/bench/federated/federated_report.py" --results "$out" --target "$target" \
  --literature "$literature" --subtitle "$(cpu_summary | cut -d, -f1) - $(date -u +%Y-%m-%d)" | tee "$out/table.md" \
  || say "the report failed"
exit_if_failed "run(s) failed"
