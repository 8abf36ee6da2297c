#!/usr/bin/env python3
"""scale_report.py: one platform's simulated allreduce sweep (bench/sim/experiments/scale.sh) as tables and targets.

  bench/sim/scale_report.py --platform NAME --dir DIR --tuning FILE --ranks-per-host L [--cost-model-bin BIN]
                            [--comm-tuning FILE]

DIR holds bench_allreduce --csv files npP.csv (gradsync's methods and SMPI's MPI_Allreduce with Open MPI's
selection, "mpi") and npP-mpich.csv (MPI_Allreduce with MPICH's). Writes DIR/scale.csv (every time, with the cost
model's prediction from FILE where it has one) and DIR/scale.md:
  - auto against the best gradsync method at every (p, size): target at most 1.1x;
  - the best gradsync method against Open MPI's selection: never slower, at most 0.8x in geometric mean;
  - the cost model against the simulation from 1 MiB: target within 20% for every method at every p; with
    --comm-tuning FILE also the model fitted with no reduction cost (gamma = 0), which is what this sweep charges;
  - the best gradsync method against the link's bound from 256 KiB: no allreduce moves less than 2 (H-1)/H n bytes
    through each of the H hosts' links (n each way), so where the best method is near that bound no algorithm can be
    much faster than Open MPI's selection either, which the 0.8 target asks.
Standard library only; the cost model is collectives/cost_model.cpp through the cost_model binary.
"""
import argparse
import csv
import math
import pathlib
import re
import statistics
import subprocess
import sys

GRADSYNC = ("ring", "rd", "rhd", "hier")


def read(dir_):
    times = {}
    for path in sorted(dir_.glob("np*.csv")):
        m = re.fullmatch(r"np(\d+)(-mpich)?\.csv", path.name)
        if not m:
            continue
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                method = "mpi-mpich" if m.group(2) else ("mpi-ompi" if r["method"] == "mpi" else r["method"])
                times[(int(r["np"]), int(r["bytes"]), method)] = float(r["time_us"])
    return times


def predictions(binary, tuning, nps, per_host, sizes):
    out = {}
    for p in nps:
        text = subprocess.run([binary, "--tuning", tuning, "--np", str(p), "--ranks-per-host", str(per_host),
                               "--min-bytes", str(min(sizes)), "--max-bytes", str(max(sizes)), "--step-factor", "2"],
                              capture_output=True, text=True, check=True).stdout
        for r in csv.DictReader(text.splitlines()):
            out[(p, int(r["bytes"]), r["method"])] = float(r["predicted_us"])
    return out


def link_bytes_per_s(platform, platform_dir):
    """The hosts' link rate in the platform file bench/sim/make_platforms.py wrote (cluster bw="...Bps")."""
    path = pathlib.Path(platform_dir) / f"{platform}.xml"
    m = re.search(r'<cluster [^>]*\bbw="([0-9.e+]+)Bps"', path.read_text()) if path.exists() else None
    if not m:
        print(f"scale_report.py: no cluster bw in {path}: the link-bound column is left out", file=sys.stderr)
        return None
    return float(m.group(1))


def link_bound_us(p, per_host, n, rate):
    """The least time any allreduce of n bytes can take on the hosts' links, or None within one host: each of the
    H hosts must send (and receive) 2 (H-1)/H n bytes through its link (reduce-scatter and all-gather bound)."""
    hosts = p // per_host
    return 2 * (hosts - 1) / hosts * n / rate * 1e6 if hosts > 1 else None


