#!/usr/bin/env bash
# ctest (label cluster): an emulated 4-host cluster at 1 Gbit/s (bench/cluster/cluster.sh), the ring, the
# parameter server and MPI_Allreduce across it with every row checked exactly (bench_allreduce's #wrong column
# must be 0 and its exit status 0), then teardown with nothing left behind: no namespace of the test's, and the
# root namespace's links exactly as before.
# Exit status 0 passed, 1 failed, 77 skipped (not root, or no network namespaces here; ctest reports "Skipped").
# Usage: bench/cluster/cluster_test.sh [BIN_DIR]   (default build/bin)
# The test's cluster has its own prefix (gt), state folder and subnet, so a benchmark cluster (gs) is untouched.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="${1:-$HERE/../../build/bin}"
export GS_CLUSTER_PREFIX=gt GS_CLUSTER_SUBNET=10.99.1 GS_CLUSTER_STATE=/run/gradsync-cluster-test
CLUSTER="$HERE/../../bench/cluster/cluster.sh"
source "$HERE/../../scripts/mpi.sh"
mpi_launcher "$BIN/.." || exit 1   # $GRADSYNC_MPIEXEC from ctest, else the tree's own
export GRADSYNC_MPIEXEC="$MPIEXEC"
HOSTS=4
RUN_LIMIT_S=60

TEST=cluster_test
# shellcheck source=tests/cluster/test_lib.sh
source "$HERE/test_lib.sh"
why="$("$CLUSTER" check 2>&1)" || skip "$why"
[ -x "$BIN/bench_allreduce" ] || fail "$BIN/bench_allreduce is missing (build first)"

root_links() { ip -o link show | awk -F': ' '{print $2}' | sort; }
links_before="$(root_links)"
"$CLUSTER" down >/dev/null 2>&1 || true   # a previous run of this test that was killed

teardown() {
  cluster_gone || return 1
  local links_after
  links_after="$(root_links)"
  [ "$links_before" = "$links_after" ] || {
    printf 'cluster_test: FAIL: root namespace links changed:\n%s\n' "$(diff <(echo "$links_before") <(echo "$links_after"))" >&2
    return 1
  }
  return 0
}
status=0
trap 'teardown || status=1; exit $status' EXIT
trap 'status=130; exit' INT TERM

"$CLUSTER" up "$HOSTS" --rate 1gbit || { status=1; fail "cluster.sh up failed"; }
# launch NAME EXPECT [MPIRUN_ARGS...] -- CMD...: one bounded cluster run; sets out and rc. A run that failed without
# printing anything matching EXPECT never started: Open MPI's rsh launch into namespaces occasionally hangs
# before MPI_Init with one daemon missing (the first launch after `up` included). That is the launcher, not a collective, so it is retried up to twice, loudly; a third silent hang
# in a row fails the test.
launch() {
  local name="$1" expect="$2" attempt
  shift 2
  for attempt in 1 2 3; do
    rc=0
    out="$(timeout -k 10 "$RUN_LIMIT_S" "$CLUSTER" run "$@" 2>&1)" || rc=$?
    # Success, or a failure of the job itself (it printed what it was): no retry. Open MPI's own startup
    # timeout may end a hung launch with another exit status than timeout's 124.
    if [ "$rc" -eq 0 ] || echo "$out" | grep -q "$expect"; then return 0; fi
    echo "[$name] no output (exit $rc): the launch failed before the job started (attempt $attempt of 3)"
  done
}

run_bench() {  # NAME [MPIRUN_ARGS...] -- BENCH_ARGS...
  local name="$1"
  shift
  launch "$name" "bench_allreduce:" "$@"
  echo "$out" | sed "s/^/[$name] /"
  last_out="$out"
  [ "$rc" -eq 0 ] || { status=1; fail "$name: exit status $rc$( [ "$rc" -eq 124 ] && echo " (out of time)")"; }
  # Rows are "method np bytes count chunk time algbw busbw wrong": every row's #wrong must be 0.
  local rows bad
  rows="$(echo "$out" | awk '$1 ~ /^(ring|ps|mpi|mpi-ring)$/ && NF == 9' | wc -l)"
  bad="$(echo "$out" | awk '$1 ~ /^(ring|ps|mpi|mpi-ring)$/ && NF == 9 && $9 != 0' | wc -l)"
  [ "$rows" -gt 0 ] || { status=1; fail "$name: no result rows"; }
  [ "$bad" -eq 0 ] || { status=1; fail "$name: $bad row(s) with wrong elements"; }
}
# Every rank must be in its own namespace: each reports the address of its one interface.
launch probe '^10\.99\.1\.' -- sh -c 'ip -4 -o addr show dev gt0 | awk "{print \$4}"'
addrs="$(echo "$out" | sort -u)"
[ "$(echo "$addrs" | grep -c '^10\.99\.1\.')" -eq "$HOSTS" ] || { status=1; fail "ranks are not one per host: $addrs"; }
# Sizes from 4 bytes (fewer elements than ranks) to 1 MiB + 4 (not a multiple of the ring's segments).
sizes=(--min-bytes 4 --max-bytes 1M --step-factor 32 --iters 2 --warmup 1 --reps 1)
run_bench ring_ps_mpi -- "$BIN/bench_allreduce" --methods ring,ps,mpi "${sizes[@]}"
# Each rank is on its own host here, so the ring's automatic chunk must have chosen the network size (16 MiB).
[ "$(echo "$last_out" | awk '$1 == "ring" && NF == 9 && $5 != 16777216' | wc -l)" -eq 0 ] \
  || { status=1; fail "ring_ps_mpi: the ring's automatic chunk is not the 16 MiB network size across hosts"; }
run_bench odd_size -- "$BIN/bench_allreduce" --methods ring,ps,mpi --min-bytes 1048580 --max-bytes 1048580 --iters 1 \
  --warmup 0 --reps 1
forced_ring_flags
run_bench mpi_ring "${FORCED_RING[@]}" -- \
  "$BIN/bench_allreduce" --methods mpi "${sizes[@]}"
echo "cluster_test: PASS: ring, ps and MPI_Allreduce correct across $HOSTS namespace-hosts"
