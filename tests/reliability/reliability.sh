#!/usr/bin/env bash
# Fault-injection tests of `train`, one case per call: reliability.sh BIN_DIR CASE. ctest runs each case.
# Every case runs real MPI jobs on MNIST, kept short with --iterations-per-epoch.
set -euo pipefail
bin="${1:?usage: reliability.sh BIN_DIR CASE}"
case_name="${2:?usage: reliability.sh BIN_DIR CASE}"
# The launcher the tree was configured with ($GRADSYNC_MPIEXEC from ctest, else the tree's CMakeCache.txt) and its
# flags for ranks that share the cores with anything, from scripts/mpi.sh.
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/mpi.sh"
mpi_launcher "$bin/.." || exit 1
mpi_yield_shim "$bin"
mpi_env
[ "${#MPI_ENV[@]}" -eq 0 ] || export "${MPI_ENV[@]}"
mpirun_flags 3 shared
mpirun_=("$MPIEXEC" "${MPIRUN_FLAGS[@]}")
echo "launcher: ${mpirun_[*]} ($MPI_FLAVOUR)"
work="$(mktemp -d /tmp/gradsync-reliability.XXXXXX)"
trap 'rm -rf "$work"' EXIT
short=(--iterations-per-epoch 150 --quiet)   # softmax unless a case says --model mlp

fail() { echo "FAIL ($case_name): $*" >&2; exit 1; }
descendants() {  # descendants PID: every process below PID (Hydra's ranks are its proxy's children, not its own)
  local child
  for child in $(pgrep -P "$1"); do echo "$child"; descendants "$child"; done
}
expect_in() {  # expect_in FILE TEXT
  grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "expected '$2' in the output above"; }
}

