#!/usr/bin/env bash
# The main job: installs what is missing, builds, fetches MNIST, then on this machine's cores (np = N = nproc, at
# least 2) trains the MLP on real MNIST with every sync method and compares each against the serial run. It prints
# the CPU (host.txt) and the host's state: a cross-core probe (scripts/common.sh xcore_probe) before and after every
# timed run, so that a run which saw the host's slow cross-core state is named and kept out of its median instead
# of moving it silently. The headline speedups (ring, mpi, ring-bf16 against serial) come from steps alternated
# inside one run (bench_sync), R runs: paired measurements see the same moments of the host. The secondary table is
# every method in runs of its own (bench/scaling.sh): median and range of R runs at np = N, the same methods at
# every np from 1 to N for the charts (speedup, step split, time to accuracy), then a small allreduce sweep at
# np = N and a short straggler run (parameter-server staleness). A few minutes on 2 cores once built.
# Usage: scripts/run.sh [--np N] [--epochs E] [--batch B] [--reps R] [--out DIR] [--verbose]
# The screen gets a line per stage and a short summary (the comparison, the headline with its range, where the files
# are), one screen in all; on a terminal, the run in progress stands in one line that rewrites itself. --verbose adds
# every run's line, the host's state at the start and each run left out of a median, which the results folder always
# has (logs/*.messages, scaling.txt).
# Results go to results/run-DATE/ (or DIR): host.txt (CPU, host state at the start), the CSVs, each driver's table
# (*.txt), sync_ab.csv (each paired run's steps and its probes), summary.txt (what it prints at the end), logs/ and
# charts/.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
start=$SECONDS

# Every sync method the trainer has, as train's sync specs (train --spec); the tables name them as train does (ps-bsp,
# ps-ssp2, ring-avg4, gossip-exp1, ps-bsp-k2). A sharded server (ps+servers=2) needs 3 ranks and is skipped below that.
METHODS="ring mpi ring-bf16 ps ps+mode=ssp+staleness=2 ps+mode=asp ring+average=4 gossip+topology=exp1 gossip+topology=ring+async ps+servers=2"

np=$(( $(cores) < 2 ? 2 : $(cores) ))
epochs=5
batch=32
reps=3
out=""
verbose=0
while [ $# -gt 0 ]; do
  case "$1" in
    --np) need_value "$1" $#; need_uint "$1" "$2" 2; np="$2"; shift 2 ;;
    --epochs) need_value "$1" $#; need_uint "$1" "$2" 1; epochs="$2"; shift 2 ;;
    --batch) need_value "$1" $#; need_uint "$1" "$2" 1; batch="$2"; shift 2 ;;
    --reps) need_value "$1" $#; need_uint "$1" "$2" 1; reps="$2"; shift 2 ;;
    --out) need_value "$1" $#; out="$2"; shift 2 ;;
    --verbose) verbose=1; shift ;;
    -h|--help) show_help "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "run.sh: unknown option '$1' (use --np N, --epochs E, --batch B, --reps R, --out DIR, --verbose)" ;;
  esac
done

"$GRADSYNC_ROOT/scripts/setup.sh"
"$GRADSYNC_ROOT/scripts/fetch_mnist.sh"
out="${out:-$GRADSYNC_ROOT/results/run-$(date +%Y%m%d-%H%M%S)}"
refuse_existing "$out" host.txt sync_ab.txt sync_ab.csv
mkdir -p "$out/logs"
ncores=$(cores)
mpi_setup
# The machine and its state before anything runs: every figure below is this host's at these moments.
host_txt "$out" scripts/run.sh
echo "# host at the start: load average $(cut -d' ' -f1-3 /proc/loadavg) on $ncores cores, cross-core probe" \
  "(xcore, 1 MiB ring through a shared window, 2 ranks) $(xcore_probe "$out/logs/probe_start.log") us" >>"$out/host.txt"
if [ "$verbose" -eq 1 ]; then sed 's/^# /==> /' "$out/host.txt" >&2; else sed -n '1s/^# /==> /p' "$out/host.txt" >&2; fi
# Staleness needs a server and at least two workers; on fewer cores than that the straggler run is oversubscribed.
straggler_np=$(( np < 3 ? 4 : np ))

# headline SYNC_CSV SCALING_CSV NP: bench/sync_headline.awk on the job's files (SCALING_CSV's folder holds
# host_state.csv).
headline() {
  awk -F, -v np="$3" -f "$GRADSYNC_ROOT/scripts/host_state.awk" -f "$GRADSYNC_ROOT/bench/sync_headline.awk" \
    "$(dirname "$2")/host_state.csv" "$1" "$2"
}

# quietly NAME CMD...: runs CMD with its messages (every run's line, skips, notes) in logs/NAME.messages instead of
# on the screen, unless --verbose; on a terminal the latest of them stands in one line that rewrites itself, so a
# long step shows progress without scrolling the summary away. A failing CMD's last messages are printed.
quietly() {
  local name="$1" status=0
  shift
  if [ "$verbose" -eq 1 ]; then "$@" || status=$?; return "$status"; fi
  local msgs="$out/logs/$name.messages"
  "$@" 2>"$msgs" &
  local pid=$!
  if [ -t 2 ]; then
    while kill -0 "$pid" 2>/dev/null; do
      printf '\r\033[K    %s' "$(tail -n 1 "$msgs" | cut -c1-110)" >&2
      sleep 1
    done
    printf '\r\033[K' >&2
  fi
  wait "$pid" || status=$?
  [ "$status" -eq 0 ] || { echo "$name failed; its last messages ($msgs):" >&2; tail -n 15 "$msgs" >&2; }
  return "$status"
}

