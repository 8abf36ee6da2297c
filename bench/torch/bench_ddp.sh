#!/usr/bin/env bash
# DDP with the gradsync backend against gloo (bench/torch/ddp_train.py): the mean step time, and the seconds to 97 %
# test accuracy on MNIST, for an MLP, a small CNN and an MLP with ResNet-18's gradient size (11.7 M parameters,
# synthetic data: step time only). On one node (--hosts 0, ranks sharing this machine's cores) or on N emulated hosts
# at --rate (bench/cluster/cluster.sh: root; wrap the driver in `flock /tmp/gradsync-cluster.lock` on a shared
# machine). The runs, each a word of --runs:
#   gloo                    torch's gloo backend
#   ring, auto, ...         the gradsync backend with that method
#   powersgd:R, topk:F, sign    the gradsync backend (ring) with gradsync.hooks' compression hook
#   gloo+powersgd:R         gloo with torch's own PowerSGD hook (the hook gradsync's is compared with)
# Writes DIR/ddp.csv (a row per run, model and epoch), DIR/summary.txt (per model and run: the step time, its ratio
# to gloo's, the seconds to 97 %), DIR/logs/ and DIR/README.md (the command, CPU, commit, date, and the machine's
# load average before and after: a load above half the cores marks the figures "under load").
# Usage: bench/torch/bench_ddp.sh --out DIR [--np 2] [--hosts 0|N] [--rate 1gbit] [--models mlp,cnn,resnet18-size]
#          [--runs "gloo ring auto powersgd:4 topk:0.01 sign gloo+powersgd:4"] [--epochs 6] [--steps 40]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../cluster/drivers.sh"

np=2
hosts=0
rate=1gbit
models="mlp,cnn,resnet18-size"
runs="gloo ring auto powersgd:4 topk:0.01 sign gloo+powersgd:4"
epochs=6
steps=40
out=""
parse_flags bench_ddp.sh \
  "--np np uint 1" \
  "--hosts hosts uint 0" \
  "--rate rate" \
  "--models models match ^[a-z0-9,-]+$ --models is a comma list of mlp,cnn,resnet18-size" \
  "--runs runs" \
  "--epochs epochs uint 1" \
  "--steps steps uint 2" \
  "--out out" \
  -- "$@"
[ -n "$out" ] || die "--out DIR is required"
python=/usr/bin/python3
"$python" -c "import torch" 2>/dev/null || die "$python has no torch (apt-get install python3-torch)"
compgen -G "$BUILD_DIR/python/gradsync/_C*.so" >/dev/null || die "no PyTorch backend in $BUILD_DIR (scripts/setup.sh)"
refuse_existing "$out" ddp.csv summary.txt
mkdir -p "$out/logs"
out="$(cd "$out" && pwd)"
host_txt "$out" "DDP with the gradsync backend against gloo"
data="$GRADSYNC_ROOT/data/mnist"
absolute_mnist data
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
export PYTHONPATH="$BUILD_DIR/python" OMP_NUM_THREADS=1

if [ "$hosts" -gt 0 ]; then
  why="$("$CLUSTER" check)" || die "$why"
  cluster_up "$hosts" --rate "$rate"
  # Rank 0 is in the first namespace-host; gloo finds its peers on the hosts' interface (gs0 in every host).
  launcher=("$CLUSTER" run -np "$np" -x PYTHONPATH -x OMP_NUM_THREADS -x MASTER_ADDR=10.99.0.1 -x MASTER_PORT=29511
    -x GLOO_SOCKET_IFNAME=gs0 --)
  where="$hosts emulated hosts at $rate"
else
  mpi_setup
  MPIRUN_FLAGS=()
  # Unbound and yielding: the backend's progress thread shares a core with the rank's compute, and a rank bound to one
  # core whose progress thread busy-polls in MPI would take that core from backward (gloo has threads of its own too).
  mpirun_flags "$np" shared
  launcher=("$MPIEXEC" -n "$np" "${MPIRUN_FLAGS[@]}")
  where="one node"
fi

