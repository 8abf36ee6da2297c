#!/usr/bin/env python3
"""bench_decentralized's table: each run's time to the target accuracy against the `ring` run of the same folder.

Reads the driver's runs.csv (run,log,exit_status) and, for each run, its files in the logs folder: LOG.log (train's
output, with its line "target A reached after X s of training, N global steps" or "target A not reached ..."),
LOG.csv (train --csv: the final accuracy, the training time, the wire bytes per worker step) and LOG.epochs.csv
(train --epoch-csv: the method, the evaluations, the last consensus distance). Prints per run the time and the
global steps to the target (as train interpolates them between two evaluations; from the epoch rows the same way
when the log has no target line), the ratio of that time to the ring run's, the final test accuracy, the wire bytes
per step and the training time.
"""
import argparse
import csv
import math
import os
import re

TARGET_LINE = re.compile(r"^target (\S+) reached after ([0-9.]+)s of training, ([0-9.]+) global steps")
NOT_REACHED = re.compile(r"^target (\S+) not reached")
WORKERS = re.compile(r"^done: .* on (\d+) rank\(s\) \((\d+) worker\(s\)\)")


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def number(text):
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def from_epochs(epochs, target):
    """The first crossing of target in the epoch rows, interpolated as train does: (seconds, steps) or None."""
    before = None
    for e in epochs:
        acc, t, steps = number(e["test_accuracy"]), number(e["elapsed_s"]), number(e["global_steps"])
        if acc is not None and acc >= target:
            if before is None or acc == before[0]:
                return t, steps
            f = (target - before[0]) / (acc - before[0])
            return before[1] + f * (t - before[1]), before[2] + f * (steps - before[2])
        before = (acc, t, steps)
    return None


def summarize(row, logs, target):
    log = row["log"]
    text = open(os.path.join(logs, log + ".log"), errors="replace").read().splitlines() \
        if os.path.exists(os.path.join(logs, log + ".log")) else []
    runs = read_csv(os.path.join(logs, log + ".csv"))
    epochs = read_csv(os.path.join(logs, log + ".epochs.csv"))
    s = {"run": row["run"], "status": int(row["exit_status"]), "method": epochs[-1]["method"] if epochs else "-",
         "workers": None, "time": None, "steps": None, "source": "", "acc": None, "wire": None, "wall": None,
         "consensus": None, "best": None}
    for line in text:
        m = WORKERS.match(line)
        if m:
            s["workers"] = int(m.group(2))
        # train's own line only for this target; another target's comes from the epoch rows (a run to 0.97 also
        # gives its time to 0.95).
        m = TARGET_LINE.match(line)
        if m and float(m.group(1)) == target:
            s["time"], s["steps"], s["source"] = float(m.group(2)), float(m.group(3)), "log"
        elif (m2 := NOT_REACHED.match(line)) and float(m2.group(1)) == target:
            s["source"] = "log"
    wire = None
    if runs:
        s["acc"], s["wall"] = number(runs[-1]["test_accuracy"]), number(runs[-1]["wall_s"])
        s["workers"] = s["workers"] or int(runs[-1]["workers"])
        wire = number(runs[-1]["wire_bytes_per_step"])
    if epochs:
        last = epochs[-1]
        s["acc"] = s["acc"] if s["acc"] is not None else number(last["test_accuracy"])
        wire = wire if runs else number(last["wire_bytes_per_step"])
        s["consensus"] = number(last.get("consensus_distance"))
    s["wire"] = wire if wire is not None and wire >= 0 else None
    if epochs:
        s["best"] = max(number(e["test_accuracy"]) or 0 for e in epochs)
        if not s["source"]:  # a log without train's target line: the epoch rows, interpolated the same way
            hit = from_epochs(epochs, target)
            if hit:
                s["time"], s["steps"], s["source"] = hit[0], hit[1], "epochs"
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", required=True, help="the driver's runs.csv")
    ap.add_argument("--logs", required=True, help="the folder with each run's LOG.log, LOG.csv, LOG.epochs.csv")
    ap.add_argument("--target", type=float, default=0.95)
    ap.add_argument("--hosts", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True, help="per worker")
    ap.add_argument("--every", type=int, required=True, help="steps between evaluations")
    ap.add_argument("--baseline", default="ring", help="the run the ratio column divides by")
    a = ap.parse_args()
    rows = read_csv(a.runs)
    if not rows:
        raise SystemExit(f"{a.runs}: no runs")
    table = [summarize(r, a.logs, a.target) for r in rows]
    base = next((s for s in table if s["run"] == a.baseline), None)
    base_time = base["time"] if base else None

    def fmt(v, spec, none="-"):
        return format(v, spec) if v is not None else none

    w = max([22] + [len(s["run"]) for s in table])  # a run is the spec given (--runs), train's name is its method
    head = (f"{'run':<{w}} {'method':<24} {'workers':>7} {'to ' + format(a.target, 'g') + ' s':>9} {'steps':>6} "
            f"{'/ ' + a.baseline:>7} {'final acc':>9} {'wire KB/step':>12} {'train s':>8} {'consensus':>9}")
    print(head)
    notes = []
    for s in table:
        if s["status"] != 0 and s["acc"] is None:
            print(f"{s['run']:<{w}} failed (exit {s['status']}{', out of time' if s['status'] == 124 else ''})")
            continue
        reached = s["time"] is not None
        to = fmt(s["time"], ".2f") if reached else "not"
        ratio = f"{s['time'] / base_time:.3f}" if reached and base_time else "-"
        workers = fmt(s["workers"], "d")
        if s["workers"] is not None and s["workers"] < a.hosts:
            workers += "*"
        print(f"{s['run']:<{w}} {s['method']:<24} {workers:>7} {to:>9} {fmt(s['steps'], '.0f'):>6} {ratio:>7} "
              f"{fmt(s['acc'], '.4f'):>9} {fmt(s['wire'] / 1024 if s['wire'] is not None else None, '.1f'):>12} "
              f"{fmt(s['wall'], '.2f'):>8} {fmt(s['consensus'], '.3g'):>9}")
        if s["status"] != 0:
            notes.append(f"{s['run']}: the run failed (exit {s['status']}) after writing these rows")
        if not reached and s["best"] is not None:
            notes.append(f"{s['run']}: target not reached in the run (best test accuracy {s['best']:.4f})")
        if s["source"] == "epochs":
            notes.append(f"{s['run']}: no target line in its log: time and steps interpolated from its epoch rows")
        if s["workers"] is not None and s["workers"] < a.hosts:
            notes.append(f"{s['run']}: {s['workers']} worker(s) on {a.hosts} hosts (one server rank), so a global "
                         f"batch of {s['workers'] * a.batch} against {a.hosts * a.batch}")
    if base is None:
        notes.append(f"no '{a.baseline}' run in this folder: no ratios")
    elif base_time is None:
        notes.append(f"the '{a.baseline}' run did not reach the target: no ratios")
    print(f"(to {a.target:g} s: training time, evaluations excluded, when the evaluated model (gossip: the mean of the "
          f"ranks' models) first reached the target, interpolated between evaluations {a.every} steps apart; steps: "
          "global steps, each one batch on every worker; wire: the bytes of all ranks' own messages per worker step "
          "(train's wire_bytes_per_step; - where not counted, as MPI_Allreduce's); "
          "consensus: the ranks' models' distance from their mean after the last step (gossip only); * fewer workers "
          "than hosts.)")
    for n in notes:
        print(f"note: {n}")


if __name__ == "__main__":
    main()
