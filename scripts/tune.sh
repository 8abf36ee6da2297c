#!/usr/bin/env bash
# Fits auto's cost model (collectives/cost_model.hpp) to this machine, or with --hostfile to the hosts a job will run
# on, and writes the tuning file auto reads.
# Usage: scripts/tune.sh [--hostfile FILE] [--mpirun-args "ARGS"] [--out TUNING_FILE] [--results DIR]
#                        [--max-bytes 64M] [--reps 5] [--link-gbps G] [--hosts-per-switch N] [--mpi openmpi|mpich]
#
# On this host (about half a minute): a ping-pong between two ranks bound to two cores and the reduction kernel
# (bench_membw on one rank) give the file's intra lines. Without --hostfile that is all, and the inter lines a
# cluster fit wrote into the file before are kept.
# With --hostfile FILE, one rank on each of its hosts, every run bounded in time:
#   1. a probe: a rank on every host, which checks the binaries are there (a host that cannot be reached fails
#      here with its name and the launcher's error, within two minutes at most, never a hang);
#   2. a ping-pong between the first two hosts: the inter link's alpha and beta;
#   3. with --hosts-per-switch N, a ping-pong between the first host and host N+1 (the first under the second
#      switch: list the hosts switch by switch): the far link;
#   4. an allreduce sweep across all the hosts, the one-level modelled methods and MPI_Allreduce from 4 B to
#      --max-bytes: what auto's inter link is calibrated on (a collective's step pays more than one message);
#   5. bench/cluster/fit_cost_model.py on all of it: the inter (and far) lines, beside the intra ones.
# A few minutes on 1 Gbit/s links (the 64 MiB sweep dominates). FILE is the launcher's own: Open MPI's "host
# slots=N" lines, or with an MPICH tree Hydra's "host:N"; # starts a comment. Run it on the first host of FILE, where
# rank 0 runs: only rank 0's tuning file counts (auto sends its parameters to every rank).
#   --out FILE          the tuning file (default $GRADSYNC_TUNING if set, else ~/.config/gradsync/tuning.txt: where
#                       train and the benchmarks look); replaced only when every step succeeded
#   --results DIR       the results folder (default results/tune-DATE)
#   --mpirun-args ARGS  launcher flags for the runs across hosts, split at spaces: the transports and network the
#                       jobs will use ("--mca btl tcp,self --mca btl_tcp_if_include 10.0.0.0/24", the eager limits);
#                       the runs on this host keep the launcher's defaults
#   --max-bytes SIZE    the sweep's largest allreduce (default 64M, at least 2M); the ping-pongs stop at 16M or SIZE
#   --reps R            repetitions of every size, median taken (default 5)
#   --link-gbps G       the links' nominal rate, for the fit report's efficiency line only (default 1)
#   --hosts-per-switch N  hosts under one switch, with hosts under more than one (needs more than N hosts)
#   --mpi openmpi|mpich the build tree, build/ (default) or build-mpich/ (scripts/test.sh's; BUILD_DIR wins)
# Every run has a time limit; GRADSYNC_TIMEOUT (seconds) replaces them all.
# Writes to DIR: tuning.txt (the file installed at --out), pingpong_intra.csv and membw.txt (this host),
# fit_intra/ (fit_cost_model.py's report.txt, params.csv), choices.txt (auto's choice and every candidate's
# prediction per size, from the written file through build/bin/cost_model), host.txt, README.md, logs/tune/; with
# --hostfile also hosts (FILE as given), pingpong.csv, pingpong_far.csv, allreduce.csv (bench_allreduce --csv) and
# fit/ (the fit across hosts, with model_vs_measured.csv: how well the model matches the sweep).
set -euo pipefail
user_build_dir="${BUILD_DIR:-}"
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

PROBE_S=60           # a launch on every host: ssh and a daemon each
PINGPONG_S=300
SWEEP_S=2400         # 64 MiB x 4 methods x (iters + warmup) x reps at 1 Gbit/s is a minute on two hosts
MAX_PINGPONG=$((16 << 20))

hostfile=""
mpirun_args=""
tuning="${GRADSYNC_TUNING:-${HOME:-/root}/.config/gradsync/tuning.txt}"
out=""
max_bytes=64M
reps=5
link_gbps=1
per_switch=""
mpi=openmpi
parse_flags tune.sh \
  "--hostfile hostfile" \
  "--mpirun-args mpirun_args" \
  "--out tuning" \
  "--results out" \
  "--max-bytes max_bytes match ^[0-9]+[KMG]?$ --max-bytes needs a size like 2M or 64M, got '%s'" \
  "--reps reps uint 1" \
  "--link-gbps link_gbps above 0 --link-gbps needs a rate in Gbit/s above 0, got '%s'" \
  "--hosts-per-switch per_switch uint 1" \
  "--mpi mpi match ^(openmpi|mpich)$ --mpi must be openmpi or mpich, got '%s'" \
  -- "$@"
