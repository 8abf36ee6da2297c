#!/usr/bin/env bash
# Who survives what: the test accuracy after training of every aggregator (train --list-aggregators) against every
# attack (train --list-attacks) with F of --np workers malicious, F in --f-list, each aggregator told F (bulyan, which
# needs n >= 4F + 3, is refused above F = 1 at n = 8, as train refuses it: the cell says "refused"), plus the price
# of robustness: each aggregator without any attacker, told --price-f (or the most it accepts). Every attack runs
# with its defaults (attacks.def); cclip's radius, which has none, is --cclip. The backdoor's cells add its attack
# success rate on the triggered test set. Accuracy per step does not depend on timing, so --np above the core
# count (oversubscribed) is fine here; no time is reported.
# Usage: bench/survival_grid.sh [--np 8] [--f-list "1 2 3"] [--price-f 2] [--epochs 2] [--hidden 128] [--lr 0.05]
#          [--method ring] [--cclip 1] [--out DIR]
# Writes into DIR (default results/survival-DATE): survival.csv (attack,byzantine,aggregator,status,test_accuracy,
# backdoor_asr, one row a cell; status ok, refused, diverged or failed), survival.txt (the table: one row per
# aggregator, one column per attack and F), the heat map survival.png/svg, logs/. A cell already in survival.csv is
# not run again, so an interrupted sweep picks up where it stopped (--out the same folder). Exit status 1 if a run
# failed for another reason than a refusal or a divergence.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

np=8
f_list="1 2 3"
price_f=2
epochs=2
hidden=128
lr=0.05
method=ring
cclip=1
out=""
parse_flags survival_grid.sh "--np np uint 1" "--f-list f_list" "--price-f price_f uint 0" "--epochs epochs uint 1" \
  "--hidden hidden uint 1" "--lr lr" "--method method" "--cclip cclip above 0 --cclip: a radius > 0, not '%s'" \
  "--out out" -- "$@"
read -ra fs <<<"$f_list"
[ "${#fs[@]}" -gt 0 ] || die "--f-list is empty"
for f in "${fs[@]}"; do need_uint --f-list "$f" 1; done
need_bins train
mpi_setup
resume=""
[ -z "$out" ] || [ ! -s "$out/survival.csv" ] || resume=1
if [ -n "$resume" ]; then
  logs="$out/logs/survival"
  mkdir -p "$logs"
else
  driver_results survival survival.csv survival.txt
  echo "attack,byzantine,aggregator,status,test_accuracy,backdoor_asr" >"$out/survival.csv"
fi

# The lists, from train itself (attacks.def, aggregators.def): the name before ':' and its parameters after.
mapfile -t attacks < <("$BIN/train" --list-attacks | cut -f1 | cut -d: -f1 | grep .)
mapfile -t aggregators < <("$BIN/train" --list-aggregators | cut -f1 | grep .)
# spelled AGGREGATOR F: the listing's aggregator told F (B for trimmed; multikrum's M left to its default, n - F).
spelled() {
  local name="${1%%:*}" params="${1#*:}"
  [ "$params" != "$1" ] || { echo "$name"; return; }
  case "$params" in
    TAU*) echo "$name:$cclip" ;;
    F* | B*) echo "$name:$2" ;;
    *) die "survival_grid.sh: no rule for the parameters of $1" ;;
  esac
}
cells=()
for a in "${aggregators[@]}"; do cells+=("none 0 $a"); done
for attack in "${attacks[@]}"; do
  for f in "${fs[@]}"; do
    for a in "${aggregators[@]}"; do cells+=("$attack $f $a"); done
  done
done

