#!/usr/bin/env bash
# A real Slurm (Debian's slurm-wlm) on the emulated cluster of cluster.sh: one slurmd per namespace-host, the
# controller (slurmctld) and munged on host 0, as on a small cluster whose head node also computes. Start the
# cluster first (cluster.sh up N ...), then `slurm.sh up`; `slurm.sh down` stops the daemons (cluster.sh down also
# ends them, as it ends every process inside its namespaces).
#
# Usage (root):
#   bench/cluster/slurm.sh up            munged, slurmctld and one slurmd per host; returns when every node is idle
#   bench/cluster/slurm.sh run CMD ...   CMD on host 0 with SLURM_CONF set: sbatch, srun, squeue, sinfo, scontrol
#   bench/cluster/slurm.sh down          stop the daemons, remove their files (idempotent)
#   bench/cluster/slurm.sh check         can this machine run it? (exit 0, or 3 + why)
#
# Each host is a node of its own: node name = the host's namespace name (gs-h0 ...), NodeAddr = its address, and
# every daemon and job step runs with that name as its host name (a UTS namespace). Per-node files carry %n in
# slurm.conf (SlurmdSpoolDir, SlurmdPidFile, SlurmdLogFile, and TmpFS, where srun --mpi=pmix puts each step's
# spmix_appdir_<uid>_<job>.<step>: under the default /tmp, the second host's step found the first's and failed), so
# the slurmds share one file system without sharing a file. Every host has one CPU in slurm.conf (SlurmdParameters=config_overrides: the hosts share this machine's
# cores), so `-N 4 -n 4` is one task per host. No cgroups (proctrack/linuxproc, task/none): the hosts share one
# kernel and one cgroup tree.
# Debian's slurm-wlm is built with --enable-multiple-slurmd (its cgroup/v2 plugin names the per-node scope
# "<node>_slurmstepd.scope", and auth/munge accepts the replayed credentials one shared munged sees), so one
# munged serves every slurmd here, through a socket of its own (AuthInfo=socket=...): a munged of the machine's,
# if any, is left alone. Node names resolve on every host: the daemons, and so the jobs, see a hosts file that lists
# them all as /etc/hosts (mounted in a mount namespace of their own; the machine's /etc/hosts is not touched).
#
# Environment: GS_CLUSTER_PREFIX, GS_CLUSTER_SUBNET, GS_CLUSTER_STATE as for cluster.sh (the cluster to use).
# Files: $GS_CLUSTER_STATE/slurm/ (slurm.conf, logs, spool, munge key and socket).
set -euo pipefail

PREFIX="${GS_CLUSTER_PREFIX:-gs}"
STATE="${GS_CLUSTER_STATE:-/run/gradsync-cluster$([ "$PREFIX" = gs ] || echo "-$PREFIX")}"
DIR="$STATE/slurm"
CONF="$DIR/slurm.conf"
START_TIMEOUT_S=60   # the daemons must have every node idle by then
STOP_TIMEOUT_S=20

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'slurm.sh: error: %s\n' "$1" >&2; exit "${2:-1}"; }
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }

# Why Slurm cannot run on this machine, or nothing when it can.
cannot_run() {
  [ "$(id -u)" -eq 0 ] || { echo "must run as root (the daemons run in network namespaces)"; return; }
  local tool
  for tool in slurmctld slurmd sbatch srun scontrol; do
    command -v "$tool" >/dev/null || { echo "$tool is missing (scripts/setup.sh installs slurm-wlm)"; return; }
  done
  command -v munged >/dev/null || { echo "munged is missing (scripts/setup.sh installs munge)"; return; }
  local t
  for t in unshare nsenter; do command -v "$t" >/dev/null || { echo "$t is missing (util-linux)"; return; }; done
}

hosts_of_cluster() {   # "<ip> <namespace>" lines of the cluster that is up
  [ -f "$STATE/hosts" ] || die "no cluster is up in $STATE (bench/cluster/cluster.sh up N --rate R first)"
  cat "$STATE/hosts"
}

# on_host NS CMD...: CMD on host NS, as if logged in there: its network namespace, its name as the host name (a UTS
# namespace), and the cluster's hosts file as /etc/hosts (a mount namespace, so that only CMD sees it). nsenter
# rather than `ip netns exec`: that one mounts a sysfs of the namespace's own, without /sys/fs/cgroup, and slurmd
# stops when it finds no cgroup file system.
on_host() {
  local ns="$1"
  shift
  nsenter --net="/run/netns/$ns" -- unshare --uts --mount -- /bin/sh -c \
    'hostname "$0" && mount --bind "$1" /etc/hosts && shift && exec "$@"' "$ns" "$DIR/hosts" \
    env SLURM_CONF="$CONF" "$@"
}

write_conf() {
  local first_ip="$1" first_ns="$2" names="$3"
  cat >"$CONF" <<EOF
# Written by bench/cluster/slurm.sh for the emulated cluster in $STATE.
ClusterName=gradsync
SlurmctldHost=$first_ns($first_ip)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$DIR/ctld
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdSpoolDir=$DIR/spool/%n
SlurmdPidFile=$DIR/slurmd-%n.pid
SlurmdLogFile=$DIR/slurmd-%n.log
TmpFS=$DIR/tmp/%n
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SlurmdParameters=config_overrides
ReturnToService=2
InactiveLimit=0
KillWait=5
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=30
EOF
  local ip ns
  while read -r ip ns; do
    echo "NodeName=$ns NodeAddr=$ip NodeHostname=$ns CPUs=1 RealMemory=1024 State=UNKNOWN" >>"$CONF"
  done < <(hosts_of_cluster)
  echo "PartitionName=emulated Nodes=$names Default=YES MaxTime=60 State=UP" >>"$CONF"
}

