#!/usr/bin/env python3
"""fit_cost_model.py: the alpha-beta-gamma cost model of gradsync's allreduce methods.

Fits alpha (one-way latency of one message) and beta (link time per byte) from a ping-pong sweep
(bench/cluster/pingpong.cpp) and gamma (time per byte reduced) from bench_membw's add kernel, predicts every
method's allreduce time, compares the predictions with bench_allreduce's measured rows, and extrapolates time per
training step and speedup to p = 1024 workers on 1, 10 and 100 Gbit/s links. Standard library only.

  bench/cluster/fit_cost_model.py --pingpong P.csv --membw membw.txt --allreduce allreduce.csv --out DIR
      [--train train.csv] [--link-gbps 1] [--gamma-ns-per-byte G] [--compute-us-per-sample 7.4] [--batch 32]
      [--alpha-us A] [--overlap-efficiency E] [--tuning-out FILE [--link intra|inter]]
      [--far-pingpong FAR.csv --hosts-per-switch N]

--train takes `train --csv` rows of MLP-128 runs made with --iterations-per-epoch auto on the same network and
compares each run's synchronization time per step with the model's allreduce time for the gradient.

Models (n bytes per rank, p ranks taking part; alpha, beta, gamma as fitted):
  ring            2(p-1) alpha + 2(p-1)/p n beta + (p-1)/p n gamma
  ring-chunked    the same with 2(p-1) ceil(n/(p c)) messages of at most c = chunk bytes (gradsync's ring)
  rabenseifner    2 log2(p) alpha + 2(p-1)/p n beta + (p-1)/p n gamma  (recursive halving, then doubling)
  ps              W = p-1 workers and one dedicated server that receives every push before it sends:
                  2W alpha + 2W n beta + (W-1) n gamma
  ps-sharded(k)   k dedicated servers, W = p-k workers, each server owns n/k bytes:
                  2 max(k, W) alpha + 2 max(1, W/k) n beta + (W-1) (n/k) gamma
Overlap (pipelined SGD, bucketed backward): the step is compute and communication run side by side,
                  max(tc, tm) + (1 - E) min(tc, tm), where E is the fraction of the shorter one that is hidden
                  (1: perfect overlap; --overlap-efficiency, from a measured run's hidden / (hidden + exposed)).
                  The extrapolation gives every method with and without it ("ring" and "ring+overlap").
Outputs in DIR: params.csv, model_vs_measured.csv, extrapolation.csv, report.txt (tables, checks, crossovers),
and with --train, train_vs_model.csv.
"""
import argparse
import csv
import math
import os
import re
import statistics
import subprocess
import sys

MLP128_FLOATS = 101_770          # 784*128 + 128 + 128*10 + 10
BIG_MODEL_FLOATS = 25_000_000
FLOAT_BYTES = 4
DEFAULT_CHUNK = 16 << 20         # collectives/allreduce.hpp kNetworkChunkBytes: the ring's default across hosts
SMALL_MAX_BYTES = 1024           # ping-pong sizes that fit alpha (latency regime)
LARGE_MIN_BYTES = 1 << 20        # ping-pong sizes that fit beta (bandwidth regime)
EXTRAPOLATION_LINKS_GBPS = (1, 10, 100)
EXTRAPOLATION_P = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
EXTRAPOLATION_PER_HOST = 8       # ranks per host for hier and auto in the extrapolation (an 8-GPU-node layout)
MAX_HOSTS_PER_SWITCH = 1 << 20   # collectives/cost_model.cpp refuses a tuning file with more


# ---- fitting -------------------------------------------------------------------------------------------------

def read_pingpong(path):
    with open(path) as f:
        rows = [(int(r["bytes"]), float(r["oneway_us"]) * 1e-6) for r in csv.DictReader(f)]
    if not rows:
        sys.exit(f"fit_cost_model: {path} has no rows")
    return rows


def fit_alpha_beta(rows):
    """alpha: median one-way time of messages <= 1 KiB. beta: least-squares slope of one-way time over messages
    >= 1 MiB (intercept reported as alpha_large: what a large message pays beyond its bytes)."""
    small = [t for n, t in rows if n <= SMALL_MAX_BYTES]
    large = [(n, t) for n, t in rows if n >= LARGE_MIN_BYTES]
    if not small or len(large) < 2:
        sys.exit("fit_cost_model: the ping-pong needs sizes <= 1 KiB and at least two >= 1 MiB")
    alpha = statistics.median(small)
    mx = statistics.fmean(n for n, _ in large)
    my = statistics.fmean(t for _, t in large)
    sxx = sum((n - mx) ** 2 for n, _ in large)
    beta = sum((n - mx) * (t - my) for n, t in large) / sxx
    alpha_large = my - beta * mx
    return alpha, beta, alpha_large


def read_gamma(path):
    """gamma from bench_membw's 'add : X GB/s aggregate (Y per rank)': the add reads two arrays and writes one, so
    Y counts 3 bytes moved per byte reduced."""
    text = open(path).read()
    m = re.search(r"add\s*:\s*[\d.]+\s*GB/s aggregate \(([\d.]+) per rank\)", text)
    if not m:
        sys.exit(f"fit_cost_model: no 'add :' line in {path}")
    return 3.0 / (float(m.group(1)) * 1e9)


# ---- models --------------------------------------------------------------------------------------------------

def ring(p, n, a, b, g):
    return 2 * (p - 1) * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g


def ring_chunked(p, n, a, b, g, chunk=DEFAULT_CHUNK):
    messages = max(1, math.ceil(n / p / chunk))
    return 2 * (p - 1) * messages * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g


