#!/usr/bin/env bash
# Ranks started with different settings (an MPMD launch, `mpirun A : B`) are refused before they train: every run
# ends within 5 s with the bad input's exit code (2, docs/reference.md) and rank 0's one line naming the first rank
# that differs and the setting ("rank 1's settings differ from rank 0's: --lr 0.2 (rank 0: 0.1)"), instead of
# training on rank 0's values, hanging until the watchdog, or failing at the first allreduce; a rank whose command line
# does not parse is named by rank 0 the same way. Ranks whose settings
# are the same, however spelled, still train. The header gives the per-worker batch the
# ranks run (a --global-batch divided).
# Usage: settings_agreement_check.sh BIN_DIR (MNIST in $GRADSYNC_MNIST_DIR, default data/mnist of the source tree)
set -uo pipefail
bin="$(realpath "${1:?usage: settings_agreement_check.sh BIN_DIR}")"
here="$(dirname "${BASH_SOURCE[0]}")"
data="${GRADSYNC_MNIST_DIR:-$here/../../data/mnist}"
source "$here/../../scripts/mpi.sh"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
if [ ! -e "$data/train-images-idx3-ubyte" ] && [ ! -e "$data/train-images-idx3-ubyte.gz" ]; then
  echo "skipped: no MNIST in $data (bash scripts/fetch_mnist.sh, or set GRADSYNC_MNIST_DIR)"
  exit 77
fi
test_launcher "$bin" 3 || exit 1
work="$(mktemp -d /tmp/gradsync-agree.XXXXXX)"
trap 'rm -rf "$work"' EXIT
# Each flag at most once per rank (train refuses a repeated flag): the cases add --epochs and --sync themselves.
base=(--data "$data" --iterations-per-epoch 5 --timeout 60)
short=("${base[@]}" --epochs 1 --sync ring)

# run NAME EXPECTED_EXIT TEXT -- A... : B...: the MPMD launch `A : B` (each "-n N [env V=X] train FLAGS"), which
# must end with EXPECTED_EXIT and print TEXT; a refusal (exit 2) within 5 s, in one line.
run() {
  local name="$1" expected="$2" text="$3" start end code
  shift 4
  start=$(date +%s%N)
  timeout 30 "${mpirun_[@]}" "$@" </dev/null >"$work/run.log" 2>&1
  code=$?
  end=$(date +%s%N)
  local ms=$(((end - start) / 1000000))
  echo "$name: exit $code after $ms ms: $(grep -m1 -E '^train: error|^done:' "$work/run.log")"
  [ "$code" -ne 124 ] || { cat "$work/run.log"; fail "$name: hung (killed after 30 s)"; }
  [ "$code" -eq "$expected" ] || { cat "$work/run.log"; fail "$name: exit $code, expected $expected"; }
  grep -qF -- "$text" "$work/run.log" || { cat "$work/run.log"; fail "$name: no line saying '$text'"; }
  if [ "$expected" -eq 2 ]; then
    [ "$ms" -lt 5000 ] || fail "$name: took $ms ms, expected under 5 s"
    [ "$(grep -c '^train: error' "$work/run.log")" -eq 1 ] || { cat "$work/run.log"; fail "$name: not one line"; }
  fi
}
train="$bin/train"
differ="settings differ from rank 0's:"
run lr 2 "rank 1's $differ --lr 0.2 (rank 0: 0.1)" -- \
  -n 1 "$train" "${short[@]}" --lr 0.1 : -n 1 "$train" "${short[@]}" --lr 0.2
run sync 2 "rank 1's $differ --sync mpi (rank 0: ring)" -- \
  -n 1 "$train" "${base[@]}" --epochs 1 --sync ring : -n 1 "$train" "${base[@]}" --epochs 1 --sync mpi
run epochs 2 "rank 1's $differ --epochs 2 (rank 0: 1)" -- \
  -n 1 "$train" "${base[@]}" --sync ring --epochs 1 : -n 1 "$train" "${base[@]}" --sync ring --epochs 2
run model 2 "rank 1's $differ --model mlp (rank 0: softmax)" -- \
  -n 1 "$train" "${short[@]}" --model softmax : -n 1 "$train" "${short[@]}" --model mlp
run tuning 2 "rank 1's $differ GRADSYNC_TUNING=$work/b.txt (rank 0: $work/a.txt)" -- \
  -n 1 env GRADSYNC_TUNING="$work/a.txt" "$train" "${short[@]}" : \
  -n 1 env GRADSYNC_TUNING="$work/b.txt" "$train" "${short[@]}"
# The first rank that differs is named, not the last one launched.
run third_rank 2 "rank 2's $differ --momentum 0.9 (rank 0: 0) (and 1 more)" -- \
  -n 2 "$train" "${short[@]}" : -n 1 "$train" "${short[@]}" --momentum 0.9 --seed 2
# A rank whose own command line does not parse meets the others in MPI_Init (leaving before it hangs MPICH's Hydra,
# and under Open MPI ends the job before rank 0 can say why), and rank 0 names it, whichever rank it was.
run parse_rank1 2 "train: error: rank 1's command line does not parse: Could not convert: --lr = fast" -- \
  -n 1 "$train" "${short[@]}" : -n 1 "$train" "${short[@]}" --lr fast
run parse_rank0 2 "train: error: Could not convert: --lr = fast" -- \
  -n 1 "$train" "${short[@]}" --lr fast : -n 1 "$train" "${short[@]}"
# What the ranks agree on is what the header says: --global-batch 60 on 3 ranks is 20 per worker.
timeout 30 "${mpirun_[@]}" -n 3 "$train" "${short[@]}" --global-batch 60 </dev/null >"$work/run.log" 2>&1
grep -q '^gradsync train: .* 3 rank(s), batch 20 per worker (global batch 60), ' "$work/run.log" \
  || { cat "$work/run.log"; fail "the header of a --global-batch 60 run on 3 ranks does not say 20 per worker"; }
# The same settings spelled differently (a number, a default given, --spec for its flags) still train.
run same 0 "done: ring-buckets softmax on 2 rank(s)" -- \
  -n 1 "$train" "${short[@]}" --buckets --lr 0.1 : \
  -n 1 "$train" "${base[@]}" --epochs 1 --spec ring+buckets --lr 1e-1 --momentum 0
echo "PASS"
