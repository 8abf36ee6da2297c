#!/usr/bin/env bash
# "The better connected, the faster it converges", measured per step: each method of --methods trains the same MLP
# on --np ranks (oversubscribed above the core count: per-step convergence does not depend on timing), evaluated
# every --every steps: the test accuracy of the evaluated model (for gossip, the ranks' mean) and, for gossip, the
# consensus distance (1/p) sum ||x_i - mean||^2 and the spread of the ranks' own accuracies. The methods are train's
# sync specs (train --spec; train --help lists the modifiers): gossip+topology=GRAPH[+async], ring (the allreduce,
# one model everywhere), ring+average=H, ...; the table names each run as train does (gossip-exp1, gossip-ring-async).
# Usage: bench/gossip_convergence.sh [--np-list "16 64"] [--steps 500] [--every 25] [--batch 32] [--lr 0.1]
#          [--methods "gossip+topology=ring gossip+topology=torus gossip+topology=exp gossip+topology=exp1
#                      gossip+topology=complete ring"] [--out DIR]
# Writes into DIR (default results/gossip-convergence-DATE): epochs.csv (train --epoch-csv rows, an "epoch" being
# --every steps), runs.csv (train --csv rows), convergence.txt (accuracy and consensus distance at the end, the
# spectral gap, steps to the accuracies of --targets), the charts convergence.png/svg, logs/. Exit status 1 if a run
# failed or timed out.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

np_list="16 64"
steps=500
every=25
batch=32
lr=0.1
targets="0.95 0.97"
methods="gossip+topology=ring gossip+topology=torus gossip+topology=exp gossip+topology=exp1 gossip+topology=complete"
methods+=" ring"
out=""
parse_flags gossip_convergence.sh \
  "--np-list np_list" \
  "--steps steps uint 1" \
  "--every every uint 1" \
  "--batch batch uint 1" \
  "--lr lr" \
  "--targets targets" \
  "--methods methods" \
  "--out out" \
  -- "$@"
read_np_list "$np_list" 1
read -ra toks <<<"$methods"
[ "${#toks[@]}" -gt 0 ] || die "--methods is empty"
[ $((steps % every)) -eq 0 ] || die "--steps $steps is not a multiple of --every $every"
need_bins train
names=()
for m in "${toks[@]}"; do
  spec_run "$m"
  names+=("$run_name")
done
mpi_setup
driver_results gossip-convergence epochs.csv runs.csv convergence.txt

evaluations=$((steps / every))
failed=()
for np in "${nps[@]}"; do
  for i in "${!toks[@]}"; do
    m="${toks[$i]}"
    name="${names[$i]}"
    tag="$name-np$np"
    mpirun_flags "$np"
    rc=0
    run_limited $((600 + np * 20)) "$logs/$tag.log" "$MPIEXEC" -n "$np" "${MPIRUN_FLAGS[@]}" "$BIN/train" --spec "$m" \
      --model mlp --hidden 128 --lr "$lr" --batch "$batch" --iterations-per-epoch "$every" --epochs "$evaluations" \
      --csv "$work/$tag.csv" --epoch-csv "$work/$tag.epochs.csv" --quiet || rc=$?
    wrote=""
    [ "$(lines "$work/$tag.csv")" -eq 2 ] || wrote="wrote no CSV row"
    if ! check_run "$name np=$np" "$rc" $((600 + np * 20)) "$logs/$tag.log" "$wrote"; then
      say_failed "$logs/$tag.log"
      continue
    fi
    append_rows "$work/$tag.csv" "$out/runs.csv"
    append_rows "$work/$tag.epochs.csv" "$out/epochs.csv"
    say "$name np=$np: $(tail -1 "$work/$tag.csv" | cut -d, -f14) test accuracy after $steps steps"
  done
done

if [ -s "$out/epochs.csv" ]; then
  {
    echo "Per-step convergence: MLP 784-128-10, batch $batch per rank, lr $lr, $steps steps, evaluated every $every"
    echo "(oversubscribed where np > $(cores): timings mean nothing here, steps do)"
    awk -F, -v targets="$targets" '
      NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; nt = split(targets, t, " "); next }
      { k = $c["method"] SUBSEP $c["np"]; if (!(k in last)) order[++n] = k; last[k] = $0
        for (j = 1; j <= nt; j++)
          if (!((k, j) in hit) && $c["test_accuracy"] + 0 >= t[j] + 0) hit[k, j] = $c["global_steps"] }
      END {
        printf "%-22s %4s %9s %10s %12s", "method", "np", "gap", "accuracy", "consensus"
        for (j = 1; j <= nt; j++) printf " %10s", "steps>=" t[j]
        printf "\n"
        for (i = 1; i <= n; i++) {
          split(last[order[i]], f, ",")
          printf "%-22s %4d %9s %10.4f %12s", f[c["method"]], f[c["np"]], f[c["spectral_gap"]] == "" ? "-" : sprintf("%.4f", f[c["spectral_gap"]]),
                 f[c["test_accuracy"]], f[c["consensus_distance"]] == "" ? "-" : sprintf("%.3g", f[c["consensus_distance"]])
          for (j = 1; j <= nt; j++) printf " %10s", ((order[i], j) in hit) ? hit[order[i], j] : "-"
          printf "\n"
        }
      }' "$out/epochs.csv"
  } | tee "$out/convergence.txt"
  gnuplot -e "data='$out/epochs.csv'; outdir='$out'; subtitle='$(cpu_summary | cut -d, -f1) - $(date -u +%Y-%m-%d)'" \
    "$GRADSYNC_ROOT/plots/convergence.gp" >/dev/null || say "the chart failed (gnuplot)"
fi
exit_if_failed "run(s) failed"
