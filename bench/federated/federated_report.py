#!/usr/bin/env python3
"""The federated sweep's report: rounds to the target in the paper's layout (client fraction C as rows, one column
per partition and local-epochs/batch pair), each cell the best learning rate's count with the paper's beside it, and
curves.csv (accuracy against rounds of each column's best run at one fraction), which plots/federated.gp draws.

Usage: federated_report.py --results DIR --target 0.97 [--literature 2nn] [--fraction 0.1] [--subtitle TEXT]
Reads DIR/runs.csv and DIR/epochs.csv (bench/federated/federated_sweep.sh); prints the table (Markdown) to stdout;
writes DIR/curves.csv and DIR/chart.png/svg."""
import argparse
import csv
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def columns_of(runs):
    """(partition, E, B) in the order the sweep ran them."""
    seen = []
    for r in runs:
        key = (r["partition"], r["local_epochs"], r["batch"])
        if key not in seen:
            seen.append(key)
    return seen


def best_run(runs, key, fraction):
    """The run of column `key` at `fraction` that reached the target in the fewest rounds, or None; and every run of
    that cell."""
    cell = [r for r in runs if (r["partition"], r["local_epochs"], r["batch"]) == key and r["fraction"] == fraction]
    reached = [r for r in cell if r["rounds_to_target"]]
    return (min(reached, key=lambda r: float(r["rounds_to_target"])) if reached else None), cell


def literature(model, target):
    path = os.path.join(HERE, "literature.csv")
    table = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["model"] == model and float(r["target"]) == float(target):
                table[(r["partition"], r["local_epochs"], r["batch"], float(r["fraction"]))] = r["rounds"]
    return table


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--literature", default="2nn")
    ap.add_argument("--fraction", default="0.1", help="the client fraction whose curves the chart draws")
    ap.add_argument("--subtitle", default="")
    a = ap.parse_args()
    with open(os.path.join(a.results, "runs.csv")) as f:
        runs = list(csv.DictReader(f))
    if not runs:
        sys.exit("federated_report: runs.csv has no runs")
    paper = literature(a.literature, a.target)
    keys = columns_of(runs)
    fractions = []
    for r in runs:
        if r["fraction"] not in fractions:
            fractions.append(r["fraction"])
    def head(k):
        return f"{k[0]}, E={k[1]}, B={'∞' if k[2] == 'all' else k[2]}"
    print(f"Rounds to {a.target} test accuracy: the best learning rate's count (lr), McMahan et al. 2017 in brackets; "
          f"'>N' if no learning rate reached it in N rounds.\n")
    print("| C | " + " | ".join(head(k) for k in keys) + " |")
    print("| --- |" + " --- |" * len(keys))
    for c in fractions:
        cells = []
        for k in keys:
            best, cell = best_run(runs, k, c)
            if best:
                text = f"{float(best['rounds_to_target']):.1f} (lr {best['lr']})"
            elif cell:
                text = ">" + str(max(int(r["rounds_run"]) for r in cell))
            else:
                text = "-"
            ref = paper.get((k[0], k[1], k[2], float(c)))
            cells.append(text + (f" [{ref}]" if ref else ""))
        print(f"| {c} | " + " | ".join(cells) + " |")
    # The chart's curves: each column's best run at --fraction (its first learning rate when none reached the target).
    with open(os.path.join(a.results, "epochs.csv")) as f:
        epochs = list(csv.DictReader(f))
    curves = os.path.join(a.results, "curves.csv")
    drawn = 0
    with open(curves, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["series", "round", "test_accuracy", "best_test_accuracy"])
        for k in keys:
            best, cell = best_run(runs, k, a.fraction)
            chosen = best or (cell[0] if cell else None)
            if not chosen:
                continue
            name = f"{k[0]} E={k[1]} B={k[2]} (lr {chosen['lr']})"  # no commas: the chart's awk splits on them
            for e in epochs:
                if (e["partition"], e["local_epochs"], e["batch"], e["fraction"], e["lr"]) == \
                        (k[0], k[1], k[2], a.fraction, chosen["lr"]):
                    w.writerow([name, e["global_steps"], e["test_accuracy"], e["best_test_accuracy"]])
                    drawn += 1
    if drawn:
        subprocess.run(["gnuplot", "-e", f"data='{curves}'; outdir='{a.results}'; subtitle='{a.subtitle}'; "
                        f"target={a.target}; fraction='{a.fraction}'", os.path.join(ROOT, "plots", "federated.gp")],
                       check=False, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
