#!/usr/bin/env bash
# Prints a train CSV (the format of DESIGN.md) as the comparison table: method, np, wall time, speedup against
# the serial row with the same model and epochs, test accuracy, sync share. Usage: bench/compare_table.sh FILE
set -euo pipefail
csv="${1:?usage: compare_table.sh TRAIN_CSV}"
[ -s "$csv" ] || { echo "compare_table.sh: $csv is missing or empty" >&2; exit 1; }
awk -F, '
  NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  {
    rows[NR] = $0
    key = $(col["model"]) "/" $(col["epochs"])
    if ($(col["sync"]) == "serial") serial[key] = $(col["wall_s"])
  }
  END {
    printf "%-16s %-10s %3s %8s %9s %8s %7s %6s\n", "method", "model", "np", "workers", "wall_s", "speedup", "acc", "sync%"
    for (r = 2; r <= NR; r++) {
      split(rows[r], f, ",")
      key = f[col["model"]] "/" f[col["epochs"]]
      speed = (key in serial && f[col["wall_s"]] > 0) ? sprintf("%.2fx", serial[key] / f[col["wall_s"]]) : "-"
      busy = f[col["compute_s"]] + f[col["comm_s"]]
      share = busy > 0 ? 100 * f[col["comm_s"]] / busy : 0
      printf "%-16s %-10s %3d %8d %9.2f %8s %7.4f %5.0f%%\n", f[col["sync"]], f[col["model"]], f[col["np"]],
             f[col["workers"]], f[col["wall_s"]], speed, f[col["test_accuracy"]], share
    }
  }' "$csv"