failed=()
say "1/5 training: serial, then $METHODS at np 1..$np ($reps run(s) each, $epochs epochs)"
quietly scaling "$GRADSYNC_ROOT/bench/scaling.sh" --np-list "$(seq -s ' ' 1 "$np")" --methods "$METHODS" --epochs "$epochs" \
  --batch "$batch" --reps "$reps" --out "$out" >"$out/scaling.txt" || failed+=("training (bench/scaling.sh)")
[ -s "$out/scaling.csv" ] || die "training produced no scaling.csv; see the messages above and $out/logs/scaling"

say "2/5 allreduce sweep at np=$np, 4 B to 4 MiB"
quietly collectives "$GRADSYNC_ROOT/bench/collective_sweep.sh" --np-list "$np" --max-bytes 4M --step-factor 4 --out "$out" \
  >"$out/collectives.txt" || failed+=("allreduce sweep (bench/collective_sweep.sh)")

say "3/5 straggler: np=$straggler_np, one random worker 5 ms slow per step, one epoch per method"
quietly straggler "$GRADSYNC_ROOT/bench/straggler.sh" --kind random --np "$straggler_np" --epochs 1 --batch "$batch" --out "$out" \
  >"$out/straggler.txt" || failed+=("straggler (bench/straggler.sh)")

# Separate runs land in different states of a noisy host; alternating the methods and the serial baseline inside
# one run does not: the headline comes from here.
say "4/5 ring, mpi, ring-bf16 and serial steps alternated inside one training run (bench_sync, np=$np, $reps run(s))"
mpirun_flags "$np"
[ "$np" -gt "$ncores" ] || MPIRUN_FLAGS+=("${TRAINING_SHM_FLAGS[@]}")  # as bench/scaling.sh launches training
echo "run,method,step_us,speedup,xcore_before_us,xcore_after_us" >"$out/sync_ab.csv"
{ sed 1q "$out/host.txt"; echo; } >"$out/sync_ab.txt"
before="$(xcore_probe "$out/logs/probe_sync_0.log")"
for ((r = 1; r <= reps; r++)); do
  log="$out/logs/bench_sync_$r.log"
  rc=0
  run_limited 300 "$log" "$MPIEXEC" -n "$np" "${MPIRUN_FLAGS[@]}" "$BIN/bench_sync" --methods ring,mpi,ring-bf16,serial \
    --batch "$batch" --steps 3000 --block 32 || rc=$?
  after="$(xcore_probe "$out/logs/probe_sync_$r.log")"
  if [ "$rc" -ne 0 ]; then failed+=("in-run comparison (bench_sync run $r, log: $log)"); before="$after"; continue; fi
  { echo "run $r of $reps, cross-core probe $before us before, $after us after:"; cat "$log"; echo; } >>"$out/sync_ab.txt"
  awk -v r="$r" -v b="$before" -v a="$after" '/speedup vs serial/ { ok = 1 }
    ok && $1 ~ /^(ring|mpi|ring-bf16|serial)$/ && $2 ~ /^[0-9]+$/ { print r "," $1 "," $6 "," $NF "," b "," a }' \
    "$log" >>"$out/sync_ab.csv"
  before="$after"
done

say "5/5 charts"
quietly charts "$GRADSYNC_ROOT/plots/make_charts.sh" "$out" >"$out/charts.txt" || failed+=("charts (plots/make_charts.sh)")

# The summary goes to the screen and to summary.txt: the flags it prints (a paired headline and its separate runs
# apart, runs left out) are findings of the run, not only of the session that watched it.
summary() {
  echo
  sed -n '1s/^# //p' "$out/host.txt"
  [ "$verbose" -eq 0 ] || sed -n '2,$s/^# //p' "$out/host.txt"
  echo "MNIST, MLP 784-128-10, batch $batch per worker, np=$np on $ncores cores, against the serial run."
  if [ "$(lines "$out/sync_ab.csv")" -gt 1 ]; then
    echo "Headline: ring, mpi, ring-bf16 and serial (rank 0 alone) steps alternated every 32 steps inside one run"
    echo "(bench_sync, per-step times; speedup = np x serial step / step), median and range of the paired runs:"
    headline "$out/sync_ab.csv" "$out/scaling.csv" "$np"
  fi
  echo
  echo "Secondary: each method in runs of its own (train, $epochs epochs, constant total work), median of the runs in"
  echo "the host state most of them saw, range of all $reps:"
  "$GRADSYNC_ROOT/bench/compare_table.sh" "$out/scaling.csv" "$np"
  local left
  left="$(sed -n '/^runs that saw another host state/,/^results: /{/^  /p}' "$out/scaling.txt")"
  if [ -n "$left" ] && [ "$verbose" -eq 1 ]; then
    echo "runs in another host state, left out of their median:"
    echo "$left"
  elif [ -n "$left" ]; then
    echo "$(wc -l <<<"$left") run(s) saw another host state and are left out of their medians (scaling.txt names them)"
  fi
  echo
  [ "$straggler_np" -le "$ncores" ] || \
    echo "note: the straggler run uses $straggler_np ranks on $ncores cores (oversubscribed): its staleness is real, its timings are not"
  echo "results: $out (summary.txt, host.txt, *.txt tables, *.csv data, logs/)"
  if [ -s "$out/charts.txt" ] && grep -q '\.png$' "$out/charts.txt"; then
    echo "charts:  $out/charts/ ($(sed -n 's|.*/\([^/]*\)\.png$|\1|p' "$out/charts.txt" | tr '\n' ' ' | sed 's/ $//'))"
  fi
  echo "done in $((SECONDS - start)) s"
}
summary | tee "$out/summary.txt"
[ "${#failed[@]}" -eq 0 ] || die "failed: $(printf '%s; ' "${failed[@]}")see the messages above and $out/logs"