def rabenseifner(p, n, a, b, g):
    return 2 * math.ceil(math.log2(p)) * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g


def ps(p, n, a, b, g):
    w = p - 1
    return 2 * w * a + 2 * w * n * b + max(w - 1, 0) * n * g


def ps_sharded(p, n, a, b, g, k):
    w = p - k
    return 2 * max(k, w) * a + 2 * max(1.0, w / k) * n * b + max(w - 1, 0) * (n / k) * g


def ps_colocated(p, n, a, b, g):
    """Sharded PS with a server shard on every one of p workers (OSDI'14 deployment): each machine pushes and pulls
    (p-1)/p of the buffer and receives as much, so it moves the ring's bytes, in p-1 concurrent messages per phase."""
    return 2 * (p - 1) * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g


def write_tuning(path, link, alpha, beta, gamma, quiet=False, exchange_factor=None):
    """Sets this link's alpha and beta and gamma in auto's tuning file, keeping the other link's lines: one command
    measures inside a host, another across hosts, and both end in the same file. With `exchange_factor` the file
    also fixes inter_exchange_factor (the model's own files: predictions for a one-way-stream exchange)."""
    # The far link is derived from the inter one (far_link_section): a new inter link drops the old far one.
    dropped = (f"{link}_", "gamma_") + (("far_", "hosts_per_switch") if link == "inter" else ())
    keep = []
    if os.path.exists(path):
        with open(path) as f:
            keep = [line for line in f if not line.startswith(dropped)]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.writelines(keep)
        f.write(f"{link}_alpha_us = {alpha * 1e6:.3f}\n{link}_beta_ns_per_byte = {beta * 1e9:.5f}\n"
                f"gamma_ns_per_byte = {gamma * 1e9:.5f}\n")
        if exchange_factor is not None:
            f.write(f"inter_exchange_factor = {exchange_factor:.3f}\n")
    if not quiet:
        print(f"fit_cost_model: wrote the {link} link to {path}", file=sys.stderr)


def read_tuning(path):
    """A tuning file's keys and values (collectives/cost_model.hpp's format)."""
    values = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            key, _, value = line.split("#")[0].partition("=")
            if value.strip():
                try:
                    values[key.strip()] = float(value)
                except ValueError:
                    sys.exit(f"fit_cost_model: {path} line {number}: '{line.strip()}' is not 'key = number'")
    return values


def set_tuning_keys(path, values):
    """Sets `values` (key -> text) in the tuning file at `path`, replacing lines of those keys and keeping the rest."""
    with open(path) as f:
        keep = [line if line.endswith("\n") else line + "\n" for line in f
                if line.split("=")[0].strip() not in values]
    with open(path, "w") as f:
        f.writelines(keep)
        f.writelines(f"{key} = {text}\n" for key, text in values.items())


def overlapped_step(t_comp, t_comm, efficiency):
    """A step whose communication runs beside its compute: the longer of the two, plus what overlap fails to hide
    of the shorter one."""
    return max(t_comp, t_comm) + (1 - efficiency) * min(t_comp, t_comm)


# The methods auto chooses among (rd, rhd, hier, and auto itself) are predicted by gradsync's own cost model
# (collectives/cost_model.hpp, through build/bin/cost_model), so that the formulas auto uses are the ones checked
# here. Set by write_params(): the binary, a tuning file holding the fitted parameters, and the ranks per host.
MODELLED = {"bin": None, "tuning": None, "per_host": 1, "cache": {}}
MODELLED_METHODS = ("rd", "rhd", "hier", "auto")


def modelled(method, p, n, chunk, params=None, per_host=None):
    """Seconds the cost_model binary predicts for `method` on p ranks and n bytes; `params` (alpha, beta, gamma)
    and `per_host` default to the fitted link and --ranks-per-host. One binary run per distinct setting, cached."""
    per_host = per_host or MODELLED["per_host"]
    key = (p, chunk, params, per_host)
    if key not in MODELLED["cache"]:
        tuning = MODELLED["tuning"]
        if params:
            tuning = os.path.join(os.path.dirname(MODELLED["tuning"]), "extrapolation_tuning.txt")
            if os.path.exists(tuning):
                os.remove(tuning)
            write_tuning(tuning, "inter", *params, quiet=True, exchange_factor=1.0)
        out = subprocess.run([MODELLED["bin"], "--tuning", tuning, "--np", str(p), "--ranks-per-host", str(per_host),
                              "--min-bytes", "4", "--max-bytes", "1G", "--step-factor", "2",
                              "--chunk-bytes", str(chunk or DEFAULT_CHUNK)],
                             capture_output=True, text=True, check=True).stdout
        MODELLED["cache"][key] = {(r["method"], int(r["bytes"])): float(r["predicted_us"]) * 1e-6
                                  for r in csv.DictReader(out.splitlines())}
    table_ = MODELLED["cache"][key]
    if (method, n) in table_:
        return table_[(method, n)]
    # Sizes off the powers of two: the nearest row below, scaled by bytes (the large-message regime).
    below = max((b for (m, b) in table_ if m == method and b <= n), default=None)
    return None if below is None else table_[(method, below)] * n / below


CALIBRATED = ("ring", "rd", "rhd")  # one-level methods whose own times calibrate auto's link


