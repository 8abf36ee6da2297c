#!/usr/bin/env bash
# In-place recovery on this node: `train` on --np ranks under the ULFM MPI (build-ulfm/, --with-ft ulfm), one rank
# killed (SIGKILL, --inject-kill) every --every steps until --kills ranks are gone, for each --methods entry; the
# recovery lines of each run become rows (the lost rank, the step, the ranks left, the steps done again, the seconds
# from the failure reaching a survivor to the re-formed run), beside the run's final accuracy and training time.
# Accuracy per step does not depend on timing, so oversubscribed runs are fine for it; the seconds are not a network's.
# Usage: bench/inplace_recovery.sh [--np 6] [--kills 3] [--every 400] [--steps 2000] [--methods ring,rd,gossip]
#                                  [--out DIR]
# Writes into DIR (default results/inplace-recovery-DATE): recoveries.csv
# (method,np,lost_rank,step,ranks_after,steps_again,seconds), runs.csv (method,np,kills,test_accuracy,train_s) and
# logs/inplace-recovery/. Needs build-ulfm/ (bash scripts/ulfm.sh build).
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"

np=6
kills=3
every=400
steps=2000
methods=ring,rd,gossip
out=""
parse_flags inplace_recovery.sh "--np np uint 2" "--kills kills uint 1" "--every every uint 1" "--steps steps uint 10" \
  "--methods methods" "--out out" -- "$@"
[ "$kills" -lt "$np" ] || die "--kills $kills leaves no rank of --np $np"
[ $((kills * every)) -lt "$steps" ] || die "--kills $kills every $every steps do not fit in --steps $steps"
ulfm_bin="$GRADSYNC_ROOT/build-ulfm/bin"
[ -x "$ulfm_bin/train" ] || die "$ulfm_bin/train is missing: bash scripts/ulfm.sh build"
prefix="$("$GRADSYNC_ROOT/scripts/ulfm.sh" prefix)" || die "no ULFM MPI installed: bash scripts/ulfm.sh build"
BUILD_DIR="$GRADSYNC_ROOT/build-ulfm" BIN="$ulfm_bin"
driver_results inplace-recovery recoveries.csv runs.csv
launcher=("$prefix/bin/mpirun" --with-ft ulfm --oversubscribe --bind-to none --mca mpi_yield_when_idle 1 -n "$np")
[ "$(id -u)" -ne 0 ] || launcher+=(--allow-run-as-root)
# The victims: the highest ranks first, one every --every steps.
plan=()
for k in $(seq "$kills"); do plan+=("$((k * every)):$((np - k))"); done
kill_list="$(IFS=,; echo "${plan[*]}")"
echo "method,np,lost_rank,step,ranks_after,steps_again,seconds" >"$out/recoveries.csv"
echo "method,np,kills,test_accuracy,train_s" >"$out/runs.csv"
IFS=, read -r -a names <<<"$methods"
for m in "${names[@]}"; do
  log="$logs/$m.log"
  run_limited 900 "$log" "${launcher[@]}" "$ulfm_bin/train" --sync "$m" --model mlp --hidden 128 --batch 32 \
    --epochs 1 --iterations-per-epoch "$steps" --quiet --inject-kill "$kill_list" || true  # the verdict is the lines
  grep -q '^done: ' "$log" || die "$m: the run did not finish (see $log)"
  sed -n 's/^recovered in place: lost rank \([0-9]*\) (host [^)]*); continuing on \([0-9]*\) ranks.* from step \([0-9]*\), \([0-9]*\) steps\{0,1\} done again; \([0-9.]*\) s from.*/\1,\3,\2,\4,\5/p' "$log" |
    while IFS=, read -r lost step after again s; do echo "$m,$np,$lost,$step,$after,$again,$s"; done >>"$out/recoveries.csv"
  got="$(grep -c "^$m,$np," "$out/recoveries.csv")"
  [ "$got" = "$kills" ] || die "$m: $got recovery line(s) for $kills kill(s) (see $log)"
  acc="$(sed -n 's/.*test accuracy \([0-9.]*\),.*/\1/p' "$log")" t="$(sed -n 's/.* \([0-9.]*\)s training .*/\1/p' "$log")"
  echo "$m,$np,$kills,$acc,$t" >>"$out/runs.csv"
  say "$m: $kills recoveries, accuracy $acc"
done
column -s, -t "$out/recoveries.csv"
