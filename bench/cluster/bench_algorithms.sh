#!/usr/bin/env bash
# The allreduce algorithms against each other and MPI_Allreduce on the emulated cluster (bench/cluster/cluster.sh):
#   fit:   one rank per host on --hosts hosts: a ping-pong between two hosts and every modelled one-level method
#          from 4 B to 64 MiB; the cost model is fitted to them and written as auto's tuning file (inter link);
#   flat:  the same hosts again, auto reading that tuning file, beside the modelled methods and MPI_Allreduce:
#          every target is a ratio within this run, and the model fitted on the first run predicts this one;
#   jumbo: the same hosts with MTU 9000: ring, rhd and MPI_Allreduce at 16 and 64 MiB (the link's rate, not the
#          headers of 1500-byte packets, as the ceiling);
#   hosts: --per-host ranks on each of 2 hosts (more ranks than cores: the link is the bottleneck, say so beside
#          any figure): ring, hier, rhd, auto (same tuning file) and MPI_Allreduce from 1 MiB to 64 MiB.
# Every method runs with the same agreement check; methods are interleaved within each size (median of --reps).
# Usage (root): bench/cluster/bench_algorithms.sh [--hosts 4] [--per-host 2] [--rate 1gbit] [--reps 5] [--out DIR]
# Writes to DIR (default results/algorithms-DATE): fit.csv, flat.csv, jumbo.csv and hosts.csv (bench_allreduce --csv columns),
# pingpong.csv, membw.txt, tuning.txt (auto's tuning file from this network), model_fit/ (fit_cost_model.py on the
# fit run), model_flat/ and model_hosts/ (the same parameters against the later runs), algorithms.txt (the targets
# as ratios), with gnuplot the charts busbw_npN.png, hosts_busbw_npN.png and flat_busbw.png (and .svg), logs/.
# The cluster is always torn down at the end.
set -euo pipefail
# shellcheck source=bench/cluster/drivers.sh
source "$(dirname "${BASH_SOURCE[0]}")/drivers.sh"

hosts=4
per_host=2
rate=1gbit
reps=5
out=""
parse_flags bench_algorithms.sh \
  "--hosts hosts uint 2" \
  "--per-host per_host uint 2" \
  "--rate rate" \
  "--reps reps uint 1" \
  "--out out" \
  -- "$@"
need_bins bench_allreduce bench_membw pingpong cost_model
mpi_launcher "$BUILD_DIR"
[ "$MPI_FLAVOUR" = openmpi ] || die "bench_algorithms.sh maps ranks with Open MPI's flags; this tree uses $MPI_FLAVOUR"
why="$("$CLUSTER" check)" || die "$why"
# The methods come from the registry: the one-level methods the cost model predicts (what auto chooses among on
# hosts of one rank); auto and the vendor baseline join them in the measured runs.
modelled="$("$BIN/bench_allreduce" --list-methods | awk -F'\t' '$2 ~ / modelled/ && $2 !~ / two-level/ {print $1}' | paste -sd,)"
[ -n "$modelled" ] || die "bench_allreduce --list-methods names no modelled method"

cluster_results algorithms flat.csv hosts.csv
bench=("$BIN/bench_allreduce" --iters 3 --warmup 1 --reps "$reps")

cluster_up "$hosts" --rate "$rate"
cluster_run pingpong 300 -np 2 -- "$BIN/pingpong" --min-bytes 0 --max-bytes 16M --step-factor 2 --reps 5 --csv "$out/pingpong.csv"
cluster_run fit 2400 -- "${bench[@]}" --methods "$modelled,mpi" --min-bytes 4 --max-bytes 64M --step-factor 4 \
  --csv "$out/fit.csv"
run_limited 120 "$out/membw.txt" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  "$MPIEXEC" -n 1 --bind-to none "$BIN/bench_membw" --bytes 64M || failed+=("bench_membw")
link_gbps="$(rate_gbps "$rate")"
fit=(python3 "$CLUSTER_DIR/fit_cost_model.py" --pingpong "$out/pingpong.csv" --membw "$out/membw.txt" --link-gbps "$link_gbps"
  --cost-model-bin "$BIN/cost_model")
# This run only supplies the parameters (its own model checks are in model_fit/report.txt; the ones that count are
# against the later runs), so a failed check here is not a failure of the benchmark.
"${fit[@]}" --allreduce "$out/fit.csv" --out "$out/model_fit" --tuning-out "$out/tuning.txt" --link inter \
  >"$out/logs/model_fit.log" 2>&1 || true
[ -s "$out/tuning.txt" ] || die "no tuning file from the fit run: see $out/logs/model_fit.log"
tuned=(-x "GRADSYNC_TUNING=$out/tuning.txt")
cluster_run flat 2400 "${tuned[@]}" -- "${bench[@]}" --methods "$modelled,auto,mpi" --min-bytes 4 --max-bytes 64M \
  --step-factor 4 --csv "$out/flat.csv"
"${fit[@]}" --allreduce "$out/flat.csv" --out "$out/model_flat" >"$out/logs/model_flat.log" 2>&1 \
  || failed+=("fit_cost_model (flat)")
