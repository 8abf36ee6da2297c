#!/usr/bin/env bash
# Elastic training: run `train` under mpirun over the hosts of a hostfile; when the job fails, find the hosts that
# are still reachable, drop the others, and relaunch with --resume (train picks the newest checkpoint set that is
# complete on the hosts left), down to --min-hosts, at most --max-restarts times. A host that hangs instead of
# dying (a cut link) is caught by train's watchdog (--timeout): its survivors exit, and a job still not gone
# --grace seconds later is killed here.
#
# Usage: scripts/elastic.sh --hostfile FILE [--min-hosts M] [--max-restarts N] [--grace S] [--log FILE]
#                           [--emulated] [--mpirun-args "ARGS"] -- TRAIN [TRAIN ARGS...]
#   FILE           one host per line ("host" or Open MPI's "host slots=N"; # comments); one rank per host
#   --min-hosts    stop when fewer hosts than this are reachable (default 1)
#   --max-restarts relaunch at most this many times (default 3)
#   --grace        seconds a job may take to exit after its watchdog fired (default 10)
#   --start-timeout a job that has not started training after this many seconds is killed and relaunched
#                  (default 60: Open MPI's rsh launch into namespaces occasionally hangs before MPI_Init)
#   --log FILE     one line per restart: lost hosts, step reached, step resumed, seconds lost (also on stdout)
#   --emulated     the hosts are bench/cluster/cluster.sh's namespaces (GS_CLUSTER_PREFIX / GS_CLUSTER_STATE
#                  say which cluster): launched through `cluster.sh run`, probed from the other namespaces, and
#                  each rank's GRADSYNC_HOST set to its host's address (bench/cluster/on_host.sh)
#   --mpirun-args  extra launcher flags on a real cluster (e.g. "--mca btl_tcp_if_include 10.0.0.0/24")
# TRAIN's arguments must include --checkpoint DIR, a directory on each host's local disk ("%h" in it is replaced
# by the host's name). Every line of the job's output is copied to stdout, prefixed with the wall-clock time.
# Exit status: 0 trained to the end; 1 gave up (too few hosts, too many restarts); 2 bad input (here, or train
# refused its input: a failure no restart can fix).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/mpi.sh"

die() { printf 'elastic.sh: error: %s\n' "$1" >&2; exit "${2:-2}"; }
say() { printf '%s elastic: %s\n' "$EPOCHREALTIME" "$*"; [ -z "$LOG" ] || printf '%s\n' "$*" >>"$LOG"; }

HOSTFILE="" MIN_HOSTS=1 MAX_RESTARTS=3 GRACE=10 START_TIMEOUT=60 LOG="" EMULATED=0 MPIRUN_ARGS=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case "$1" in
    --hostfile) HOSTFILE="${2:?--hostfile needs a file}"; shift 2 ;;
    --min-hosts) MIN_HOSTS="${2:?}"; shift 2 ;;
    --max-restarts) MAX_RESTARTS="${2:?}"; shift 2 ;;
    --grace) GRACE="${2:?}"; shift 2 ;;
    --start-timeout) START_TIMEOUT="${2:?}"; shift 2 ;;
    --log) LOG="${2:?}"; shift 2 ;;
    --emulated) EMULATED=1; shift ;;
    --mpirun-args) MPIRUN_ARGS="${2:?}"; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[ "${1:-}" = "--" ] && [ $# -ge 2 ] || die "give the training command after '--' (see --help)"
shift
TRAIN=("$@")
[[ $MIN_HOSTS =~ ^[1-9][0-9]*$ ]] || die "--min-hosts must be a positive number, got '$MIN_HOSTS'"
[[ $MAX_RESTARTS =~ ^[0-9]+$ ]] || die "--max-restarts must be a number, got '$MAX_RESTARTS'"
[[ $GRACE =~ ^[0-9]+$ ]] || die "--grace must be whole seconds, got '$GRACE'"
[[ $START_TIMEOUT =~ ^[1-9][0-9]*$ ]] || die "--start-timeout must be whole seconds, got '$START_TIMEOUT'"
[ -n "$HOSTFILE" ] || die "--hostfile FILE is required"
[ -r "$HOSTFILE" ] || die "--hostfile $HOSTFILE: cannot read it"
has_checkpoint=0 resume_given=0 checkpointed=0
for a in "${TRAIN[@]}"; do
  case "$a" in --checkpoint|--checkpoint=*) has_checkpoint=1 ;; --resume) resume_given=1 ;; esac
done
[ "$has_checkpoint" = 1 ] || die "the training command needs --checkpoint DIR (a directory on each host's local disk; %h is the host's name): without checkpoints a restart would start over"