show_logs() {
  local f
  for f in "$DIR"/munge/munged.log "$DIR"/slurmctld.log "$DIR"/slurmd-*.log; do
    [ -s "$f" ] || continue
    printf -- '--- last lines of %s\n' "$f" >&2
    tail -n 15 "$f" >&2
  done
}

# node_states: "name state" per node, as the controller sees them.
node_states() { on_host "$1" sinfo -h -N -o '%N %T' 2>/dev/null || true; }

cmd_up() {
  local why
  why="$(cannot_run)"
  [ -z "$why" ] || die "$why" 3
  local hosts first_ip first_ns names n
  hosts="$(hosts_of_cluster)"
  [ ! -e "$DIR" ] || die "Slurm files exist in $DIR: run '$0 down' first"
  read -r first_ip first_ns <<<"$(head -n1 <<<"$hosts")"
  names="$(awk '{print $2}' <<<"$hosts" | paste -sd, -)"
  n="$(wc -l <<<"$hosts")"
  # From here on, any failure stops what was started.
  # The daemons' logs go with them, so their last lines are printed first.
  trap 'rc=$?; if [ $rc -ne 0 ]; then say "up failed: stopping the daemons"; show_logs; cmd_down >/dev/null 2>&1 || true; fi' EXIT
  mkdir -p "$DIR/munge" "$DIR/ctld" "$DIR/spool"
  write_conf "$first_ip" "$first_ns" "$names"
  { echo "127.0.0.1 localhost"; cat <<<"$hosts"; } >"$DIR/hosts"
  local ip ns
  while read -r ip ns; do mkdir -p "$DIR/spool/$ns" "$DIR/tmp/$ns"; done <<<"$hosts"

  # munged refuses a key that others could read, and a socket folder that others cannot enter.
  (umask 077 && head -c 1024 /dev/urandom >"$DIR/munge.key")
  ip netns exec "$first_ns" munged --socket="$DIR/munge/munge.socket" --key-file="$DIR/munge.key" \
    --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/munge/munged.log" --seed-file="$DIR/munge/munged.seed" \
    --origin="$first_ip" --num-threads=4 || die "munged did not start"
  on_host "$first_ns" slurmctld -i || die "slurmctld did not start"
  while read -r ip ns; do
    on_host "$ns" slurmd -N "$ns" || die "slurmd did not start on $ns"
  done <<<"$hosts"

  local deadline=$((SECONDS + START_TIMEOUT_S)) states idle
  while :; do
    states="$(node_states "$first_ns")"
    idle="$(awk '$2 == "idle"' <<<"$states" | wc -l)"
    [ "$idle" -lt "$n" ] || break
    [ "$SECONDS" -lt "$deadline" ] \
      || die "after ${START_TIMEOUT_S}s only $idle of $n nodes are idle: ${states:-slurmctld does not answer}"
    sleep 0.5
  done
  trap - EXIT
  say "Slurm up: slurmctld on $first_ns, $n nodes idle ($names); SLURM_CONF=$CONF"
}

# stop_pidfile FILE NAME: end the daemon whose pid FILE holds (only if it is still NAME), and wait for it.
stop_pidfile() {
  local file="$1" name="$2" pid
  [ -f "$file" ] || return 0
  pid="$(cat "$file" 2>/dev/null || true)"
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  [ "$(cat "/proc/$pid/comm" 2>/dev/null || true)" = "$name" ] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + STOP_TIMEOUT_S))
  while [ -d "/proc/$pid" ] && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
  if [ -d "/proc/$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
}

cmd_down() {
  [ "$(id -u)" -eq 0 ] || die "must run as root" 3
  [ -d "$DIR" ] || { say "Slurm down (nothing ran)"; return 0; }
  local f
  # The slurmds first (they end their job steps), then the controller, then munged, which they all need until then.
  for f in "$DIR"/slurmd-*.pid; do [ -e "$f" ] && stop_pidfile "$f" slurmd; done
  # Job steps a slurmd left behind: slurmstepd processes inside this cluster's hosts.
  local ip ns pid
  while read -r ip ns; do
    for pid in $(ip netns pids "$ns" 2>/dev/null || true); do
      [ "$(cat "/proc/$pid/comm" 2>/dev/null || true)" != slurmstepd ] || kill -KILL "$pid" 2>/dev/null || true
    done
  done < <(cat "$STATE/hosts" 2>/dev/null || true)
  stop_pidfile "$DIR/slurmctld.pid" slurmctld
  stop_pidfile "$DIR/munge/munged.pid" munged
  rm -rf "$DIR"
  say "Slurm down"
}

[ $# -ge 1 ] || { usage; exit 2; }
command="$1"
shift
case "$command" in
  up) cmd_up ;;
  down) cmd_down ;;
  run)
    [ $# -ge 1 ] || die "run needs a command (sbatch, srun, squeue, ...)"
    [ -f "$CONF" ] || die "Slurm is not up ($CONF is missing: '$0 up' first)"
    first_ns="$(awk 'NR == 1 {print $2}' "$STATE/hosts")"
    on_host "$first_ns" "$@" ;;
  check) why="$(cannot_run)"; if [ -n "$why" ]; then echo "cannot run Slurm here: $why"; exit 3; fi
         echo "this machine can run Slurm on the emulated cluster" ;;
  -h|--help|help) usage ;;
  *) usage >&2; die "unknown command '$command'" 2 ;;
esac