"$CLUSTER" down
# The same links with jumbo frames: at MTU 1500 headers cap TCP's payload at 95.6% of the link (cluster.sh --mtu).
"$CLUSTER" up "$hosts" --rate "$rate" --mtu 9000
cluster_run jumbo 600 -- "${bench[@]}" --methods ring,rhd,mpi --min-bytes 16M --max-bytes 64M --step-factor 4 \
  --csv "$out/jumbo.csv"
"$CLUSTER" down
"$CLUSTER" up 2 --rate "$rate"
cluster_run hosts 2400 -np $((2 * per_host)) --map-by "ppr:$per_host:node" --oversubscribe "${tuned[@]}" -- "${bench[@]}" \
  --methods "ring,hier,rhd,auto,mpi" --min-bytes 1M --max-bytes 64M --step-factor 4 --csv "$out/hosts.csv"
"${fit[@]}" --allreduce "$out/hosts.csv" --out "$out/model_hosts" --ranks-per-host "$per_host" \
  >"$out/logs/model_hosts.log" 2>&1 || failed+=("fit_cost_model (hosts)")
cluster_down

# The targets as ratios within each run: a method's time over another's at the same size.
{
  results_header "bench_algorithms: $hosts emulated hosts (flat) and 2 x $per_host (hosts) at $rate"
  for f in flat hosts; do
    [ -s "$out/$f.csv" ] || continue
    awk -F, -v f="$f" 'NR > 1 { t[$1, $3] = $6; m[$1] = 1; if (!($3 in seen)) { seen[$3] = 1; sizes[++n] = $3 } }
      END { for (i = 1; i <= n; i++) { s = sizes[i]; best = ""; bt = 1e30
          for (x in m) if (x != "mpi" && x != "auto" && ((x, s) in t) && t[x, s] < bt) { bt = t[x, s]; best = x }
          line = sprintf("%s %10s B:", f, s)
          for (x in m) if ((x, s) in t) line = line sprintf("  %s %.1f us", x, t[x, s])
          if (("auto", s) in t && ("mpi", s) in t)
            line = line sprintf("  | auto/best(%s) %.2f  auto/mpi %.2f", best, t["auto", s] / bt, t["auto", s] / t["mpi", s])
          if (("hier", s) in t && ("ring", s) in t) line = line sprintf("  ring/hier %.2f", t["ring", s] / t["hier", s])
          if (("rd", s) in t && ("mpi", s) in t) line = line sprintf("  rd/mpi %.2f", t["rd", s] / t["mpi", s])
          print line } }' "$out/$f.csv"
  done
  for f in flat jumbo; do
    [ -s "$out/$f.csv" ] || continue
    awk -F, -v f="$f" -v g="$link_gbps" 'NR > 1 && $1 == "ring" && $3 + 0 > top { top = $3 + 0; bw = $8 }
      END { if (top) printf "%s: ring busbw at %d MiB %.4f GB/s = %.1f%% of the %g Gbit/s link (MTU %s)\n", f, top / 1048576,
            bw, bw / (g / 8) * 100, g, f == "jumbo" ? 9000 : 1500 }' "$out/$f.csv"
  done
  awk -F, 'NR > 1 && $1 == "auto" { a[$3] = $6 } NR > 1 && $1 == "mpi" { m[$3] = $6 }
    END { for (s in a) if (s in m) { l += log(a[s] / m[s]); n++ }
      if (n) printf "flat: geometric mean of auto / mpi over %d sizes: %.3f\n", n, exp(l / n) }' "$out/flat.csv"
  for f in flat hosts; do
    sed -n '/^## Checks/,/^## /p' "$out/model_$f/report.txt" 2>/dev/null | grep -E '(rd|rhd|hier|ring) vs|busbw' \
      | sed "s/^/$f /" || true
  done
} >"$out/algorithms.txt"
cat "$out/algorithms.txt" >&2
# The charts: bus bandwidth against the link on the flat hosts and on 2 x per-host (plots/busbw.gp), and the flat
# run against the model fitted on the first (plots/cluster_busbw.gp); the subtitle is host.txt's CPU and date.
if command -v gnuplot >/dev/null; then
  subtitle="$(sed -n "1s/^# *//p" "$out/host.txt" | tr -d "'")"
  link=(-e "cores=$(nproc); link=$(awk -v g="$link_gbps" 'BEGIN { print g / 8 }')")
  gnuplot -e "data='$out/flat.csv'; outdir='$out'; subtitle='$hosts hosts, one rank each: $subtitle'" "${link[@]}" \
    "$GRADSYNC_ROOT/plots/busbw.gp" >&2 || failed+=("chart busbw (flat)")
  [ ! -s "$out/hosts.csv" ] || gnuplot -e "data='$out/hosts.csv'; outdir='$out'; prefix='hosts_'" "${link[@]}" \
    -e "subtitle='2 hosts x $per_host ranks: $subtitle'; link_note='(a flat ring crosses it each hop; hier, rhd less)'" \
    "$GRADSYNC_ROOT/plots/busbw.gp" >&2 || failed+=("chart busbw (hosts)")
  [ ! -s "$out/model_flat/model_vs_measured.csv" ] || gnuplot "${link[@]}" \
    -e "data='$out/model_flat/model_vs_measured.csv'; outdir='$out'; name='flat_busbw'; subtitle='$subtitle'" \
    "$GRADSYNC_ROOT/plots/cluster_busbw.gp" >&2 || failed+=("chart flat_busbw")
fi
say "results in $out"
exit_if_cluster_failed
