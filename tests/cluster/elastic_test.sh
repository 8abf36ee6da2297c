#!/usr/bin/env bash
# ctest (label elastic): training that survives the loss of a host, on an emulated 4-host cluster
# (bench/cluster/cluster.sh) under scripts/elastic.sh. Each case pauses every worker at a step drawn from the seed
# (train --inject-pause), takes one host away there and checks that:
#   training completes on the 3 hosts left; the run resumed from the newest checkpoint at or before that step,
#   so the steps lost are at most one --checkpoint-steps interval; the resumed state's CRC is the one the
#   checkpoint was written with (train itself also compares the live state with the manifest's digest).
# Cases: ring losing rank 0's host (every process killed, then its link: a crashed machine); ps with 2 server
# shards losing a server's host; ring with a host's link cut (its processes hang: the watchdog ends the job); ring
# with one replica of the newest checkpoint damaged right after the loss (the other replica is used). Then bad
# input: a hostfile naming an unknown host, fewer hosts than --min-hosts, no --checkpoint.
# Exit 0 passed, 1 failed, 77 skipped (no root or no network namespaces).
# Usage: bench/cluster/elastic_test.sh BIN_DIR [SEED] [CASE...]
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="${1:?usage: elastic_test.sh BIN_DIR [SEED] [CASE...]}"
SEED="${2:-13}"
shift $(( $# >= 2 ? 2 : 1 ))
CASES=("$@")
[ "${#CASES[@]}" -gt 0 ] || CASES=(ring_kill_host0 ps_kill_server_host ring_cut_link ring_damaged_replica bad_input)
export GS_CLUSTER_PREFIX=el GS_CLUSTER_SUBNET=10.98.0 GS_CLUSTER_STATE=/run/gradsync-cluster-elastic-test
CLUSTER="$HERE/../../bench/cluster/cluster.sh"
ELASTIC="$HERE/../../scripts/elastic.sh"
source "$HERE/../../scripts/mpi.sh"
mpi_launcher "$BIN/.." || exit 1
export GRADSYNC_MPIEXEC="$MPIEXEC"
INTERVAL=40      # --checkpoint-steps
STEPS_PER_EPOCH=100
PAUSE_S=3        # every worker sleeps this long at the drawn step: the host is taken away meanwhile
CASE_LIMIT_S=150

fail() { printf 'elastic_test: FAIL (%s): %s\n' "${case_name:-setup}" "$*" >&2; exit 1; }
why="$("$CLUSTER" check 2>&1)" || { printf 'elastic_test: SKIP: %s\n' "$why"; exit 77; }
[ -x "$BIN/train" ] || fail "$BIN/train is missing (build first)"
[ -f "$HERE/../../data/mnist/train-images-idx3-ubyte" ] || [ -f "$HERE/../../data/mnist/train-images-idx3-ubyte.gz" ] \
  || fail "MNIST is missing in data/mnist (scripts/fetch_mnist.sh)"
work="$(mktemp -d /tmp/gradsync-elastic-test.XXXXXX)"
"$CLUSTER" down >/dev/null 2>&1 || true
trap '"$CLUSTER" down >/dev/null 2>&1; rm -rf "$work"' EXIT
"$CLUSTER" up 4 --rate 1gbit >/dev/null 2>&1 || fail "cluster.sh up failed"
host_ip() { echo "$GS_CLUSTER_SUBNET.$(($1 + 1))"; }
printf '%s slots=1\n' "$(host_ip 0)" "$(host_ip 1)" "$(host_ip 2)" "$(host_ip 3)" >"$work/hostfile"
RANDOM=$SEED

# kill_host I: every process of host I, then its link, the way a machine that crashes disappears.
kill_host() {
  local pids
  pids="$(ip netns pids "$GS_CLUSTER_PREFIX-h$1" 2>/dev/null || true)"
  [ -z "$pids" ] || kill -KILL $pids 2>/dev/null
  sleep 0.2   # the kernel's resets for the dead sockets go out before the link does
  "$CLUSTER" cut "$1" >/dev/null 2>&1
}

# run_case NAME HOST ACTION TRAIN_ARGS...: the elastic run with a pause at a drawn step, the host taken away
# there by ACTION (kill, cut, kill+damage), and every check of the header.
run_case() {
  case_name="$1"
  local host="$2" action="$3"
  shift 3
  local step=$(( INTERVAL + 1 + RANDOM % (2 * INTERVAL - 2) ))   # never on a checkpoint: something is lost
  local dir="$work/$case_name" log="$work/$case_name.out"
  mkdir -p "$dir"
  local h pids
  for h in 0 1 2 3; do  # the hosts of the previous case back, without what was left running in them
    pids="$(ip netns pids "$GS_CLUSTER_PREFIX-h$h" 2>/dev/null || true)"
    [ -z "$pids" ] || kill -KILL $pids 2>/dev/null
    "$CLUSTER" heal "$h" >/dev/null 2>&1
  done
  echo "[$case_name] host $host $action after step $step (seed $SEED), checkpoint every $INTERVAL steps"
  timeout -k 5 "$CASE_LIMIT_S" "$ELASTIC" --emulated --hostfile "$work/hostfile" --min-hosts 3 --max-restarts 2 \
    --grace 5 --start-timeout 20 --log "$dir/restarts.log" -- "$BIN/train" --model mlp --hidden 64 --epochs 2 \
    --iterations-per-epoch "$STEPS_PER_EPOCH" --checkpoint "$dir/%h" --checkpoint-steps "$INTERVAL" --timeout 4 \
    --inject-pause "$step:$PAUSE_S" --data "$HERE/../../data/mnist" "$@" >"$log" 2>&1 &
  local job=$! i
  for i in $(seq 600); do grep -q "pausing after step $step " "$log" && break; sleep 0.05; done
  grep -q "pausing after step $step " "$log" || { cat "$log" >&2; kill -- "$job" 2>/dev/null; fail "the job never reached step $step"; }
  case "$action" in
    kill) kill_host "$host" ;;
    cut) "$CLUSTER" cut "$host" >/dev/null ;;
    kill+damage)
      kill_host "$host"
      # One replica of the newest set (host 0's copy) damaged: host 1's copy must be used.
      local newest
      newest="$(ls -d "$dir/$(host_ip 0)"/step-* | sort | tail -1)"
      printf '\xff\xff\xff\xff' | dd of="$newest/piece-0-of-1.ckpt" bs=1 seek=3000 conv=notrunc status=none ;;
  esac
  wait "$job"
  local code=$?
  [ "$code" -eq 0 ] || { cat "$log" >&2; fail "elastic.sh exited $code"; }
  # The newest checkpoint at or before the step (every INTERVAL steps; none at the end of epoch 1).
  local resume_step expected=$(( step / INTERVAL * INTERVAL ))
  resume_step="$(grep -o "resumed state: step [0-9]*" "$log" | head -1 | awk '{print $4}')"
  grep -q "done: .* on 3 rank(s)" "$log" || { cat "$log" >&2; fail "training did not complete on the 3 hosts left"; }
  grep -q "lost $(host_ip "$host") at step" "$dir/restarts.log" || { cat "$dir/restarts.log" >&2; fail "the restart log does not name host $(host_ip "$host")"; }
  [ "$resume_step" = "$expected" ] || { cat "$log" >&2; fail "resumed from step ${resume_step:-none}, expected the newest checkpoint, step $expected"; }
  [ $(( step - resume_step )) -le "$INTERVAL" ] || fail "lost $(( step - resume_step )) steps, more than one interval ($INTERVAL)"
  local written resumed
  written="$(grep "checkpoint: step $resume_step," "$log" | head -1 | grep -o "params crc [0-9a-f]*, optimizer crc [0-9a-f]*")"
  resumed="$(grep "resumed state: step $resume_step," "$log" | grep -o "params crc [0-9a-f]*, optimizer crc [0-9a-f]*")"
  [ -n "$written" ] && [ "$written" = "$resumed" ] || fail "resumed state ($resumed) is not the checkpointed state ($written)"
  echo "[$case_name] PASS: resumed on 3 hosts from step $resume_step ($(( step - resume_step )) steps lost), $resumed as written; $(cat "$dir/restarts.log")"
}

