#!/usr/bin/env bash
# Two builds of gradsync against each other on this node, alternated so that both see the same host moments:
# bench_allreduce (ring, rd, rhd and MPI_Allreduce, 4 B - 4 MiB) and bench_sync's training steps (ring, mpi), np 2,
# ROUNDS rounds whose order of builds alternates; the host's cross-core state (bench_allreduce's xcore at 1 MiB:
# about 60 us fast, 300 us slow) probed before and after each round. MPI_Allreduce is the same code in any two
# builds: its ratio is the noise floor of the run.
# Usage: bench/compare_builds.sh OLD_BIN_DIR NEW_BIN_DIR OUT_DIR [ROUNDS]   (e.g. a worktree's build/bin and build/bin)
# Writes OUT_DIR/ab.csv (round,build,what,method,bytes,time_us), probe.csv and compare.csv (per method and size:
# the old and new medians and the median of the per-round new/old ratios, over the rounds whose probes before and
# after agree within 2x: a round in which the host changed state is left out and counted).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
[ $# -ge 3 ] || die "usage: bench/compare_builds.sh OLD_BIN_DIR NEW_BIN_DIR OUT_DIR [ROUNDS]"
old="$1" new="$2" out="$3" rounds="${4:-5}"
need_uint ROUNDS "$rounds" 1
for d in "$old" "$new"; do
  for b in bench_allreduce bench_sync; do [ -x "$d/$b" ] || die "no $d/$b"; done
done
mkdir -p "$out"
host_txt "$out" "bench/compare_builds.sh: $old against $new"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun -n 2 --bind-to core)
data="$GRADSYNC_ROOT/data/mnist"
probe() {
  "${mpi[@]}" "$new/bench_allreduce" --methods xcore --min-bytes 1M --max-bytes 1M --reps 3 --csv "$out/probe_run.csv" \
    >/dev/null 2>&1
  awk -F, '$1 == "xcore" { print $6 }' "$out/probe_run.csv"
}
echo "round,build,what,method,bytes,time_us" >"$out/ab.csv"
echo "round,when,xcore_1MiB_us" >"$out/probe.csv"
for round in $(seq 1 "$rounds"); do
  echo "$round,before,$(probe)" >>"$out/probe.csv"
  order="old new"
  [ $((round % 2)) = 1 ] || order="new old"
  for b in $order; do
    bin="$old"
    [ "$b" = old ] || bin="$new"
    "${mpi[@]}" "$bin/bench_allreduce" --methods ring,rd,rhd,mpi --min-bytes 4 --max-bytes 4M --step-factor 32 \
      --reps 3 --csv "$out/run.csv" >/dev/null 2>&1 || die "bench_allreduce ($b) failed"
    awk -F, -v r="$round" -v b="$b" 'NR > 1 { print r "," b ",allreduce," $1 "," $3 "," $6 }' "$out/run.csv" >>"$out/ab.csv"
    "${mpi[@]}" "$bin/bench_sync" --methods ring,mpi --steps 2400 --block 100 --data "$data" >"$out/sync.log" 2>&1 ||
      die "bench_sync ($b) failed: $out/sync.log"
    awk -v r="$round" -v b="$b" '$1 ~ /^(ring|mpi)$/ && $2 ~ /^[0-9]+$/ { print r "," b ",sync_step," $1 ",0," $6 }' \
      "$out/sync.log" >>"$out/ab.csv"
  done
  echo "$round,after,$(probe)" >>"$out/probe.csv"
done
rm -f "$out/run.csv" "$out/probe_run.csv" "$out/sync.log"
python3 - "$out" <<'PY'
import csv, statistics, sys
out = sys.argv[1]
rows = list(csv.DictReader(open(f"{out}/ab.csv")))
# A round whose probes before and after differ by more than 2x saw the host change state between (or during) its two
# builds: its ratio compares two host states, not two builds, so it is left out and counted.
probes = {}
for r in csv.DictReader(open(f"{out}/probe.csv")):
    probes.setdefault(r["round"], []).append(float(r["xcore_1MiB_us"]))
steady = {k for k, v in probes.items() if max(v) <= 2 * min(v)}
with open(f"{out}/compare.csv", "w") as f:
    f.write("what,method,bytes,old_median_us,new_median_us,new_over_old,rounds,rounds_left_out\n")
    for k in sorted({(r["what"], r["method"], int(r["bytes"])) for r in rows}):
        per = {}
        for r in rows:
            if (r["what"], r["method"], int(r["bytes"])) == k and r["round"] in steady:
                per.setdefault(r["round"], {})[r["build"]] = float(r["time_us"])
        both = [v for v in per.values() if len(v) == 2]
        if not both:
            f.write(f"{k[0]},{k[1]},{k[2]},,,,0,{len(probes)}\n")
            continue
        ratio = statistics.median(v["new"] / v["old"] for v in both)
        f.write(f"{k[0]},{k[1]},{k[2]},{statistics.median(v['old'] for v in both):.2f},"
                f"{statistics.median(v['new'] for v in both):.2f},{ratio:.3f},{len(both)},{len(probes) - len(both)}\n")
PY
cat "$out/compare.csv"
