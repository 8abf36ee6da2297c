#!/usr/bin/env bash
# ctest cases for `train --trace`, the slow-rank report and `--explain` on the real binary (tests/CMakeLists.txt lists them).
# usage: trace_check.sh BIN_DIR CASE
#   blocking  a blocking ring: the trace parses, spans nest, each step's allreduce carries the gradient's bytes, and
#             no allreduce overlaps a backward span
#   buckets   the same with --buckets (two buckets): allreduce spans overlap backward spans
#   thread    --buckets --progress thread: the communication thread's track nests and carries the bytes
#   window    --trace-steps 5:9 keeps exactly those steps
#   explain   --sync auto --buckets --explain: the table lists exactly the sizes rank 0 reduced
#   straggler with no flag (the report is on by default) --straggler 1:5 names rank 1 in one line, without the table,
#             and the same run without the straggler prints no report line; --slow-ranks without a straggler prints
#             every rank's row and names nobody; --no-slow-ranks with the straggler prints no report. On 2 ranks: 4
#             ranks on this machine's 2 cores are time-sliced, and a rank the scheduler keeps waiting is late by a
#             slice for real (it was named, correctly, in a run beside a simulation taking a core)
#   alternate bench_sync --methods ring,ring+traced: the trace holds exactly the +traced method's steps, and they
#             check as a blocking ring's
#   badpath   --trace into a missing directory: one error, before any step, exit 2
#   hang      rank 3 never reaches the first allreduce: the watchdog's report names the collective, its call number
#             and rank 3 as the one that never entered it
#   hang_late with the default report, rank 1 late by 20 ms every step and rank 3 hung after step 20: the hang report names
#             rank 3 as missing, says it has no entry times from it, and names rank 1 from the ranks that answered
#             (20 ms, not 5: four ranks share two cores here, and the waiting ranks poll)
# Launcher and flags: scripts/mpi.sh ($GRADSYNC_MPIEXEC from ctest), as the other shell tests.
set -euo pipefail
bin=$1
case_name=$2
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../scripts/mpi.sh"
mpi_launcher "$bin/.." || exit 1
mpi_yield_shim "$bin"
mpi_env
mpirun_flags 4 shared
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# mlp-128 on MNIST: 784*128 + 128 + 128*10 + 10 floats.
param_bytes=$(((784 * 128 + 128 + 128 * 10 + 10) * 4))

train() {
  env "${MPI_ENV[@]}" "$MPIEXEC" -n "${ranks:-4}" "${MPIRUN_FLAGS[@]}" "$bin/train" --model mlp --epochs 1 --iterations-per-epoch 30 \
    --quiet "$@"
}
check() { python3 "$here/check_trace.py" "$@"; }

case "$case_name" in
  blocking) train --sync ring --trace "$out/t.json" && check "$out/t.json" "$param_bytes" --overlap no ;;
  buckets) train --sync ring --buckets --bucket-kib 4 --trace "$out/t.json" && check "$out/t.json" "$param_bytes" --overlap yes ;;
  thread)
    train --sync ring --buckets --bucket-kib 4 --progress thread --trace "$out/t.json"
    grep -q '"communication thread"' "$out/t.json" || { echo "no communication thread track" >&2; exit 1; }
    check "$out/t.json" "$param_bytes" ;;
  window) train --sync ring --trace "$out/t.json" --trace-steps 5:9 && check "$out/t.json" "$param_bytes" --steps 5:9 ;;
  explain)
    train --sync auto --buckets --bucket-kib 4 --explain --trace "$out/t.json" | tee "$out/explain.txt"
    check "$out/t.json" "$param_bytes" --explained "$out/explain.txt" ;;
  straggler)
    ranks=2 train --sync ring --straggler 1:5 | tee "$out/late.txt"
    grep -q '^rank 1 was last into' "$out/late.txt" || { echo "a default run did not name the straggler, rank 1" >&2; exit 1; }
    ! grep -q '^  rank 0: last into' "$out/late.txt" || { echo "a default run printed the whole table" >&2; exit 1; }
    ranks=2 train --sync ring | tee "$out/quiet.txt"
    ! grep -q 'was last into\|consistently late\|^slow ranks' "$out/quiet.txt" ||
      { echo "a default run without a straggler printed a report line" >&2; exit 1; }
    ranks=2 train --sync ring --slow-ranks | tee "$out/none.txt"
    grep -q '^  rank 0: last into' "$out/none.txt" && grep -q '^  rank 1: last into' "$out/none.txt" ||
      { echo "--slow-ranks did not print every rank's row" >&2; exit 1; }
    grep -q '^no rank was consistently late' "$out/none.txt" || { echo "a run without a straggler named a rank" >&2; exit 1; }
    ranks=2 train --sync ring --no-slow-ranks --straggler 1:5 | tee "$out/off.txt"
    ! grep -q 'was last into\|consistently late\|^slow ranks' "$out/off.txt" ||
      { echo "--no-slow-ranks still printed a report" >&2; exit 1; } ;;
  alternate)
    env "${MPI_ENV[@]}" "$MPIEXEC" -n 2 "${MPIRUN_FLAGS[@]}" "$bin/bench_sync" --methods ring,ring+traced --steps 64 \
      --block 8 --settle 1 --trace "$out/t.json"
    check "$out/t.json" "$param_bytes" --overlap no
    python3 - "$out/t.json" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