def calibrate(measured, gamma, alpha0, beta0):
    """auto's link (alpha, beta), fitted to the times of the one-level methods in an allreduce run on that link,
    least squares in log time over every size, with a per-call cost common to all methods (the agreement check and
    call overheads: it cannot change a choice, so it is fitted and left out of the tuning file). The ping-pong's
    alpha and beta describe a single message; a collective's steps also pay for matching, progress and, on the
    emulated links, HTB's burst allowance for small messages, and auto's crossovers are what must come out right.
    The search spans the ping-pong's alpha0 and beta0 by factors, so it fits a 1 us simulated link as well as a
    30 us emulated one (a grid in absolute microseconds stopped at its edge on the fast links, and a per-call cost
    then went into alpha, which counts rhd's messages twice as often as rd's).
    Returns (alpha, beta, per_call, rms_log_error, edges) or None without such rows; edges names the parameters
    whose best value lies on the edge of the search, where the true optimum may lie beyond it."""
    rows = [(r["method"], int(r["np"]), int(r["bytes"]), int(r["chunk_bytes"] or 0), float(r["time_us"]) * 1e-6)
            for r in measured if r["method"] in CALIBRATED]
    if len({r[0] for r in rows}) < 2:
        return None
    best = None
    alphas = [alpha0 * 1.1 ** i for i in range(-15, 45)]      # alpha0 x 0.24 .. x 67
    scales = [0.25 + 0.05 * i for i in range(26)]             # beta0 x 0.25 .. 1.5
    t_min = min(t for *_, t in rows)
    per_calls = [t_min * i / 40 for i in range(40)]           # 0 .. nearly all of the fastest call
    for a in alphas:
        for sc in scales:
            preds = [modelled(m, p, n, chunk, (a, beta0 * sc, gamma), 1) for m, p, n, chunk, _ in rows]
            if any(x is None for x in preds):
                continue
            for c in per_calls:
                err = [math.log((x + c) / t) for x, (_, _, _, _, t) in zip(preds, rows)]
                rms = math.sqrt(sum(e * e for e in err) / len(err))
                if best is None or rms < best[3]:
                    best = (a, beta0 * sc, c, rms)
    if best is None:
        return None
    a, b, c, _ = best
    edges = [name for name, value, ends in (("alpha", a, (alphas[0], alphas[-1])),
                                             ("beta", b / beta0, (scales[0], scales[-1])),
                                             ("the per-call cost", c, (per_calls[-1],)))  # none at all is no edge
             if value in ends]
    return (*best, edges)


WINNER_SIZES = [4 << (4 * i) for i in range(7)]  # 4 B, 64 B, ..., 64 MiB
WINNER_CANDIDATES = ("ring", "rd", "rhd", "hier")


def winners_section(out_dir, params):
    """Which modelled method the cost model predicts fastest at each size and scale (what auto picks), on hosts of
    one rank and of EXTRAPOLATION_PER_HOST, and by how much it beats the runner-up; written to winners.csv."""
    rows, tables = [], []
    for per_host in (1, EXTRAPOLATION_PER_HOST):
        cells = {}
        for p in EXTRAPOLATION_P:
            for n in WINNER_SIZES:
                times = {m: modelled(m, p, n, 0, params, per_host if p > per_host else 1) for m in WINNER_CANDIDATES}
                times = sorted((t, m) for m, t in times.items() if t is not None)
                (t1, best), (t2, second) = times[0], times[1] if len(times) > 1 else (float("inf"), "-")
                rows.append([per_host, p, n, best, f"{t1 * 1e6:.1f}", second, f"{t2 / t1:.2f}"])
                cells[(n, p)] = f"{best} {t2 / t1:.2f}x"
        tables += [f"Hosts of {per_host} ranks (p <= {per_host}: one rank per host, as the extrapolation):" if per_host > 1
                   else "Hosts of 1 rank:", "",
                   table(["size"] + [f"p={p}" for p in EXTRAPOLATION_P],
                         [[human(n)] + [cells[(n, p)] for p in EXTRAPOLATION_P] for n in WINNER_SIZES]), ""]
    write_csv(os.path.join(out_dir, "winners.csv"),
              ["ranks_per_host", "p", "bytes", "fastest", "predicted_us", "runner_up", "runner_up_over_fastest"], rows)
    return ["## Which method the model picks", "",
            f"The fastest of {', '.join(WINNER_CANDIDATES)} at each size and p by gradsync's cost model with the fitted "
            f"parameters (inter link {EXTRAPOLATION_LINKS_GBPS[0]} Gbit/s; inside a host the tuning file's intra "
            "link): what auto chooses, and how much slower the runner-up is.", ""] + tables


def predict(method, p, n, a, b, g, chunk):
    """Predicted seconds for a bench_allreduce row label, or None when the model has nothing to say."""
    if method in MODELLED_METHODS and MODELLED["bin"]:
        t = modelled(method, p, n, chunk)
        return None if t is None else {method: t}
    if method == "ring":
        return {"ring": ring(p, n, a, b, g), "ring-chunked": ring_chunked(p, n, a, b, g, chunk or DEFAULT_CHUNK)}
    if method == "mpi-ring":
        # Open MPI's ring sends one segment per step (its segsize pipelining is off by default).
        return {"ring": ring(p, n, a, b, g)}
    if method == "mpi":
        return {"rabenseifner": rabenseifner(p, n, a, b, g), "ring": ring(p, n, a, b, g)}
    if method == "ps":
        return {"ps": ps(p, n, a, b, g)}
    m = re.fullmatch(r"ps-sharded(\d+)", method)
    if m:
        k = int(m.group(1))
        return {f"ps-sharded{k}": ps_sharded(p, n, a, b, g, k)}
    return None


# ---- report helpers ------------------------------------------------------------------------------------------

def human(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def table(headers, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h)) for i, h in enumerate(headers)]
    line = lambda cells: "| " + " | ".join(str(c).rjust(w) for c, w in zip(cells, widths)) + " |"
    return "\n".join([line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in rows])


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