case "$case_name" in
  kill_rank)
    # SIGKILL one rank mid-training: the job must end non-zero within seconds, the last checkpoint must be
    # intact, and --resume from it must finish the run.
    "${mpirun_[@]}" -n 2 "$bin/train" --sync ring --model mlp --epochs 8 --iterations-per-epoch 1500 --quiet \
      --checkpoint "$work/ck" >"$work/run.log" 2>&1 &
    job=$!
    for _ in $(seq 600); do [ -f "$work/ck/gradsync.ckpt" ] && break; sleep 0.05; done
    [ -f "$work/ck/gradsync.ckpt" ] || fail "no checkpoint appeared"
    victim=""
    rank_var="$(mpi_rank_var)"
    for pid in $(descendants "$job"); do  # this job's ranks only: other jobs may be running the same binary
      tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "$rank_var=1" && victim=$pid
    done
    [ -n "$victim" ] || fail "could not find rank 1"
    start=$(date +%s%N)
    kill -KILL "$victim"
    set +e; wait "$job"; code=$?; set -e
    elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
    echo "rank 1 killed; mpirun exited with $code after ${elapsed_ms} ms"
    [ "$code" -ne 0 ] || fail "the job exited 0 after losing a rank"
    [ "$elapsed_ms" -lt 10000 ] || fail "took ${elapsed_ms} ms to end (limit 10 s)"
    "${mpirun_[@]}" -n 2 "$bin/train" --sync ring --model mlp --epochs 8 --iterations-per-epoch 1500 --quiet \
      --checkpoint "$work/ck" --resume >"$work/resume.log" 2>&1 || { cat "$work/resume.log"; fail "resume failed"; }
    expect_in "$work/resume.log" "done: ring"
    ;;
  stall)
    # One rank stops making progress: the others' watchdog names the call, the step and the peer, and the job
    # ends non-zero shortly after --timeout.
    set +e
    start=$(date +%s)
    "${mpirun_[@]}" -n 2 "$bin/train" --sync ring "${short[@]}" --epochs 1 --straggler 1:600000 --timeout 3 \
      >"$work/run.log" 2>&1
    code=$?; set -e
    elapsed=$(( $(date +%s) - start ))
    echo "exit $code after ${elapsed}s"
    [ "$code" -ne 0 ] || fail "a stalled job exited 0"
    [ "$elapsed" -lt 30 ] || fail "took ${elapsed}s (timeout 3s)"
    expect_in "$work/run.log" "gradsync watchdog (rank 0): waited"
    expect_in "$work/run.log" "at step 0"
    ;;
  corrupt_checkpoint)
    # A damaged or foreign checkpoint is refused with a message saying which, exit code 2, never loaded.
    "$bin/train" "${short[@]}" --epochs 1 --checkpoint "$work/good" >/dev/null
    good="$work/good/gradsync.ckpt"
    try() {  # try NAME EXPECTED_TEXT [train args...]
      local name=$1 text=$2; shift 2
      set +e; "$bin/train" "${short[@]}" --epochs 2 --checkpoint "$work/$name" --resume "$@" >"$work/$name.log" 2>&1
      local code=$?; set -e
      [ "$code" -eq 2 ] || { cat "$work/$name.log"; fail "$name: exit $code, expected 2"; }
      expect_in "$work/$name.log" "$text"
      echo "$name refused: $(tail -1 "$work/$name.log")"
    }
    mkdir -p "$work/truncated" "$work/flipped" "$work/magic" "$work/other_model"
    head -c 1000 "$good" > "$work/truncated/gradsync.ckpt"
    cp "$good" "$work/flipped/gradsync.ckpt"
    printf '\xff' | dd of="$work/flipped/gradsync.ckpt" bs=1 seek=5000 conv=notrunc status=none
    cp "$good" "$work/magic/gradsync.ckpt"
    printf 'NOTACKPT' | dd of="$work/magic/gradsync.ckpt" bs=1 seek=0 conv=notrunc status=none
    cp "$good" "$work/other_model/gradsync.ckpt"
    try truncated "truncated"
    try flipped "corrupted"
    try magic "not a gradsync checkpoint"
    try other_model "written by a different run" --model mlp
    cmp -s "$good" "$work/good/gradsync.ckpt" || fail "the good checkpoint changed"
    ;;
  divergence)
    # NaN in a gradient stops the run naming epoch, step and rank; the checkpoint of the last good epoch stays
    # and resumes.
    set +e
    "${mpirun_[@]}" -n 2 "$bin/train" --sync ring "${short[@]}" --epochs 3 --checkpoint "$work/ck" \
      --inject-nan-step 170 >"$work/run.log" 2>&1
    code=$?; set -e
    [ "$code" -ne 0 ] || fail "a diverged run exited 0"
    expect_in "$work/run.log" "training diverged: NaN/Inf in the gradient at epoch 2, step 20"
    expect_in "$work/run.log" "on rank 1"
    "${mpirun_[@]}" -n 2 "$bin/train" --sync ring "${short[@]}" --epochs 3 --checkpoint "$work/ck" --resume \
      >"$work/resume.log" 2>&1 || { cat "$work/resume.log"; fail "resume after divergence failed"; }
    expect_in "$work/resume.log" "done: ring"
    ;;
  resume_equality)
    # Two epochs straight equal one epoch, a resume, and one more epoch, bit for bit.
    for sync in ring mpi ps; do
      "${mpirun_[@]}" -n 3 "$bin/train" --sync "$sync" "${short[@]}" --model mlp --momentum 0.9 --epochs 2 \
        --checkpoint "$work/$sync-straight" >/dev/null
      "${mpirun_[@]}" -n 3 "$bin/train" --sync "$sync" "${short[@]}" --model mlp --momentum 0.9 --epochs 1 \
        --checkpoint "$work/$sync-resumed" >/dev/null
      "${mpirun_[@]}" -n 3 "$bin/train" --sync "$sync" "${short[@]}" --model mlp --momentum 0.9 --epochs 2 \
        --checkpoint "$work/$sync-resumed" --resume >/dev/null
      cmp "$work/$sync-straight/gradsync.ckpt" "$work/$sync-resumed/gradsync.ckpt" || fail "$sync: resumed run differs"
      echo "$sync: 2 epochs straight == 1 epoch + resume + 1 epoch (bit-identical checkpoint, momentum 0.9)"
    done
    ;;
  cli_error_once)
    # A usage error is printed by rank 0 alone: train learns its rank from the launcher's environment before
    # MPI_Init (OMPI_COMM_WORLD_RANK or PMI_RANK), and without it every rank would print the same message.
    set +e
    "${mpirun_[@]}" -n 3 "$bin/train" --no-such-flag >"$work/run.log" 2>&1
    code=$?; set -e
    [ "$code" -ne 0 ] || fail "an unknown flag exited 0"
    n="$(grep -c -- "--no-such-flag" "$work/run.log" || true)"
    [ "$n" -eq 1 ] || { cat "$work/run.log" >&2; fail "the usage error was printed $n times by 3 ranks, expected once"; }
    ;;
  *) fail "unknown case" ;;
esac
echo "PASS ($case_name)"
