#!/usr/bin/env bash
# The main job: installs what is missing, builds, fetches MNIST, then on this machine's cores (np = N = nproc, at
# least 2) trains the MLP on real MNIST with every sync method, and prints one comparison table: each method at
# np = N against the serial run (median of R runs). Along the way it measures what the charts need: the same
# methods at every np from 1 to N (speedup, step split, time to accuracy), a small allreduce sweep at np = N and a
# short straggler run (parameter-server staleness). A few minutes on 2 cores once built.
# Usage: scripts/run.sh [--np N] [--epochs E] [--batch B] [--reps R] [--out DIR]
# Results go to results/run-DATE/ (or DIR): the CSVs, each driver's table (*.txt), logs/ and charts/.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
start=$SECONDS

# Every sync method the trainer has; a sharded server (ps-bsp-k2) needs 3 ranks and is skipped below that.
METHODS="ring mpi ring-bf16 ps-bsp ps-ssp2 ps-asp ring-avg4 ps-bsp-k2"

np=$(( $(cores) < 2 ? 2 : $(cores) ))
epochs=5
batch=32
reps=3
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --np) need_value "$1" $#; need_uint "$1" "$2" 2; np="$2"; shift 2 ;;
    --epochs) need_value "$1" $#; need_uint "$1" "$2" 1; epochs="$2"; shift 2 ;;
    --batch) need_value "$1" $#; need_uint "$1" "$2" 1; batch="$2"; shift 2 ;;
    --reps) need_value "$1" $#; need_uint "$1" "$2" 1; reps="$2"; shift 2 ;;
    --out) need_value "$1" $#; out="$2"; shift 2 ;;
    -h|--help) show_help "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "run.sh: unknown option '$1' (use --np N, --epochs E, --batch B, --reps R, --out DIR)" ;;
  esac
done

"$GRADSYNC_ROOT/scripts/setup.sh"
"$GRADSYNC_ROOT/scripts/fetch_mnist.sh"
out="${out:-$GRADSYNC_ROOT/results/run-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$out"
ncores=$(cores)
# Staleness needs a server and at least two workers; on fewer cores than that the straggler run is oversubscribed.
straggler_np=$(( np < 3 ? 4 : np ))

failed=()
say "1/5 training: serial, then $METHODS at np 1..$np ($reps run(s) each, $epochs epochs)"
"$GRADSYNC_ROOT/bench/scaling.sh" --np-list "$(seq -s ' ' 1 "$np")" --methods "$METHODS" --epochs "$epochs" \
  --batch "$batch" --reps "$reps" --out "$out" >"$out/scaling.txt" || failed+=("training (bench/scaling.sh)")
[ -s "$out/scaling.csv" ] || die "training produced no scaling.csv; see the messages above and $out/logs/scaling"

say "2/5 allreduce sweep at np=$np, 4 B to 4 MiB"
"$GRADSYNC_ROOT/bench/collective_sweep.sh" --np-list "$np" --max-bytes 4M --step-factor 4 --out "$out" \
  >"$out/collectives.txt" || failed+=("allreduce sweep (bench/collective_sweep.sh)")

say "3/5 straggler: np=$straggler_np, one random worker 5 ms slow per step, one epoch per method"
"$GRADSYNC_ROOT/bench/straggler.sh" --kind random --np "$straggler_np" --epochs 1 --batch "$batch" --out "$out" \
  >"$out/straggler.txt" || failed+=("straggler (bench/straggler.sh)")

# Separate runs land in different states of a noisy host; alternating the methods and the serial baseline inside
# one run does not.
say "4/5 ring, mpi, ring-bf16 and serial steps alternated inside one training run (bench_sync, np=$np)"
mpi_setup
mpirun_flags "$np"
[ "$np" -gt "$ncores" ] || MPIRUN_FLAGS+=("${TRAINING_SHM_FLAGS[@]}")  # as bench/scaling.sh launches training
mkdir -p "$out/logs"
run_limited 300 "$out/logs/bench_sync.log" "$MPIEXEC" -n "$np" "${MPIRUN_FLAGS[@]}" "$BIN/bench_sync" --methods ring,mpi,ring-bf16,serial \
  --batch "$batch" --steps 6000 --block 32 && cp "$out/logs/bench_sync.log" "$out/sync_ab.txt" || failed+=("in-run comparison (bench_sync)")

say "5/5 charts"
"$GRADSYNC_ROOT/plots/make_charts.sh" "$out" >"$out/charts.txt" || failed+=("charts (plots/make_charts.sh)")

echo
echo "MNIST, MLP 784-128-10, $epochs epochs, batch $batch per worker, constant total work, median of $reps run(s)"
echo "every sync method at np=$np on $ncores cores, against the serial run:"
"$GRADSYNC_ROOT/bench/compare_table.sh" "$out/scaling.csv" "$np"
if [ -s "$out/sync_ab.txt" ]; then
  echo
  echo "ring, mpi, ring-bf16 and serial (rank 0 alone) alternated every 32 steps inside one run (per-step times, mean over ranks):"
  grep -E '^ *(method|ring|mpi|ring-bf16|serial) ' "$out/sync_ab.txt"
fi
echo
[ "$straggler_np" -le "$ncores" ] || \
  echo "note: the straggler run uses $straggler_np ranks on $ncores cores (oversubscribed): its staleness is real, its timings are not"
echo "results: $out"
echo "  tables:  scaling.txt (np 1..$np), collectives.txt (allreduce sweep), straggler.txt (staleness), sync_ab.txt"
echo "  data:    scaling.csv train.csv epochs.csv allreduce.csv straggler.csv staleness.csv; per-run logs in logs/"
if [ -s "$out/charts.txt" ] && grep -q '\.png$' "$out/charts.txt"; then
  echo "  charts:  $out/charts/ ($(sed -n 's|.*/\([^/]*\)\.png$|\1|p' "$out/charts.txt" | tr '\n' ' ' | sed 's/ $//'); PNG and SVG)"
fi
echo "done in $((SECONDS - start)) s"
[ "${#failed[@]}" -eq 0 ] || die "failed: $(printf '%s; ' "${failed[@]}")see the messages above and $out/logs"
