# shellcheck shell=bash
# aggregate-scale [--platform fattree-10g-1pn] [--nps "64 256"] [--min-bytes 1M] [--max-bytes 64M]
#                 [--step-factor 4] [--aggregators "mean,median,trimmed,krum,multikrum,bulyan,cclip:1"]
#                 [--byzantine 1] [--no-check]
#                  robust aggregation's cost at scale (bench_aggregate): each aggregator segmented (the ring's
#                  bytes) and gathered to one rank, against the ring allreduce, on a fat tree; aggregate.md holds
#                  each aggregator's time over the ring's and the gathered form's over the segmented one's against
#                  issue 55's targets (at most 1.5x the ring from 1 MiB; gathered at least p/4 slower at p = 64).
#                  Computation is simulated (timed on this CPU): every row is gradsync's own code, and what a
#                  robust aggregator costs beyond the ring is its selection (Krum's p (p - 1) / 2 distances, the
#                  medians), which the gathered form's root does for everyone. Every row's result is checked
#                  against the other form's (--no-check: not, which saves two of a row's three calls). A size is
#                  left out at a p where its buffers would not fit in this machine's available memory (about 6
#                  vectors per rank, the gathered root's p among them).
#                  The measured run: plots/results/sim-aggregate (--out there).
platform=fattree-10g-1pn
nps="64 256"
min_bytes=1M
max_bytes=64M
step_factor=4
aggregators="mean,median,trimmed,krum,multikrum,bulyan,cclip:1"
byzantine=1
no_check=""
parse_flags aggregate-scale "--platform platform" "--nps nps" "--min-bytes min_bytes" "--max-bytes max_bytes" \
  "--step-factor step_factor above 1 --step-factor '%s' must be a number above 1" "--aggregators aggregators" \
  "--byzantine byzantine uint 0" "--no-check no_check switch" -- "$@"
[ -f "$PLATFORM_DIR/$platform.xml" ] || die "aggregate-scale: no platform '$platform' ($(platforms))"
# byte_count SIZE: 16M -> 16777216 (the suffixes bench_aggregate accepts).
byte_count() {
  local n="${1%[KMG]}" scale=1
  case "$1" in *K) scale=1024 ;; *M) scale=$((1 << 20)) ;; *G) scale=$((1 << 30)) ;; esac
  [[ "$n" =~ ^[0-9]+$ ]] || die "aggregate-scale: '$1' is not a size (e.g. 1M, 64M)"
  echo $((n * scale))
}
top_bytes="$(byte_count "$max_bytes")"
for np in $nps; do
  [ "$np" -le "$(wc -l <"$PLATFORM_DIR/hosts-$platform.txt")" ] ||
    die "aggregate-scale: $platform has fewer than $np hosts"
  available=$(($(awk '/^MemAvailable:/ {print $2}' /proc/meminfo) * 1024))
  max=$((available / (6 * np)))
  [ "$max" -lt "$top_bytes" ] || max="$top_bytes"
  [ "$max" = "$top_bytes" ] ||
    say "aggregate-scale: p = $np: vectors above $max bytes would not fit in memory: left out"
  # Krum's distance MPI_Allreduce and the gathered form's MPI_Bcast are SMPI's: with Open MPI's selection, as a user
  # of Open MPI gets, not SMPI's default (bench/sim/README.md: its MPI_Allreduce is 10x slower).
  SELECTOR=ompi smpi_run "$platform" "$np" "$out/np$np.log" bench_aggregate --aggregators "$aggregators" \
    --byzantine "$byzantine" --min-bytes "$min_bytes" --max-bytes "$max" --step-factor "$step_factor" \
    ${no_check:+--no-check} --csv "$out/np$np.csv"
done
python3 "$SIM_DIR/aggregate_report.py" --platform "$platform" "$out"/np*.csv >"$out/aggregate.md"
cat "$out/aggregate.md"
