# shellcheck shell=bash
# overlap-scale [--nps "2 32"] [--platform flat-1g] [--methods ring,ring+buckets,ring+pipe] [--blocks 2]
#               [--bucket-kib 1024]
#                  bench_overlap.sh's steps (MLP 784-1024-1024-10, batch 1024 per worker, methods alternated in one
#                  run) at each p on a simulated platform, where packets cost no CPU; overlap.md: each method's step
#                  against the blocking one and against max(compute, communication) of the blocking step (64
#                  workers of 1024 examples would need more than MNIST's 60000 for one step: 32 is the most)

nps="2 32"
platform=flat-1g
methods=ring,ring+buckets,ring+pipe
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
  rm -f "$out/np$np.csv"  # --csv appends
  SELECTOR=ompi smpi_run "$platform" "$np" "$out/np$np.log" bench_sync --methods "$methods" --hidden 1024,1024 \
    --batch 1024 --steps "$steps" --block "$block" --settle 1 --bucket-kib "$bucket_kib" \
    --data "$GRADSYNC_ROOT/data/mnist" --csv "$out/np$np.csv"
  # bench_sync's rows, by column name: each method against the blocking row of the same allreduce method.
  awk -F, -v np="$np" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    { n++; name[n] = $col["method"]; ar[n] = $col["allreduce"]; c[n] = $col["compute_us"]; s[n] = $col["sync_us"]
      step[n] = $col["step_us"]; if ($col["mode"] == "blocking" && $col["compressor"] == "") blocking[ar[n]] = n }
    END { for (i = 1; i <= n; i++) { k = blocking[ar[i]]
      printf "| %d | %s | %.1f | %.1f | %.1f | %.3f | %.3f |\n", np, name[i], c[i] / 1e3, s[i] / 1e3, step[i] / 1e3,
             step[i] / step[k], step[i] / (c[k] > s[k] ? c[k] : s[k]) } }' "$out/np$np.csv" >>"$out/overlap.md"
done
cat "$out/overlap.md"
