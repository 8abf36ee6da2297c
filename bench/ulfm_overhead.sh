#!/usr/bin/env bash
# The price of being ready for a lost process: the same training run, no failure, on 2 ranks of this node under
#   ulfm   Open MPI 5.0.7 with ULFM, started with --with-ft ulfm (in-place recovery armed: build-ulfm/),
#   ompi5  the same MPI and binary without --with-ft (fault tolerance off),
#   ompi4  Debian's Open MPI 4.1 (build/), the MPI every other figure uses,
# in turn, A B C A B C..., --reps times, each reporting its own training seconds (train's summary line, evaluation
# and start-up left out). The ratios are per round, so a machine whose speed drifts between rounds still compares.
# Usage: bench/ulfm_overhead.sh [--reps 7] [--steps 2000] [--out DIR]
# Writes into DIR (default results/ulfm-overhead-DATE): overhead.csv (rep,mpi,train_s), overhead.txt (medians and
# ratios) and logs/ulfm-overhead/. Needs build/ and build-ulfm/ (bash scripts/ulfm.sh build).
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

reps=7
steps=2000
out=""
parse_flags ulfm_overhead.sh "--reps reps uint 1" "--steps steps uint 10" "--out out" -- "$@"
need_bins train
ulfm_bin="$GRADSYNC_ROOT/build-ulfm/bin"
[ -x "$ulfm_bin/train" ] || die "$ulfm_bin/train is missing: bash scripts/ulfm.sh build"
prefix="$("$GRADSYNC_ROOT/scripts/ulfm.sh" prefix)" || die "no ULFM MPI installed: bash scripts/ulfm.sh build"
mpi_setup
driver_results ulfm-overhead overhead.csv overhead.txt
root_flag=()
[ "$(id -u)" -ne 0 ] || root_flag=(--allow-run-as-root)
run=(--sync ring --model mlp --hidden 128 --batch 32 --epochs 1 --iterations-per-epoch "$steps" --quiet)
declare -A launch=(
  [ulfm]="$prefix/bin/mpirun ${root_flag[*]} --with-ft ulfm -n 2 --bind-to core $ulfm_bin/train"
  [ompi5]="$prefix/bin/mpirun ${root_flag[*]} -n 2 --bind-to core $ulfm_bin/train"
  [ompi4]="$MPIEXEC -n 2 --bind-to core $BIN/train"
)
echo "rep,mpi,train_s" >"$out/overhead.csv"
for rep in $(seq "$reps"); do
  for mpi in ulfm ompi5 ompi4; do
    log="$logs/$mpi-$rep.log"
    # shellcheck disable=SC2086  # the launcher line is words
    run_limited 600 "$log" ${launch[$mpi]} "${run[@]}" || die "$mpi run $rep failed (see $log)"
    s="$(sed -n 's/.* \([0-9.]*\)s training .*/\1/p' "$log")"
    [ -n "$s" ] || die "$mpi run $rep printed no training time (see $log)"
    echo "$rep,$mpi,$s" >>"$out/overhead.csv"
    say "round $rep: $mpi $s s"
  done
done
awk -F, 'NR > 1 { t[$1, $2] = $3; reps[$1] = 1 }
  function median(a, n,   i, j, x) { for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j > 0 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
                                     return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  END {
    n = 0; for (r in reps) { n++; u[n] = t[r, "ulfm"]; f[n] = t[r, "ompi5"]; d[n] = t[r, "ompi4"]
                             a[n] = t[r, "ulfm"] / t[r, "ompi5"]; b[n] = t[r, "ulfm"] / t[r, "ompi4"] }
    printf "training seconds, median of %d rounds: ulfm %.3f, ompi5 %.3f, ompi4 %.3f\n", n, median(u, n), median(f, n), median(d, n)
    printf "ulfm / ompi5 (the price of --with-ft ulfm): median %.3f (per-round ratios)\n", median(a, n)
    printf "ulfm / ompi4 (against Debian'"'"'s Open MPI 4.1): median %.3f\n", median(b, n)
  }' "$out/overhead.csv" | tee "$out/overhead.txt"
