#!/usr/bin/env bash
# ctest (label cluster): scripts/tune.sh --hostfile, the one command that fits auto to a network, run as a user runs
# it on real hosts: on an emulated 2-host cluster with an ssh server in each host (bench/cluster/cluster.sh up
# --ssh), from host 0, Open MPI's mpirun starting the remote ranks over ssh, with tiny settings (sizes up to 2 MiB,
# one repetition).
# Checks: the tuning file at --out holds both links and gamma, and the results folder the ping-pong and the sweep
# on 2 ranks and the fit report; host 1's sshd logged key logins during the run (its ranks came over ssh); auto
# reads that file: bench_allreduce --methods auto across the two hosts with GRADSYNC_TUNING pointing at it names
# the file, and its predictions and choice at every size are those build/bin/cost_model computes from the file
# for 2 hosts of one rank. Then with host 1's link cut, the command fails within a minute and a half, names host 1
# and leaves its --out unwritten. Teardown leaves no namespace or sshd behind.
# Exit status 0 passed, 1 failed, 77 skipped (not root, no network namespaces, no sshd, or an MPICH tree: the ranks
# are started with Open MPI's ssh launcher).
# Usage: tests/cluster/tune_test.sh [BIN_DIR]   (default build/bin)
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BIN="$(cd "${1:-$ROOT/build/bin}" && pwd)" || { echo "tune_test: FAIL: no folder ${1:-$ROOT/build/bin}" >&2; exit 1; }
export GS_CLUSTER_PREFIX=gu GS_CLUSTER_SUBNET=10.99.3 GS_CLUSTER_STATE=/run/gradsync-cluster-tune
CLUSTER="$ROOT/bench/cluster/cluster.sh"
HOSTS=2
RUN_LIMIT_S=300   # the tiny fit: about a minute here
FAIL_LIMIT_S=90   # the failing run: the probe's minute, and the per-host probes' at once

TEST=tune_test
# shellcheck source=tests/cluster/test_lib.sh
source "$HERE/test_lib.sh"
source "$ROOT/scripts/mpi.sh"
mpi_launcher "$BIN/.." || exit 1
[ "$MPI_FLAVOUR" = openmpi ] || skip "the ranks are started with Open MPI's ssh launcher; this tree is built against $MPI_FLAVOUR"
why="$("$CLUSTER" check 2>&1)" || skip "$why"
[ -x /usr/sbin/sshd ] || skip "/usr/sbin/sshd is missing (scripts/setup.sh installs openssh-server)"
command -v ssh >/dev/null || skip "the ssh client is missing (apt-get install openssh-client)"
for b in pingpong bench_membw bench_allreduce cost_model; do [ -x "$BIN/$b" ] || fail "$BIN/$b is missing (build first)"; done

"$CLUSTER" down >/dev/null 2>&1 || true   # a previous run of this test that was killed
work="$(mktemp -d /tmp/gradsync-tune-test.XXXXXX)"
ssh_dir=""
teardown() {
  rm -rf "$work"
  cluster_gone || return 1
  [ -z "$ssh_dir" ] || [ ! -e "$ssh_dir" ] || { printf 'tune_test: FAIL: keys left in %s\n' "$ssh_dir" >&2; return 1; }
  return 0
}
status=0
trap 'teardown || status=1; exit $status' EXIT
trap 'status=130; exit' INT TERM
failed() { status=1; fail "$@"; }

"$CLUSTER" up "$HOSTS" --rate 1gbit --ssh || failed "cluster.sh up --ssh failed"
ssh_dir="$(cat "$GS_CLUSTER_STATE/ssh_dir")"
logins_before="$(grep -c "Accepted publickey" "$ssh_dir/sshd-1.log")"
awk '{ print $1 " slots=1" }' "$GS_CLUSTER_STATE/hosts" >"$work/hosts"
host1="$(awk 'NR == 2 { print $1 }' "$GS_CLUSTER_STATE/hosts")"
# in_host0 LIMIT CMD...: CMD in host 0's namespace, Open MPI's remote ranks started over ssh with the cluster's keys
# (what ~/.ssh/config gives on real hosts), idle ranks yielding (the hosts share this machine's cores).
in_host0() {
  local limit="$1"
  shift
  timeout -k 10 "$limit" ip netns exec gu-h0 env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    OMPI_MCA_plm_rsh_agent=ssh OMPI_MCA_plm_rsh_args="-F $GS_CLUSTER_STATE/ssh_config" BUILD_DIR="$BIN/.." "$@"
}
# The network's flags, as a user gives them; unbound ranks that yield when idle, since both hosts' ranks share this
# machine's cores.
net_args="--mca btl tcp,self --mca btl_tcp_if_include $GS_CLUSTER_SUBNET.0/24 --bind-to none --mca mpi_yield_when_idle 1"
tune=(bash "$ROOT/scripts/tune.sh" --hostfile "$work/hosts" --mpirun-args "$net_args" --max-bytes 2M --reps 1)

echo "tune_test: scripts/tune.sh --hostfile on $HOSTS hosts, from host 0"
rc=0
in_host0 "$RUN_LIMIT_S" "${tune[@]}" --out "$work/tuning.txt" --results "$work/results" >"$work/tune.log" 2>&1 || rc=$?
sed 's/^/[tune] /' "$work/tune.log"
[ "$rc" -eq 0 ] || failed "tune.sh exited $rc$( [ "$rc" -eq 124 ] && echo " (out of time)")"
for key in intra_alpha_us intra_beta_ns_per_byte inter_alpha_us inter_beta_ns_per_byte gamma_ns_per_byte; do
  grep -Eq "^$key = [0-9.]+$" "$work/tuning.txt" || failed "$work/tuning.txt has no '$key = number' line"