[ "$mpi" = openmpi ] || [ -n "$user_build_dir" ] || { BUILD_DIR="$GRADSYNC_ROOT/build-mpich"; BIN="$BUILD_DIR/bin"; }
max_n="$(awk -v s="$max_bytes" 'BEGIN { u = substr(s, length(s)); n = s + 0
  print (u == "K" ? n * 1024 : u == "M" ? n * 1048576 : u == "G" ? n * 1073741824 : n) }')"
# The ping-pong's beta is fitted on messages of 1 MiB and more: it needs two of them.
[ "$max_n" -ge $((2 << 20)) ] || die "--max-bytes $max_bytes: at least 2M (the fit needs ping-pongs of 1M and 2M)"
[ -z "$per_switch" ] || [ -n "$hostfile" ] || die "--hosts-per-switch needs --hostfile"
[ -z "$hostfile" ] || [ -r "$hostfile" ] || die "--hostfile $hostfile: cannot read it"
need_bins pingpong bench_membw cost_model
[ -z "$hostfile" ] || need_bins bench_allreduce
command -v python3 >/dev/null || die "python3 is needed for the fit"
mpi_setup
read -ra cluster_args <<<"$mpirun_args"
if [ -n "$hostfile" ]; then
  hostfile="$(realpath "$hostfile")"
  hostfile_hosts "$hostfile" || exit 1   # it names the file and the line
  nhosts="${#HOSTFILE_HOSTS[@]}"
  [ "$nhosts" -ge 2 ] || die "--hostfile $hostfile names $nhosts host: the inter link needs two"
  [ -z "$per_switch" ] || [ "$nhosts" -gt "$per_switch" ] \
    || die "--hosts-per-switch $per_switch: $hostfile has $nhosts hosts, so none is under a second switch"
  hostfile_flags "$hostfile"
fi
[ -z "$out" ] || out="$(realpath -m "$out")"   # the ranks of other hosts write into it too
driver_results tune tuning.txt pingpong_intra.csv membw.txt choices.txt fit_intra
tuned="$out/tuning.txt"
limit_of() { echo "${GRADSYNC_TIMEOUT:-$1}"; }

failed=()  # check_run's list
# run_step NAME LIMIT_S CMD...: one bounded run, its output in $logs/NAME.log; a failure ends the script with the
# end of that log (the launcher's own lines name a host it could not reach or start a rank on).
run_step() {
  local name="$1" limit="$2" rc=0
  shift 2
  say "$name"
  run_limited "$limit" "$logs/$name.log" "$@" || rc=$?
  check_run "$name" "$rc" "$limit" "$logs/$name.log" && return 0
  # The launcher's own complaint (ssh's, naming the host) comes first, before its long box of possible causes.
  grep -v '^ *-*$' "$logs/$name.log" | awk '{ l[NR] = $0 } END { for (i = 1; i <= NR; i++)
    if (i <= 4 || i > NR - 8) print "    " l[i]; else if (i == 5) print "    ..." }' >&2
  exit_if_failed "run(s) failed; $tuning is unchanged"
}

# across NP CMD...: sets cmd, the launcher with one rank on each of the first NP hosts of the hostfile, running CMD.
across() {
  local np="$1" one
  shift
  case "$MPI_FLAVOUR" in mpich) one=(-ppn 1) ;; *) one=(--map-by ppr:1:node) ;; esac
  cmd=("$MPIEXEC" "${HOSTFILE_FLAGS[@]}" -n "$np" "${one[@]}" ${cluster_args[@]+"${cluster_args[@]}"} "$@")
}
# on_host HOST CMD...: sets cmd, the launcher with one rank on HOST alone.
on_host() {
  local where
  case "$MPI_FLAVOUR" in mpich) where=(-hosts "$1") ;; *) where=(--host "$1") ;; esac
  shift
  cmd=("$MPIEXEC" "${where[@]}" -n 1 ${cluster_args[@]+"${cluster_args[@]}"} "$@")
}

