#!/usr/bin/env python3
"""make_platforms.py: the SimGrid platforms gradsync is simulated on (scripts/simulate.sh), written to
build-smpi/platforms/ (generated files, not in git: scripts/simulate.sh writes them whenever they are missing or
older than this file or bench/sim/host-speed.txt).

  bench/sim/make_platforms.py [--out DIR] [--host-speed GFLOPS] [--max-ranks 1024]

Every platform is one SimGrid <cluster>; ranks map to hosts through the hostfiles written beside them
(hosts-<platform>.txt: one line per rank, so `smpirun -np P` takes the first P ranks, filling hosts and leaf
switches in order).

flat-1g            the emulated cluster (bench/cluster/cluster.sh, docs/scale-out.md) as fitted from its ping-pong:
                   a one-way time of alpha = 17.8 us for a small message and beta = 8.64 ns per byte (0.926 Gbit/s).
                   One full-duplex link per host into a switch that never limits (no backbone): a message crosses
                   its sender's uplink and its receiver's downlink, each with half of alpha. The link rate and the
                   latency hold as written only with SMPI's per-size correction factors set to 1 (the <config> at
                   the top of each file): SimGrid's defaults fit a different network.
flat-1g-2pn        the same with 2 ranks per host (hosts with 2 cores), as the emulated cluster's 2 x 2 runs: ranks on
                   one host talk through its loopback (shared memory).
flat-1g-slow3      flat-1g with host 3's link 10x slower (0.0926 Gbit/s each way), as the emulated cluster with
                   --slow-host 3 --slow-rate 100mbit: one host per link written out, as a SimGrid Cluster zone.
fattree-<R>g-1pn   two-level fat trees with R = 10, 25, 100 Gbit/s links, one rank per host, up to --max-ranks hosts:
                   32 hosts per leaf switch, every leaf joined to 32 spine switches (full bisection).
fattree-<R>g-8pn   the same links with 8 ranks per host (hosts with 8 cores); ranks on one host talk through its
                   loopback (shared memory).

Compute speed: SMPI times each computation burst between MPI calls on the CPU running the simulation (thread CPU
time, so a loaded machine does not inflate it) and charges burst_seconds * smpi/host-speed / host_speed of
simulated time. Hosts here run at --host-speed, and scripts/simulate.sh passes the same value as smpi/host-speed,
so a simulated host computes exactly as fast as this machine's core. The value is this machine's single-core FMA
peak (bench/sim/host_speed.cpp, the same measurement as bench_compute's peak): only the ratio between the two
matters, but in real units a platform can be made faster or slower than the simulating machine. To recalibrate on
another machine run `scripts/simulate.sh calibrate` (measures the peak, stores it in bench/sim/host-speed.txt and
rewrites these files); to simulate a CPU twice as fast as this one, pass --host-speed with twice the stored value
and keep smpi/host-speed at the stored value.
"""
import argparse
import pathlib

# The emulated cluster's fit (plots/results/cluster/params.csv, docs/scale-out.md).
EMULATED_ALPHA_US = 17.8
EMULATED_BETA_NS_PER_BYTE = 8.64

FAT_TREE_RATES_GBPS = (10, 25, 100)
HOSTS_PER_LEAF = 32
# One switch hop in a fat tree (wire and switch); a message between leaves crosses four links, within a leaf two.
FAT_TREE_LINK_LATENCY_US = 0.5
# Ranks on one host of an 8-rank host exchange through memory: a copy at memory speed, a microsecond to start.
LOOPBACK_BANDWIDTH_GBPS = 80
LOOPBACK_LATENCY_US = 0.5

# Without these SMPI scales every message's latency by up to 11.6x and its rate by 0.34-1.09x depending on its size
# (factors fitted to another network); the rates and latencies written here are meant as they stand.
CONFIG = """  <config>
    <prop id="smpi/bw-factor" value="0:1"/>
    <prop id="smpi/lat-factor" value="0:1"/>
  </config>
"""


def header(comment):
    return ("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
            f"<!-- Written by bench/sim/make_platforms.py: {comment} -->\n<platform version=\"4.1\">\n" + CONFIG)


def gbps_to_bytes_per_s(gbps):
    return f"{gbps * 1e9 / 8:.6g}Bps"


def flat(host_speed, hosts, cores=1):
    bw = 1e9 / EMULATED_BETA_NS_PER_BYTE  # bytes per second
    lat_us = EMULATED_ALPHA_US / 2
    body = (f'  <cluster id="flat" prefix="node-" suffix="" radical="0-{hosts - 1}" speed="{host_speed:.6g}Gf" '
            f'core="{cores}" bw="{bw:.6g}Bps" lat="{lat_us:g}us" sharing_policy="SPLITDUPLEX" '
            f'loopback_bw="{gbps_to_bytes_per_s(LOOPBACK_BANDWIDTH_GBPS)}" loopback_lat="{LOOPBACK_LATENCY_US:g}us"/>\n')
    return header(f"the emulated cluster's fit: alpha {EMULATED_ALPHA_US} us, beta {EMULATED_BETA_NS_PER_BYTE} ns/B, "
                  f"{cores} core(s) per host") + body + "</platform>\n"


