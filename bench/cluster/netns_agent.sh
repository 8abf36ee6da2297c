#!/bin/sh
# Open MPI's rsh launcher agent for the emulated cluster (bench/cluster/cluster.sh): Open MPI runs
#   <agent> [ssh-style options] <host> <command words...>
# as it would run ssh. Like ssh, join the command words with spaces and hand them to a shell, but in the network
# namespace that plays <host> (found in $GS_CLUSTER_STATE/hosts, lines "<ip> <namespace>", written by `up`).
set -eu
state="${GS_CLUSTER_STATE:-/run/gradsync-cluster}"
while [ $# -gt 0 ]; do
  case "$1" in
    -*) shift ;;   # ssh options Open MPI may add (e.g. -x): meaningless here
    *) break ;;
  esac
done
[ $# -ge 2 ] || { echo "netns_agent.sh: usage: netns_agent.sh <host> <command...>" >&2; exit 255; }
host="$1"
shift
ns="$(awk -v h="$host" '$1 == h || $2 == h { print $2; exit }' "$state/hosts" 2>/dev/null || true)"
[ -n "$ns" ] || { echo "netns_agent.sh: unknown host '$host' (not in $state/hosts: is the cluster up?)" >&2; exit 255; }
# Each namespace-host also gets a host name of its own (a UTS namespace): Open MPI tells nodes apart by name, and
# with every namespace answering the machine's name, ranks on different hosts counted as one node, so
# MPI_Comm_split_type(SHARED) hung as soon as a host ran two ranks.
exec ip netns exec "$ns" unshare --uts /bin/sh -c "hostname $ns; $*"
