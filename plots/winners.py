#!/usr/bin/env python3
"""The winners map: which allreduce method is fastest at each message size, on each view of the network (one node,
emulated hosts, the simulated fat tree at p = 8..1024), and by how much it beats MPI_Allreduce there.

Usage: winners.py --out DIR VIEW=CSV [VIEW=CSV ...] [--subtitle TEXT]
Each CSV is bench_allreduce's (method,np,bytes,...,time_us); a VIEW names its rows ("1 node", "4 hosts 1G", "fat
tree 10G"), and a CSV with several p gives one row per p. `auto` and `xcore` are left out of the contest (auto picks
among the others; xcore is a shared-memory bound, not a method). Writes DIR/winners.csv (view,np,bytes,winner,
winner_us,mpi_us,mpi_over_winner), DIR/winners.md (the map as a table) and, with gnuplot, DIR/winners.png/svg
(plots/winners.gp)."""
import argparse
import csv
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LEFT_OUT = {"auto", "xcore"}
ORDER = ["ring", "rd", "rhd", "hier", "ring-bf16", "ps", "ps-sharded", "mpi"]  # colours, in methods.def's order


def size_label(b):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= scale and b % scale == 0:
            return f"{b // scale} {unit}"
    return f"{b} B"


def read_view(view, path):
    """{(np, bytes): {method: time_us}} of one CSV; rows marked wrong (1) are refused loudly."""
    cells = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r.get("wrong") == "1":
                sys.exit(f"winners.py: {path}: {r['method']} at {r['bytes']} B gave a wrong sum: not a result")
            if r["method"] in LEFT_OUT:
                continue
            key = (int(r["np"]), int(r["bytes"]))
            t = float(r["time_us"])
            # several repetitions of a cell: the fastest, as bench_allreduce's own summary takes the median per run
            cells.setdefault(key, {})
            cells[key][r["method"]] = min(t, cells[key].get(r["method"], t))
    if not cells:
        sys.exit(f"winners.py: {path}: no rows for view '{view}'")
    return cells


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--subtitle", default="")
    ap.add_argument("views", nargs="+", help="VIEW=CSV")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for spec in a.views:
        view, _, path = spec.partition("=")
        if not path or not os.path.isfile(path):
            sys.exit(f"winners.py: '{spec}' is not VIEW=CSV with a readable CSV")
        for (np_, b), times in sorted(read_view(view, path).items()):
            winner = min(times, key=times.get)
            mpi = times.get("mpi")
            # Within 2 % of MPI_Allreduce is a tie, and a tie goes to MPI: nothing to gain from another method.
            if mpi is not None and mpi <= 1.02 * times[winner]:
                winner = "mpi"
            rows.append({"view": view, "np": np_, "bytes": b, "winner": winner, "winner_us": times[winner],
                         "mpi_us": mpi if mpi is not None else "",
                         "mpi_over_winner": f"{mpi / times[winner]:.2f}" if mpi else ""})
    with open(os.path.join(a.out, "winners.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    sizes = sorted({r["bytes"] for r in rows})
    lines = ["| view | p | " + " | ".join(size_label(s) for s in sizes) + " |",
             "|---|---|" + "---|" * len(sizes)]
    for key in dict.fromkeys((r["view"], r["np"]) for r in rows):
        cell = {r["bytes"]: r for r in rows if (r["view"], r["np"]) == key}
        out = []
        for s in sizes:
            r = cell.get(s)
            out.append("" if r is None else r["winner"] + (f" {r['mpi_over_winner']}x" if r["winner"] != "mpi" else ""))
        lines.append(f"| {key[0]} | {key[1]} | " + " | ".join(out) + " |")
    table = "\n".join(lines) + "\n"
    open(os.path.join(a.out, "winners.md"), "w").write(
        "Fastest method per message size, MPI_Allreduce's time over the winner's beside it; mpi: MPI_Allreduce wins or "
        "is within 2 % of the fastest\n\n"
        + table)
    print(table, end="")
    methods = [m for m in ORDER if any(r["winner"] == m for r in rows)] + sorted(
        {r["winner"] for r in rows} - set(ORDER))
    # The chart's grid: one cell per (row, size) on a log2 axis, as wide as the row's step between sizes, its
    # colour the winner's index in `methods`.
    keys = list(dict.fromkeys((r["view"], r["np"]) for r in rows))
    with open(os.path.join(a.out, "winners_grid.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["x", "y", "half_width", "method_index", "label", "row"])
        for key in keys:
            mine = sorted((r for r in rows if (r["view"], r["np"]) == key), key=lambda r: r["bytes"])
            xs = [math.log2(r["bytes"]) for r in mine]
            for i, r in enumerate(mine):
                gaps = [xs[j] - xs[j - 1] for j in (i, i + 1) if 0 < j < len(xs)]
                label = r["winner"] + (f"\\n{r['mpi_over_winner']}x" if r["winner"] != "mpi" else "")
                w.writerow([f"{xs[i]:.3f}", len(keys) - 1 - keys.index(key), f"{min(gaps) / 2:.3f}",
                            methods.index(r["winner"]) + 1, label, f"{key[0]}: p = {key[1]}"])
    gp = os.path.join(HERE, "winners.gp")
    cmd = ["gnuplot", "-e", f"data='{os.path.join(a.out, 'winners.csv')}'; outdir='{a.out}'; "
           f"subtitle='{a.subtitle}'; methods='{' '.join(methods)}'", gp]
    if subprocess.run(cmd).returncode != 0:
        sys.exit("winners.py: gnuplot failed")


if __name__ == "__main__":
    main()
