#!/usr/bin/env python3
"""The all-views figure: every allreduce method's time over MPI_Allreduce's against the message size, one panel per
view of the network (one node, emulated hosts, the simulated fat tree), each naming its source, CPU and date.

Usage: all_views.py --out DIR --subtitle TEXT PANEL [PANEL ...]
  PANEL is "VIEW|CSV|SOURCE|CPU|DATE": VIEW names the panel ("one node, np 2"), CSV is bench_allreduce's
  (method,np,bytes,...,time_us,...,wrong) with a single p, SOURCE the folder the reader should open, CPU and DATE
  where and when its figures were measured or simulated (the panel's title repeats them; they may not contain "'").
Writes DIR/all_views.csv (panel,np,bytes,method,time_us,mpi_us,ratio: a row per method and size, the ratio being
time_us / mpi_us), DIR/all_views_panels.csv (panel,view,source,cpu,date) and, with gnuplot, DIR/all_views.png and
.svg (plots/all_views.gp).
`mpi` is the reference (ratio 1) and `xcore` is left out: a shared-memory bound, not a method. A row marked wrong
stops the script: a wrong sum is not a result.
"""
import argparse
import csv
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LEFT_OUT = {"xcore"}
# Colours in the order the winners map gives them (methods.def's order), auto after them.
ORDER = ["ring", "rd", "rhd", "auto", "hier", "ring-bf16", "ps", "ps-sharded1", "mpi-ring"]


def read_panel(spec):
    parts = spec.split("|")
    if len(parts) != 5 or not os.path.isfile(parts[1]):
        sys.exit(f"all_views.py: '{spec}' is not VIEW|CSV|SOURCE|CPU|DATE with a readable CSV")
    if any("'" in p for p in parts):
        sys.exit(f"all_views.py: '{spec}': no single quotes (they go into gnuplot strings)")
    view, path, source, cpu, date = parts
    times = {}
    nps = set()
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r.get("wrong", "0") != "0":
                sys.exit(f"all_views.py: {path}: {r['method']} at {r['bytes']} B gave a wrong sum: not a result")
            if r["method"] in LEFT_OUT:
                continue
            nps.add(int(r["np"]))
            times[(r["method"], int(r["bytes"]))] = float(r["time_us"])
    if len(nps) != 1:
        sys.exit(f"all_views.py: {path}: one p per panel, found {sorted(nps)}")
    mpi = {b: t for (m, b), t in times.items() if m == "mpi"}
    if not mpi:
        sys.exit(f"all_views.py: {path}: no mpi rows to divide by")
    methods = sorted({m for m, _ in times if m != "mpi"}, key=lambda m: (ORDER.index(m) if m in ORDER else 99, m))
    p = nps.pop()
    rows = [[p, b, m, times[(m, b)], mpi[b], times[(m, b)] / mpi[b]]
            for m in methods for b in sorted(b for mm, b in times if mm == m and b in mpi)]
    return (view, source, cpu, date), rows, methods


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--subtitle", required=True)
    ap.add_argument("panels", nargs="+", help="VIEW|CSV|SOURCE|CPU|DATE")
    a = ap.parse_args()
    if "'" in a.subtitle:
        sys.exit("all_views.py: the subtitle goes into a gnuplot string: no single quotes")
    os.makedirs(a.out, exist_ok=True)
    methods = []
    out_rows = []
    titles = []
    for i, spec in enumerate(a.panels, 1):
        meta, rows, ms = read_panel(spec)
        titles.append(meta)
        out_rows += [[i] + r for r in rows]
        methods += [m for m in ms if m not in methods]
    methods.sort(key=lambda m: (ORDER.index(m) if m in ORDER else 99, m))
    data = os.path.join(a.out, "all_views.csv")
    with open(data, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["panel", "np", "bytes", "method", "time_us", "mpi_us", "ratio"])
        for r in out_rows:
            w.writerow(r[:4] + [f"{r[4]:.3f}", f"{r[5]:.3f}", f"{r[6]:.4f}"])
    with open(os.path.join(a.out, "all_views_panels.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["panel", "view", "source", "cpu", "date"])
        w.writerows([i] + list(t) for i, t in enumerate(titles, 1))
    print(f"wrote {data}")
    # The panels' titles go to gnuplot as variables: its CSV reading splits at every comma, quoted or not.
    names = "; ".join(f"view{i}='{t[0]}'; source{i}='{t[1]}'; cpu{i}='{t[2]}'; date{i}='{t[3]}'"
                      for i, t in enumerate(titles, 1))
    cmd = ["gnuplot", "-e", f"data='{data}'; outdir='{a.out}'; subtitle='{a.subtitle}'; methods='{' '.join(methods)}'; "
           f"panels={len(a.panels)}; {names}", os.path.join(HERE, "all_views.gp")]
    if subprocess.run(cmd).returncode != 0:
        sys.exit("all_views.py: gnuplot failed")


if __name__ == "__main__":
    main()
