#!/usr/bin/env python3
"""The headline chart's data: speedup over serial against processes, measured where one node is honest (np 1-2),
simulated beyond (SimGrid SMPI running gradsync's code, p = 2-64), and the course lab's figures beside them.

Reads (relative to the repository):
  plots/results/main/sync_ab.csv                       measured, np = 2: steps alternated with serial in one run
  plots/results/main/host.txt                          the machine the measured and simulated compute ran on
  plots/results/sim-train/PLATFORM/sim_train.csv       simulated, fattree-10g-1pn and flat-1g
  plots/results/headline/lab.csv                       the lab's figures (its report)
Writes into plots/results/headline/ (or --out DIR): headline.csv (the points drawn, '#' lines naming the sources,
machine, commit and date), host.txt (the charts' subtitle) and README.md (the figures and how to regenerate).
Then: plots/make_charts.sh plots/results/headline plots/results/headline draws headline.png and headline.svg.
"""
import argparse
import csv
import datetime
import os
import re
import statistics
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAIN = "plots/results/main"
SIM = "plots/results/sim-train"
LAB = "plots/results/headline/lab.csv"
# (platform folder, label, runs drawn): the allreduce methods and one parameter server, blocking steps.
SIM_RUNS = [("fattree-10g-1pn", "10 Gbit/s fat tree", ["ring-blocking", "mpi-blocking", "ps-blocking"]),
            ("flat-1g", "flat 1 Gbit/s", ["ring-blocking"])]
NAMES = {"ring": "ring", "mpi": "MPI_Allreduce", "ps": "parameter server", "any": "any method"}


def rows(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def machine():
    """The CPU and date of plots/results/main/host.txt's first line, shortened to fit a subtitle."""
    with open(os.path.join(ROOT, MAIN, "host.txt"), encoding="utf-8") as f:
        first = f.readline()
    cpu = re.search(r"\((\w+), (AMD EPYC|[^,(]+) \(([^)]*)\), ([^,]+),", first)
    date = re.search(r"(\d{4}-\d{2}-\d{2})", first)
    if not cpu or not date:
        return first.lstrip("# ").strip()
    family = cpu.group(3).replace("AMD ", "").replace("Intel ", "")
    return f"{cpu.group(2)} {family} ({cpu.group(4)}), 2 cores, {date.group(1)}"


def commit():
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "plots", "results", "headline"))
    args = parser.parse_args()
    points = []  # series, kind, platform, method, processes, speedup, low, high, source

    ab = rows(f"{MAIN}/sync_ab.csv")
    for method in ("ring", "mpi"):
        s = [float(r["speedup"]) for r in ab if r["method"] == method]
        series = f"measured {NAMES[method]} (one node)"
        points.append((series, "measured", "one node", method, 1, 1.0, 1.0, 1.0, "serial by definition"))
        points.append((series, "measured", "one node", method, 2, statistics.median(s), min(s), max(s),
                       f"{MAIN}/sync_ab.csv: median of {len(s)} paired runs; range of all"))
    for folder, label, runs in SIM_RUNS:
        path = f"{SIM}/{folder}/sim_train.csv"
        for r in rows(path):
            if r["run"] in runs:
                method = r["run"].split("-")[0]
                v = float(r["speedup"])
                points.append((f"simulated {NAMES[method]} ({label})", "simulated", folder, method, int(r["np"]),
                               v, v, v, path))
    for r in rows(LAB):
        v = float(r["speedup"])
        series = "lab best of 2-10 processes" if "best" in r["note"] else "lab at 2 processes"
        points.append((f"{series}: {NAMES[r['method']]}", "lab", "24 vCPUs", r["method"], int(r["processes"]),
                       v, v, v, f"{LAB}: {r['note']}"))

    os.makedirs(args.out, exist_ok=True)
    today = datetime.date.today().isoformat()
    where = machine()
    with open(os.path.join(args.out, "headline.csv"), "w", encoding="utf-8", newline="") as f:
        f.write("# speedup over serial against processes: MLP 784-128-10 on MNIST, batch 32 per worker\n")
        f.write(f"# sources: {MAIN}/sync_ab.csv (measured, np = 2); "
                + "; ".join(f"{SIM}/{p}/sim_train.csv (simulated)" for p, _, _ in SIM_RUNS) + f"; {LAB} (lab)\n")
        f.write(f"# machine (measured and simulated compute): {where}; the lab: Python/mpi4py on 24 vCPUs\n")
        f.write(f"# written by plots/headline_data.py at commit {commit()} on {today}\n")
        # No commas inside a field: the chart filters rows with awk -F,.
        assert not any("," in str(x) for p in points for x in p), "a field holds a comma"
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["series", "kind", "platform", "method", "processes", "speedup", "low", "high", "source"])
        for p in points:
            w.writerow(p[:5] + tuple(f"{x:.3f}" for x in p[5:8]) + p[8:])
    with open(os.path.join(args.out, "host.txt"), "w", encoding="utf-8") as f:
        f.write(f"# {where}; the lab: Python/mpi4py on 24 vCPUs\n")

    def get(kind, platform, method, n):
        return next(p for p in points if p[1] == kind and p[2] == platform and p[3] == method and p[4] == n)

    ring2, mpi2 = get("measured", "one node", "ring", 2), get("measured", "one node", "mpi", 2)
    lines = [
        "# The headline chart: speedup over serial against processes",
        "",
        f"Written by `python3 plots/headline_data.py` (commit {commit()}, {today}) from the folders it names; drawn",
        "by `plots/make_charts.sh plots/results/headline plots/results/headline` (`plots/headline.gp`). Regenerate",
        "both after a new `scripts/run.sh` or `scripts/simulate.sh train-scale` result lands in those folders.",
        "",
        "- `headline.csv`: every point drawn, with its source file; `host.txt`: the subtitle; `lab.csv`: the lab's",
        "  figures (input, from its report); `headline.png`, `headline.svg`: the chart.",
        f"- Machine: {where} (measured, and the compute the simulation timed).",
        "- MLP 784-128-10 on MNIST, batch 32 per worker; speedup = serial time / parallel time for the same epochs.",
        "",
        "| series | processes | speedup |",
        "| --- | --- | --- |",
        f"| measured ring, one node ({MAIN}) | 2 | {ring2[5]:.2f}x ({ring2[6]:.2f}-{ring2[7]:.2f}x) |",
        f"| measured MPI_Allreduce, one node ({MAIN}) | 2 | {mpi2[5]:.2f}x ({mpi2[6]:.2f}-{mpi2[7]:.2f}x) |",
    ]
    for folder, label, runs in SIM_RUNS:
        for run in runs:
            method = run.split("-")[0]
            vals = [p for p in points if p[1] == "simulated" and p[2] == folder and p[3] == method]
            cells = ", ".join(f"{p[5]:.2f}x at {p[4]}" for p in vals)
            lines.append(f"| simulated {NAMES[method]}, {label} ({SIM}/{folder}) | "
                         f"{vals[0][4]}-{vals[-1][4]} | {cells} |")
    for p in points:
        if p[1] == "lab":
            lines.append(f"| {p[0]} | {p[4]} | {p[5]:.2f}x |")
    lines += ["", "Measured beyond np = 2 on this 2-core machine would be oversubscribed, so the chart stops there;",
              "the simulated points time each rank's compute on this CPU and simulate the network (SimGrid SMPI).", ""]
    with open(os.path.join(args.out, "README.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print(f"headline_data: wrote {len(points)} points to {os.path.join(args.out, 'headline.csv')}")


if __name__ == "__main__":
    main()
