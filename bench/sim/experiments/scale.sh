# shellcheck shell=bash
# scale [--platforms "P..."] [--nps "8 16 ..."] [--min-bytes 8] [--max-bytes 16M] [--step-factor 8] [--tuning FILE]
#       [--methods LIST]
#                  the allreduce at p = 8..1024 on the fat trees: every gradsync method against SMPI's
#                  MPI_Allreduce with Open MPI's and MPICH's selection, and auto with a tuning file fitted the way a
#                  user fits one (a ping-pong and one 8-rank sweep on that network, and a ping-pong across leaf
#                  switches for the far link, fit_cost_model.py), or FILE;
#                  scale.md: auto against the best, the best against Open MPI's, the cost model against the
#                  simulation. Needs build/ (cost_model, bench_membw) beside build-smpi/.
#                  Computation is not simulated here (smpi/simulate-computation:no): SMPI's own MPI_Allreduce runs
#                  inside the simulator, its reductions uncharged, so gradsync's code between calls is left
#                  uncharged too and the methods compare as communication patterns. The ring is left out above
#                  p = 256 (2(p-1) messages per rank per call: hours of simulation at 1024), from auto's candidates
#                  too (GRADSYNC_AUTO_METHODS). Above p = 256 the
#                  buffers are shared between the simulated ranks (bench_allreduce --shared-buffers: 1024 x 16 MiB
#                  would not fit in memory otherwise), so the sums are checked only up to p = 256. SMPI's own
#                  MPI_Allreduce allocates its temporaries privately per rank (about the message for Open MPI's
#                  selection, up to four times it for MPICH's), so a size whose temporaries would not fit in
#                  this machine's available memory is left out of that selection's sweep.
#                  --methods LIST (of ring, rd, rhd, hier, auto, mpi: Open MPI's selection, mpich: MPICH's)
#                  simulates only those and replaces their rows in the npP.csv files of a full sweep, keeping the
#                  others; logs go to npP-LIST.log and a line to host.txt. With auto and no --tuning it fits again
#                  first, as the full sweep does (--methods auto re-runs auto after a new fit; its candidates stay
#                  the methods the full sweep simulates at that p); otherwise it reads the folder's tuning.txt.

platforms="fattree-10g-1pn fattree-100g-1pn fattree-10g-8pn"
nps="8 16 32 64 128 256 512 1024"
min_bytes=8
max_bytes=16M
step_factor=8
tuning=""
only=""
parse_flags scale "--platforms platforms" "--nps nps" "--min-bytes min_bytes" "--max-bytes max_bytes" \
  "--step-factor step_factor" "--tuning tuning" \
  "--methods only match ^(ring|rd|rhd|hier|auto|mpi|mpich)(,(ring|rd|rhd|hier|auto|mpi|mpich))*$ --methods '%s' is not a comma list of ring, rd, rhd, hier, auto, mpi, mpich" \
  -- "$@"
[ -z "$tuning" ] || [ -f "$tuning" ] || die "scale: --tuning $tuning: no such file"
[ -z "$tuning" ] || tuning="$(cd "$(dirname "$tuning")" && pwd)/$(basename "$tuning")"
host_bin="${BUILD_DIR:-$GRADSYNC_ROOT/build}/bin"
for b in cost_model bench_membw; do
  [ -x "$host_bin/$b" ] || die "scale: $host_bin/$b is missing (the cost model runs natively): scripts/setup.sh"
