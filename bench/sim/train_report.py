#!/usr/bin/env python3
"""train_report.py: the simulated training runs of one platform (bench/sim/experiments/train-scale.sh) as the lab's
table: speedup over serial and time to a test accuracy, per synchronization, mode and p.

  bench/sim/train_report.py --dir DIR --platform NAME [--target 0.97]

DIR holds LABEL-npP-epochs.csv files (train --epoch-csv; LABEL is SYNC-MODE, or serial at np 1). Writes
DIR/sim_train.csv and DIR/train.md. Speedup = serial time / time for the same epochs (constant total work). Time to target = simulated
time at the end of the first epoch whose test accuracy reaches it (empty when none does). Standard library only.
"""
import argparse
import csv
import pathlib
import re
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=pathlib.Path, required=True)
    ap.add_argument("--platform", required=True)
    ap.add_argument("--target", type=float, default=0.97)
    a = ap.parse_args()
    runs = {}
    for path in sorted(a.dir.glob("*-epochs.csv")):
        m = re.fullmatch(r"(.+)-np(\d+)-epochs\.csv", path.name)
        if not m:
            continue
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        if rows:
            runs[(m.group(1), int(m.group(2)))] = rows
    if ("serial", 1) not in runs:
        sys.exit(f"train_report.py: no serial-np1-epochs.csv in {a.dir}")
    serial = runs[("serial", 1)]
    serial_s = float(serial[-1]["elapsed_s"])

    def reached(rows):
        return next((float(r["elapsed_s"]) for r in rows if float(r["test_accuracy"]) >= a.target), None)

    table = []
    for (label, np_), rows in sorted(runs.items(), key=lambda kv: (kv[0][0] != "serial", kv[0][0], kv[0][1])):
        t = float(rows[-1]["elapsed_s"])
        table.append({"label": label, "np": np_, "epochs": len(rows), "time_s": t, "speedup": serial_s / t,
                      "accuracy": float(rows[-1]["test_accuracy"]), "time_to_target_s": reached(rows),
                      "sync_s": sum(float(r["sync_s"]) for r in rows)})
    with open(a.dir / "sim_train.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["platform", "run", "np", "epochs", "time_s", "speedup", "test_accuracy", "time_to_target_s",
                    "sync_s"])
        for r in table:
            w.writerow([a.platform, r["label"], r["np"], r["epochs"], f"{r['time_s']:.4f}", f"{r['speedup']:.3f}",
                        f"{r['accuracy']:.4f}", "nan" if r["time_to_target_s"] is None else f"{r['time_to_target_s']:.4f}",
                        f"{r['sync_s']:.4f}"])
    nps = sorted({r["np"] for r in table if r["label"] != "serial"})
    labels = list(dict.fromkeys(r["label"] for r in table if r["label"] != "serial"))
    by = {(r["label"], r["np"]): r for r in table}
    head = "| run | " + " | ".join(f"p = {p}" for p in nps) + " |"
    rule = "|---|" + "---|" * len(nps)

    def grid(cell):
        return [head, rule] + [f"| {lab} | " + " | ".join(cell(by.get((lab, p))) for p in nps) + " |" for lab in labels]

    ttt = reached(serial)
    lines = [f"# Simulated training on {a.platform}: MLP-128, batch 32 per worker, constant total work", "",
             f"Serial: {serial_s:.2f} s simulated for {len(serial)} epochs, test accuracy "
             f"{float(serial[-1]['test_accuracy']):.4f}"
             + (f", {a.target:.0%} after {ttt:.2f} s." if ttt is not None else f", {a.target:.0%} not reached."),
             "", "## Speedup over serial (same epochs)", "", *grid(lambda r: "" if r is None else f"{r['speedup']:.2f}"),
             "", f"## Time to {a.target:.0%} test accuracy, s (-: not reached in the epochs run)", "",
             *grid(lambda r: "" if r is None else "-" if r["time_to_target_s"] is None else
                   f"{r['time_to_target_s']:.2f}"),
             "", "## Test accuracy after the last epoch", "",
             *grid(lambda r: "" if r is None else f"{r['accuracy']:.4f}"), ""]
    (a.dir / "train.md").write_text("\n".join(lines))
    sys.stdout.write("\n".join(lines))


if __name__ == "__main__":
    main()