TRAIN_MODELS = {"ring": lambda p, n, a, b, g: ring_chunked(p, n, a, b, g),
                "mpi": rabenseifner,
                "ps": ps}


def train_section(path, rows_per_epoch, out, a, b, g):
    """Sync seconds per step of each training run against the model's allreduce of the MLP-128 gradient. The
    trainer's sync time includes waiting for the slowest worker's compute, which the model does not see."""
    with open(path) as f:
        # ring-bf16 sends half the bytes of the float32 ring the models describe: not modelled.
        runs = [r for r in csv.DictReader(f) if r["model"] == "mlp-128" and r["sync"] != "ring-bf16"]
    n = MLP128_FLOATS * FLOAT_BYTES
    rows_out = []
    for r in runs:
        # The model's key: the allreduce method, or the family without one (ps); CSVs written before the dimension
        # columns: the run name's first word.
        sync = (r.get("allreduce") or r.get("family")) or r["sync"].split("-")[0]
        workers, p = int(r["workers"]), int(r["np"])
        # The trainer's steps_per_epoch for --iterations-per-epoch auto: at least one.
        steps = int(r["epochs"]) * max(1, rows_per_epoch // (int(r["batch"]) * workers))
        shards = re.search(r"-k(\d+)", r["sync"])
        if sync == "ps" and shards:
            k = int(shards.group(1))
            predicted = ps_sharded(p, n, a, b, g, k)
        else:
            fn = TRAIN_MODELS.get(sync)
            predicted = fn(p, n, a, b, g) if fn and p > 1 else 0.0
        sync_step, compute_step = float(r["comm_s"]) / steps, float(r["compute_s"]) / steps
        err = f"{(predicted - sync_step) / sync_step * 100:+.1f}" if predicted and sync_step > 0 else ""
        rows_out.append([r["sync"], p, workers, steps, f"{float(r['wall_s']):.3f}", f"{compute_step * 1e3:.3f}",
                         f"{sync_step * 1e3:.3f}", f"{predicted * 1e3:.3f}", err, r["test_accuracy"]])
    header = ["sync", "np", "workers", "steps", "wall_s", "compute_ms_per_step", "sync_ms_per_step",
              "model_allreduce_ms", "error_pct", "test_accuracy"]
    write_csv(os.path.join(out, "train_vs_model.csv"), header, rows_out)
    return ["## Training on this network: sync time per step vs the model", "",
            f"MLP-128 gradient = {human(n)}; ring: gradsync's chunked ring, mpi: Rabenseifner, ps: one dedicated "
            "server. Sync time includes waiting for the slowest worker; error = (model - measured) / measured.", "",
            table(header, rows_out), ""]


# ---- main's steps ----------------------------------------------------------------------------------------------

def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pingpong", required=True, help="pingpong CSV (bytes,iters,rtt_us,oneway_us,bw_gbps)")
    ap.add_argument("--membw", help="bench_membw output (gamma from its add line)")
    ap.add_argument("--gamma-ns-per-byte", type=float, help="gamma, instead of --membw")
    ap.add_argument("--allreduce", help="bench_allreduce CSV measured on the same network (optional)")
    ap.add_argument("--out", required=True, help="folder for the outputs")
    ap.add_argument("--train", help="train --csv rows (MLP-128, --iterations-per-epoch auto) run on the same network")
    ap.add_argument("--train-rows", type=int, default=60000, help="training examples per epoch (default 60000)")
    ap.add_argument("--link-gbps", type=float, default=1.0, help="nominal rate of the measured links (default 1)")
    ap.add_argument("--overlap-efficiency", type=float, default=1.0,
                    help="fraction of the shorter of compute and communication that overlap hides (0..1, default 1)")
    ap.add_argument("--alpha-us", type=float, help="alpha for the extrapolation (default: the fitted alpha)")
    ap.add_argument("--compute-us-per-sample", type=float, default=7.4,
                    help="MLP-128 compute per sample on one core at batch 32 (build/bin/bench_compute measures it; "
                         "default 7.4)")
    ap.add_argument("--batch", type=int, default=32, help="per-worker batch (default 32)")
    ap.add_argument("--tuning-out", help="write (or update) auto's tuning file (collectives/cost_model.hpp) here")
    ap.add_argument("--link", choices=["intra", "inter"], default="inter",
                    help="which link the ping-pong measured, for --tuning-out: inside a host or between hosts")
    ap.add_argument("--cost-model-bin", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                             "build", "bin", "cost_model"),
                    help="gradsync's cost_model binary, which predicts rd, rhd, hier and auto (default build/bin)")
    ap.add_argument("--ranks-per-host", type=int, default=1, help="ranks per host in the --allreduce run (default 1)")
    ap.add_argument("--check-min-bytes", type=int, default=1 << 20, help="model-vs-measured check from this size")
    ap.add_argument("--far-pingpong", help="pingpong CSV between hosts under different switches (pingpong --peer), "
                                           "for the tuning file's far link; needs --hosts-per-switch, --tuning-out")
    ap.add_argument("--hosts-per-switch", type=int, help="hosts under one switch, with --far-pingpong")
    args = ap.parse_args()
    if (args.far_pingpong is None) != (args.hosts_per_switch is None):
        ap.error("--far-pingpong and --hosts-per-switch go together")
    if args.far_pingpong and (not args.tuning_out or args.link != "inter" or
                              not 1 <= args.hosts_per_switch <= MAX_HOSTS_PER_SWITCH):
        ap.error(f"--far-pingpong writes the far link of --tuning-out with --link inter and --hosts-per-switch from 1 "
                 f"to {MAX_HOSTS_PER_SWITCH}")
    return args