done
for p in $platforms; do [ -f "$PLATFORM_DIR/$p.xml" ] || die "scale: no platform '$p' ($(platforms))"; done
# byte_count SIZE: 16M -> 16777216 (the suffixes bench_allreduce accepts).
byte_count() {
  local n="${1%[KMG]}" scale=1
  case "$1" in *K) scale=1024 ;; *M) scale=$((1 << 20)) ;; *G) scale=$((1 << 30)) ;; esac
  [[ "$n" =~ ^[0-9]+$ ]] || die "scale: '$1' is not a size (e.g. 8, 64K, 16M)"
  echo $((n * scale))
}
# fitting_bytes NP COPIES: the largest message, at most --max-bytes, of which NP ranks' COPIES temporaries each fit
# in the memory available now (SMPI's own collectives allocate them privately).
fitting_bytes() {
  local available
  available=$(($(awk '/^MemAvailable:/ {print $2}' /proc/meminfo) * 1024))
  local fit=$((available / ($1 * $2)))
  echo $((fit < top_bytes ? fit : top_bytes))
}
top_bytes="$(byte_count "$max_bytes")"
sweep=(--iters 1 --reps 1 --warmup 1 --segment-bytes whole --min-bytes "$min_bytes" --step-factor "$step_factor")
export SMPI_CFG="${SMPI_CFG:-} --cfg=smpi/simulate-computation:no"
"$host_bin/bench_membw" --bytes 64M >"$out/membw.txt"
# calibrate LINK PLATFORM DIR TUNING: a ping-pong between ranks 0 and 1 and an 8-rank sweep of the one-level methods
# on PLATFORM, fitted into TUNING's LINK keys (and, across hosts, the far link's).
calibrate() {
  local link="$1" platform="$2" dir="$3" file="$4" gbps
  mkdir -p "$dir"
  smpi_run "$platform" 2 "$dir/pingpong.log" pingpong --max-bytes 16M --csv "$dir/pingpong.csv"
  SELECTOR=ompi smpi_run "$platform" 8 "$dir/fit.log" bench_allreduce --methods ring,rd,rhd,mpi "${sweep[@]}" \
    --max-bytes "$top_bytes" --csv "$dir/fit.csv"
  gbps="$(sed -n 's/^fattree-\([0-9]*\)g-.*/\1/p' <<<"$platform")"
  # The far link, between hosts under different switches: a ping-pong from rank 0 to the first rank under the next
  # switch, once per cluster (the 8-rank sweep above stays under one switch).
  local far=() per_switch
  per_switch="$(sed -n 's/.*topo_parameters="2;\([0-9]*\),.*/\1/p' "$PLATFORM_DIR/$platform.xml")"
  if [ "$link" = inter ] && [ -n "$per_switch" ] && [ "$(wc -l <"$PLATFORM_DIR/hosts-$platform.txt")" -gt "$per_switch" ]; then
    smpi_run "$platform" $((per_switch + 1)) "$dir/pingpong-far.log" pingpong --peer "$per_switch" --max-bytes 16M \
      --csv "$dir/pingpong-far.csv"
    far=(--far-pingpong "$dir/pingpong-far.csv" --hosts-per-switch "$per_switch")
  fi
  python3 "$GRADSYNC_ROOT/bench/cluster/fit_cost_model.py" --pingpong "$dir/pingpong.csv" --membw "$out/membw.txt" \
    --allreduce "$dir/fit.csv" --link-gbps "${gbps:-1}" --out "$dir/model_fit" --tuning-out "$file" --link "$link" \
    --cost-model-bin "$host_bin/cost_model" "${far[@]}" >"$dir/model_fit.log" 2>&1 || true
  grep -q "^${link}_alpha_us" "$file" 2>/dev/null || die "scale: no $link link from the fit on $platform: see $dir/model_fit.log"
  # The same fit with no reduction cost, the model of what this sweep charges (scale_report.py --comm-tuning): with
  # gamma measured on this CPU in the model but not in the simulation, the fit bends beta to make up for it.
  python3 "$GRADSYNC_ROOT/bench/cluster/fit_cost_model.py" --pingpong "$dir/pingpong.csv" --gamma-ns-per-byte 0 \
    --allreduce "$dir/fit.csv" --link-gbps "${gbps:-1}" --out "$dir/model_fit_comm" --tuning-out "${file%.txt}-comm.txt" \
    --link "$link" --cost-model-bin "$host_bin/cost_model" "${far[@]}" >"$dir/model_fit_comm.log" 2>&1 || true
}

# links_of TUNING: the links a tuning file describes ("inter intra "), to tell a complete fit from a partial one.
links_of() { sed -n 's/^\([a-z]*\)_alpha_us.*/\1/p' "$1" | sort | tr '\n' ' '; }