done
cmp -s "$work/tuning.txt" "$work/results/tuning.txt" || failed "--out and the results folder's tuning.txt differ"
for f in pingpong_intra.csv membw.txt pingpong.csv allreduce.csv fit/report.txt choices.txt hosts host.txt; do
  [ -s "$work/results/$f" ] || failed "the results folder has no $f"
done
# Every sweep row on 2 ranks, each with its agreement check clean.
awk -F, 'NR > 1 { n++; if ($2 != 2 || $9 != 0) bad++ } END { exit !(n > 0 && !bad) }' "$work/results/allreduce.csv" \
  || failed "allreduce.csv: no rows, or rows not on 2 ranks or with wrong elements"
[ "$(grep -c "Accepted publickey" "$ssh_dir/sshd-1.log")" -gt "$logins_before" ] \
  || failed "host 1's sshd logged no key login during the run: its ranks were not started over ssh"

# auto reads the file: its report of each choice names the file, and its predictions are cost_model's from it.
echo "tune_test: bench_allreduce --methods auto with GRADSYNC_TUNING=$work/tuning.txt"
sizes=(--min-bytes 4 --max-bytes 1M --step-factor 16)
rc=0
# shellcheck disable=SC2086  # net_args is a list of flags
in_host0 120 "$MPIEXEC" --hostfile "$work/hosts" -n 2 --map-by ppr:1:node $net_args -x GRADSYNC_TUNING="$work/tuning.txt" \
  "$BIN/bench_allreduce" --methods auto "${sizes[@]}" --iters 1 --warmup 0 --reps 1 >"$work/auto.log" 2>&1 || rc=$?
sed 's/^/[auto] /' "$work/auto.log"
[ "$rc" -eq 0 ] || failed "bench_allreduce --methods auto exited $rc"
"$BIN/cost_model" --tuning "$work/tuning.txt" --np 2 --ranks-per-host 1 "${sizes[@]}" >"$work/model.csv" \
  || failed "cost_model refused $work/tuning.txt"
# "auto: 4 bytes on 2 ranks (1 per host): rd (predicted ring 61.2 us, rd 30.6 us, rhd 61.2 us; FILE)". Predictions
# agree to the 0.1 us auto prints; the choice is cost_model's: the first method, in the CSV's (the registry's) order,
# whose prediction is the auto row's.
awk -v file="$work/tuning.txt" '
  FNR == NR { if (FNR == 1) next
              if ($1 != "auto") { p[$1, $4] = $5; order[$4] = order[$4] " " $1 }
              else { sizes[$4] = 1; n = split(order[$4], m, " "); for (i = 1; i <= n && !($4 in c); i++) if (p[m[i], $4] == $5) c[$4] = m[i] }
              next }
  /^auto: [0-9]+ bytes on 2 ranks \(1 per host\): / {
    bytes = $2; chosen = $10; seen[bytes] = 1
    if (index($0, "; " file ")") == 0) { print "not from " file ": " $0; bad = 1 }
    line = $0; sub(/.*\(predicted /, "", line); sub(/;.*/, "", line); n = split(line, parts, ", ")
    for (i = 1; i <= n; i++) { split(parts[i], w, " ")
      if (!((w[1], bytes) in p) || (w[2] - p[w[1], bytes]) ^ 2 > 0.06 ^ 2) {
        print bytes " B: auto predicts " w[1] " " w[2] " us, cost_model " p[w[1], bytes]; bad = 1 } }
    if (chosen != c[bytes]) { print bytes " B: auto chose " chosen ", cost_model says it chooses " c[bytes]; bad = 1 } }
  END { for (s in sizes) if (!(s in seen)) { print "no auto line for " s " B"; bad = 1 }; exit bad }' \
  FS=, "$work/model.csv" FS=' ' "$work/auto.log" >"$work/auto_check.txt" \
  || failed "auto did not use $work/tuning.txt: $(cat "$work/auto_check.txt")"

# An unreachable host: the command fails fast, names it, and writes no tuning file.
"$CLUSTER" cut 1 >/dev/null || failed "cluster.sh cut 1 failed"
echo "tune_test: host 1 ($host1) cut off; the same command"
rc=0 t0=$SECONDS
in_host0 $((FAIL_LIMIT_S + 30)) "${tune[@]}" --out "$work/cut.txt" --results "$work/results-cut" >"$work/cut.log" 2>&1 \
  || rc=$?
took=$((SECONDS - t0))
sed 's/^/[cut] /' "$work/cut.log"
[ "$rc" -ne 0 ] || failed "tune.sh succeeded with host 1 cut off"
{ [ "$rc" -ne 124 ] && [ "$took" -le "$FAIL_LIMIT_S" ]; } || failed "tune.sh took ${took}s to fail (limit ${FAIL_LIMIT_S}s)"
{ grep -q "cannot start ranks on every host" "$work/cut.log" && grep -qF "$host1 (" "$work/cut.log"; } \
  || failed "tune.sh's error does not name host 1 ($host1) as the host it could not start a rank on"
[ ! -e "$work/cut.txt" ] || failed "tune.sh wrote $work/cut.txt although it measured nothing across hosts"
echo "tune_test: PASS: scripts/tune.sh --hostfile fitted both links over ssh in ${SECONDS}s, auto read the file, and an unreachable host failed in ${took}s"
