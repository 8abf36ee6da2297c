#!/usr/bin/env python3
"""alpha_beta.py: is anything really simulated? A ring allreduce's simulated time against its closed form.

  bench/sim/alpha_beta.py PLATFORM.xml ALLREDUCE.csv [--method ring] [--bytes 16777216] [--tolerance-pct 10]

PLATFORM.xml is a flat <cluster> of build-smpi/platforms (one link per host into a switch that never limits): a message
crosses its sender's link and its receiver's, so its one-way time is alpha = 2 lat and its time per byte
beta = 1 / bw. The ring sends 2 (p - 1) messages of n / p bytes on every link at once:
    T = 2 (p - 1) alpha + 2 (p - 1) / p n beta
(the reductions, timed on this CPU, add (p - 1) / p n gamma: well under 1% at 1 Gbit/s). The row of ALLREDUCE.csv
(bench_allreduce --csv) for METHOD at BYTES must be within the tolerance of T; exit 1 if not, 2 on bad input.
A run in which nothing is simulated (no network model, or the simulated clock not read) misses by orders.
"""
import argparse
import csv
import re
import sys
import xml.etree.ElementTree as ET

PREFIXES = {"s": {"": 1, "m": 1e-3, "u": 1e-6, "n": 1e-9}, "Bps": {"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}}


def quantity(text, unit):
    """SimGrid's '1.2e8Bps' or '8.9us' as a number in bytes per second or seconds."""
    m = re.fullmatch(r"([0-9.eE+-]+)\s*([a-zA-Z]?)" + unit, text.strip())
    if not m or m.group(2) not in PREFIXES[unit]:
        raise ValueError(f"'{text}' is not a number in {unit}")
    return float(m.group(1)) * PREFIXES[unit][m.group(2)]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("platform")
    p.add_argument("csv")
    p.add_argument("--method", default="ring")
    p.add_argument("--bytes", type=int, default=16 << 20)
    p.add_argument("--tolerance-pct", type=float, default=10.0)
    a = p.parse_args()
    try:
        cluster = ET.parse(a.platform).getroot().find("cluster")
        if cluster is None or cluster.get("topology") not in (None, "FLAT"):
            raise ValueError("not a flat <cluster> platform")
        beta = 1 / quantity(cluster.get("bw"), "Bps")
        alpha = 2 * quantity(cluster.get("lat"), "s")
        with open(a.csv, newline="") as f:
            rows = [r for r in csv.DictReader(f) if r["method"] == a.method and int(r["bytes"]) == a.bytes]
        if len(rows) != 1:
            raise ValueError(f"{a.csv}: {len(rows)} rows of {a.method} at {a.bytes} bytes, expected 1")
    except (OSError, ValueError, ET.ParseError, KeyError) as e:
        print(f"alpha_beta.py: {e}", file=sys.stderr)
        return 2
    np_, n = int(rows[0]["np"]), a.bytes
    closed = 2 * (np_ - 1) * alpha + 2 * (np_ - 1) / np_ * n * beta
    simulated = float(rows[0]["time_us"]) * 1e-6
    error = 100 * (simulated - closed) / closed
    ok = abs(error) <= a.tolerance_pct
    print(f"{a.method}, {np_} ranks, {n} bytes: simulated {simulated * 1e3:.3f} ms, closed form {closed * 1e3:.3f} ms "
          f"(alpha {alpha * 1e6:.2f} us, beta {beta * 1e9:.3f} ns/B): {error:+.1f}%, "
          f"{'within' if ok else 'outside'} {a.tolerance_pct:g}%")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