class Fit:
    """The fitted link and reduction: alpha, beta, alpha_large (seconds, seconds per byte), gamma (seconds per byte
    reduced), how gamma was found, and the link's efficiency (nominal time per byte over the fitted beta)."""

    def __init__(self, args):
        self.alpha, self.beta, self.alpha_large = fit_alpha_beta(read_pingpong(args.pingpong))
        if args.gamma_ns_per_byte is not None:
            self.gamma, self.gamma_how = args.gamma_ns_per_byte * 1e-9, "given"
        elif args.membw:
            self.gamma = read_gamma(args.membw)
            self.gamma_how = "bench_membw add on one core (DRAM-bound, 64 MiB arrays)"
        else:
            sys.exit("fit_cost_model: give --membw or --gamma-ns-per-byte")
        self.efficiency = 8 / (args.link_gbps * 1e9) / self.beta

    def abg(self):
        return self.alpha, self.beta, self.gamma


def write_params(args, fit):
    """params.csv, auto's tuning file with --tuning-out, and the cost_model binary's set-up (MODELLED); returns the
    report's opening lines."""
    params = [
        ("alpha_us", f"{fit.alpha * 1e6:.2f}", "median one-way MPI ping-pong time of messages <= 1 KiB"),
        ("beta_ns_per_byte", f"{fit.beta * 1e9:.4f}", "slope of one-way time over messages >= 1 MiB"),
        ("beta_gbps", f"{8 / fit.beta / 1e9:.4f}", "1/beta in Gbit/s"),
        ("link_efficiency", f"{fit.efficiency:.4f}",
         f"nominal {args.link_gbps:g} Gbit/s time per byte over fitted beta"),
        ("alpha_large_us", f"{fit.alpha_large * 1e6:.2f}",
         "intercept of the >= 1 MiB fit (rendezvous and pipeline start)"),
        ("gamma_ns_per_byte", f"{fit.gamma * 1e9:.4f}", fit.gamma_how),
    ]
    write_csv(os.path.join(args.out, "params.csv"), ["name", "value", "how"], params)
    if args.tuning_out:
        write_tuning(args.tuning_out, args.link, *fit.abg())
    if os.path.exists(args.cost_model_bin):
        # The fitted link as the model's inter-host link (and as the intra one when the whole run is one host).
        MODELLED["tuning"] = os.path.join(args.out, "fitted_tuning.txt")
        if os.path.exists(MODELLED["tuning"]):
            os.remove(MODELLED["tuning"])
        write_tuning(MODELLED["tuning"], args.link, *fit.abg(), exchange_factor=1.0)
        MODELLED["bin"], MODELLED["per_host"] = args.cost_model_bin, args.ranks_per_host
    else:
        print(f"fit_cost_model: no {args.cost_model_bin}: rd, rhd, hier and auto are not modelled", file=sys.stderr)
    return ["# alpha-beta-gamma cost model", "", "## Fitted parameters", "",
            table(["name", "value", "how"], params), ""]


# ---- predicted vs measured --------------------------------------------------------------------------------------

def read_measured(path, report):
    """bench_allreduce's rows, relabelled for the comparison; a note on what is left out goes to `report`."""
    with open(path) as f:
        measured = list(csv.DictReader(f))
    # The models describe float32 messages; ring-bf16 sends half the bytes, so it is left out of the comparison.
    if any(r["method"].startswith("ring-bf16") for r in measured):
        report += ["ring-bf16 rows are not modelled (bfloat16 on the wire: half the bytes of the float32 ring).", ""]
        measured = [r for r in measured if not r["method"].startswith("ring-bf16")]
    # A ring swept over several chunk sizes: rows of the default chunk stay "ring", others become
    # "ring-chunk16MiB" etc., so each variant is compared and checked on its own.
    for r in measured:
        chunk = int(r["chunk_bytes"] or 0)
        if r["method"] == "ring" and chunk != DEFAULT_CHUNK:
            r["method"] = "ring-chunk" + human(chunk).replace(" ", "")
    return measured


def compare(measured, fit):
    """A row per measured row and model that predicts it (model_vs_measured.csv's columns), and the measured seconds
    by (method, bytes)."""
    rows_out, by_key = [], {}
    for r in measured:
        p, n = int(r["np"]), int(r["bytes"])
        t = float(r["time_us"]) * 1e-6
        by_key[(r["method"], n)] = t
        base = "ring" if r["method"].startswith("ring") else r["method"]
        preds = predict(base, p, n, *fit.abg(), int(r["chunk_bytes"] or 0))
        for model, tp in (preds or {}).items():
            err = (tp - t) / t * 100
            rows_out.append([r["method"], p, n, f"{t * 1e6:.1f}", model, f"{tp * 1e6:.1f}", f"{err:+.1f}",
                             r["busbw_gbps"], f"{n / tp / 1e9 * 2 * (p - 1) / p:.4f}"])
    return rows_out, by_key


