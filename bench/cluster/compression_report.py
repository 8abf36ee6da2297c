#!/usr/bin/env python3
"""bench_compression's table: each run against the dense run of its family in the same results folder.

Reads train --csv rows (one per run) and train --epoch-csv rows (one per epoch and run); prints per run the wire
bytes per step and their share of the dense run's, the time to the target accuracy (the elapsed time of the first
epoch that reached it) and its ratio to the dense run's, and the final accuracy and its distance to the dense
run's in points. The dense run of an allreduce run is the ring ("ring"); of a parameter-server run the dense bsp
parameter server ("ps-bsp"). A run's family is the CSV's family column (CSVs written before it had one: "ps" for
a run name starting "ps", else the allreduce family).
"""
import argparse
import csv


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", required=True, help="train --csv file")
    ap.add_argument("--epochs", required=True, help="train --epoch-csv file")
    ap.add_argument("--target", type=float, default=0.95)
    a = ap.parse_args()
    with open(a.runs, newline="") as f:
        runs = list(csv.DictReader(f))
    with open(a.epochs, newline="") as f:
        epochs = list(csv.DictReader(f))
    if not runs:
        raise SystemExit(f"{a.runs}: no runs")
    reached = {}
    for e in epochs:
        m = e["method"]
        if m not in reached and float(e["test_accuracy"]) >= a.target:
            reached[m] = float(e["elapsed_s"])

    def family(r):
        return r.get("family") or ("ps" if r["sync"].startswith("ps") else "allreduce")

    dense_of = {}
    for fam, name in (("allreduce", "ring"), ("ps", "ps-bsp")):
        dense = next((r for r in runs if r["sync"] == name), None)
        if dense is not None:
            dense_of[fam] = (float(dense["wire_bytes_per_step"]), float(dense["test_accuracy"]), reached.get(name))

    for r in runs:
        if family(r) not in dense_of:
            raise SystemExit(f"{a.runs}: {r['sync']} has no dense run of its family to compare with")

    def ratio(x, y):
        return f"{x / y:.4f}" if x is not None and y else "-"

    print(f"{'run':<22} {'wire KB/step':>13} {'/ dense':>8} {'to ' + format(a.target, 'g') + ' s':>9} "
          f"{'/ dense':>8} {'accuracy':>9} {'- dense':>8} {'wall s':>8}")
    for r in runs:
        dense_bytes, dense_acc, dense_time = dense_of[family(r)]
        wire = float(r["wire_bytes_per_step"]) if r["wire_bytes_per_step"] else None
        t = reached.get(r["sync"])
        acc = float(r["test_accuracy"])
        print(f"{r['sync']:<22} {wire / 1024 if wire is not None else float('nan'):>13.1f} "
              f"{ratio(wire, dense_bytes):>8} {t if t is not None else float('nan'):>9.1f} {ratio(t, dense_time):>8} "
              f"{acc:>9.4f} {100 * (acc - dense_acc):>+8.2f} {float(r['wall_s']):>8.1f}")
    print(f"(time to {a.target:g}: elapsed training time at the end of the first epoch that reached it; nan: not "
          "reached. Accuracy difference in points.)")


if __name__ == "__main__":
    main()
