# shellcheck shell=bash
# allreduce-check [NP...]  every gradsync method (ring, rd, rhd, hier on 2-core hosts, ps, ps with 2 shards) and SMPI's
#                  MPI_Allreduce (Open MPI's selection) at NP simulated ranks (default 4 6 8), 4 B-4 MiB: every
#                  row's wrong count must be 0; prints the simulated times and what the simulation cost

# One timed call per size: the simulated network is deterministic, so repetitions only cost wall time
# (bench_allreduce's default moves ~1 GiB per size, up to 10,000 calls).
nps=("$@")
[ "${#nps[@]}" -gt 0 ] || nps=(4 6 8)
for np in "${nps[@]}"; do
  SELECTOR=ompi smpi_run flat-1g-2pn "$np" "$out/np$np.log" bench_allreduce \
    --methods ring,rd,rhd,hier,ps,ps-sharded,mpi --min-bytes 4 --max-bytes 4M --step-factor 16 \
    --iters 1 --reps 1 --warmup 1 --csv "$out/np$np.csv"
done
awk -F, 'FNR == 1 { for (i = 1; i <= NF; i++) if ($i == "wrong") w = i; next }
         { rows++ } $w != 0 { bad = 1; print "wrong elements: " $0 }
         END { if (rows == 0) { print "no rows"; bad = 1 } exit bad }' "$out"/np*.csv ||
  die "allreduce-check: wrong elements or no rows (above)"
say "allreduce-check: every row exact ($out)"