def tune_from_collectives(args, fit, measured, rows_out):
    """With --tuning-out on the inter link: auto's link calibrated on these collectives, and the exchange factor of
    the pairwise methods, into the tuning file; returns the report's lines on them. (The checks keep the ping-pong's
    parameters: a model from first principles, checked against this run.)"""
    report = []
    if args.tuning_out and args.link == "inter" and MODELLED["bin"] and args.ranks_per_host == 1:
        cal = calibrate(measured, fit.gamma, fit.alpha, fit.beta)
        if cal:
            a_cal, b_cal, c_cal, rms, edges = cal
            write_tuning(args.tuning_out, "inter", a_cal, b_cal, fit.gamma)
            report += [f"auto's link, calibrated on the {', '.join(CALIBRATED)} rows of this run (least squares in "
                       f"log time, every size): alpha {a_cal * 1e6:.1f} us, beta {b_cal * 1e9:.3f} ns/B, plus "
                       f"{c_cal * 1e6:.0f} us per call for every method; RMS error {100 * (math.exp(rms) - 1):.1f}%. "
                       f"Written to {args.tuning_out}.", ""]
            if edges:
                report += [f"Warning: {' and '.join(edges)} ended on the edge of the search (calibrate() in "
                           f"fit_cost_model.py): the fit may be better beyond it, and auto's crossovers off.", ""]
    # Pairwise exchanges across hosts (rd, rhd) against the model, which predicted them as one-way streams
    # (factor 1): their bandwidth-regime ratio is the exchange factor, which --tuning-out then records.
    ratios = [float(r[3]) / float(r[5]) for r in rows_out
              if r[0] in ("rd", "rhd") and r[4] == r[0] and r[2] >= args.check_min_bytes]
    if ratios and args.tuning_out and args.link == "inter":
        factor = max(1.0, statistics.median(ratios))
        with open(args.tuning_out, "a") as f:
            f.write(f"inter_exchange_factor = {factor:.3f}\n")
        report += [f"Pairwise exchanges across hosts: measured / modelled as one-way streams = "
                   f"{statistics.median(ratios):.3f} (median of {len(ratios)} rd/rhd rows >= "
                   f"{human(args.check_min_bytes)}): inter_exchange_factor = {factor:.3f} in {args.tuning_out}", ""]
    return report


def far_link_section(args, fit):
    """With --far-pingpong: the far link (between hosts under different switches) into the tuning file: the inter
    link written there (calibrated on collectives under one switch) plus what the far ping-pong adds to the near one,
    its extra one-way latency on alpha and its rate's ratio on beta; and the switch size. Returns the report's lines."""
    far_alpha0, far_beta0, _ = fit_alpha_beta(read_pingpong(args.far_pingpong))
    if not (far_beta0 > 0 and fit.beta > 0):
        sys.exit(f"fit_cost_model: no positive rate from {args.far_pingpong} and {args.pingpong} (beta "
                 f"{far_beta0 * 1e9:.4f} and {fit.beta * 1e9:.4f} ns/B): no far link")
    written = read_tuning(args.tuning_out)
    inter_alpha = written.get("inter_alpha_us", fit.alpha * 1e6) * 1e-6
    inter_beta = written.get("inter_beta_ns_per_byte", fit.beta * 1e9) * 1e-9
    # More hops are never faster: a far ping-pong that came out quicker than the near one is noise.
    alpha = inter_alpha + max(0.0, far_alpha0 - fit.alpha)
    beta = inter_beta * max(1.0, far_beta0 / fit.beta)
    set_tuning_keys(args.tuning_out, {"far_alpha_us": f"{alpha * 1e6:.3f}",
                                      "far_beta_ns_per_byte": f"{beta * 1e9:.5f}",
                                      "hosts_per_switch": str(args.hosts_per_switch)})
    return ["## The far link", "",
            f"Ping-pong across switches ({args.far_pingpong}): alpha {far_alpha0 * 1e6:.2f} us against "
            f"{fit.alpha * 1e6:.2f} us under one switch, beta {far_beta0 * 1e9:.4f} against {fit.beta * 1e9:.4f} "
            f"ns/B. The tuning file's far link: alpha {alpha * 1e6:.2f} us, beta {beta * 1e9:.4f} ns/B, "
            f"{args.hosts_per_switch} hosts per switch ({args.tuning_out}).", ""]


def error_checks(args, rings, measured, rows_out):
    """Each method's worst error against its model from --check-min-bytes. Errors are (predicted - measured) /
    measured."""
    checks = []
    pairs = [(m, "ring-chunked" if m.startswith("ring") else "ring") for m in rings] + [("ps", "ps")]
    pairs += [(m, m) for m in ("rd", "rhd", "hier") if any(r["method"] == m for r in measured)]
    for method, model in pairs:
        errs = [float(r[6]) for r in rows_out
                if r[2] >= args.check_min_bytes and r[0] == method and r[4] == model]
        if errs:
            worst = max(errs, key=abs)
            checks.append((f"model {model} vs measured {method}, >= {human(args.check_min_bytes)}: worst error",
                           f"{worst:+.1f}%", "PASS" if abs(worst) <= 20 else "FAIL", "within 20%"))
    return checks


def busbw_checks(args, rings, measured):
    """Each ring's bus bandwidth at its largest size against the link's rate."""
    checks = []
    link_gbytes = args.link_gbps / 8
    for method in rings:
        rows_m = [r for r in measured if r["method"] == method]
        top = max(rows_m, key=lambda r: int(r["bytes"]))
        frac = float(top["busbw_gbps"]) / link_gbytes
        checks.append((f"{method} busbw at {human(int(top['bytes']))} vs link {link_gbytes:.4f} GB/s",
                       f"{float(top['busbw_gbps']):.4f} GB/s = {frac * 100:.1f}%", "PASS" if frac >= 0.85 else "FAIL",
                       ">= 85%"))
    return checks