# The hosts, in hostfile order; rank i runs on the i-th host still in the list.
HOSTS=()
lineno=0
if [ "$EMULATED" = 1 ]; then
  CLUSTER="$HERE/../bench/cluster/cluster.sh"
  PREFIX="${GS_CLUSTER_PREFIX:-gs}"
  STATE="${GS_CLUSTER_STATE:-/run/gradsync-cluster$([ "$PREFIX" = gs ] || echo "-$PREFIX")}"
  [ -f "$STATE/hosts" ] || die "--emulated: no cluster is up ($STATE/hosts is missing; run bench/cluster/cluster.sh up N --rate R)"
fi
while IFS= read -r line || [ -n "$line" ]; do
  lineno=$((lineno + 1))
  line="${line%%#*}"
  read -r host _ <<<"$line"
  [ -n "${host:-}" ] || continue
  if [ "$EMULATED" = 1 ]; then
    awk -v h="$host" '$1 == h || $2 == h { found = 1 } END { exit !found }' "$STATE/hosts" \
      || die "--hostfile $HOSTFILE line $lineno: unknown host '$host' (not a host of the emulated cluster: $(awk '{printf "%s ", $1}' "$STATE/hosts"))"
  else
    getent hosts "$host" >/dev/null || die "--hostfile $HOSTFILE line $lineno: unknown host '$host' (getent hosts finds no address for it)"
  fi
  for h in "${HOSTS[@]}"; do [ "$h" != "$host" ] || die "--hostfile $HOSTFILE line $lineno: host '$host' is listed twice"; done
  HOSTS+=("$host")
done <"$HOSTFILE"
[ "${#HOSTS[@]}" -ge "$MIN_HOSTS" ] || die "--hostfile $HOSTFILE names ${#HOSTS[@]} host(s), fewer than --min-hosts $MIN_HOSTS"

# index_of HOST: its number in the emulated cluster.
index_of() { awk -v h="$1" '$1 == h || $2 == h { print NR - 1; exit }' "$STATE/hosts"; }
ip_of() { awk -v h="$1" '$1 == h || $2 == h { print $1; exit }' "$STATE/hosts"; }
ns_of() { awk -v h="$1" '$1 == h || $2 == h { print $2; exit }' "$STATE/hosts"; }

# reachable HOST: exit 0 if it answers. Emulated: a TCP connection from another host's namespace to a closed port
# is refused at once by a host that is up, and times out when it is not; real: ssh runs `true` there.
reachable() {
  if [ "$EMULATED" = 1 ]; then
    local other out ip
    ip="$(ip_of "$1")"
    for other in "${HOSTS[@]}"; do
      [ "$other" != "$1" ] || continue
      out="$(ip netns exec "$(ns_of "$other")" timeout 1 bash -c "exec 3<>/dev/tcp/$ip/9" 2>&1)" && return 0
      [[ $out != *refused* ]] || return 0
    done
    return 1
  fi
  timeout 10 ssh -o BatchMode=yes -o ConnectTimeout=5 "$1" true >/dev/null 2>&1
}

# Probes every host at once; sets ALIVE (in hostfile order) and LOST.
probe_hosts() {
  local h i pids=() codes=()
  for h in "${HOSTS[@]}"; do reachable "$h" & pids+=($!); done
  for i in "${!pids[@]}"; do wait "${pids[$i]}"; codes[$i]=$?; done
  ALIVE=() LOST=()
  for i in "${!HOSTS[@]}"; do
    if [ "${codes[$i]}" -eq 0 ]; then ALIVE+=("${HOSTS[$i]}"); else LOST+=("${HOSTS[$i]}"); fi
  done
}

# launch ARGS...: the job on HOSTS, in the background of its own process group; sets JOB (its pid).
launch() {
  if [ "$EMULATED" = 1 ]; then
    local idx=() h
    for h in "${HOSTS[@]}"; do idx+=("$(index_of "$h")"); done
    local csv
    csv="$(IFS=,; echo "${idx[*]}")"
    GS_CLUSTER_RUN_HOSTS="$csv" setsid "$CLUSTER" run -- "$HERE/../bench/cluster/on_host.sh" "$@" \
      > >(stamp) 2>&1 &
  else
    mpi_launcher "" || die "no usable MPI launcher"
    mpi_env
    local hf
    hf="$(mktemp /tmp/gradsync-elastic-hosts.XXXXXX)"
    printf '%s slots=1\n' "${HOSTS[@]}" >"$hf"
    hostfile_flags "$hf"
    # shellcheck disable=SC2086
    env ${MPI_ENV[@]+"${MPI_ENV[@]}"} setsid "$MPIEXEC" "${HOSTFILE_FLAGS[@]}" -np "${#HOSTS[@]}" $MPIRUN_ARGS "$@" \
      > >(stamp) 2>&1 &
  fi
  JOB=$!
}