steps = {e["args"]["step"] for e in events if e.get("name") == "step"}
expected = {s for s in range(64) if (s // 8) % 2 == 1}  # ring-traced's blocks of 8
sys.exit(0 if steps == expected else f"traced steps {sorted(steps)}, expected {sorted(expected)}")
PY
    ;;
  badpath)
    set +e
    train --sync ring --trace "$out/missing/t.json" >"$out/bad.txt" 2>&1
    code=$?
    set -e
    cat "$out/bad.txt"
    [ "$code" -eq 2 ] || { echo "exit $code, expected 2" >&2; exit 1; }
    [ "$(grep -c "^train: error: --trace $out/missing/t.json: cannot open for writing" "$out/bad.txt")" -eq 1 ] ||
      { echo "expected the error once" >&2; exit 1; }
    ! grep -q '^epoch\|^done' "$out/bad.txt" || { echo "trained despite the bad path" >&2; exit 1; } ;;
  hang)
    set +e
    train --sync ring --straggler 3:600000 --timeout 3 >"$out/hang.txt" 2>&1
    code=$?
    set -e
    cat "$out/hang.txt"
    [ "$code" -ne 0 ] || { echo "a hung job exited 0" >&2; exit 1; }
    grep -q 'the wait is in collective ring (object [0-9]*), call #0; roll call .*never entered it: 3$' "$out/hang.txt" ||
      { echo "the hang report does not name rank 3 as missing from call #0" >&2; exit 1; } ;;
  hang_late)
    set +e
    train --sync ring --straggler 1:20 --inject-pause 20:600:3 --timeout 3 >"$out/hang.txt" 2>&1
    code=$?
    set -e
    cat "$out/hang.txt"
    [ "$code" -ne 0 ] || { echo "a hung job exited 0" >&2; exit 1; }
    grep -q 'the wait is in collective ring (object [0-9]*), call #20; roll call .*never entered it: 3$' "$out/hang.txt" ||
      { echo "the hang report does not name rank 3 as missing from call #20" >&2; exit 1; }
    grep -q '^lateness before the hang, .*no data for ranks: 3$' "$out/hang.txt" ||
      { echo "the hang report does not say it has no entry times from rank 3" >&2; exit 1; }
    grep -q '^  rank 0: last into' "$out/hang.txt" && grep -q '^  rank 2: last into' "$out/hang.txt" ||
      { echo "the lateness table lacks a rank that answered" >&2; exit 1; }
    ! grep -q '^  rank 3: last into' "$out/hang.txt" || { echo "the lateness table lists the hung rank" >&2; exit 1; }
    grep -q '^rank 1 was last into' "$out/hang.txt" || { echo "the slow rank, rank 1, was not named" >&2; exit 1; } ;;
  *) echo "trace_check.sh: unknown case '$case_name'" >&2; exit 2 ;;
esac