def ps_ratio_checks(fit, rings, measured, by_key):
    """The parameter server's time over each ring's from 4 MiB, measured against modelled: (table rows, checks)."""
    ratio_rows, checks = [], []
    p_meas = int(measured[0]["np"]) if measured else 0
    for method in rings:
        for n in sorted({n for (m, n) in by_key if m == "ps" and n >= 4 << 20}):
            if (method, n) not in by_key:
                continue
            meas = by_key[("ps", n)] / by_key[(method, n)]
            chunk = next(int(r["chunk_bytes"] or 0) for r in measured if r["method"] == method)
            ring_t = ring(p_meas, n, *fit.abg()) if method == "mpi-ring" else \
                ring_chunked(p_meas, n, *fit.abg(), chunk or DEFAULT_CHUNK)
            model = ps(p_meas, n, *fit.abg()) / ring_t
            dev = (meas - model) / model * 100
            ratio_rows.append([f"ps / {method}", human(n), f"{meas:.3f}", f"{model:.3f}", f"{dev:+.1f}"])
            checks.append((f"ps / {method} time ratio at {human(n)}",
                           f"measured {meas:.3f}, model {model:.3f} ({dev:+.1f}%)",
                           "PASS" if abs(dev) <= 15 else "FAIL", "within 15%"))
    return ratio_rows, checks


def allreduce_section(args, fit):
    """The --allreduce run against the model: model_vs_measured.csv, the tuning file's calibration, and the checks.
    Returns (report lines, checks as (check, value, PASS or FAIL, target))."""
    report = []
    measured = read_measured(args.allreduce, report)
    rows_out, by_key = compare(measured, fit)
    report += tune_from_collectives(args, fit, measured, rows_out)
    write_csv(os.path.join(args.out, "model_vs_measured.csv"),
              ["method", "np", "bytes", "measured_us", "model", "predicted_us", "error_pct", "measured_busbw_gbps",
               "predicted_busbw_gbps"], rows_out)
    report += ["## Predicted vs measured", "",
               table(["method", "np", "size", "measured us", "model", "predicted us", "error %"],
                     [[r[0], r[1], human(r[2]), r[3], r[4], r[5], r[6]] for r in rows_out]), ""]
    rings = sorted({r["method"] for r in measured if r["method"].startswith("ring") or r["method"] == "mpi-ring"})
    ratio_rows, ratio_checks = ps_ratio_checks(fit, rings, measured, by_key)
    checks = error_checks(args, rings, measured, rows_out) + busbw_checks(args, rings, measured) + ratio_checks
    if ratio_rows:
        report += ["## PS / ring time ratio (>= 4 MiB)", "",
                   table(["ratio", "size", "measured", "model", "deviation %"], ratio_rows), ""]
    if checks:
        report += ["## Checks", "", table(["check", "value", "result", "target"], checks), ""]
    return report, checks


# ---- extrapolation ------------------------------------------------------------------------------------------------
# Weak scaling, as gradsync's trainer runs: every worker computes `batch` samples per step, then all synchronize;
# speedup = p * t_compute / (t_compute + t_comm) (throughput over one worker without any sync). The 25M model's
# compute scales with its parameter count from MLP-128's (same FLOP rate per parameter).

EXTRAPOLATION_MODELS = [("mlp128", MLP128_FLOATS), ("25M", BIG_MODEL_FLOATS)]


def extrapolation_methods():
    """(name, seconds(p, n, a, b, g)) of every method the extrapolation covers."""
    methods = [("ring", ring), ("rabenseifner", rabenseifner), ("ps", lambda p, n, a, b, g: ps(p + 1, n, a, b, g)),
               ("ps-sharded-colocated", ps_colocated)]
    if MODELLED["bin"]:
        # gradsync's own methods, as auto predicts them; hier and auto with hosts of EXTRAPOLATION_PER_HOST ranks.
        for name, per_host in (("rd", 1), ("rhd", 1), ("hier", EXTRAPOLATION_PER_HOST),
                               ("auto", EXTRAPOLATION_PER_HOST)):
            label = name if per_host == 1 else f"{name}-{per_host}perhost"
            methods.append((label, lambda p, n, a, b, g, name=name, per_host=per_host:
                            modelled(name, p, n, 0, (a, b, g), per_host if p > per_host else 1)
                            if not (name == "hier" and p <= per_host) else float("inf")))
    return methods


def crossover_row(model_name, gbps, n, t_comp, a_ext, b_ext, gamma, speedups):
    """The crossovers table's row of one model and link (the report's text says what each column is)."""
    first = lambda method, test: next((p for p in EXTRAPOLATION_P if test(speedups[(method, p)], p)), None)
    # Central PS: speedup(p) = p tc / (tc + p K) with K = 2 alpha + 2 n beta + n gamma rises to tc / K and
    # reaches 90% of that cap at p = 9 tc / K: beyond it, more workers buy almost nothing.
    k_ps = 2 * (a_ext + n * b_ext) + n * gamma
    ps_cap, ps_sat = t_comp / k_ps, 9 * t_comp / k_ps
    # Ring: 2(p-1) alpha overtakes (p-1)/p n (2 beta + gamma) at p = n (2 beta + gamma) / (2 alpha).
    p_lat = n * (2 * b_ext + gamma) / (2 * a_ext)
    fmt_p = lambda p: ">1024" if p is None else str(p)
    return [model_name, gbps, f"{t_comp * 1e3:.3f}", f"{ring(1024, n, a_ext, b_ext, gamma) * 1e3:.2f}",
            fmt_p(first("ring", lambda s, p: s >= 1)), fmt_p(first("ring", lambda s, p: s / p < 0.5)),
            f"{ps_cap:.2f}", f"{ps_sat:.1f}", f"{p_lat:.0f}",
            fmt_p(first("ring", lambda s, p: speedups[("rabenseifner", p)] > 1.1 * s))]


