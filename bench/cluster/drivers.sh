# Shared by the emulated-cluster drivers (bench_cluster.sh, bench_overlap.sh, bench_algorithms.sh), on top of
# scripts/common.sh, which it sources. cluster_results sets $out (the driver's results folder, with logs/ in it) for
# the others.
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"
CLUSTER_DIR="$GRADSYNC_ROOT/bench/cluster"
CLUSTER="$CLUSTER_DIR/cluster.sh"
failed=()
setting_list=()  # read_settings
extra=()         # setting_args

# The cluster comes down when the driver ends: normally, on a failed run (set -e) or on Ctrl-C.
teardown_cluster_on_exit() {
  at_exit cluster '"$CLUSTER" down >/dev/null 2>&1 || say "warning: '"'"'$CLUSTER down'"'"' failed: run it by hand"'
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

# cluster_results NAME FILE...: $out (default results/NAME-DATE), holding none of FILE... yet, with logs/ in it;
# made absolute, since the ranks on the namespace-hosts start elsewhere; and its host.txt (scripts/common.sh).
cluster_results() {
  local name="$1"
  shift
  out="${out:-$GRADSYNC_ROOT/results/$name-$(date +%Y%m%d-%H%M%S)}"
  refuse_existing "$out" "$@"
  mkdir -p "$out/logs"
  out="$(cd "$out" && pwd)"
  host_txt "$out" "$name (emulated hosts on this machine)"
}

# cluster_up UP_ARGS...: a fresh cluster (cluster.sh up UP_ARGS), torn down when the driver ends; cluster_down
# tears it down at the driver's normal end.
cluster_up() {
  teardown_cluster_on_exit
  "$CLUSTER" down >/dev/null 2>&1 || true
  "$CLUSTER" up "$@"
}
cluster_down() {
  "$CLUSTER" down
  drop_exit cluster
}

# absolute_mnist VAR [HINT]: the MNIST folder named by variable VAR (--data) must hold MNIST's four files, and VAR
# becomes its absolute path (remote ranks start elsewhere); HINT is added to the error.
absolute_mnist() {
  local -n dir="$1"
  local f
  for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
    [ -e "$dir/$f" ] || [ -e "$dir/$f.gz" ] \
      || die "--data $dir: $f is missing (scripts/fetch_mnist.sh fetches MNIST${2:+, $2})"
  done
  dir="$(cd "$dir" && pwd)"
}

# rate_gbps RATE: cluster.sh's --rate (1gbit, 100mbit, ...) in Gbit/s.
rate_gbps() { awk -v r="$1" 'BEGIN { v = r + 0; if (r ~ /mbit/) v /= 1000; else if (r ~ /kbit/) v /= 1e6; print v }'; }

# Open MPI's TCP settings the drivers measure under. Above btl_tcp_eager_limit (64 KiB by default) a message is sent
# by rendezvous: it waits for the receiver's clear-to-send, which on a busy link queues behind bulk data. eager4M
# sends every message of up to 4 MiB (the ring's 1 MiB chunks included) without that round trip. progress_thread:
# Open MPI's own thread moves TCP data in the background.
# read_settings LIST NAME...: the --settings LIST as the array setting_list, each one of NAME... (the settings this
# driver offers).
read_settings() {
  local list="$1" s names
  shift
  read -ra setting_list <<<"$list"
  printf -v names '%s, ' "$@"
  for s in "${setting_list[@]}"; do
    [[ " $* " == *" $s "* ]] || die "--settings: unknown Open MPI setting '$s' (${names%, })"
  done
}
# setting_args NAME: the mpirun arguments of setting NAME, as the array extra.
# shellcheck disable=SC2034  # extra is for the driver
setting_args() {
  local eager_args=(--mca btl_tcp_eager_limit 4194304 --mca btl_tcp_rndv_eager_limit 4194304
                    --mca btl_tcp_max_send_size 4194304)
  local thread_args=(--mca btl_tcp_progress_thread 1)
  case "$1" in
    default) extra=() ;;
    eager4M) extra=("${eager_args[@]}") ;;
    progress_thread) extra=("${thread_args[@]}") ;;
    eager4M_progress) extra=("${eager_args[@]}" "${thread_args[@]}") ;;
    *) die "unknown Open MPI setting '$1'" ;;
  esac
}

# exit_if_cluster_failed: with entries in $failed, lists them ("failed: ..." each) and exits with status 1.
exit_if_cluster_failed() {
  [ "${#failed[@]}" -eq 0 ] || { printf 'failed: %s\n' "${failed[@]}" >&2; exit 1; }
}

# slow_host_args HOSTS SLOW_HOST SLOW_RATE: a driver's --slow-host and --slow-rate (both or neither) as cluster.sh
# up's arguments, the array slow_args (empty without them), checked before the cluster comes up: SLOW_HOST one of
# the HOSTS hosts (0..HOSTS-1), SLOW_RATE a rate cluster.sh takes (100mbit, 1gbit, ...).
slow_args=()
# shellcheck disable=SC2034  # slow_args is for the driver
slow_host_args() {
  slow_args=()
  [ -n "$2$3" ] || return 0
  { [ -n "$2" ] && [ -n "$3" ]; } \
    || die "--slow-host and --slow-rate go together (e.g. --slow-host 3 --slow-rate 100mbit)"
  [[ $2 =~ ^[0-9]+$ ]] || die "--slow-host needs a host number, got '$2'"
  [ "$2" -lt "$1" ] || die "--slow-host $2: there is no host $2 among --hosts $1 (0 to $(($1 - 1)))"
  [[ ${3,,} =~ ^[0-9]+(\.[0-9]+)?(kbit|mbit|gbit)(/s|ps)?$ ]] \
    || die "--slow-rate needs a rate like 100mbit, 1gbit, 2.5gbit; got '$3'"
  slow_args=(--slow-host "$2" --slow-rate "$3")
}

# provenance_txt DIR: appends to DIR/host.txt the CPU as lscpu names it (model name, family, model) and the date,
# beside results_header's line and the command and commit host_txt wrote.
provenance_txt() {
  local cpu
  cpu="$(LC_ALL=C lscpu 2>/dev/null | awk -F': *' '/^Model name/ { n = $2 } /^CPU family/ { f = $2 }
    /^Model:/ { m = $2 } END { printf "%s, family %s, model %s", n, f, m }')" || cpu="unknown (no lscpu)"
  printf '# cpu (lscpu): %s\n# date: %s\n' "$cpu" "$(date -u '+%Y-%m-%d %H:%M:%S UTC')" >>"$1/host.txt"
}