for c in "${CASES[@]}"; do
  case "$c" in
    ring_kill_host0) run_case "$c" 0 kill --sync ring --momentum 0.9 ;;
    ps_kill_server_host) run_case "$c" 1 kill --sync ps --servers 2 --momentum 0.9 ;;
    ring_cut_link)
      # Under MPICH the ranks' bytes do not cross the emulated links (UCX moves them through shared memory, see
      # cluster.sh), so a cut link stops nothing but Hydra's own connection to the host: nothing of ours to test.
      if [ "$MPI_FLAVOUR" = mpich ]; then echo "[$c] skipped: MPICH's data does not cross the emulated links"; continue; fi
      run_case "$c" 2 cut --sync ring ;;
    ring_damaged_replica)
      run_case "$c" 3 kill+damage --sync ring
      grep -q "corrupted" "$work/$c.out" || fail "the damaged replica was not reported"
      grep -q "piece 0: $(host_ip 1):" "$work/$c.out" || fail "host 1's replica was not the one used" ;;
    bad_input)
      case_name=bad_input
      check_refused() {  # check_refused TEXT ELASTIC_ARGS...
        local text="$1"; shift
        local out code
        out="$("$ELASTIC" --emulated "$@" 2>&1)"; code=$?
        [ "$code" -eq 2 ] && [[ $out == *"$text"* ]] || fail "expected exit 2 and '$text', got $code: $out"
        echo "[bad_input] refused: $out"
      }
      printf '%s\n10.98.0.77\n' "$(host_ip 0)" >"$work/unknown_hosts"
      check_refused "line 2: unknown host '10.98.0.77'" --hostfile "$work/unknown_hosts" -- "$BIN/train" --checkpoint /tmp/x
      check_refused "fewer than --min-hosts 5" --hostfile "$work/hostfile" --min-hosts 5 -- "$BIN/train" --checkpoint /tmp/x
      check_refused "needs --checkpoint DIR" --hostfile "$work/hostfile" -- "$BIN/train" --sync ring ;;
    *) fail "unknown case '$c'" ;;
  esac
done
echo "elastic_test: PASS (${CASES[*]})"
