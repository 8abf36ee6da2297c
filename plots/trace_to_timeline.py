#!/usr/bin/env python3
"""Turns a Chrome trace from `train --trace` into the CSV plots/timeline.gp draws (stdlib only).

usage: trace_to_timeline.py TRACE.json OUT.csv [--steps A:B]
  --steps A:B  the global steps to draw (default: the last three steps in the trace)
Writes one row per span: rank,row,kind,step,start_ms,end_ms. Each rank has two rows: its compute track
(row = 2*rank + 0.25: forward, backward, waits, parameter-server push/pull, checkpoints) and under it its
communication track (row = 2*rank + 0.75: each allreduce from start to completion); timeline.gp draws row 0 at
the top. Times are ms from the window's first span, on rank 0's clock (the trace's alignment).
"""
import csv
import json
import sys

COMPUTE = {"forward", "backward", "wait", "push/pull", "server apply", "checkpoint"}
COMMUNICATION = {"allreduce"}


def main(argv):
    if len(argv) not in (3, 5) or (len(argv) == 5 and argv[3] != "--steps"):
        sys.exit(__doc__)
    with open(argv[1]) as f:
        spans = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    steps = sorted({s["args"]["step"] for s in spans if s["args"].get("step", -1) >= 0})
    if not steps:
        sys.exit(f"{argv[1]}: no spans inside training steps")
    if len(argv) == 5:
        first, last = (int(x) for x in argv[4].split(":"))
    else:
        first, last = steps[max(0, len(steps) - 3)], steps[-1]
    # Training only: the forward passes of an evaluation are left out with it.
    evaluations = [(s["pid"], s["ts"], s["ts"] + s["dur"]) for s in spans if s["cat"] == "evaluation"]
    def in_evaluation(s):
        return any(p == s["pid"] and a <= s["ts"] <= b for p, a, b in evaluations)
    chosen = [s for s in spans if first <= s["args"].get("step", -1) <= last
              and (s["cat"] in COMPUTE or s["cat"] in COMMUNICATION) and not in_evaluation(s)]
    if not chosen:
        sys.exit(f"{argv[1]}: no spans in steps {first}..{last} (the trace holds steps {steps[0]}..{steps[-1]})")
    origin = min(s["ts"] for s in chosen)
    with open(argv[2], "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["rank", "row", "kind", "step", "start_ms", "end_ms"])
        for s in sorted(chosen, key=lambda s: (s["pid"], s["ts"])):
            row = 2 * s["pid"] + (0.75 if s["cat"] in COMMUNICATION else 0.25)
            start = (s["ts"] - origin) / 1e3
            out.writerow([s["pid"], row, s["cat"].replace("/", "-").replace(" ", "-"), s["args"]["step"],
                          f"{start:.4f}", f"{start + s['dur'] / 1e3:.4f}"])


if __name__ == "__main__":
    main(sys.argv)
