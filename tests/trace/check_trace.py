#!/usr/bin/env python3
"""Checks a Chrome trace written by `train --trace` (stdlib only).

usage: check_trace.py TRACE PARAM_BYTES [--overlap yes|no] [--explained EXPLAIN_OUTPUT]
  TRACE        the JSON file
  PARAM_BYTES  the model's gradient in bytes: every step's allreduce spans on a rank add up to it
  --overlap    yes: some allreduce span overlaps a backward span of its rank (buckets); no: none does
  --steps A:B  every span belongs to a step from A to B, and each of them has spans
  --explained  a file holding `train --explain`'s output: its table must list exactly the sizes rank 0 reduced
Exits 1 naming the first problem found.
"""
import collections
import json
import sys

EPS_US = 0.002  # ts and dur are each rounded to 1 ns


def fail(message):
    print(f"check_trace: {message}", file=sys.stderr)
    sys.exit(1)


def spans_of(trace):
    return [e for e in trace["traceEvents"] if e.get("ph") == "X"]


def check_durations(spans):
    for s in spans:
        if s["dur"] < 0:
            fail(f"negative duration: {s}")


def check_nesting(spans):
    """Spans on one track (pid, tid) either nest or follow each other."""
    tracks = collections.defaultdict(list)
    for s in spans:
        tracks[(s["pid"], s["tid"])].append(s)
    for key, track in tracks.items():
        track.sort(key=lambda s: (s["ts"], -s["dur"]))
        stack = []
        for s in track:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= s["ts"] + EPS_US:
                stack.pop()
            if stack and s["ts"] + s["dur"] > stack[-1]["ts"] + stack[-1]["dur"] + EPS_US:
                fail(f"track {key}: '{s['name']}' at {s['ts']} us crosses the end of '{stack[-1]['name']}'")
            stack.append(s)


def check_bytes(spans, param_bytes):
    per_step = collections.defaultdict(int)
    for s in spans:
        if s["cat"] == "allreduce":
            per_step[(s["pid"], s["args"]["step"])] += s["args"]["bytes"]
    if not per_step:
        fail("no allreduce spans")
    for key, total in per_step.items():
        if total != param_bytes:
            fail(f"rank {key[0]} step {key[1]}: allreduce spans carry {total} bytes, the gradient is {param_bytes}")


def overlapping(spans):
    backward = collections.defaultdict(list)
    for s in spans:
        if s["cat"] == "backward":
            backward[s["pid"]].append((s["ts"], s["ts"] + s["dur"]))
    count = 0
    for s in spans:
        if s["cat"] != "allreduce":
            continue
        a, b = s["ts"], s["ts"] + s["dur"]
        count += any(a < end and start < b for start, end in backward[s["pid"]])
    return count


def explained_sizes(path):
    sizes = set()
    with open(path) as f:
        rows = f.read().split("auto's choices on rank 0:")[-1].splitlines()
    for line in rows[2:]:
        fields = line.split()
        if len(fields) < 5 or not fields[0].isdigit():
            break
        sizes.add(int(fields[3]))
    return sizes


def main(argv):
    if len(argv) < 3:
        fail(__doc__)
    with open(argv[1]) as f:
        trace = json.load(f)
    spans = spans_of(trace)
    check_durations(spans)
    check_nesting(spans)
    check_bytes(spans, int(argv[2]))
    options = dict(zip(argv[3::2], argv[4::2]))
    if "--overlap" in options:
        n = overlapping(spans)
        if (n > 0) != (options["--overlap"] == "yes"):
            fail(f"{n} allreduce spans overlap a backward span (expected {'some' if options['--overlap'] == 'yes' else 'none'})")
    if "--steps" in options:
        first, last = (int(x) for x in options["--steps"].split(":"))
        steps = {s["args"]["step"] for s in spans}
        if steps != set(range(first, last + 1)):
            fail(f"spans belong to steps {sorted(steps)}, the window is {first}..{last}")
    offsets = trace.get("otherData", {}).get("clock_offsets", [])
    if len(offsets) != len({s["pid"] for s in spans}) or any(o["error_us"] < 0 for o in offsets):
        fail(f"clock offsets missing or malformed: {offsets}")
    if "--explained" in options:
        reduced = {s["args"]["bytes"] for s in spans if s["cat"] == "allreduce" and s["pid"] == 0}
        table = explained_sizes(options["--explained"])
        if table != reduced:
            fail(f"--explain lists sizes {sorted(table)}, rank 0 reduced {sorted(reduced)}")
    print(f"check_trace: {len(spans)} spans OK")


if __name__ == "__main__":
    main(sys.argv)
