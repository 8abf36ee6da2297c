# shellcheck shell=bash
# overlap-scale [--nps "2 32"] [--platform flat-1g] [--methods ring,ring-buckets,ring-pipe] [--blocks 2]
#               [--bucket-kib 1024]
#                  bench_overlap.sh's steps (MLP 784-1024-1024-10, batch 1024 per worker, methods alternated in one
#                  run) at each p on a simulated platform, where packets cost no CPU; overlap.md: each method's step
#                  against the blocking one and against max(compute, communication) of the blocking step (64
#                  workers of 1024 examples would need more than MNIST's 60000 for one step: 32 is the most)

nps="2 32"
platform=flat-1g
methods=ring,ring-buckets,ring-pipe
blocks=2
bucket_kib=1024
parse_flags overlap-scale "--nps nps" "--platform platform" "--methods methods" "--blocks blocks uint 1" \
  "--bucket-kib bucket_kib uint 1" -- "$@"
[ -x "$SMPI_BUILD/bin/bench_sync" ] || die "overlap-scale needs bench_sync: run scripts/simulate.sh build --all first"
block=3
steps=$((blocks * block * $(tr ',' '\n' <<<"$methods" | wc -l)))
{
  echo "# Simulated overlap steps on $platform: MLP 784-1024-1024-10, batch 1024 per worker"
  echo
  echo "| p | method | compute ms | sync ms | step ms | step / blocking | step / max(compute, comm) of blocking |"
  echo "|---|---|---|---|---|---|---|"
} >"$out/overlap.md"
for np in $nps; do
  SELECTOR=ompi smpi_run "$platform" "$np" "$out/np$np.log" bench_sync --methods "$methods" --hidden 1024,1024 \
    --batch 1024 --steps "$steps" --block "$block" --settle 1 --bucket-kib "$bucket_kib" --data "$GRADSYNC_ROOT/data/mnist"
  # bench_sync's table: method timed compute_us sync_us hidden_us step_us step/first.
  awk -v np="$np" '(NF == 7 || NF == 8) && $2 ~ /^[0-9]+$/ {
      base = $1; sub(/-.*/, "", base); if ($1 == base) { c = $3; s = $4; b = $6 }
      printf "| %d | %s | %.1f | %.1f | %.1f | %.3f | %.3f |\n", np, $1, $3 / 1e3, $4 / 1e3, $6 / 1e3, $6 / b,
             $6 / (c > s ? c : s) }' "$out/np$np.log" >>"$out/overlap.md"
done
cat "$out/overlap.md"