def extrapolate(args, fit, a_ext):
    """Every model, link, method (with and without overlap) and p: (extrapolation.csv rows, summary rows,
    crossover rows)."""
    methods = extrapolation_methods()
    ext_rows, summary, crossovers = [], [], []
    for model_name, floats in EXTRAPOLATION_MODELS:
        n = floats * FLOAT_BYTES
        t_comp = args.compute_us_per_sample * 1e-6 * args.batch * floats / MLP128_FLOATS
        for gbps in EXTRAPOLATION_LINKS_GBPS:
            b_ext = 8 / (gbps * 1e9) / fit.efficiency
            speedups = {}
            for method, fn in methods:
                for overlap in (False, True):
                    name = method + ("+overlap" if overlap else "")
                    for p in EXTRAPOLATION_P:
                        t_comm = fn(p, n, a_ext, b_ext, fit.gamma)
                        step = overlapped_step(t_comp, t_comm, args.overlap_efficiency) if overlap else t_comp + t_comm
                        speedup = p * t_comp / step
                        speedups[(name, p)] = speedup
                        ext_rows.append([model_name, floats, gbps, f"{a_ext * 1e6:.2f}", f"{b_ext * 1e9:.5f}",
                                         f"{fit.gamma * 1e9:.4f}", name, p, f"{t_comm * 1e6:.1f}",
                                         f"{t_comp * 1e6:.1f}", f"{step * 1e6:.1f}", f"{speedup:.2f}",
                                         f"{speedup / p:.3f}"])
            crossovers.append(crossover_row(model_name, gbps, n, t_comp, a_ext, b_ext, fit.gamma, speedups))
            for method, _ in methods:
                for name in (method, method + "+overlap"):
                    summary.append([model_name, f"{gbps} Gbit/s", name]
                                   + [f"{speedups[(name, p)]:.1f}" for p in (2, 8, 32, 128, 512, 1024)])
    return ext_rows, summary, crossovers


def extrapolation_section(args, fit, a_ext):
    """extrapolation.csv, and the report's extrapolation and crossovers sections, with alpha `a_ext` on every link."""
    ext_rows, summary, crossovers = extrapolate(args, fit, a_ext)
    write_csv(os.path.join(args.out, "extrapolation.csv"),
              ["model", "floats", "link_gbps", "alpha_us", "beta_ns_per_byte", "gamma_ns_per_byte", "method", "p",
               "comm_us", "compute_us", "step_us", "speedup", "efficiency"], ext_rows)
    return [
        "## Extrapolation: speedup over one worker (weak scaling)", "",
        f"Assumptions: per-worker batch {args.batch}; MLP-128 compute {args.compute_us_per_sample:g} us/sample on one "
        f"core, the 25M model's scaled by parameter count ({BIG_MODEL_FLOATS / MLP128_FLOATS:.1f}x); alpha = "
        f"{a_ext * 1e6:.1f} us on every link ({'given' if args.alpha_us is not None else 'the fitted MPI/TCP alpha'}); "
        f"beta = 8 ns/B / link Gbit/s / {fit.efficiency:.3f} (the fitted efficiency of the emulated link); gamma = "
        f"{fit.gamma * 1e9:.3f} ns/B (one core); '+overlap' rows run compute and communication side by side with "
        f"overlap efficiency {args.overlap_efficiency:g}, the others one after the other. 'ps' is one dedicated server "
        f"plus p workers; 'ps-sharded-colocated' puts a server shard on every worker.", "",
        table(["model", "link", "method", "p=2", "p=8", "p=32", "p=128", "p=512", "p=1024"], summary), "",
        "## Crossovers", "",
        "ring break-even: the first p (of 2, 4, ..., 1024) at which the ring is faster than one worker alone. ring "
        "eff < 50%: the first p at which its speedup falls below p/2 (2 = already at p = 2). ps cap: the speedup a "
        "central server can never exceed, tc / (2 alpha + 2 n beta + n gamma); ps saturates: the p at which it reaches "
        "90% of that cap (9 tc / K), past which more workers buy nothing. ring latency-bound: the p above which the "
        "ring's 2(p-1) alpha exceeds its bandwidth and reduction terms, n (2 beta + gamma) / (2 alpha). rabenseifner "
        "1.1x: the first p at which recursive halving/doubling is 10% faster than the ring (its log2 p latency).", "",
        table(["model", "link Gbit/s", "compute ms/step", "ring comm ms at p=1024", "ring break-even p",
               "ring eff < 50% at p", "ps cap", "ps saturates at p", "ring latency-bound above p",
               "rabenseifner 1.1x at p"], crossovers), ""]


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    fit = Fit(args)
    report = write_params(args, fit)
    checks = []
    if args.allreduce:
        section, checks = allreduce_section(args, fit)
        report += section
    if args.far_pingpong:
        report += far_link_section(args, fit)
    if args.train:
        report += train_section(args.train, args.train_rows, args.out, *fit.abg())
    a_ext = args.alpha_us * 1e-6 if args.alpha_us is not None else fit.alpha
    report += extrapolation_section(args, fit, a_ext)
    if MODELLED["bin"]:
        b_first_link = 8 / (EXTRAPOLATION_LINKS_GBPS[0] * 1e9) / fit.efficiency
        report += winners_section(args.out, (a_ext, b_first_link, fit.gamma))
    text = "\n".join(report)
    with open(os.path.join(args.out, "report.txt"), "w") as f:
        f.write(text + "\n")
    print(text)
    failed = [c for c in checks if c[2] == "FAIL"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