echo "run,model,ranks,hosts,epoch,loss,accuracy,seconds,step_ms,identical" >"$out/ddp.csv"
IFS=, read -r -a model_list <<<"$models"
for model in "${model_list[@]}"; do
  for run in $runs; do
    args=(--model "$model" --data "$data" --epochs "$epochs" --target-accuracy 0.97)
    [ "$model" != resnet18-size ] || args=(--model "$model" --epochs 2 --steps "$steps")
    case "$run" in
      gloo) args+=(--backend gloo) ;;
      gloo+powersgd:*) args+=(--backend gloo --compress "torch-powersgd:${run#gloo+powersgd:}") ;;
      powersgd:* | topk:* | sign) args+=(--backend gradsync --method ring --compress "$run") ;;
      *) args+=(--backend gradsync --method "$run") ;;
    esac
    log="$out/logs/${model}_$(tr ':+' '__' <<<"$run").log"
    say "$model $run ($where, $np ranks)"
    if ! run_limited 3600 "$log" "${launcher[@]}" "$python" "$GRADSYNC_ROOT/bench/torch/ddp_train.py" "${args[@]}"; then
      failed+=("$model $run")
      continue
    fi
    sed -n 's/^RESULT //p' "$log" | "$python" -c '
import json, sys
r = json.load(sys.stdin)
for e in r["epochs"]:
    print(",".join(str(x) for x in (sys.argv[1], r["model"], r["ranks"], sys.argv[2], e["epoch"], e["loss"],
                                    e["accuracy"] if e["accuracy"] is not None else "", e["seconds"], e["step_ms"],
                                    int(e["identical"]))))' "$run" "$hosts" >>"$out/ddp.csv"
  done
done
[ "$hosts" -eq 0 ] || cluster_down
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

# The summary: per model and run, the mean step time over the last epoch (the first is warm-up), its ratio to gloo's,
# and the seconds to 97 % (the sum of epoch times up to the first epoch at or above it).
"$python" - "$out/ddp.csv" >"$out/summary.txt" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
by = {}
for r in rows:
    by.setdefault((r["model"], r["run"]), []).append(r)
print(f"{'model':>14} {'run':>16} {'step ms':>9} {'x gloo':>7} {'s to 97%':>9} {'final acc':>9} identical")
for (model, run), es in by.items():
    step = float(es[-1]["step_ms"])
    gloo = by.get((model, "gloo"))
    ratio = step / float(gloo[-1]["step_ms"]) if gloo else float("nan")
    elapsed, reached = 0.0, None
    for e in es:
        elapsed += float(e["seconds"])
        if reached is None and e["accuracy"] and float(e["accuracy"]) >= 0.97:
            reached = elapsed
    acc = f"{100 * float(es[-1]['accuracy']):.2f}" if es[-1]["accuracy"] else "-"
    print(f"{model:>14} {run:>16} {step:9.2f} {ratio:7.3f} {reached if reached is None else round(reached, 2)!s:>9} "
          f"{acc:>9} {'yes' if all(e['identical'] == '1' for e in es) else 'NO'}")
PY
cores_now="$(cores)"
busy="$(awk -v a="$load_before" -v b="$load_after" -v c="$cores_now" 'BEGIN { print (a > c / 2 || b > c / 2) ? 1 : 0 }')"
{
  results_header "DDP with the gradsync backend against gloo ($where, $np ranks)"
  echo
  [ "$busy" = 0 ] || echo "**Under load**: the machine's load average was $load_before before and $load_after after" \
    "the runs on $cores_now cores (other jobs were running); re-run on a quiet machine for figures to quote."
  echo
  echo "Load average on $cores_now cores before the runs: $load_before, after: $load_after (the command, commit, CPU and"\
    "date are in the block above, from host.txt)"
  echo
  echo '```'
  cat "$out/summary.txt"
  echo '```'
} >"$out/README.md"
cat "$out/summary.txt"
[ "${#failed[@]}" -eq 0 ] || die "failed: ${failed[*]} (logs in $out/logs)"
