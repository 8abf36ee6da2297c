#!/usr/bin/env bash
# Every benchmark into one results directory, then the charts: the scaling benchmark (bench/scaling.sh), the
# allreduce sweep (bench/collective_sweep.sh) and the straggler experiment (bench/straggler.sh), each printing its
# table (also kept as DIR/<driver>.txt), then the charts into DIR/charts (plots/make_charts.sh, drawing the
# median run of each scaling point).
# Usage: bench/run_all.sh [--quick] [--out DIR]         (DIR defaults to results/bench-DATE)
# --quick: one epoch, one repetition, np up to the core count, a coarse sweep up to 1M: a few minutes on 2 cores.
# Without it: 5 epochs, median of 3, np 1-4 (powers of two beyond 8 cores), sweep to 64M: expect tens of minutes.
# A driver that fails does not stop the others; the exit status is 1 if any failed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

quick=0
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --out) need_value "$1" $#; out="$2"; shift 2 ;;
    -h|--help) show_help "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "run_all.sh: unknown option '$1' (use --quick, --out DIR)" ;;
  esac
done

ncores=$(cores)
top=$(( ncores < 2 ? 2 : ncores ))
if [ "$quick" = 1 ]; then
  scaling_np="$(seq -s ' ' 1 "$top")"
  scaling=(--epochs 1 --reps 1)
  sweep=(--np-list "$top" --max-bytes 1M --step-factor 4)
  straggler=(--epochs 1)
else
  # Past 4 ranks, one point per doubling is enough to see the curve and keeps a big machine's run bounded.
  if [ "$top" -le 8 ]; then scaling_np="$(seq -s ' ' 1 $(( top < 4 ? 4 : top )))"
  else scaling_np="1"; for ((n = 2; n <= top; n *= 2)); do scaling_np+=" $n"; done
       [ $((n / 2)) -eq "$top" ] || scaling_np+=" $top"
  fi
  scaling=(--epochs 5 --reps 3)
  sweep=(--np-list "2 $(( top > 4 ? top : 4 ))" --max-bytes 64M)
  straggler=(--epochs 2)
fi
out="${out:-$GRADSYNC_ROOT/results/bench-$(date +%Y%m%d-%H%M%S)}"
refuse_existing "$out" scaling.txt collectives.txt straggler.txt charts
mkdir -p "$out"
host_txt "$out" bench/run_all.sh
say "all benchmarks into $out ($([ "$quick" = 1 ] && echo quick || echo full) settings, $ncores cores)"

failed=()
here="$GRADSYNC_ROOT/bench"
"$here/scaling.sh" --np-list "$scaling_np" "${scaling[@]}" --out "$out" | tee "$out/scaling.txt" || failed+=(scaling)
echo
"$here/collective_sweep.sh" "${sweep[@]}" --out "$out" | tee "$out/collectives.txt" || failed+=(collective_sweep)
echo
# A transient straggler (the charted one: where SSP can win), then a persistent one (where no mode can).
"$here/straggler.sh" "${straggler[@]}" --kind random --out "$out" | tee "$out/straggler.txt" || failed+=(straggler)
echo
"$here/straggler.sh" "${straggler[@]}" --kind fixed --out "$out/straggler-fixed" | tee "$out/straggler-fixed.txt" \
  || failed+=(straggler-fixed)
echo
"$GRADSYNC_ROOT/plots/make_charts.sh" "$out" || failed+=(charts)

echo "results: $out (tables: scaling.txt collectives.txt straggler.txt; charts: $out/charts)"
[ "${#failed[@]}" -eq 0 ] || die "failed: ${failed[*]} (see the messages above and the logs in $out/logs)"
