#!/usr/bin/env bash
# The PyTorch backend under the launcher (ctest entries torch_<case>_np<N>, label torch). Cases:
#   collectives  every collective against torch's arithmetic, every method, sizes 0 .. 3 MiB (collectives_check.py)
#   bad_input    one clear error on every rank for bad input, within seconds (bad_input_check.py)
#   ddp          DDP on MNIST, an MLP and a small CNN: gradsync (ring) reaches gloo's accuracy within half a point,
#                and every rank holds the same parameter bits after every epoch, with either backend
#   compression  gradsync.hooks' PowerSGD, top-k and sign (error feedback) within 1 point of dense training
#   install      `cmake --install` into a scratch prefix: /usr/bin/python3 imports gradsync.torch from there
#                (its module finding libgradsync through its run path) and sums on the ranks
# Skipped (77) when /usr/bin/python3 has no torch or the build has no Python package (GRADSYNC_PYTHON).
# Usage: torch_test.sh <case> <build dir> <ranks> [--break]   (--break: a check that must then fail)
set -uo pipefail
case_="$1" build="$(realpath "$2")" np="$3" broken="${4:-}"
source_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$source_dir/scripts/mpi.sh"
python=/usr/bin/python3
fail() {
  echo "torch_test $case_: $*" >&2
  exit 1
}
"$python" -c "import torch" 2>/dev/null || { echo "skipped: $python has no torch (apt-get install python3-torch)"; exit 77; }
compgen -G "$build/python/gradsync/_C*.so" >/dev/null \
  || { echo "skipped: the build has no Python package (GRADSYNC_PYTHON, needs libtorch-dev pybind11-dev)"; exit 77; }
test_launcher "$build/bin" "$np" || fail "cannot tell which MPI launches $build"
mpirun_+=(-n "$np")
export PYTHONPATH="$build/python" OMP_NUM_THREADS=1
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mnist="$source_dir/data/mnist"

train() {  # <name> <ddp_train.py arguments...>: runs it, keeps its RESULT line in $work/<name>.json
  local name="$1"
  shift
  "${mpirun_[@]}" "$python" "$source_dir/bench/torch/ddp_train.py" --data "$mnist" "$@" >"$work/$name.log" 2>&1 \
    || fail "$name: training failed: $(tail -20 "$work/$name.log")"
  grep -v '^RESULT' "$work/$name.log" | grep -E '^(ddp_train|epoch)'
  sed -n 's/^RESULT //p' "$work/$name.log" >"$work/$name.json"
}
compare() {  # <reference> <tolerance in points> <run>...: every run's last accuracy within the tolerance
  "$python" - "$work" "$@" <<'PY' || fail "accuracy or parameter bits differ (above)"
import json, sys
work, reference, tolerance, runs = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
load = lambda name: json.load(open(f"{work}/{name}.json"))
ref = load(reference)
bad = 0
for name in [reference] + runs:
    r = load(name)
    if not r["identical"]:
        print(f"{name}: parameters differ across ranks after some epoch"); bad += 1
    gap = 100 * (ref["epochs"][-1]["accuracy"] - r["epochs"][-1]["accuracy"])
    print(f"{name}: {100 * r['epochs'][-1]['accuracy']:.2f} % ({gap:+.2f} points below {reference})")
    if gap > tolerance:
        print(f"{name}: more than {tolerance} points below {reference}"); bad += 1
sys.exit(1 if bad else 0)
PY
}

case "$case_" in
  collectives | bad_input)
    # shellcheck disable=SC2086  # --break is a word or nothing
    "${mpirun_[@]}" "$python" "$source_dir/tests/torch/${case_}_check.py" $broken || fail "failed (above)"
    ;;
  ddp)
    [ -f "$mnist/train-images-idx3-ubyte" ] || fail "no MNIST in $mnist (scripts/fetch_mnist.sh)"
    lr=0.05
    [ "$broken" != --break ] || lr=0.5  # gradsync diverges from gloo's run: must fail the comparison
    for model in mlp cnn; do
      epochs=2 subset=12000
      [ "$model" = mlp ] || epochs=1 subset=6000
      args=(--model "$model" --epochs "$epochs" --train-subset "$subset" --test-subset 2000)
      train "gloo-$model" --backend gloo "${args[@]}" --lr 0.05
      train "gradsync-$model" --backend gradsync --method ring "${args[@]}" --lr "$lr"
      compare "gloo-$model" 0.5 "gradsync-$model"
    done
    ;;
  compression)
    [ -f "$mnist/train-images-idx3-ubyte" ] || fail "no MNIST in $mnist (scripts/fetch_mnist.sh)"
    args=(--backend gradsync --model mlp --epochs 3 --train-subset 12000 --test-subset 2000 --lr 0.02)
    train dense "${args[@]}"
    runs=()
    for c in powersgd:4 topk:0.1 sign; do
      [ "$broken" != --break ] || [ "$c" != sign ] || c=topk:0.0001  # far too little kept: must fail
      train "$c" "${args[@]}" --compress "$c"
      runs+=("$c")
    done
    compare dense 1.0 "${runs[@]}"
    ;;
  install)
    prefix="$work/prefix"
    cmake --install "$build" --prefix "$prefix" >"$work/install.log" || fail "cmake --install: $(cat "$work/install.log")"
    site="$(compgen -G "$prefix/lib/python3*/dist-packages" | head -1)"
    [ -n "$site" ] && [ -f "$site/gradsync/torch.py" ] || fail "no gradsync package under $prefix/lib/python3*/dist-packages"
    [ "$broken" != --break ] || rm "$prefix"/lib/libgradsync.so*
    cat >"$work/sum.py" <<'PY'
import torch, torch.distributed as dist
import gradsync.torch
dist.init_process_group("gradsync")
t = torch.ones(3)
dist.all_reduce(t)
assert gradsync.torch.__file__.startswith(__import__("sys").argv[1]), gradsync.torch.__file__
print(f"rank {dist.get_rank()}: {t.tolist()} from {gradsync.torch.__file__}")
assert t.tolist() == [float(dist.get_world_size())] * 3
PY
    PYTHONPATH="$site" "${mpirun_[@]}" "$python" "$work/sum.py" "$site" || fail "the installed package failed (above)"
    ;;
  *) fail "unknown case (collectives, bad_input, ddp, compression, install)" ;;
esac
echo "torch_test $case_: passed on $np ranks"
