# shellcheck shell=bash
# neighbour-exchange [--nps "64 128 256"] [--platforms "fattree-10g-1pn flat-1g"] [--bytes "4096 65536 407080"]
#                    [--patterns ring] [--tags same] [--waits all] [--skews 0] [--iters 20]
#                  synchronous gossip's communication alone (bench/sim/neighbour_exchange.cpp, compiled here with
#                  smpicxx): irecv from the peers, isend to them, wait, --iters times, for every combination of
#                  the lists. Per iteration: the slowest rank's time after a barrier, and with rank 0 starting
#                  --skews seconds late (simulated), rank 0's own time and the slowest rank's own time (train's epoch
#                  time before and since it took the slowest rank's). neighbour_exchange.csv: platform,np,bytes,
#                  pattern,tags,wait,skew_s,iters,aligned_s_per_iter,rank0_s_per_iter,slowest_s_per_iter.
nps="64 128 256"
platforms="fattree-10g-1pn flat-1g"
bytes="4096 65536 407080"
patterns="ring" tags="same" waits="all" skews="0" iters=20
parse_flags neighbour-exchange "--nps nps" "--platforms platforms" "--bytes bytes" "--patterns patterns" \
  "--tags tags" "--waits waits" "--skews skews" "--iters iters uint 1" -- "$@"
for p in $platforms; do [ -f "$PLATFORM_DIR/$p.xml" ] || die "neighbour-exchange: no platform '$p' ($(platforms))"; done
program="$SMPI_BUILD/bin/neighbour_exchange"
if [ ! -x "$program" ] || [ "$SIM_DIR/neighbour_exchange.cpp" -nt "$program" ]; then
  mkdir -p "$SMPI_BUILD/bin"
  smpicxx -O2 -std=c++20 "$SIM_DIR/neighbour_exchange.cpp" -o "$program"
fi
csv="$out/neighbour_exchange.csv"
[ -s "$csv" ] ||
  echo "platform,np,bytes,pattern,tags,wait,skew_s,iters,aligned_s_per_iter,rank0_s_per_iter,slowest_s_per_iter" >"$csv"
for platform in $platforms; do
  for np in $nps; do
    for b in $bytes; do
      for pattern in $patterns; do
        for tag in $tags; do
          for wait in $waits; do
            for skew in $skews; do
              key="$platform,$np,$b,$pattern,$tag,$wait,$skew,$iters,"
              if grep -q "^$key" "$csv"; then say "neighbour-exchange: $key done before"; continue; fi
              log="$out/$platform-np$np-$b-$pattern-$tag-$wait-skew$skew.log"
              smpi_run "$platform" "$np" "$log" neighbour_exchange --bytes "$b" --iters "$iters" \
                --pattern "$pattern" --tags "$tag" --wait "$wait" --skew "$skew"
              row="$(grep -E "^$np,$b,$pattern,$tag,$wait," "$log" | tail -n 1)"
              [ -n "$row" ] || die "neighbour-exchange: no result row in $log"
              echo "$platform,$row" >>"$csv"
            done
          done
        done
      done
    done
  done
done
column -s, -t "$csv"