SLOW_HOST, SLOW_FACTOR = 3, 10


def flat_slow(host_speed, hosts):
    bw = 1e9 / EMULATED_BETA_NS_PER_BYTE
    lat_us = EMULATED_ALPHA_US / 2
    body = ['  <zone id="flat" routing="Cluster">\n']
    for h in range(hosts):
        rate = bw / SLOW_FACTOR if h == SLOW_HOST else bw
        body.append(f'    <host id="node-{h}" speed="{host_speed:.6g}Gf" core="1"/>\n'
                    f'    <link id="link-{h}" bandwidth="{rate:.6g}Bps" latency="{lat_us:g}us" '
                    f'sharing_policy="SPLITDUPLEX"/>\n'
                    f'    <host_link id="node-{h}" up="link-{h}_UP" down="link-{h}_DOWN"/>\n')
    body.append('  </zone>\n')
    return header(f"flat-1g with host {SLOW_HOST}'s link {SLOW_FACTOR}x slower") + "".join(body) + "</platform>\n"


def fat_tree(host_speed, rate_gbps, hosts, cores):
    leaves = max(1, -(-hosts // HOSTS_PER_LEAF))
    per_leaf = min(hosts, HOSTS_PER_LEAF)
    # levels; hosts per leaf, leaves per spine; uplinks per host, uplinks per leaf; links per connection
    topo = f"2;{per_leaf},{leaves};1,{per_leaf};1,1"
    body = (f'  <cluster id="fattree" prefix="node-" suffix="" radical="0-{per_leaf * leaves - 1}" '
            f'speed="{host_speed:.6g}Gf" core="{cores}" bw="{gbps_to_bytes_per_s(rate_gbps)}" '
            f'lat="{FAT_TREE_LINK_LATENCY_US:g}us" sharing_policy="SPLITDUPLEX" topology="FAT_TREE" '
            f'topo_parameters="{topo}" loopback_bw="{gbps_to_bytes_per_s(LOOPBACK_BANDWIDTH_GBPS)}" '
            f'loopback_lat="{LOOPBACK_LATENCY_US:g}us"/>\n')
    return header(f"two-level fat tree, {rate_gbps} Gbit/s links, {cores} core(s) per host") + body + "</platform>\n"


def hostfile(hosts, ranks_per_host):
    return "".join(f"node-{h}\n" for h in range(hosts) for _ in range(ranks_per_host))


def main():
    here = pathlib.Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=pathlib.Path, default=here.parent.parent / "build-smpi" / "platforms",
                        help="folder for the platforms and hostfiles (default build-smpi/platforms)")
    parser.add_argument("--host-speed", type=float, default=None,
                        help="GFLOP/s of one simulated core (default: bench/sim/host-speed.txt)")
    parser.add_argument("--max-ranks", type=int, default=1024, help="ranks the largest platform holds")
    args = parser.parse_args()
    speed = args.host_speed
    if speed is None:
        speed_file = here / "host-speed.txt"
        if not speed_file.exists():
            parser.error(f"no --host-speed and no {speed_file}: run `scripts/simulate.sh calibrate` first")
        speed = float(speed_file.read_text().split()[0])
    if speed <= 0 or args.max_ranks < 2:
        parser.error("--host-speed must be > 0 and --max-ranks >= 2")
    args.out.mkdir(parents=True, exist_ok=True)
    files = {"flat-1g": (flat(speed, args.max_ranks), hostfile(args.max_ranks, 1)),
             "flat-1g-2pn": (flat(speed, args.max_ranks // 2, 2), hostfile(args.max_ranks // 2, 2)),
             "flat-1g-slow3": (flat_slow(speed, args.max_ranks), hostfile(args.max_ranks, 1))}
    for rate in FAT_TREE_RATES_GBPS:
        files[f"fattree-{rate}g-1pn"] = (fat_tree(speed, rate, args.max_ranks, 1), hostfile(args.max_ranks, 1))
        hosts8 = -(-args.max_ranks // 8)
        files[f"fattree-{rate}g-8pn"] = (fat_tree(speed, rate, hosts8, 8), hostfile(hosts8, 8))
    for name, (platform, hosts) in files.items():
        (args.out / f"{name}.xml").write_text(platform)
        (args.out / f"hosts-{name}.txt").write_text(hosts)
        print(f"{args.out / name}.xml")


if __name__ == "__main__":
    main()