# What a rank of the probe runs: the binaries must be at this tree's path on every host.
# shellcheck disable=SC2016  # expanded by the rank's shell
PROBE=(sh -c 'for b in pingpong bench_allreduce; do [ -x "$0/$b" ] || { echo "$(hostname): $0/$b is missing"; exit 3; }; done; echo "rank on $(hostname)"' "$BIN")

# probe_hosts: a rank on every host at once; when that fails, one launch per host, all at once, so the message names
# the hosts that did not answer and not only the launcher's first complaint.
probe_hosts() {
  local rc=0 limit i pids=() bad=()
  limit="$(limit_of "$PROBE_S")"
  say "probe: one rank on each of $nhosts hosts (${HOSTFILE_HOSTS[*]})"
  across "$nhosts" "${PROBE[@]}"
  run_limited "$PROBE_S" "$logs/probe.log" "${cmd[@]}" || rc=$?
  [ "$rc" -ne 0 ] || return 0
  for i in "${!HOSTFILE_HOSTS[@]}"; do
    on_host "${HOSTFILE_HOSTS[$i]}" "${PROBE[@]}"
    run_limited "$PROBE_S" "$logs/probe-${HOSTFILE_HOSTS[$i]}.log" "${cmd[@]}" &
    pids[i]=$!
  done
  for i in "${!pids[@]}"; do
    rc=0
    wait "${pids[$i]}" || rc=$?
    [ "$rc" -eq 0 ] && continue
    bad+=("${HOSTFILE_HOSTS[$i]} ($([ "$rc" -eq 124 ] && echo "no answer within ${limit}s" || echo "exit status $rc"): $(grep -v '^ *$' "$logs/probe-${HOSTFILE_HOSTS[$i]}.log" | grep -iv -- '^-*$' | head -n 2 | tr '\n' ' '))")
  done
  [ "${#bad[@]}" -gt 0 ] || bad=("every host answered alone, but not all at once: $(tail -n 5 "$logs/probe.log" | tr '\n' ' ')")
  printf 'error: cannot start ranks on every host of %s:\n' "$hostfile" >&2
  printf '  %s\n' "${bad[@]}" >&2
  die "nothing measured; $tuning is unchanged (logs: $logs)"
}

# this_is_first_host: whether this machine is the hostfile's first host (by name, or by an address of its own).
this_is_first_host() {
  local first="${HOSTFILE_HOSTS[0]}" addrs
  case "$first" in localhost|"$(hostname)"|"$(hostname -s 2>/dev/null)"|"$(hostname -f 2>/dev/null)") return 0 ;; esac
  addrs="$(ip -o addr show 2>/dev/null | awk '{ sub(/\/.*/, "", $4); print $4 }')"
  getent ahosts "$first" 2>/dev/null | awk '{ print $1 }' | grep -qxF -f <(echo "$addrs")
}

# --- this host: the intra link and the reduction kernel --------------------------------------------------------
if [ -n "$hostfile" ]; then
  cp "$hostfile" "$out/hosts"
  this_is_first_host || say "warning: this machine is not ${HOSTFILE_HOSTS[0]}, the first host of $hostfile: the intra" \
    "link is this machine's, and rank 0 reads its tuning file there (copy $tuning to it, or share the folder)"
  probe_hosts
else
  # The inter lines of an earlier cluster fit are kept: this run measures only the intra link.
  [ ! -f "$tuning" ] || cp "$tuning" "$tuned"
fi
mpirun_flags 2
run_step pingpong_intra 300 "$MPIEXEC" -n 2 "${MPIRUN_FLAGS[@]}" "$BIN/pingpong" --min-bytes 0 \
  --max-bytes "$((max_n < MAX_PINGPONG ? max_n : MAX_PINGPONG))" --step-factor 2 --reps "$reps" \
  --csv "$out/pingpong_intra.csv"
mpirun_flags 1
run_step membw 120 "$MPIEXEC" -n 1 "${MPIRUN_FLAGS[@]}" "$BIN/bench_membw" --bytes 64M
cp "$logs/membw.log" "$out/membw.txt"
fit=(python3 "$GRADSYNC_ROOT/bench/cluster/fit_cost_model.py" --membw "$out/membw.txt" --cost-model-bin "$BIN/cost_model"
     --tuning-out "$tuned")
# fit_cost_model.py exits 1 when a model check fails (its report lists them): the parameters are still written.
"${fit[@]}" --pingpong "$out/pingpong_intra.csv" --out "$out/fit_intra" --link intra >"$logs/fit_intra.log" 2>&1 \
  || grep -q "FAIL" "$out/fit_intra/report.txt" 2>/dev/null || die "the fit failed: $(tail -n 5 "$logs/fit_intra.log")"

