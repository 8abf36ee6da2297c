#!/bin/sh
# Runs a command with GRADSYNC_HOST set to this emulated host's address. The namespace-hosts of cluster.sh share
# one kernel, hence one host name; train's --checkpoint DIR/%h needs a name of each host's own, so that every
# host writes to (and reads from) a directory no other host uses, as on separate machines.
addr="$(ip -4 -o addr show scope global 2>/dev/null | awk '{ split($4, a, "/"); print a[1]; exit }')"
[ -n "$addr" ] || { echo "on_host.sh: this namespace has no global IPv4 address" >&2; exit 1; }
GRADSYNC_HOST="$addr"
export GRADSYNC_HOST
exec "$@"
