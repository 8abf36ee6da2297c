# Shared by the emulated-cluster drivers (bench_cluster.sh, bench_overlap.sh, bench_algorithms.sh); sourced after
# scripts/common.sh. The driver sets $out (its results folder, with logs/ in it) before calling these.
CLUSTER="$GRADSYNC_ROOT/bench/cluster/cluster.sh"
failed=()

# The cluster comes down when the driver ends: normally, on a failed run (set -e) or on Ctrl-C.
teardown_cluster_on_exit() {
  trap '"$CLUSTER" down >/dev/null 2>&1 || say "warning: '"'"'$CLUSTER down'"'"' failed: run it by hand"' EXIT
  trap 'exit 130' INT TERM
}

# cluster_run NAME LIMIT_S [MPIRUN_ARGS...] -- CMD...: one bounded run on the cluster, its output in
# $out/logs/NAME.log; a failure (with "out of time" when it hit the limit) is added to $failed.
cluster_run() {
  local name="$1" limit="$2" rc=0
  shift 2
  say "$name"
  run_limited "$limit" "$out/logs/$name.log" "$CLUSTER" run "$@" || rc=$?
  [ "$rc" -eq 0 ] || failed+=("$name (exit $rc$( [ "$rc" -eq 124 ] && echo ", out of time"))")
  return 0
}
