#!/usr/bin/env python3
"""validate.py: simulated against emulated allreduce times, beside the cost model's error on the same runs.

  bench/sim/validate.py --out DIR [--steps NAME:EMULATED_STEPS.csv:SIMULATED_BENCH_SYNC.csv] CASE...
      CASE = NAME[ [METHOD,...]]:EMULATED.csv:SIMULATED.csv[:MODEL.csv]

EMULATED.csv and SIMULATED.csv are bench_allreduce --csv files (method, np, bytes, ..., time_us, ...); MODEL.csv is
fit_cost_model.py's model_vs_measured.csv for the emulated run (the model's prediction of each measured row). Rows
are joined on (method, np, bytes), only of the METHODs in brackets when a case names some; a size or method that
only one side has is left out and counted. --steps compares bench_sync's whole steps (its --csv rows from the
simulation) with bench/cluster/bench_overlap.sh's overlap_steps.csv (setting "default"), and gives the overlap ratios of
the simulated steps: bucketed over blocking, pipelined over max(compute, communication) of blocking. Writes
DIR/validation.csv (one row per joined point) and DIR/validation.md (median absolute errors per method and size
band, against the targets: 15% from 1 MiB to 64 MiB, 30% from 8 B to 256 KiB). Standard library only.
"""
import argparse
import csv
import pathlib
import statistics
import sys

# The cost model's form of each measured method (fit_cost_model.py writes several per method): gradsync's ring
# sends chunks, and Open MPI 4.1's tuned allreduce takes recursive halving/doubling (Rabenseifner) on these sizes.
MODEL_OF = {"ring": "ring-chunked", "mpi": "rabenseifner"}
BANDS = (("8 B - 256 KiB", 8, 256 << 10, 30.0), ("1 MiB - 64 MiB", 1 << 20, 64 << 20, 15.0))


def read_times(path, methods=None):
    with open(path, newline="") as f:
        return {(r["method"], int(r["np"]), int(r["bytes"])): float(r["time_us"]) for r in csv.DictReader(f)
                if methods is None or r["method"] in methods}


