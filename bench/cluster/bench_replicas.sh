#!/usr/bin/env bash
# The price of the parameter server's live replicas where the wire is slow: N namespace-hosts at a link rate
# (bench/cluster/cluster.sh), one rank each, world ranks 0..servers-1 serving (bsp) and the rest working; the same
# run with each key range on 1 (its primary alone) and on R servers (--replicas R, chain replication each round),
# interleaved rep by rep so that a change of the machine's state hits both alike. Each round a server's link carries
# W key ranges in (the pushes) and W out (the answers); replication adds R-1 each way (the range's sum to its
# replicas, theirs to it), so the expected cost is about (R-1)/W of a link-bound round, whatever the rate.
# The cluster is always torn down at the end, also on failure or Ctrl-C.
# Usage (root): bench/cluster/bench_replicas.sh [--hosts 4] [--servers 2] [--replicas 2] [--rate 1gbit]
#                 [--hidden 1024,1024] [--batch 256] [--steps 40] [--reps 3] [--data DIR] [--out DIR]
# Writes to DIR (default results/replicas-DATE): replicas.csv (train --csv rows, one per run), replicas.txt (each
# rep's ratio and their median), logs/ with each run. Exit status 1 if a run failed.
set -euo pipefail
# shellcheck source=bench/cluster/drivers.sh
source "$(dirname "${BASH_SOURCE[0]}")/drivers.sh"

hosts=4
servers=2
replicas=2
rate=1gbit
hidden=1024,1024
batch=256
steps=40
reps=3
data_dir="$GRADSYNC_ROOT/data/mnist"
out=""
parse_flags bench_replicas.sh \
  "--hosts hosts uint 3" \
  "--servers servers uint 2" \
  "--replicas replicas uint 2" \
  "--rate rate" \
  "--hidden hidden match ^[0-9]+(,[0-9]+)*$ --hidden needs widths like 1024,1024" \
  "--batch batch uint 1" \
  "--steps steps uint 1" \
  "--reps reps uint 1" \
  "--data data_dir" \
  "--out out" \
  -- "$@"
[ "$servers" -lt "$hosts" ] || die "--servers $servers: needs fewer than --hosts ($hosts), leaving a worker"
[ "$replicas" -le "$servers" ] || die "--replicas $replicas: at most --servers ($servers)"
need_bins train
absolute_mnist data_dir
why="$("$CLUSTER" check)" || die "$why"

cluster_results replicas replicas.csv
cluster_up "$hosts" --rate "$rate"
for rep in $(seq 1 "$reps"); do
  for r in 1 "$replicas"; do
    cluster_run "train_r${r}_rep$rep" 600 -- "$BIN/train" --sync ps --servers "$servers" --replicas "$r" \
      --model mlp --hidden "$hidden" --batch "$batch" --iterations-per-epoch "$steps" --epochs 1 \
      --data "$data_dir" --quiet --csv "$out/replicas.csv"
    grep '^done:' "$out/logs/train_r${r}_rep$rep.log" >&2 || true
  done
done
cluster_down

workers=$((hosts - servers))
{
  results_header "bench_replicas: $hosts emulated hosts at $rate, one rank each, $servers servers (bsp) and $workers"\
" workers, MLP $hidden, batch $batch per worker, $steps steps a run, $reps reps of --replicas 1 and $replicas interleaved"
  python3 - "$out/replicas.csv" "$replicas" "$workers" <<'PY'
import csv, statistics, sys
path, replicas, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = list(csv.DictReader(open(path)))
# Seconds a step: a global batch over the run's training rate (the evaluation is not in it).
def step_s(row):
    return float(row["workers"]) * float(row["batch"]) / float(row["images_per_s"])
by = {}
for row in rows:
    r = 1 if "-r" not in row["sync"] else int(row["sync"].rsplit("-r", 1)[1])
    by.setdefault(r, []).append(step_s(row))
one, many = by.get(1, []), by.get(replicas, [])
ratios = [b / a for a, b in zip(one, many)]
print(f"{'rep':>4} {'replicas 1 (s/step)':>20} {'replicas ' + str(replicas) + ' (s/step)':>20} {'ratio':>7}")
for i, (a, b) in enumerate(zip(one, many), 1):
    print(f"{i:>4} {a:>20.4f} {b:>20.4f} {b / a:>7.3f}")
if ratios:
    print(f"median ratio {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}); "
          f"expected from the bytes on a server's link: 1 + (R-1)/W = {1 + (replicas - 1) / workers:.3f}")
PY
} >"$out/replicas.txt"
cat "$out/replicas.txt" >&2
say "results in $out"
exit_if_cluster_failed