ATTEMPT_LOG=""
stamp() { while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l" | tee -a "$ATTEMPT_LOG"; done; }
last_number_after() {  # last_number_after FILE TEXT: the number after the last TEXT in FILE
  grep -o -- "$2[0-9]*" "$1" 2>/dev/null | tail -1 | sed "s/.*[^0-9]//"
}

WORK="$(mktemp -d /tmp/gradsync-elastic.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
restarts=0
pending=""   # the restart entry waiting for the relaunched job's resume line
say "training on ${#HOSTS[@]} host(s): ${HOSTS[*]}"
while :; do
  ATTEMPT_LOG="$WORK/attempt-$restarts.log"
  : >"$ATTEMPT_LOG"
  args=("${TRAIN[@]}")
  # A job that failed before its first checkpoint left nothing to resume: it starts again from scratch.
  if [ "$checkpointed" = 1 ] && [ "$resume_given" = 0 ]; then args+=(--resume); fi
  launch "${args[@]}"
  watchdog_at="" launched_at=$SECONDS
  while kill -0 "$JOB" 2>/dev/null; do
    if [ -n "$pending" ] && grep -q "resumed state: step" "$ATTEMPT_LOG"; then
      line="$(grep -m1 "resumed state: step" "$ATTEMPT_LOG")"
      resumed_ts="${line%% *}"
      resume_step="$(last_number_after "$ATTEMPT_LOG" "resumed state: step ")"
      lost_s="$(awk -v a="$resumed_ts" -v b="$last_ckpt_ts" 'BEGIN { printf "%.2f", a - b }')"
      say "restart $restarts: lost ${lost_hosts:-no host} at step $failed_step; resumed on ${#HOSTS[@]} host(s) from step $resume_step; ${lost_s}s lost (last checkpoint of the failed job to the resumed start); resumed_at=$resumed_ts"
      pending=""
    fi
    if [ -z "$watchdog_at" ] && grep -q "gradsync watchdog" "$ATTEMPT_LOG"; then watchdog_at=$SECONDS; fi
    if [ $((SECONDS - launched_at)) -ge "$START_TIMEOUT" ] && ! grep -q "gradsync train: " "$ATTEMPT_LOG"; then
      say "the job has not started after ${START_TIMEOUT}s (a launch that hung): ending it"
      kill -KILL -- "-$JOB" 2>/dev/null
      launched_at=$SECONDS
    fi
    if [ -n "$watchdog_at" ] && [ $((SECONDS - watchdog_at)) -ge "$GRACE" ]; then
      say "the job's watchdog fired ${GRACE}s ago and the job is still there (a host that hangs): ending it"
      kill -KILL -- "-$JOB" 2>/dev/null
    fi
    sleep 0.1
  done
  wait "$JOB"
  code=$?
  failed_at=$EPOCHREALTIME
  sleep 0.3  # the last lines still on their way through stamp
  if [ "$code" -eq 0 ]; then
    say "finished after $restarts restart(s) on ${#HOSTS[@]} host(s): ${HOSTS[*]}"
    exit 0
  fi
  if grep -q "train: error: " "$ATTEMPT_LOG" && ! grep -q "gradsync watchdog\|error on rank\|train: error (rank" "$ATTEMPT_LOG"; then
    say "train refused its input (exit $code): no restart can fix that"
    exit 2
  fi
  # The step the job reached: the newest it reported (checkpoints, epochs, pauses).
  failed_step="$( { last_number_after "$ATTEMPT_LOG" "checkpoint: step "; last_number_after "$ATTEMPT_LOG" "pausing after step "; } | sort -n | tail -1)"
  failed_step="${failed_step:-0}"
  last_ckpt_ts="$(grep "checkpoint: step " "$ATTEMPT_LOG" | tail -1 | cut -d' ' -f1)"
  last_ckpt_ts="${last_ckpt_ts:-$failed_at}"
  if grep -q "checkpoint: step " "$ATTEMPT_LOG"; then checkpointed=1; fi
  probe_hosts
  lost_hosts="${LOST[*]:-}"
  say "job failed (exit $code) after step $failed_step; reachable: ${ALIVE[*]:-none}; lost: ${lost_hosts:-none}; failed_at=$failed_at"
  if [ "${#ALIVE[@]}" -lt "$MIN_HOSTS" ]; then
    say "only ${#ALIVE[@]} host(s) left, fewer than --min-hosts $MIN_HOSTS: giving up"
    exit 1
  fi
  if [ "$restarts" -ge "$MAX_RESTARTS" ]; then
    say "failed $((restarts + 1)) time(s), --max-restarts $MAX_RESTARTS: giving up"
    exit 1
  fi
  HOSTS=("${ALIVE[@]}")
  restarts=$((restarts + 1))
  pending=1
  say "relaunching on ${#HOSTS[@]} host(s): ${HOSTS[*]} (restart $restarts of at most $MAX_RESTARTS)"
done
