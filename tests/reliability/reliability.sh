#!/usr/bin/env bash
# Fault-injection tests of `train`, one case per call: reliability.sh BIN_DIR CASE. ctest runs each case.
# Every case runs real MPI jobs on MNIST, kept short with --iterations-per-epoch.
set -euo pipefail
bin="${1:?usage: reliability.sh BIN_DIR CASE}"
case_name="${2:?usage: reliability.sh BIN_DIR CASE}"
# The launcher the tree was configured with ($GRADSYNC_MPIEXEC from ctest, else the tree's CMakeCache.txt) and its
# flags for ranks that share the cores with anything, from scripts/mpi.sh.
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/mpi.sh"
test_launcher "$bin" 3 || exit 1
echo "launcher: ${mpirun_[*]} ($MPI_FLAVOUR)"
work="$(mktemp -d /tmp/gradsync-reliability.XXXXXX)"
trap 'rm -rf "$work"' EXIT
short=(--iterations-per-epoch 150 --quiet)   # softmax unless a case says --model mlp

# newest_set DIR: the newest committed checkpoint set in one host's directory (trainers/checkpoint/checkpointing.hpp).
newest_set() { ls -d "$1"/step-*/ 2>/dev/null | while read -r d; do ls "$d"manifest-r* >/dev/null 2>&1 && echo "${d%/}"; done | sort | tail -1; }

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
    "${mpirun_[@]}" -n 2 "$bin/train" --sync ring --model mlp --epochs 8 --iterations-per-epoch 1500 --quiet --checkpoint-steps 1000 \
      --checkpoint "$work/ck" >"$work/run.log" 2>&1 &
    job=$!
    for _ in $(seq 600); do [ -n "$(newest_set "$work/ck")" ] && break; sleep 0.05; done
    [ -n "$(newest_set "$work/ck")" ] || fail "no checkpoint appeared"
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
    "${mpirun_[@]}" -n 2 "$bin/train" --sync ring --model mlp --epochs 8 --iterations-per-epoch 1500 --quiet --checkpoint-steps 1000 \
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
    # A damaged, torn or foreign checkpoint is refused with a message naming the file and saying what is wrong,
    # exit code 2, never loaded. One host here, so each set has one copy: damage leaves no complete set.
    "$bin/train" "${short[@]}" --epochs 1 --checkpoint "$work/good" >/dev/null
    good_set="$(newest_set "$work/good")"
    set_name="$(basename "$good_set")"
    piece="$set_name/piece-0-of-1.ckpt"
    try() {  # try NAME EXPECTED_TEXT [train args...]
      local name=$1 text=$2; shift 2
      set +e; "$bin/train" "${short[@]}" --epochs 2 --checkpoint "$work/$name" --resume "$@" >"$work/$name.log" 2>&1
      local code=$?; set -e
      [ "$code" -eq 2 ] || { cat "$work/$name.log"; fail "$name: exit $code, expected 2"; }
      expect_in "$work/$name.log" "$text"
      echo "$name refused: $(grep -F -- "$text" "$work/$name.log" | head -1)"
    }
    for name in truncated flipped magic other_model torn_manifest flipped_manifest no_manifest; do
      cp -r "$work/good" "$work/$name"
    done
    head -c 1000 "$good_set/piece-0-of-1.ckpt" > "$work/truncated/$piece"
    printf '\xff' | dd of="$work/flipped/$piece" bs=1 seek=5000 conv=notrunc status=none
    printf 'NOTACKPT' | dd of="$work/magic/$piece" bs=1 seek=0 conv=notrunc status=none
    head -c 100 "$good_set/manifest-r0" > "$work/torn_manifest/$set_name/manifest-r0"
    printf 'X' | dd of="$work/flipped_manifest/$set_name/manifest-r0" bs=1 seek=40 conv=notrunc status=none
    rm "$work/no_manifest/$set_name/manifest-r0"
    try truncated "$work/truncated/$piece: truncated"
    try flipped "$work/flipped/$piece: corrupted"
    try magic "$work/magic/$piece: not a gradsync checkpoint"
    try other_model "written by a different run" --model mlp
    try torn_manifest "manifest-r0: torn manifest"
    try flipped_manifest "manifest-r0: corrupted manifest"
    try no_manifest "no manifest: torn"
    try no_checkpoint "no such directory"
    cmp -s "$good_set/piece-0-of-1.ckpt" "$work/good/$piece" || fail "the good checkpoint changed"
    ;;
  divergence)
    # NaN in a gradient stops the run naming epoch, step and rank; the checkpoint of the last good epoch stays
    # and resumes.
    set +e
    "${mpirun_[@]}" -n 2 "$bin/train" --sync ring "${short[@]}" --epochs 3 --checkpoint "$work/ck" --checkpoint-every 1 \
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
    # Two epochs straight equal one epoch, a resume, and one more epoch, bit for bit; and a resume from a set in the
    # middle of an epoch (the newest one removed) equals them too. ring-powersgd compresses the gradients: its
    # checkpoints also hold every worker's residual and PowerSGD's warm-start Q; ring-powersgd-buckets keeps a Q per
    # bucket, and rhd-topk-pipe checkpoints a pipelined run (each set written with nothing in flight).
    for sync in ring mpi ps ring-powersgd ring-powersgd-buckets rhd-topk-pipe; do
      flags=(--sync "$sync")
      case "$sync" in
        ring-powersgd) flags=(--sync ring --compress powersgd:4) ;;
        ring-powersgd-buckets) flags=(--sync ring --compress powersgd:4 --buckets --bucket-kib 1) ;;
        rhd-topk-pipe) flags=(--sync rhd --compress topk:0.01 --pipeline 1) ;;
      esac
      args=("${flags[@]}" "${short[@]}" --model mlp --momentum 0.9 --checkpoint-steps 100)
      "${mpirun_[@]}" -n 3 "$bin/train" "${args[@]}" --epochs 2 --checkpoint "$work/$sync-straight" >/dev/null
      "${mpirun_[@]}" -n 3 "$bin/train" "${args[@]}" --epochs 1 --checkpoint "$work/$sync-resumed" >/dev/null
      "${mpirun_[@]}" -n 3 "$bin/train" "${args[@]}" --epochs 2 --checkpoint "$work/$sync-resumed" --resume >/dev/null
      straight="$(newest_set "$work/$sync-straight")"
      [ "$(basename "$straight")" = step-000000000300 ] || fail "$sync: newest set $straight, expected step 300"
      cmp "$straight/piece-0-of-1.ckpt" "$(newest_set "$work/$sync-resumed")/piece-0-of-1.ckpt" \
        || fail "$sync: resumed run differs"
      echo "$sync: 2 epochs straight == 1 epoch + resume + 1 epoch (bit-identical checkpoint, momentum 0.9)"
      cp -r "$work/$sync-straight" "$work/$sync-mid"
      rm -r "$straight" "$work/$sync-mid/$(basename "$straight")"   # the newest set gone: step 200 is left
      "${mpirun_[@]}" -n 3 "$bin/train" "${args[@]}" --epochs 2 --checkpoint "$work/$sync-mid" --resume \
        >"$work/$sync-mid.log"
      expect_in "$work/$sync-mid.log" "resumed from the checkpoint of step 200 (epoch 2, "
      cmp "$work/$sync-resumed/step-000000000300/piece-0-of-1.ckpt" \
        "$work/$sync-mid/step-000000000300/piece-0-of-1.ckpt" || fail "$sync: resumed mid-epoch differs"
      echo "$sync: resumed in the middle of epoch 2 (step 200) == straight (bit-identical)"
    done
    ;;
  resume_history)
    # The reports continue across a resume (docs/reliability.md, "What a resumed run reports"): federated averaging
    # for 3 rounds, then --resume to 5, prints the per-round best accuracy and the rounds to a target crossed after
    # the checkpoint that 5 rounds straight print; resumed again past the target with --stop-at-target, it trains
    # nothing and says so.
    args=(--sync fedavg --model mlp --hidden 64 --clients 20 --client-fraction 0.2 --partition shards:2 --batch 32
      --checkpoint-every 1)
    "${mpirun_[@]}" -n 3 "$bin/train" "${args[@]}" --rounds 5 >"$work/straight.log"
    best() { grep -o "(best [0-9.]*)" "$1" | tr -d '()' | awk '{print $2}'; }   # best FILE: one line per round
    mapfile -t b < <(best "$work/straight.log")
    [ "${#b[@]}" -eq 5 ] || { cat "$work/straight.log" >&2; fail "expected 5 rounds"; }
    # A target between the best of round 3 (the checkpoint's) and the first round after it with a better one.
    target="$(awk -v b3="${b[2]}" -v b4="${b[3]}" -v b5="${b[4]}" \
      'BEGIN { hi = b4 > b3 ? b4 : b5; if (hi <= b3) exit 1; printf "%.6f", (b3 + hi) / 2 }')" \
      || fail "the best accuracy did not rise after round 3: ${b[*]}"
    "${mpirun_[@]}" -n 3 "$bin/train" "${args[@]}" --rounds 5 --target-accuracy "$target" >"$work/whole.log"
    "${mpirun_[@]}" -n 3 "$bin/train" "${args[@]}" --rounds 3 --target-accuracy "$target" \
      --checkpoint "$work/history" >"$work/first.log"
    "${mpirun_[@]}" -n 3 "$bin/train" "${args[@]}" --rounds 5 --target-accuracy "$target" \
      --checkpoint "$work/history" --resume >"$work/resumed.log"
    expect_in "$work/resumed.log" "report history: "
    [ "$(best "$work/resumed.log")" = "$(best "$work/whole.log" | tail -2)" ] \
      || { cat "$work/whole.log" "$work/resumed.log" >&2; fail "the resumed rounds' best accuracy differs"; }
    rounds="$(grep "^rounds to " "$work/whole.log")" || { cat "$work/whole.log" >&2; fail "no 'rounds to' line"; }
    expect_in "$work/resumed.log" "$rounds"
    echo "3 rounds + resume + 2: best accuracy ${b[3]} ${b[4]} and '$rounds', as 5 rounds straight"
    "${mpirun_[@]}" -n 3 "$bin/train" "${args[@]}" --rounds 6 --target-accuracy "$target" --stop-at-target \
      --checkpoint "$work/history" --resume >"$work/stopped.log"
    expect_in "$work/stopped.log" "was reached before the checkpoint of step 5: nothing to train"
    expect_in "$work/stopped.log" "$rounds"
    ! grep -q "^round 6/6" "$work/stopped.log" || fail "--stop-at-target trained past a target already reached"
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
    # Rank 0 slow to start: the silent ranks must not end the job before it has printed.
    set +e
    "${mpirun_[@]}" -n 3 sh -c 'if [ "${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}" = 0 ]; then sleep 1.5; fi; exec "$0" "$@"' \
      "$bin/train" --no-such-flag >"$work/late.log" 2>&1
    code=$?; set -e
    [ "$code" -ne 0 ] || fail "an unknown flag exited 0 (rank 0 late)"
    n="$(grep -c -- "train: error.*--no-such-flag" "$work/late.log" || true)"
    [ "$n" -eq 1 ] || { cat "$work/late.log" >&2; fail "with rank 0 late the usage error was printed $n times, expected once"; }
    ;;
  blis_arch_one_rank)
    # A BLIS_ARCH_TYPE that reaches one rank only (Open MPI forwards it only with -x) still decides the kernels of
    # every rank; two ranks that name different sets are refused once, naming both, before any training.
    grep -qw avx2 /proc/cpuinfo || { echo "SKIP ($case_name: no AVX2 for the haswell and zen2 sets)"; exit 77; }
    # Without per-call contexts (a build on BLIS's shared library) a rank runs only its own set: the user's set
    # cannot reach rank 0, and the case's refusal is all there is to see.
    header="$("$bin/train" --epochs 1 --iterations-per-epoch 1 --quiet)"
    if grep -q "hides per-call contexts" <<<"$header"; then
      echo "SKIP ($case_name: this BLIS has no per-call contexts)"; exit 77
    fi
    "${mpirun_[@]}" -n 2 sh -c '[ "${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}" = 1 ] && export BLIS_ARCH_TYPE=haswell; exec "$0" "$@"' \
      "$bin/train" --sync ring "${short[@]}" --epochs 1 >"$work/one.log" 2>&1 || { cat "$work/one.log"; fail "the run failed"; }
    expect_in "$work/one.log" "GEMM kernels: haswell for every shape (BLIS_ARCH_TYPE set by the user on rank 1: every rank runs it)"
    expect_in "$work/one.log" "done: ring"
    set +e
    "${mpirun_[@]}" -n 2 sh -c 'export BLIS_ARCH_TYPE=zen2; [ "${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}" = 0 ] || export BLIS_ARCH_TYPE=haswell; exec "$0" "$@"' \
      "$bin/train" --sync ring "${short[@]}" --epochs 1 >"$work/two.log" 2>&1
    code=$?; set -e
    [ "$code" -eq 2 ] || { cat "$work/two.log"; fail "ranks on different BLIS_ARCH_TYPE sets: exit $code, expected 2"; }
    n="$(grep -c "kernel set zen2 on rank 0 but haswell on rank 1" "$work/two.log" || true)"
    [ "$n" -eq 1 ] || { cat "$work/two.log" >&2; fail "the disagreement was reported $n times, expected once"; }
    ;;
  *) fail "unknown case" ;;
esac
echo "PASS ($case_name)"