# run_cell ATTACK F AGGREGATOR TOLD: one training run, its row appended to survival.csv; sets status.
run_cell() {
  local attack="$1" f="$2" agg tag rc=0 t0=$SECONDS accuracy asr args
  agg="$(spelled "$3" "$4")"
  tag="$attack-F$f-${agg//[:,]/_}"
  args=(--robust-aggregation "$agg")
  [ "$attack" = none ] || args+=(--byzantine "$f" --attack "$attack")
  run_limited 900 "$logs/$tag.log" "$MPIEXEC" -n "$np" "${MPIRUN_FLAGS[@]}" "$BIN/train" --sync "$method" \
    --model mlp --hidden "$hidden" --lr "$lr" --batch 32 --epochs "$epochs" --quiet "${args[@]}" || rc=$?
  accuracy="$(sed -n 's/^done: .*test accuracy \([0-9.]*\),.*/\1/p' "$logs/$tag.log")"
  asr="$(sed -n 's/^backdoor: attack success rate \([0-9.]*\) .*/\1/p' "$logs/$tag.log")"
  if [ "$rc" -eq 0 ] && [ -n "$accuracy" ]; then
    status=ok
  elif [ "$rc" -eq 2 ] && grep -qa 'needs n >=' "$logs/$tag.log"; then
    status=refused
  elif grep -qa 'training diverged' "$logs/$tag.log"; then
    status=diverged
  else
    status=failed
    failed+=("$tag")
    say_failed "$logs/$tag.log"
  fi
  # A price cell refused for its F is tried again told less (below); only the one it accepts is kept.
  if [ "$attack" != none ] || [ "$status" != refused ] || [ "$4" -eq 0 ]; then
    echo "$attack,$f,$agg,$status,$accuracy,$asr" >>"$out/survival.csv"
  fi
  say "[$done_cells/${#cells[@]}] $attack F=$f $agg: $status${accuracy:+ $accuracy}${asr:+ (backdoor success $asr)} ($((SECONDS - t0)) s)"
}

mpirun_flags "$np"
failed=()
done_cells=0
for cell in "${cells[@]}"; do
  read -r attack f agg <<<"$cell"
  done_cells=$((done_cells + 1))
  if [ "$attack" = none ]; then
    if grep -qE "^none,0,${agg%%:*}(:|,)" "$out/survival.csv"; then continue; fi
    told=$price_f
    while :; do
      run_cell none 0 "$agg" "$told"
      if [ "$status" != refused ] || [ "$told" -eq 0 ]; then break; fi
      told=$((told - 1))
    done
  else
    if grep -q "^$attack,$f,$(spelled "$agg" "$f")," "$out/survival.csv"; then continue; fi
    run_cell "$attack" "$f" "$agg" "$f"
  fi
done

{
  results_header "survival_grid: MLP $hidden on MNIST, $np workers ($method), batch 32 each, lr $lr, $epochs epochs, IID$( [ "$np" -gt "$(cores)" ] && echo "; oversubscribed ($np ranks on $(cores) cores): accuracy per step does not depend on timing")"
  echo "# test accuracy after training; each aggregator told F (the column's); 'none': no attacker, the aggregator told $price_f or the most it accepts; - refused (too few ranks for that F), x diverged; backdoor: accuracy / attack success rate"
  awk -F, -v fl="$f_list" '
    NR == 1 { next }
    { key = $1 "|" $2; agg = $3; sub(/:.*/, "", agg)
      if (!(agg in seen)) { seen[agg] = 1; order[++na] = agg }
      if (!(key in kseen)) { kseen[key] = 1; keys[++nk] = key }
      v = $4 == "ok" ? sprintf("%.3f", $5) : $4 == "refused" ? "-" : $4 == "diverged" ? "x" : "FAIL"
      if ($4 == "ok" && $6 != "") v = v "/" sprintf("%.2f", $6)
      cell[agg "|" key] = v }
    END {
      printf "%-10s", "aggregator"
      for (k = 1; k <= nk; k++) { split(keys[k], p, "|"); printf " %14s", p[1] == "none" ? "none" : p[1] " F=" p[2] }
      printf "\n"
      for (a = 1; a <= na; a++) {
        printf "%-10s", order[a]
        for (k = 1; k <= nk; k++) printf " %14s", (order[a] "|" keys[k]) in cell ? cell[order[a] "|" keys[k]] : ""
        printf "\n"
      }
    }' "$out/survival.csv"
} >"$out/survival.txt"
cat "$out/survival.txt" >&2
if command -v gnuplot >/dev/null; then
  gnuplot -e "data='$out/survival.csv'; outdir='$out'; subtitle='$np workers, MLP $hidden, $epochs epochs - $(cpu_summary | cut -d, -f1) - $(date -u +%Y-%m-%d)'" \
    "$GRADSYNC_ROOT/plots/survival.gp" >&2 || say "warning: the chart failed"
fi
say "results in $out"
[ "${#failed[@]}" -eq 0 ] || die "failed: ${failed[*]} (see $logs)"
