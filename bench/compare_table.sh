#!/usr/bin/env bash
# Prints the comparison table (method, np, wall time, speedup against serial, test accuracy, sync share) of
# - a train CSV (`train --csv`, columns in README "Running `train`"): one line per run, speedup against the
#   serial row with the same model and epochs;
# - a scaling CSV (bench/scaling.sh): one line per (method, np) median, speedup and oversubscription as measured,
#   and, where the CSV has them, the range of the wall times and the host state of the runs in the median (with
#   how many runs in another state were left out of it).
# Usage: bench/compare_table.sh FILE [NP]      NP: only the serial rows and the rows at that np
set -euo pipefail
csv="${1:?usage: compare_table.sh TRAIN_OR_SCALING_CSV [NP]}"
only_np="${2:-}"
[ -s "$csv" ] || { echo "compare_table.sh: $csv is missing or empty" >&2; exit 1; }
[[ -z $only_np || $only_np =~ ^[0-9]+$ ]] || { echo "compare_table.sh: NP must be a whole number, got '$only_np'" >&2; exit 1; }
awk -F, -v only_np="$only_np" '
  NR == 1 {
    for (i = 1; i <= NF; i++) col[$i] = i
    scaling = ("speedup" in col)
    ranged = ("wall_min_s" in col) && ("host_state" in col)
    name = scaling ? "method" : "sync"
    sync = scaling ? "sync_s" : "comm_s"
    next
  }
  only_np != "" && $(col[name]) != "serial" && $(col["np"]) != only_np { next }
  {
    rows[++n] = $0
    if (!scaling && $(col["sync"]) == "serial") serial[$(col["model"]) "/" $(col["epochs"])] = $(col["wall_s"])
  }
  END {
    if (scaling) printf "%-14s %3s %7s %9s %8s %6s %7s %6s%s\n", "method", "np", "workers", "wall_s", "speedup", "eff", "acc",
                        "sync%", ranged ? sprintf(" %13s  %s", "range_s", "host (runs)") : ""
    else printf "%-16s %-10s %3s %8s %9s %8s %7s %6s\n", "method", "model", "np", "workers", "wall_s", "speedup", "acc", "sync%"
    for (r = 1; r <= n; r++) {
      split(rows[r], f, ",")
      busy = f[col["compute_s"]] + f[col[sync]]
      share = busy > 0 ? 100 * f[col[sync]] / busy : 0
      if (scaling) {
        over = f[col["oversubscribed"]] == 1
        novers += over
        extra = ""
        if (ranged) {
          extra = sprintf(" %13s  %s (%d)", sprintf("%.2f-%.2f", f[col["wall_min_s"]], f[col["wall_max_s"]]),
                          f[col["host_state"]], f[col["runs"]])
          if (f[col["left_out"]] > 0) { extra = extra sprintf(", %d left out !", f[col["left_out"]]); nodd++ }
          if (f[col["method"]] == "serial") base_state = f[col["host_state"]]
          else if (f[col["host_state"]] != base_state) { extra = extra " #"; nbase++ }
        }
        printf "%-14s %3d %7d %9.2f %7.2fx %6.2f %7.4f %5.0f%%%s%s\n", f[col["method"]], f[col["np"]], f[col["workers"]],
               f[col["wall_s"]], f[col["speedup"]], f[col["efficiency"]], f[col["test_accuracy"]], share, extra,
               over ? "  *" : ""
        continue
      }
      key = f[col["model"]] "/" f[col["epochs"]]
      speed = (key in serial && f[col["wall_s"]] > 0) ? sprintf("%.2fx", serial[key] / f[col["wall_s"]]) : "-"
      printf "%-16s %-10s %3d %8d %9.2f %8s %7.4f %5.0f%%\n", f[col["sync"]], f[col["model"]], f[col["np"]],
             f[col["workers"]], f[col["wall_s"]], speed, f[col["test_accuracy"]], share
    }
    if (nbase > 0) printf "# host state differs from the serial baseline (%s): that speedup compares two states\n", base_state
    if (nodd > 0) print "! runs in another host state than the rest of their point: left out of the median, listed below"
    if (novers > 0) print "* oversubscribed: more ranks than cores, so the ranks time-share the CPUs; not an honest timing"
  }' "$csv"