for p in $platforms; do
  mkdir -p "$out/$p"
  if [ -n "$only" ] && [ "$only" != mpich ]; then  # rows to replace: every file there before anything changes
    for np in $nps; do
      [ "$np" -gt "$(wc -l <"$PLATFORM_DIR/hosts-$p.txt")" ] || [ -s "$out/$p/np$np.csv" ] ||
        die "scale --methods: no $out/$p/np$np.csv to replace rows in (run the full sweep first)"
    done
  fi
  commit="$(git -C "$GRADSYNC_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  if [ -z "$only" ]; then
    results_header "scripts/simulate.sh scale --platforms $p (commit $commit)" >"$out/$p/host.txt"
  else
    results_header "then --nps \"$nps\" --methods $only${tuning:+ --tuning $tuning} (commit $commit)" >>"$out/$p/host.txt"
  fi
  per_host=1
  [[ "$p" != *-8pn ]] || per_host=8
  methods=ring,rd,rhd,auto,mpi
  [ "$per_host" = 1 ] || methods=ring,rd,rhd,hier,auto,mpi
  t="$tuning"
  if [ -z "$t" ] && [ -n "$only" ] && [[ ",$only," != *,auto,* ]]; then
    t="$out/$p/tuning.txt"  # nothing to choose: the folder's fit stays
    [ -f "$t" ] || die "scale --methods $only: no $t (run the full sweep first, or give --tuning)"
  elif [ -z "$t" ]; then
    # What a user does on a new cluster: a ping-pong and one small sweep per link, fitted
    # (bench/cluster/fit_cost_model.py). Across hosts one rank per host (on 8-rank hosts, the 1-rank twin of the
    # platform: the same links), and on 8-rank hosts also within one host.
    t="$out/$p/tuning.txt"
    rm -f "$t" "${t%.txt}-comm.txt"
    calibrate inter "${p/-8pn/-1pn}" "$out/$p" "$t"
    [ "$per_host" = 1 ] || calibrate intra "$p" "$out/$p/intra" "$t"
  fi
  for np in $nps; do
    [ "$np" -le "$(wc -l <"$PLATFORM_DIR/hosts-$p.txt")" ] || continue
    at_np="$methods" big=() narrowed=""
    if [ "$np" -gt 256 ]; then
      at_np="${methods/ring,/}" big=(--shared-buffers)
      # auto chooses among the methods simulated here (NCCL_ALGO's way): a near-tied ring would cost hours.
      narrowed="$(tr , '\n' <<<"$at_np" | grep -v -x -e auto -e mpi | paste -sd,)"
    fi
    # With --methods, only those of this p's methods, their rows replacing the old ones (auto's candidates above
    # stay what the full sweep simulates).
    [ -z "$only" ] || at_np="$(tr , '\n' <<<"$at_np" | { grep -x -F -f <(tr , '\n' <<<"$only") || true; } | paste -sd, -)"
    if [ -n "$at_np" ]; then
      csv="$out/$p/np$np.csv"
      [ -z "$only" ] || csv="$out/$p/np$np.part.csv"
      # The memory cap is for SMPI's own MPI_Allreduce (private temporaries); shared buffers need none.
      max="$(fitting_bytes "$np" 1)"
      [ "${#big[@]}" = 0 ] || [[ ",$at_np," == *,mpi,* ]] || max="$top_bytes"
      GRADSYNC_AUTO_METHODS="$narrowed" GRADSYNC_TUNING="$t" SELECTOR=ompi \
        smpi_run "$p" "$np" "$out/$p/np$np${only:+-$only}.log" bench_allreduce --methods "$at_np" "${sweep[@]}" \
        "${big[@]}" --max-bytes "$max" --csv "$csv"
      if [ -n "$only" ]; then
        # method,np,...: the old file's rows of other methods, then the new rows.
        awk -F, -v redone="$at_np" 'BEGIN { n = split(redone, m, ","); for (i = 1; i <= n; i++) skip[m[i]] = 1 }
          FILENAME == ARGV[1] { if (!($1 in skip)) print; next } FNR > 1' "$out/$p/np$np.csv" "$csv" >"$csv.merged"
        mv "$csv.merged" "$out/$p/np$np.csv"
        rm -f "$csv"
      fi
    fi
    [ -z "$only" ] || [[ ",$only," == *,mpich,* ]] || continue
    SELECTOR=mpich smpi_run "$p" "$np" "$out/$p/np$np-mpich.log" bench_allreduce --methods mpi "${sweep[@]}" \
      "${big[@]}" --max-bytes "$(fitting_bytes "$np" 4)" --csv "$out/$p/np$np-mpich.csv"
  done
  # The gamma = 0 fit is a second view: checked only when it gave every link auto's tuning has.
  comm=()
  if [ -f "${t%.txt}-comm.txt" ] && [ "$(links_of "${t%.txt}-comm.txt")" = "$(links_of "$t")" ]; then
    comm=(--comm-tuning "${t%.txt}-comm.txt")
  elif [ -z "$tuning" ]; then
    say "scale: no complete gamma = 0 fit for $p (see model_fit_comm.log): scale.md checks auto's tuning only"
  fi
  python3 "$SIM_DIR/scale_report.py" --platform "$p" --platform-dir "$PLATFORM_DIR" --dir "$out/$p" --tuning "$t" \
    --ranks-per-host "$per_host" --cost-model-bin "$host_bin/cost_model" "${comm[@]}"
done