# --- across the hosts: the inter link (and the far one) --------------------------------------------------------
if [ -n "$hostfile" ]; then
  pp=(--min-bytes 0 --max-bytes "$((max_n < MAX_PINGPONG ? max_n : MAX_PINGPONG))" --step-factor 2 --reps "$reps")
  across 2 "$BIN/pingpong" "${pp[@]}" --csv "$out/pingpong.csv"
  run_step pingpong "$PINGPONG_S" "${cmd[@]}"
  far=()
  if [ -n "$per_switch" ]; then
    across $((per_switch + 1)) "$BIN/pingpong" "${pp[@]}" --peer "$per_switch" --csv "$out/pingpong_far.csv"
    run_step pingpong_far "$PINGPONG_S" "${cmd[@]}"
    far=(--far-pingpong "$out/pingpong_far.csv" --hosts-per-switch "$per_switch")
  fi
  # The one-level methods the cost model predicts (what auto chooses among with one rank a host), from the registry.
  modelled="$("$BIN/bench_allreduce" --list-methods | awk -F'\t' '$2 ~ / modelled/ && $2 !~ / two-level/ {print $1}' |
    paste -sd,)"
  across "$nhosts" "$BIN/bench_allreduce" --methods "$modelled,mpi" --min-bytes 4 --max-bytes "$max_n" \
    --step-factor 4 --iters 3 --warmup 1 --reps "$reps" --csv "$out/allreduce.csv"
  run_step allreduce "$SWEEP_S" "${cmd[@]}"
  "${fit[@]}" --pingpong "$out/pingpong.csv" --allreduce "$out/allreduce.csv" --out "$out/fit" --link inter \
    --link-gbps "$link_gbps" ${far[@]+"${far[@]}"} >"$logs/fit.log" 2>&1 \
    || grep -q "FAIL" "$out/fit/report.txt" 2>/dev/null || die "the fit failed: $(tail -n 5 "$logs/fit.log")"
  sed -n '/^auto.s link, calibrated/p; /^Pairwise exchanges/p; /^Warning/p' "$out/fit/report.txt" >&2
  grep -q '^inter_alpha_us' "$tuned" || die "the fit wrote no inter link into $tuned (log: $logs/fit.log)"
fi

# --- what auto will choose, read back through the C++ parser ---------------------------------------------------
if [ -n "$hostfile" ]; then layout=(--np "$nhosts" --ranks-per-host 1); layout_text="$nhosts hosts, one rank each"
else layout=(--np "$(cores)"); layout_text="$(cores) ranks of this host"; fi
"$BIN/cost_model" --tuning "$tuned" "${layout[@]}" --min-bytes 4 --max-bytes "$max_n" --step-factor 4 \
  >"$logs/cost_model.csv" 2>"$logs/cost_model.log" || die "cost_model refused $tuned: $(cat "$logs/cost_model.log")"
# auto's choice is the candidate whose prediction is its own; ties go by the registry's order, the CSV's.
{
  printf "# auto's choices on %s, from %s (build/bin/cost_model; the machine: host.txt)\n" "$layout_text" "$tuned"
  awk -F, 'NR == 1 { next } $1 == "auto" { auto[$4] = $5; sizes[++n] = $4; next }
    { t[$4] = t[$4] sprintf("%s%s %.1f", t[$4] == "" ? "" : ", ", $1, $5); p[$1, $4] = $5
      if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
    END { printf "%12s %8s  %s\n", "bytes", "auto", "predicted (us)"
      for (i = 1; i <= n; i++) { s = sizes[i]; c = "?"
        for (j = k; j >= 1; j--) if ((order[j], s) in p && p[order[j], s] == auto[s]) c = order[j]
        printf "%12s %8s  %s\n", s, c, t[s] } }' "$logs/cost_model.csv"
} >"$out/choices.txt"
cat "$out/choices.txt" >&2

mkdir -p "$(dirname "$tuning")"
cp "$tuned" "$tuning.tmp.$$" && mv "$tuning.tmp.$$" "$tuning"
cat "$tuning"
say "results in $out"
say "auto's tuning file: $tuning"
[ -z "${GRADSYNC_TUNING:-}" ] || [ "$GRADSYNC_TUNING" = "$tuning" ] \
  || say "warning: auto reads GRADSYNC_TUNING=$GRADSYNC_TUNING in this shell, not $tuning"
