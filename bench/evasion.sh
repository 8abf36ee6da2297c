#!/usr/bin/env bash
# Evasion at test time, per family: each --families run trains --models on MNIST (--np ranks) and reports the final
# model's test accuracy clean and under each attack of --attacks (train --eval-attack: FGSM, Goodfellow et al. 2015;
# PGD, Madry et al. 2018), one training run per attack (the training is the same: same seed, same schedule).
# Accuracy does not depend on timing, so --np above the core count (oversubscribed) is fine; no time is reported.
# Usage: bench/evasion.sh [--np 2] [--epochs 3] [--rounds 30] [--models "softmax mlp"]
#          [--families "serial ring ps gossip fedavg"] [--attacks "fgsm:0.1 fgsm:0.25"] [--out DIR]
# A family is train's --sync name; serial runs on one rank, fedavg (100 clients, 10 a round) counts --rounds instead
# of --epochs. Writes into DIR (default results/evasion-DATE): evasion.csv (family,model,attack,clean_accuracy,
# attacked_accuracy), evasion.txt (the table), logs/. Exit status 1 if a run failed.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

np=2
epochs=3
rounds=30
models="softmax mlp"
families="serial ring ps gossip fedavg"
attacks="fgsm:0.1 fgsm:0.25"
out=""
parse_flags evasion.sh "--np np uint 2" "--epochs epochs uint 1" "--rounds rounds uint 1" "--models models" \
  "--families families" "--attacks attacks" "--out out" -- "$@"
read -ra model_list <<<"$models"
read -ra family_list <<<"$families"
read -ra attack_list <<<"$attacks"
if [ "${#model_list[@]}" -eq 0 ] || [ "${#family_list[@]}" -eq 0 ] || [ "${#attack_list[@]}" -eq 0 ]; then
  die "--models, --families and --attacks each need at least one word"
fi
need_bins train
mpi_setup
driver_results evasion evasion.csv evasion.txt
echo "family,model,attack,clean_accuracy,attacked_accuracy" >"$out/evasion.csv"

failed=()
for family in "${family_list[@]}"; do
  for model in "${model_list[@]}"; do
    for attack in "${attack_list[@]}"; do
      tag="$family-$model-${attack//[:,]/_}"
      args=(--sync "$family" --model "$model" --quiet --eval-attack "$attack")
      if [ "$family" = fedavg ]; then args+=(--clients 100 --client-fraction 0.1 --rounds "$rounds"); else args+=(--epochs "$epochs"); fi
      if [ "$family" = serial ]; then
        launch=("$BIN/train")
      else
        mpirun_flags "$np"
        launch=("$MPIEXEC" -n "$np" "${MPIRUN_FLAGS[@]}" "$BIN/train")
      fi
      rc=0
      run_limited 900 "$logs/$tag.log" "${launch[@]}" "${args[@]}" || rc=$?
      line="$(sed -n 's/^under [^:]*:[^:]*: test accuracy \([0-9.]*\) (clean \([0-9.]*\))$/\2,\1/p' "$logs/$tag.log")"
      if [ "$rc" -ne 0 ] || [ -z "$line" ]; then
        failed+=("$tag")
        say_failed "$logs/$tag.log"
        continue
      fi
      echo "$family,$model,$attack,$line" >>"$out/evasion.csv"
      say "$family $model under $attack: ${line#*,} (clean ${line%,*})"
    done
  done
done

{
  results_header "evasion: train --eval-attack per family, MNIST, $np ranks$( [ "$np" -gt "$(cores)" ] && echo " (oversubscribed: accuracy does not depend on timing)"), $epochs epochs (fedavg: $rounds rounds of 10 of 100 clients), seed 1"
  echo "# test accuracy clean / under the attack (error rate under it = 1 - accuracy); Goodfellow et al. 2015: a shallow softmax classifier on MNIST errs on 99.9 % of FGSM examples at eps 0.25"
  awk -F, 'NR > 1 { printf "%-8s %-8s %-12s clean %.4f  attacked %.4f  (error %.1f %%)\n", $1, $2, $3, $4, $5, 100 * (1 - $5) }' "$out/evasion.csv"
} >"$out/evasion.txt"
cat "$out/evasion.txt" >&2
say "results in $out"
[ "${#failed[@]}" -eq 0 ] || die "failed: ${failed[*]} (see $logs)"
