#!/usr/bin/env bash
# Render every chart whose input CSV is present in a results directory, as PNG and SVG.
# Usage: plots/make_charts.sh RESULTS_DIR [OUT_DIR]        (OUT_DIR defaults to RESULTS_DIR/charts)
# Inputs looked for in RESULTS_DIR: the CSVs listed in `specs` below (and trace.json, a `train --trace` file, which
# becomes timeline.csv; and headline.csv, plots/headline_data.py's, for the headline chart). Where
# bench/scaling.sh left the median run of each point (train_median.csv, epochs_median.csv), those are drawn
# instead: a bar or a line per repetition is unreadable, and scaling.csv already summarises every repetition.
# Charts without their CSV are skipped; a malformed CSV or a missing tool stops the script.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
die() { echo "make_charts: error: $*" >&2; exit 1; }

[[ $# -ge 1 && $# -le 2 ]] || die "usage: $0 RESULTS_DIR [OUT_DIR]"
results=${1%/}
out=${2:-$results/charts}
[[ -d $results ]] || die "results directory not found: $results"
# Paths go into gnuplot single-quoted strings.
[[ $results$out != *\'* ]] || die "paths must not contain a single quote: $results, $out"

command -v gnuplot >/dev/null 2>&1 || die "gnuplot not found (Debian: apt-get install gnuplot-nox)"
command -v awk >/dev/null 2>&1 || die "awk not found; the chart scripts filter CSV rows with it"
gnuplot -e 'set terminal pngcairo' </dev/null >/dev/null 2>&1 \
    || die "this gnuplot has no pngcairo terminal (Debian: gnuplot-nox 5.4 has it)"
mkdir -p "$out"

# The subtitle says which machine the numbers describe: timings mean little without it. The folder's host.txt,
# written when the figures were measured (scripts/common.sh results_header), says so even when the charts are drawn
# elsewhere; a folder without one is described as this machine, now.
cores=$(nproc)
if [[ -s $results/host.txt ]]; then
    subtitle=$(sed -n '1s/^# *//p' "$results/host.txt")
else
    # shellcheck source=scripts/common.sh
    subtitle=$(source "$here/../scripts/common.sh" && results_header "charts drawn" | sed 's/^# *//')
fi
subtitle=${subtitle//\'/}
# Emulated hosts (bench/cluster): the link rate their host.txt names, when it names one, so that busbw.gp draws the
# line "x % of the link" is read against. One node has no link; hosts at different rates have no one line.
busbw_link=""
if [[ -s $results/host.txt ]] && grep -qi 'emulated host' "$results/host.txt"; then
    # A host.txt may name no rate at all: grep's status must not end the script (set -e, pipefail).
    rates=$({ grep -oiE '[0-9]+(\.[0-9]+)? ?[kmg]bit' "$results/host.txt" || true; } | tr -d ' ' | tr '[:upper:]' '[:lower:]' | sort -u)
    if [[ -n $rates && $(wc -l <<<"$rates") -eq 1 ]]; then
        busbw_link=$(awk -v r="$rates" 'BEGIN { v = r + 0; u = r; sub(/^[0-9.]+/, "", u)
            if (u == "mbit") v /= 1e3; else if (u == "kbit") v /= 1e6
            printf "; link=%g; link_name=\x27%g %sbit/s\x27", v / 8, r + 0, toupper(substr(u, 1, 1)) }')
    fi
fi

# Fail on the first bad line with its number, rather than let gnuplot draw a silently wrong chart.
# $2: columns that must exist; $3: columns that must also hold numbers (nan/inf allowed).
check_csv() {
    awk -F, -v file="$1" -v need="$2" -v nums="$3" '
        { sub(/\r$/, "") }
        NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; nf = NF
                  n = split(need " " nums, c, " ")
                  for (j = 1; j <= n; j++) if (!(c[j] in h)) miss = miss " " c[j]
                  if (miss != "") { print file ": header lacks column(s):" miss; bad = 1; exit 1 }
                  m = split(nums, numc, " "); next }
        /^[[:space:]]*$/ { next }
        NF != nf { printf "%s line %d: %d fields, header has %d\n", file, NR, NF, nf; bad = 1; exit 1 }
        { for (j = 1; j <= m; j++) { v = $h[numc[j]]
              if (v !~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/ && tolower(v) !~ /^[-+]?(nan|inf)$/) {
                  printf "%s line %d: column %s is \"%s\", not a number\n", file, NR, numc[j], v; bad = 1; exit 1 } }
          rows++ }
        END { if (!bad && rows == 0) { print file ": no data rows"; exit 1 } }' "$1" >&2 \
    || die "malformed CSV: $1 (see the line above)"
}

written=$(mktemp)
trap 'rm -f "$written" "$written.headline"' EXIT
plotted=0

# chart CSV | scripts | text columns | numeric columns  (only the columns the scripts read)
specs=(
    "train.csv|train_time.gp|sync|np wall_s compute_s comm_s test_accuracy"
    "scaling.csv|speedup.gp step_split.gp|method|np oversubscribed speedup compute_s sync_s steps"
    "allreduce.csv|busbw.gp|method|np bytes busbw_gbps wrong"
    "epochs.csv|time_to_accuracy.gp|method|np epoch elapsed_s test_accuracy"
    "staleness.csv|staleness.gp|method|np staleness_bound images_per_s staleness_mean staleness_max clock_gap_max"
    "compute.csv|compute_bound.gp|model|batch rep wall_s bound_s fixed_wall_s"
    "scale.csv|sim_scale.gp|platform method|np bytes time_us model_us"
    "regret.csv|sim_regret.gp|platform best|np bytes auto_over_best"
    "sim_train.csv|sim_speedup.gp|platform run|np speedup"
    "timeline.csv|timeline.gp|kind|rank row step start_ms end_ms"
)
# A `train --trace` file becomes the timeline's CSV (its last three steps) unless one is there already.
if [[ -f $results/trace.json && ! -f $results/timeline.csv ]]; then
    python3 "$here/trace_to_timeline.py" "$results/trace.json" "$results/timeline.csv" \
        || die "plots/trace_to_timeline.py could not read $results/trace.json"
fi
for spec in "${specs[@]}"; do
    IFS='|' read -r csv scripts text nums <<<"$spec"
    [[ ! -f $results/${csv%.csv}_median.csv ]] || csv=${csv%.csv}_median.csv
    if [[ ! -f $results/$csv ]]; then
        echo "make_charts: skip ${scripts//.gp/}: no $results/$csv"
        continue
    fi
    check_csv "$results/$csv" "$text" "$nums"
    for gp in $scripts; do
        extra=""
        [[ $gp != busbw.gp ]] || extra=$busbw_link
        gnuplot -e "data='$results/$csv'; outdir='$out'; subtitle='$subtitle'; cores=$cores$extra" "$here/$gp" >>"$written" \
            || die "gnuplot failed on plots/$gp with $results/$csv (messages above)"
        plotted=$((plotted + 1))
    done
done

# The headline chart (plots/headline_data.py writes its CSV, '#' lines first naming the sources).
if [[ -f $results/headline.csv ]]; then
    grep -v '^#' "$results/headline.csv" >"$written.headline"
    check_csv "$written.headline" "series kind platform method" "processes speedup low high"
    rm -f "$written.headline"
    gnuplot -e "data='$results/headline.csv'; outdir='$out'; subtitle='$subtitle'; cores=$cores" "$here/headline.gp" \
        >>"$written" || die "gnuplot failed on plots/headline.gp with $results/headline.csv (messages above)"
    plotted=$((plotted + 1))
fi

((plotted > 0)) || die "none of $(for spec in "${specs[@]}"; do printf '%s ' "${spec%%|*}"; done)in $results"
echo "make_charts: wrote $(grep -c '^wrote ' "$written") files:"
sed -n 's/^wrote /  /p' "$written"
