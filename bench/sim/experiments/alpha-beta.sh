# shellcheck shell=bash
# alpha-beta [NP]  is anything really simulated? the ring at NP ranks (default 8) on flat-1g at 16 MiB against its
#                  closed form 2(p-1) alpha + 2(p-1)/p n beta from the platform's link (bench/sim/alpha_beta.py):
#                  fails beyond 10%

np="${1:-8}"
smpi_run flat-1g "$np" "$out/ring-np$np.log" bench_allreduce --methods ring --min-bytes 16M --max-bytes 16M \
  --iters 1 --reps 1 --warmup 1 --csv "$out/ring-np$np.csv"
python3 "$SIM_DIR/alpha_beta.py" "$PLATFORM_DIR/flat-1g.xml" "$out/ring-np$np.csv" --bytes $((16 << 20)) ||
  die "alpha-beta: the simulated ring is not the closed form (above)"
