#!/usr/bin/env python3
"""The winners map of the decentralized family: which way of training is fastest in each view of the network.

A row per view, a column per method, each cell the method's time over the ring allreduce's in that view (below 1:
faster), the row's fastest outlined. The 4-emulated-host views give the time to a test accuracy
(bench/cluster/bench_decentralized.sh's decentralized.txt, its `/ ring` column); the simulated views give the time
of a step (bench/sim/experiments/gossip-scale.sh's gossip_scale.csv), since every method there needs about the same
steps to an accuracy on IID data (docs/decentralized.md).

Usage: plots/decentralized_map.py --out DIR [--subtitle TEXT] VIEW=FILE[@PLATFORM,NP] ...
  FILE a decentralized.txt, or a gossip_scale.csv with @PLATFORM,NP naming its rows.
Writes DIR/decentralized_map.csv (view, method, ratio), decentralized_map_grid.csv (the chart's cells),
decentralized_map.png and .svg (plots/decentralized_map.gp).
"""
import argparse
import csv
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# Columns, centralized first; a method a view does not have stays an empty cell.
ORDER = ["ring", "auto", "ps-bsp", "ring-avg8", "ring-avg8-outer0.7m0.9", "gossip-ring", "gossip-torus", "gossip-exp",
         "gossip-exp1", "gossip-complete", "gossip-ring-async", "gossip-exp-async", "gossip-ring-topk0.01",
         "gossip-ring-g0.8-sign", "gossip-ring-g0.4-topk0.1"]
LABEL = {"ring": "ring allreduce", "auto": "auto", "ps-bsp": "param. server", "ring-avg8": "local SGD H=8",
         "ring-avg8-outer0.7m0.9": "local SGD+outer", "gossip-ring": "gossip ring", "gossip-torus": "gossip torus",
         "gossip-exp": "gossip exp", "gossip-exp1": "gossip exp1", "gossip-complete": "gossip complete",
         "gossip-ring-async": "async ring", "gossip-exp-async": "async exp",
         "gossip-ring-topk0.01": "CHOCO top-k 1%", "gossip-ring-g0.8-sign": "CHOCO sign", "gossip-ring-g0.4-topk0.1": "CHOCO top-k 10%"}


def read_table(path):
    """decentralized.txt: the `/ ring` column of each run that reached the target."""
    out, header = {}, None
    for line in open(path, encoding="utf-8"):
        f = line.split()
        if not f or line.startswith(("#", "(", "note")):
            continue
        if f[0] == "run":
            header = f
            continue
        if header and len(f) >= 6:
            try:
                out[f[1]] = float(f[5])
            except ValueError:
                pass  # "-": the target was not reached
    if not out:
        sys.exit(f"decentralized_map.py: {path}: no table rows with a ratio")
    return out


def read_sim(path, platform, np_):
    rows = [r for r in csv.DictReader(open(path, encoding="utf-8")) if r["platform"] == platform and r["np"] == np_]
    step = {r["method"]: float(r["sim_s_per_step"]) for r in rows}
    if "ring" not in step:
        sys.exit(f"decentralized_map.py: {path}: no ring row for {platform} at p = {np_}")
    return {m: t / step["ring"] for m, t in step.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--subtitle", default="")
    ap.add_argument("views", nargs="+")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    views = []
    for spec in a.views:
        view, _, src = spec.rpartition("=")  # a view may say "p = 64"
        path, _, sel = src.partition("@")
        if not os.path.isfile(path):
            sys.exit(f"decentralized_map.py: '{spec}': no file {path}")
        ratios = read_sim(path, *sel.split(",")) if sel else read_table(path)
        views.append((view, ratios))
    methods = [m for m in ORDER if any(m in r for _, r in views)]
    with open(os.path.join(a.out, "decentralized_map.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["view", "method", "ratio_to_ring", "fastest"])
        for view, r in views:
            best = min(r, key=r.get)
            for m in methods:
                if m in r:
                    w.writerow([view, m, f"{r[m]:.3f}", int(m == best)])
    # The grid: x the method's column, y the view's row (top first), the colour log2 of the ratio.
    with open(os.path.join(a.out, "decentralized_map_grid.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["x", "y", "log2_ratio", "label", "fastest"])
        for i, (view, r) in enumerate(views):
            best = min(r, key=r.get)
            for j, m in enumerate(methods):
                if m in r:
                    w.writerow([j, len(views) - 1 - i, f"{math.log2(r[m]):.4f}", f"{r[m]:.2f}", int(m == best)])
    xt = ", ".join(f"'{LABEL.get(m, m).replace('%', '%%')}' {j}" for j, m in enumerate(methods))
    yt = ", ".join(f"'{v.replace('%', '%%')}' {len(views) - 1 - i}" for i, (v, _) in enumerate(views))
    cmd = ["gnuplot", "-e", f"data='{os.path.join(a.out, 'decentralized_map.csv')}'; outdir='{a.out}'; "
           f"subtitle='{a.subtitle}'; columns={len(methods)}; rows={len(views)}; xt=\"{xt}\"; yt=\"{yt}\"",
           os.path.join(HERE, "decentralized_map.gp")]
    if subprocess.run(cmd).returncode != 0:
        sys.exit("decentralized_map.py: gnuplot failed")


if __name__ == "__main__":
    main()
