#!/usr/bin/env bash
# Measures this machine's link between ranks of one host (a ping-pong on two ranks bound to two cores) and its
# reduction kernel (bench_membw on one rank), fits alpha, beta and gamma (bench/cluster/fit_cost_model.py) and
# writes them as the "intra" link of auto's tuning file (collectives/cost_model.hpp), keeping any "inter" lines a
# cluster measurement wrote there (bench/cluster/bench_algorithms.sh). About half a minute once built.
# Usage: scripts/tune.sh [--out FILE]    (default $HOME/.config/gradsync/tuning.txt, where train and the benchmarks
#                                        look; GRADSYNC_TUNING=FILE points them elsewhere)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

tuning="${HOME:-/root}/.config/gradsync/tuning.txt"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) need_value "$1" $#; tuning="$2"; shift 2 ;;
    -h|--help) show_help "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "tune.sh: unknown option '$1' (use --out FILE)" ;;
  esac
done
for b in pingpong bench_membw; do [ -x "$BIN/$b" ] || die "$BIN/$b is missing: build first (scripts/setup.sh)"; done
command -v python3 >/dev/null || die "python3 is needed for the fit"
mpi_launcher "$BUILD_DIR"
mpi_env
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mpirun_flags 2
say "ping-pong between two ranks of this host"
run_limited 300 "$work/pingpong.log" env "${MPI_ENV[@]}" "$MPIEXEC" -n 2 "${MPIRUN_FLAGS[@]}" "$BIN/pingpong" \
  --min-bytes 0 --max-bytes 16M --step-factor 2 --reps 5 --csv "$work/pingpong.csv" \
  || die "the ping-pong failed: $(tail -n 5 "$work/pingpong.log")"
say "reduction kernel on one core"
mpirun_flags 1
run_limited 120 "$work/membw.txt" env "${MPI_ENV[@]}" "$MPIEXEC" -n 1 "${MPIRUN_FLAGS[@]}" "$BIN/bench_membw" \
  --bytes 64M || die "bench_membw failed: $(tail -n 5 "$work/membw.txt")"
python3 "$GRADSYNC_ROOT/bench/cluster/fit_cost_model.py" --pingpong "$work/pingpong.csv" --membw "$work/membw.txt" \
  --out "$work/model" --tuning-out "$tuning" --link intra >"$work/fit.log" 2>&1 || true
[ -s "$tuning" ] || die "the fit wrote no tuning file: $(tail -n 5 "$work/fit.log")"
cat "$tuning"
say "auto's tuning file: $tuning"