def read_bench_sync(path):
    """bench_sync --csv rows by method: its times, and the name of the blocking, uncompressed row of the same
    allreduce method (None if the run had none)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    blocking = {r["allreduce"]: r["method"] for r in rows if r["mode"] == "blocking" and not r["compressor"]}
    return {r["method"]: {"compute_us": float(r["compute_us"]), "sync_us": float(r["sync_us"]),
                          "step_us": float(r["step_us"]), "blocking": blocking.get(r["allreduce"])} for r in rows}


def steps_section(spec):
    name, emulated_path, simulated_path = spec.split(":")
    with open(emulated_path, newline="") as f:
        emulated = {r["method"]: float(r["step_us"]) for r in csv.DictReader(f) if r["setting"] == "default"}
    simulated = read_bench_sync(simulated_path)
    if not simulated:
        sys.exit(f"--steps {name}: no bench_sync rows in {simulated_path}")
    lines = [f"## Whole training steps, {name} (MLP 784-1024-1024-10, batch 1024 per worker)", "",
             "| method | emulated step ms | simulated step ms | error % | simulated compute ms | simulated sync ms "
             "| simulated step / blocking | simulated step / max(compute, comm) of blocking |",
             "|---|---|---|---|---|---|---|---|"]
    errors = []
    for method, sim in simulated.items():
        blocking = simulated.get(sim["blocking"])
        e = emulated.get(method)
        err = None if e is None else error_pct(sim["step_us"], e)
        if err is not None:
            errors.append(abs(err))
        ratio = sim["step_us"] / blocking["step_us"] if blocking else None
        bound = sim["step_us"] / max(blocking["compute_us"], blocking["sync_us"]) if blocking else None
        lines.append(f"| {method} | {fmt(e and e / 1e3)} | {sim['step_us'] / 1e3:.1f} | {fmt(err)} "
                     f"| {sim['compute_us'] / 1e3:.1f} | {sim['sync_us'] / 1e3:.1f} | {fmt(ratio, 3)} "
                     f"| {fmt(bound, 3)} |")
    worst = max(errors) if errors else None
    lines += ["", f"Largest step error {fmt(worst)}% (target: every step within 20%)."]
    return lines, int(worst is None or worst > 20)


def read_model(path):
    if not path:
        return {}
    out = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["model"] == MODEL_OF.get(r["method"], r["method"]):
                out[(r["method"], int(r["np"]), int(r["bytes"]))] = float(r["predicted_us"])
    return out


def error_pct(value, reference):
    return 100.0 * (value - reference) / reference


def join(name, emulated, simulated, model):
    rows = []
    for key in sorted(emulated.keys() & simulated.keys()):
        e, s, m = emulated[key], simulated[key], model.get(key)
        rows.append({"case": name, "method": key[0], "np": key[1], "bytes": key[2], "emulated_us": e,
                     "simulated_us": s, "sim_error_pct": error_pct(s, e), "model_us": m,
                     "model_error_pct": None if m is None else error_pct(m, e)})
    return rows, len(emulated.keys() - simulated.keys()), len(simulated.keys() - emulated.keys())


def fmt(x, digits=1):
    return "" if x is None else f"{x:.{digits}f}"


def band_summary(rows):
    lines = ["| case | method | sizes | points | simulated: median abs error % | model: median abs error % | target % "
             "| simulated meets it |", "|---|---|---|---|---|---|---|---|"]
    misses = 0
    for case in dict.fromkeys(r["case"] for r in rows):
        for method in dict.fromkeys(r["method"] for r in rows if r["case"] == case):
            for label, lo, hi, target in BANDS:
                pts = [r for r in rows if r["case"] == case and r["method"] == method and lo <= r["bytes"] <= hi]
                if not pts:
                    continue
                sim = statistics.median(abs(r["sim_error_pct"]) for r in pts)
                model_pts = [abs(r["model_error_pct"]) for r in pts if r["model_error_pct"] is not None]
                model = statistics.median(model_pts) if model_pts else None
                ok = sim <= target
                misses += not ok
                lines.append(f"| {case} | {method} | {label} | {len(pts)} | {sim:.1f} | {fmt(model)} | {target:.0f} "
                             f"| {'yes' if ok else 'no'} |")
    return lines, misses


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--steps", action="append", default=[], metavar="NAME:EMULATED.csv:SIMULATED.log")
    parser.add_argument("cases", nargs="+", metavar="CASE")
    args = parser.parse_args()
    rows, notes = [], []
    for case in args.cases:
        parts = case.split(":")
        if len(parts) not in (3, 4):
            parser.error(f"case '{case}': expected NAME:EMULATED.csv:SIMULATED.csv[:MODEL.csv]")
        for path in parts[1:]:
            if not pathlib.Path(path).is_file():
                parser.error(f"case '{parts[0]}': no file {path}")
        name, methods = parts[0], None
        if name.endswith("]") and "[" in name:
            name, listed = name[:-1].split("[", 1)
            name, methods = name.strip(), set(listed.split(","))
        parts[0] = name
        joined, only_emulated, only_simulated = join(name, read_times(parts[1], methods),
                                                     read_times(parts[2], methods),
                                                     read_model(parts[3] if len(parts) == 4 else None))
        if not joined:
            parser.error(f"case '{parts[0]}': no (method, np, bytes) in both {parts[1]} and {parts[2]}")
        rows += joined
        notes.append(f"- {case.split(':')[0]}: {len(joined)} points joined; {only_emulated} emulated and {only_simulated} "
                     "simulated points without a partner left out")
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "validation.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "method", "np", "bytes", "emulated_us", "simulated_us", "sim_error_pct", "model_us",
                    "model_error_pct"])
        for r in rows:
            w.writerow([r["case"], r["method"], r["np"], r["bytes"], fmt(r["emulated_us"]), fmt(r["simulated_us"]),
                        fmt(r["sim_error_pct"]), fmt(r["model_us"]), fmt(r["model_error_pct"])])
    summary, misses = band_summary(rows)
    steps = []
    for spec in args.steps:
        lines, missed = steps_section(spec)
        steps += ["", *lines]
        misses += missed
    text = "\n".join(["# Simulated vs emulated allreduce times", "", *notes, "", *summary, *steps, ""])
    (args.out / "validation.md").write_text(text)
    sys.stdout.write(text)
    print(f"{misses} of the cells above miss their target")


if __name__ == "__main__":
    main()