def human(n):
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} B"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--platform", required=True)
    ap.add_argument("--platform-dir", type=pathlib.Path,
                    default=pathlib.Path(__file__).resolve().parents[2] / "build-smpi" / "platforms",
                    help="where the platform files are (scripts/simulate.sh's, default build-smpi/platforms)")
    ap.add_argument("--dir", type=pathlib.Path, required=True)
    ap.add_argument("--tuning", required=True)
    ap.add_argument("--ranks-per-host", type=int, default=1)
    ap.add_argument("--cost-model-bin", default="build/bin/cost_model")
    ap.add_argument("--comm-tuning", help="the same fit with gamma = 0 (scale.sh writes tuning-comm.txt)")
    a = ap.parse_args()
    times = read(a.dir)
    if not times:
        sys.exit(f"scale_report.py: no np*.csv in {a.dir}")
    nps = sorted({k[0] for k in times})
    sizes = sorted({k[1] for k in times})
    model = predictions(a.cost_model_bin, a.tuning, nps, a.ranks_per_host, sizes)
    rate = link_bytes_per_s(a.platform, a.platform_dir)
    comm_model = {}
    if a.comm_tuning:
        try:
            comm_model = predictions(a.cost_model_bin, a.comm_tuning, nps, a.ranks_per_host, sizes)
        except subprocess.CalledProcessError as e:
            print(f"scale_report.py: cost_model refused {a.comm_tuning} ({e.stderr.strip()}): its check is left out",
                  file=sys.stderr)

    with open(a.dir / "scale.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["platform", "np", "bytes", "method", "time_us", "model_us"])
        for (p, n, m), t in sorted(times.items()):
            pred = model.get((p, n, m))
            w.writerow([a.platform, p, n, m, f"{t:.3f}", "nan" if pred is None else f"{pred:.3f}"])

    lines = [f"# {a.platform}: simulated allreduce, {a.ranks_per_host} rank(s) per host", "",
             "| p | size | best gradsync | its time us | auto / best | best / Open MPI's | best / MPICH's "
             "| best / link bound |",
             "|---|---|---|---|---|---|---|---|"]
    auto_ratios, vs_ompi, model_errors, comm_errors, regret_rows, at_bound = [], [], [], [], [], []
    for p in nps:
        for n in sizes:
            own = {m: times[(p, n, m)] for m in GRADSYNC if (p, n, m) in times}
            if not own:
                continue
            best = min(own, key=own.get)
            auto = times.get((p, n, "auto"))
            ompi, mpich = times.get((p, n, "mpi-ompi")), times.get((p, n, "mpi-mpich"))
            ra = auto / own[best] if auto else None
            ro = own[best] / ompi if ompi else None
            rm = own[best] / mpich if mpich else None
            if ra:
                auto_ratios.append((ra, p, n))
                regret_rows.append([a.platform, p, n, best, f"{ra:.4f}"])
            if ro:
                vs_ompi.append((ro, p, n))
            ratios = " | ".join("not run" if r is None else f"{r:.3f}" for r in (ra, ro, rm))
            bound = link_bound_us(p, a.ranks_per_host, n, rate) if rate and n >= 256 << 10 else None
            rb = own[best] / bound if bound else None
            if rb and ro and n >= 2 << 20:
                at_bound.append((rb, ro, p, n))
            lines.append(f"| {p} | {human(n)} | {best} | {own[best]:.1f} | {ratios} | "
                         f"{'-' if rb is None else f'{rb:.3f}'} |")
            if n >= 1 << 20:
                for m, t in own.items():
                    if (p, n, m) in model:
                        model_errors.append((100 * (model[(p, n, m)] - t) / t, m, p, n))
                    if (p, n, m) in comm_model:
                        comm_errors.append((100 * (comm_model[(p, n, m)] - t) / t, m, p, n))
    with open(a.dir / "regret.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["platform", "np", "bytes", "best", "auto_over_best"])
        w.writerows(regret_rows)
    lines += ["", "\"not run\": that selection was not simulated at that point (scale.sh leaves out a size whose "
              "temporaries in SMPI's own MPI_Allreduce would not fit in memory).", "", "## Targets", ""]
    if auto_ratios:
        worst = max(auto_ratios)
        lines.append(f"- auto / best gradsync method: worst {worst[0]:.3f} (p = {worst[1]}, {human(worst[2])}); "
                     f"{sum(r > 1.1 for r, _, _ in auto_ratios)} of {len(auto_ratios)} points above 1.1")
    if vs_ompi:
        geo = math.exp(statistics.fmean(math.log(r) for r, _, _ in vs_ompi))
        slower = [(r, p, n) for r, p, n in vs_ompi if r > 1]
        lines.append(f"- best gradsync method / Open MPI's MPI_Allreduce: geometric mean {geo:.3f} (target <= 0.8); "
                     f"slower at {len(slower)} of {len(vs_ompi)} points"
                     + (": " + ", ".join(f"p = {p} {human(n)} ({r:.2f}x)" for r, p, n in slower) if slower else ""))
    if vs_ompi and at_bound:
        # What the 0.8 target would ask of the points below 2 MiB if every point from 2 MiB ran at its link bound.
        floor = {(p, n): ro / rb for rb, ro, p, n in at_bound}
        rest = [math.log(r) for r, p, n in vs_ompi if (p, n) not in floor]
        floor_logs = [math.log(v) for v in floor.values()]
        mean_at_bound = math.exp(statistics.fmean(floor_logs + rest))
        ours = [rb for rb, *_ in at_bound]
        theirs = [rb / ro for rb, ro, *_ in at_bound]
        line = (f"- from 2 MiB the best gradsync method takes {min(ours):.3f}-{max(ours):.3f}x the link's bound "
                f"2 (H-1)/H n / B, and Open MPI's selection {min(theirs):.3f}-{max(theirs):.3f}x; with every such "
                f"point at its bound the geometric mean against Open MPI's would be {mean_at_bound:.3f}")
        if rest:
            need = math.exp((len(vs_ompi) * math.log(0.8) - sum(floor_logs)) / len(rest))
            line += (f", and 0.8 would need the {len(rest)} other points (below 2 MiB, or within one host) at "
                     f"{need:.3f} in geometric mean (measured: {math.exp(statistics.fmean(rest)):.3f})")
        lines.append(line)
    for errors, what in ((model_errors, "cost model"),
                         (comm_errors, "cost model fitted to what this sweep charges (no reduction: gamma = 0)")):
        if errors:
            worst = max(errors, key=lambda e: abs(e[0]))
            lines.append(f"- {what} against the simulation from 1 MiB: median |error| "
                         f"{statistics.median(abs(e[0]) for e in errors):.1f}%, worst {worst[0]:+.1f}% ({worst[1]}, "
                         f"p = {worst[2]}, {human(worst[3])}); {sum(abs(e[0]) > 20 for e in errors)} of "
                         f"{len(errors)} points beyond 20%")
    text = "\n".join(lines) + "\n"
    (a.dir / "scale.md").write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
