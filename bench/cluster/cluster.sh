#!/usr/bin/env bash
# An emulated multi-host cluster on one machine: N network namespaces (gs-h0..gs-hN-1), each joined by a veth
# pair to a bridge that lives in a namespace of its own (gs-switch). Nothing is added to the root namespace; the
# private test subnet (10.99.0.0/24 by default) exists only inside these namespaces. Every link is shaped in both
# directions with HTB: on the host-side veth (what a host sends) and on its switch port (what a host receives),
# so a parameter server cannot receive faster than the link rate however many workers push at once.
#
# Usage (root):
#   bench/cluster/cluster.sh up N --rate R [--slow-host I --slow-rate S] [--queue Q] [--delay D] [--mtu M] [--ssh]
#                                                        build the cluster (R in tc units: 1gbit, 100mbit, ...)
#   bench/cluster/cluster.sh down                        remove everything (idempotent)
#   bench/cluster/cluster.sh status                      namespaces, addresses, shaping, byte counters
#   bench/cluster/cluster.sh check                       can this machine build a cluster? (exit 0, or 3 + why)
#   bench/cluster/cluster.sh cut I | heal I              take host I's link down (the host hangs, unreachable) / up
#   bench/cluster/cluster.sh run [MPIRUN_ARGS...] -- CMD [ARGS...]
#        the MPI launcher inside gs-h0 (Open MPI's mpirun, or MPICH's Hydra when $GRADSYNC_MPIEXEC names it, as
#        ctest and the scripts do for an MPICH tree), one rank per namespace-host (pass -np K for fewer), TCP only,
#        ranks unbound and yielding when idle (N namespace-hosts share this machine's cores: a busy-polling rank
#        would starve the kernel threads that forward the other hosts' packets).
#        Remote ranks are started through the launcher's rsh mode with netns_agent.sh, which turns
#        "<agent> <host> <command>" into "ip netns exec <namespace> sh -c <command>".
#        With GS_CLUSTER_RUN_HOSTS=I,J,... only those hosts, launched from the first of them (the elastic launcher
#        relaunches on the hosts left after one is lost: scripts/elastic.sh).
#        An Open MPI 5 launcher (the ULFM build's, given as GRADSYNC_MPIEXEC) is driven through PRRTE's options.
#
# --queue Q is how each link orders what waits behind its rate limit: small-first (default) or fifo.
#   fifo         one queue. Linux lets a TCP flow keep up to tcp_limit_output_bytes (4 MiB here: 33 ms at 1 Gbit/s)
#                queued, so an MPI rendezvous clear-to-send waits behind the data another message is streaming out
#                of the same host: a stall per message that no real network with flow queueing has.
#   small-first  packets under 256 bytes (TCP ACKs, MPI's rendezvous handshakes) go before bulk data: the
#                sparse-flow priority of fq_codel, Linux's default queue on real hosts, which this kernel lacks
#                (no fq_codel, sfq or fq; HTB and u32 are what it has). Measured with both: docs/scale-out.md.
#
# --slow-host I --slow-rate S (both or neither) give host I (0..N-1) a link of rate S instead of R, shaped in both
#   directions like every link (what host I sends and what it receives), the others staying at R: one host behind a
#   slower uplink (a 100mbit host among 1gbit ones). With Open MPI's default mapping, one rank per host, that is
#   rank I. `status` shows each host's rate; STATE/config records slow_host and slow_rate when they are given.
#
# --mtu M is the links' packet size (default 1500, Ethernet's; 9000 for jumbo frames, common on HPC Ethernet). The
#   rate counts whole packets, so TCP's payload can reach at most (M - 52) / (M + 14) of it: 95.6% at 1500, 99.3%
#   at 9000 (IP and TCP headers with timestamps, and the Ethernet header that HTB counts).
#
# --ssh starts an ssh server in every host namespace, listening only on that host's address, with a host key and
#   a client key generated for this cluster into a temporary folder (named in STATE/ssh_dir; removed by `down`):
#   STATE/ssh_config is the client configuration (that key, those host keys checked, no prompts), so that
#   `ssh -F STATE/ssh_config 10.99.0.2 ...` from inside a host namespace reaches host 1 the way one host of a real
#   cluster reaches another, and an MPI launcher can start ranks over ssh (tests/cluster/ssh_test.sh).
#
# --delay D adds D of one-way latency to every packet a host sends (netem under the HTB class). It needs the
# kernel's netem qdisc; where the kernel has none (CONFIG_NET_SCH_NETEM unset, as on the machines this project
# is developed on) `up` refuses with a message saying so, and builds nothing.
# Above 1 Gbit/s the shaping on a 2-core machine is bound by the CPU that forwards the packets, not by HTB:
# such a cluster runs, but its numbers are not a faithful emulation of the link rate (`up` warns).
#
# Environment:
#   GS_CLUSTER_PREFIX  names (default gs: gs-switch, gs-h0, ...; 1-6 lowercase letters or digits). A cluster with
#                      another prefix (the test's) lives beside a benchmark's without touching it.
#   GS_CLUSTER_SUBNET  first three octets of the private subnet inside the namespaces (default 10.99.0)
#   GS_CLUSTER_STATE   state folder: host map, hostfile, settings (default /run/gradsync-cluster, with -PREFIX
#                      appended for a prefix other than gs)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/../../scripts/mpi.sh"   # the launcher's flavour and flags
SUBNET="${GS_CLUSTER_SUBNET:-10.99.0}"
PREFIX="${GS_CLUSTER_PREFIX:-gs}"
STATE="${GS_CLUSTER_STATE:-/run/gradsync-cluster$([ "$PREFIX" = gs ] || echo "-$PREFIX")}"
SWITCH_NS="$PREFIX-switch"
HOST_PREFIX="$PREFIX-h"
BRIDGE="$PREFIX-br"
HOST_IF="${PREFIX}0"        # the host side of each veth pair, inside its host namespace (same name in every host)
PORT_PREFIX="$PREFIX-p"     # the switch side, gs-p0 .. gs-pN-1, inside gs-switch
MAX_HOSTS=64
STARTUP_TIMEOUT_S=60   # a daemon that never reports back fails the launch instead of hanging it
HTB_QUANTUM=200000     # one class per link, so the quantum only silences HTB's "quantum is big" warning
PROBE_NS="$PREFIX-probe-$$"

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'cluster.sh: error: %s\n' "$1" >&2; exit "${2:-1}"; }
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }

host_ns() { echo "$HOST_PREFIX$1"; }
host_ip() { echo "$SUBNET.$(($1 + 1))"; }

# Why this machine cannot build a cluster, or nothing when it can.
cannot_build() {
  if [ "$(id -u)" -ne 0 ]; then echo "must run as root (network namespaces and tc need CAP_NET_ADMIN)"; return; fi
  command -v ip >/dev/null || { echo "the 'ip' command is missing (apt-get install iproute2)"; return; }
  command -v tc >/dev/null || { echo "the 'tc' command is missing (apt-get install iproute2)"; return; }
  ip netns list >/dev/null 2>&1 || { echo "'ip netns' does not work here"; return; }
  local why=""
  if ! ip netns add "$PROBE_NS" 2>/dev/null; then
    echo "cannot create a network namespace ('ip netns add' failed: no CAP_SYS_ADMIN, or namespaces disabled)"
    return
  fi
  if ! ip -n "$PROBE_NS" link add "$PREFIX-pa" type veth peer name "$PREFIX-pb" 2>/dev/null; then
    why="cannot create a veth pair inside a namespace (no veth support in the kernel?)"
  elif ! ip -n "$PROBE_NS" link add "$PREFIX-pbr" type bridge 2>/dev/null; then
    why="cannot create a bridge inside a namespace (no bridge support in the kernel?)"
  elif ! tc -n "$PROBE_NS" qdisc add dev "$PREFIX-pa" root handle 1: htb default 1 2>/dev/null; then
    why="cannot add an HTB qdisc (no sch_htb in the kernel?)"
  fi
  ip netns del "$PROBE_NS" 2>/dev/null || true
  [ -z "$why" ] || echo "$why"
}

# Whether tc's u32 classifier works here (--queue small-first needs it). Call after require_capable.
u32_available() {
  local ok=1
  ip netns add "$PROBE_NS" 2>/dev/null || return 1
  ip -n "$PROBE_NS" link add "$PREFIX-pa" type veth peer name "$PREFIX-pb" 2>/dev/null \
    && tc -n "$PROBE_NS" qdisc add dev "$PREFIX-pa" root handle 1: htb default 1 2>/dev/null \
    && tc -n "$PROBE_NS" filter add dev "$PREFIX-pa" parent 1: protocol ip prio 1 u32 match u16 0x0000 0xff00 at 2 \
      flowid 1:1 2>/dev/null \
    && ok=0
  ip netns del "$PROBE_NS" 2>/dev/null || true
  return "$ok"
}

require_capable() {
  local why
  why="$(cannot_build)"
  [ -z "$why" ] || die "$why" 3
}

existing_namespaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^($SWITCH_NS|$HOST_PREFIX[0-9]+)\$" || true; }

# Ends the processes still running inside our namespaces (ranks, orteds of a run that was interrupted): each by
# its pid, and only processes whose network namespace is one this script made.
kill_namespace_processes() {
  local ns pids
  for ns in "$@"; do
    pids="$(ip netns pids "$ns" 2>/dev/null || true)"
    [ -z "$pids" ] || kill -TERM $pids 2>/dev/null || true
  done
  sleep 0.2
  for ns in "$@"; do
    pids="$(ip netns pids "$ns" 2>/dev/null || true)"
    [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
  done
}

cmd_down() {
  [ "$(id -u)" -eq 0 ] || die "must run as root" 3
  local namespaces ns
  mapfile -t namespaces < <(existing_namespaces)
  if [ "${#namespaces[@]}" -gt 0 ]; then
    kill_namespace_processes "${namespaces[@]}"   # the sshds of --ssh too
    # Deleting a namespace deletes the veth ends inside it, and with them their peers in the others.
    for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  fi
  if [ -f "$STATE/ssh_dir" ]; then
    local ssh_dir
    ssh_dir="$(cat "$STATE/ssh_dir")"
    # Only a folder of the name start_ssh makes: the state file is ours, but a path read back is checked anyway.
    if [[ $ssh_dir =~ ^/tmp/gradsync-ssh\.[A-Za-z0-9]+$ ]]; then rm -rf "$ssh_dir"; fi
  fi
  if [ -f "$STATE/ssh_made_privsep" ]; then rmdir /run/sshd 2>/dev/null || true; fi
  rm -rf "$STATE"
  local left
  left="$(existing_namespaces)"
  [ -z "$left" ] || die "could not remove: $left"
  say "cluster down"
}

# HTB shaping of what leaves `dev` in namespace `ns`: class 1:1 at the link rate (kbit, a number). With --queue
# small-first it has two children whose rates add up to the link's: small packets (u32: IP total length < 256)
# at priority 0 with a tenth of it, everything else (the default) at priority 1 with the rest; either may borrow
# up to the link rate while the other is idle, never beyond it. With fifo or --delay, 1:1 is the leaf itself,
# with netem below it for --delay.
shape() {
  local ns="$1" dev="$2" kbit="$3" delay="$4" queue="$5"
  local bulk=1
  [ -n "$delay" ] || [ "$queue" != small-first ] || bulk=20
  tc -n "$ns" qdisc add dev "$dev" root handle 1: htb default "$bulk"
  tc -n "$ns" class add dev "$dev" parent 1: classid 1:1 htb rate "${kbit}kbit" ceil "${kbit}kbit" quantum "$HTB_QUANTUM"
  if [ "$bulk" = 20 ]; then
    local small=$((kbit / 10))
    tc -n "$ns" class add dev "$dev" parent 1:1 classid 1:10 htb rate "${small}kbit" ceil "${kbit}kbit" prio 0 \
      quantum "$HTB_QUANTUM"
    tc -n "$ns" class add dev "$dev" parent 1:1 classid 1:20 htb rate "$((kbit - small))kbit" ceil "${kbit}kbit" prio 1 \
      quantum "$HTB_QUANTUM"
    tc -n "$ns" filter add dev "$dev" parent 1: protocol ip prio 1 u32 match u16 0x0000 0xff00 at 2 flowid 1:10
  fi
  if [ -n "$delay" ]; then
    tc -n "$ns" qdisc add dev "$dev" parent 1:1 handle 10: netem delay "$delay" limit 100000 2>/dev/null \
      || die "--delay $delay: this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM is not set, and 'tc qdisc add ... netem' \
fails), so latency cannot be added here. Run without --delay: the links then have the namespaces' own latency \
(tens of microseconds; bench/cluster/fit_cost_model.py measures it)." 4
  fi
}

# Whether `ip` answers from namespace `ns`, without ping (not installed everywhere): a TCP connection to a closed
# port is refused at once by a reachable host, and times out or finds no route otherwise.
reachable() {
  local out
  out="$(ip netns exec "$1" timeout 5 bash -c "exec 3<>/dev/tcp/$2/9" 2>&1)" && return 0
  [[ $out == *"refused"* ]]
}

netem_available() {
  # /proc/config.gz, when the kernel publishes it, answers without touching any namespace.
  if [ -r /proc/config.gz ] && command -v zcat >/dev/null; then
    zcat /proc/config.gz | grep -qE '^CONFIG_NET_SCH_NETEM=(y|m)' && return 0
    [ -d /lib/modules ] && modinfo sch_netem >/dev/null 2>&1 && return 0
    return 1
  fi
  return 0  # unknown: try it, and shape() will say so if it fails
}

SSHD=/usr/sbin/sshd
SSH_START_TIMEOUT_S=20

# Why this machine cannot run the ssh servers of --ssh, or nothing when it can.
cannot_ssh() {
  [ -x "$SSHD" ] || { echo "$SSHD is missing (apt-get install openssh-server)"; return; }
  command -v ssh >/dev/null || { echo "the ssh client is missing (apt-get install openssh-client)"; return; }
  command -v ssh-keygen >/dev/null || { echo "ssh-keygen is missing (apt-get install openssh-client)"; return; }
}

# start_ssh N: keys, configuration and one sshd per host namespace, each bound to its host's address only.
start_ssh() {
  local n="$1" why dir i ip ns
  why="$(cannot_ssh)"
  [ -z "$why" ] || die "--ssh: $why" 3
  dir="$(mktemp -d /tmp/gradsync-ssh.XXXXXX)"
  echo "$dir" >"$STATE/ssh_dir"
  # sshd refuses to start without its privilege-separation folder; Debian's service creates it, which this
  # machine may never have run. Made here only if missing, and removed by `down` only then.
  if [ ! -d /run/sshd ]; then
    mkdir -m 0755 /run/sshd
    echo /run/sshd >"$STATE/ssh_made_privsep"
  fi
  ssh-keygen -q -t ed25519 -N "" -C "gradsync-cluster host" -f "$dir/host_key"
  ssh-keygen -q -t ed25519 -N "" -C "gradsync-cluster client" -f "$dir/client_key"
  cp "$dir/client_key.pub" "$dir/authorized_keys"
  : >"$dir/known_hosts"
  for ((i = 0; i < n; i++)); do
    printf '%s %s\n' "$(host_ip "$i")" "$(cut -d' ' -f1,2 "$dir/host_key.pub")" >>"$dir/known_hosts"
  done
  cat >"$dir/sshd_config" <<EOF_SSHD
HostKey $dir/host_key
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
X11Forwarding no
AllowTcpForwarding no
PrintMotd no
LogLevel INFO
EOF_SSHD
  cat >"$STATE/ssh_config" <<EOF_SSH
Host *
  IdentityFile $dir/client_key
  IdentitiesOnly yes
  UserKnownHostsFile $dir/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  ConnectTimeout 5
  LogLevel ERROR
EOF_SSH
  for ((i = 0; i < n; i++)); do
    ip="$(host_ip "$i")" ns="$(host_ns "$i")"
    ip netns exec "$ns" "$SSHD" -f "$dir/sshd_config" -o "ListenAddress=$ip:22" -o "PidFile=$dir/sshd-$i.pid" \
      -E "$dir/sshd-$i.log" || die "sshd did not start in $ns (log: $dir/sshd-$i.log)"
  done
  # Ready when host 0 logs in to every host, itself included.
  local deadline=$((SECONDS + SSH_START_TIMEOUT_S))
  for ((i = 0; i < n; i++)); do
    ip="$(host_ip "$i")"
    until ip netns exec "$(host_ns 0)" ssh -F "$STATE/ssh_config" "$ip" true 2>/dev/null; do
      [ "$SECONDS" -lt "$deadline" ] || die "ssh from host 0 to host $i ($ip) failed for ${SSH_START_TIMEOUT_S}s (log: $dir/sshd-$i.log)"
      sleep 0.2
    done
  done
  say "ssh servers up on every host; client configuration $STATE/ssh_config"
}

# normal_rate FLAG RATE: RATE as tc takes it (lowercase, without a /s or ps ending: 1Gbit/s is 1gbit), or dies
# naming FLAG.
normal_rate() {
  local r="${2,,}"
  r="${r%/s}"; r="${r%ps}"
  [[ $r =~ ^[0-9]+(\.[0-9]+)?(kbit|mbit|gbit)$ ]] || die "$1 needs a rate like 100mbit, 1gbit, 2.5gbit; got '$r'"
  echo "$r"
}
# rate_mbit RATE, mbit_kbit MBIT: a normal_rate in Mbit/s; Mbit/s in kbit/s, a whole number (what shape() takes).
rate_mbit() { awk -v r="$1" 'BEGIN { v = r + 0; if (r ~ /gbit/) v *= 1000; else if (r ~ /kbit/) v /= 1000; print v }'; }
mbit_kbit() { awk -v m="$1" 'BEGIN { printf "%d", m * 1000 + 0.5 }'; }

cmd_up() {
  local n="" rate="" delay="" queue=small-first ssh=0 mtu=1500 slow_host="" slow_rate=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --ssh) ssh=1; shift ;;
      --mtu) [ $# -ge 2 ] || die "--mtu needs a value"; mtu="$2"; shift 2 ;;
      --rate) [ $# -ge 2 ] || die "--rate needs a value"; rate="$2"; shift 2 ;;
      --slow-host) [ $# -ge 2 ] || die "--slow-host needs a value"; slow_host="$2"; shift 2 ;;
      --slow-rate) [ $# -ge 2 ] || die "--slow-rate needs a value"; slow_rate="$2"; shift 2 ;;
      --queue) [ $# -ge 2 ] || die "--queue needs a value"; queue="$2"; shift 2 ;;
      --delay) [ $# -ge 2 ] || die "--delay needs a value"; delay="$2"; shift 2 ;;
      -h|--help) usage; exit 0 ;;
      -*) die "up: unknown option '$1' (see --help)" ;;
      *) [ -z "$n" ] || die "up: one host count only, got '$n' and '$1'"; n="$1"; shift ;;
    esac
  done
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 2 ] && [ "$n" -le "$MAX_HOSTS" ] \
    || die "up needs a host count from 2 to $MAX_HOSTS, got '${n:-nothing}'"
  [ -n "$rate" ] || die "up needs --rate (e.g. --rate 1gbit)"
  [[ $queue == small-first || $queue == fifo ]] || die "--queue must be small-first or fifo, got '$queue'"
  [[ $mtu =~ ^[0-9]+$ ]] && [ "$mtu" -ge 1280 ] && [ "$mtu" -le 9000 ] \
    || die "--mtu needs a packet size from 1280 to 9000 bytes, got '$mtu'"
  rate="$(normal_rate --rate "$rate")"
  if [ -n "$slow_host" ] || [ -n "$slow_rate" ]; then
    [ -n "$slow_host" ] && [ -n "$slow_rate" ] \
      || die "--slow-host and --slow-rate go together (e.g. --slow-host 3 --slow-rate 100mbit)"
    [[ $slow_host =~ ^[0-9]+$ ]] && [ "$slow_host" -lt "$n" ] \
      || die "--slow-host needs a host number from 0 to $((n - 1)), got '$slow_host'"
    slow_rate="$(normal_rate --slow-rate "$slow_rate")"
  fi
  if [ -n "$delay" ]; then
    [[ $delay =~ ^[0-9]+(\.[0-9]+)?(us|ms|s)$ ]] || die "--delay needs a time like 50us, 1ms; got '$delay'"
    netem_available || die "--delay $delay: this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM is not set), so latency \
cannot be added here. Run without --delay: the links then have the namespaces' own latency (tens of microseconds; \
bench/cluster/fit_cost_model.py measures it)." 4
  fi
  [[ $PREFIX =~ ^[a-z][a-z0-9]{0,5}$ ]] || die "GS_CLUSTER_PREFIX must be 1-6 lowercase letters or digits, got '$PREFIX'"
  [[ $SUBNET =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "GS_CLUSTER_SUBNET must be three octets like 10.99.0, got '$SUBNET'"
  require_capable
  [ -z "$(existing_namespaces)" ] || die "a cluster (or its leftovers) exists: run '$0 down' first"
  if [ "$queue" = small-first ] && [ -z "$delay" ] && ! u32_available; then
    say "warning: this kernel has no u32 traffic classifier, so --queue small-first is not possible: using fifo links"
    queue=fifo
  fi
  local mbit kbit slow_kbit="" slow_mbit
  mbit="$(rate_mbit "$rate")"
  kbit="$(mbit_kbit "$mbit")"
  [ "$kbit" -ge 10 ] || die "--rate $rate is below 10 kbit/s"
  if [ -n "$slow_host" ]; then
    slow_mbit="$(rate_mbit "$slow_rate")"
    slow_kbit="$(mbit_kbit "$slow_mbit")"
    [ "$slow_kbit" -ge 10 ] || die "--slow-rate $slow_rate is below 10 kbit/s"
    [ "$slow_kbit" -lt "$kbit" ] \
      || say "warning: --slow-rate $slow_rate is not below --rate $rate: host $slow_host is not the slow one"
  fi
  if awk -v m="$mbit" -v s="${slow_mbit:-0}" 'BEGIN { exit !(m > 1000 || s > 1000) }'; then
    say "warning: $rate per link is above 1 Gbit/s: on a 2-core machine the forwarding CPU, not HTB, sets the rate;"
    say "         the cluster runs, but its timings are not a faithful emulation of $rate links"
  fi

  # From here on, any failure tears down what was built.
  trap 'rc=$?; if [ $rc -ne 0 ]; then say "up failed: tearing down"; cmd_down >/dev/null 2>&1 || true; fi' EXIT
  [ -z "$delay" ] || queue=fifo  # netem is the link's queue then
  say "building $n hosts on ${SUBNET}.0/24 at $rate per link${slow_host:+ (host $slow_host at $slow_rate)}," \
    "$queue queue${delay:+, $delay one-way delay}, MTU $mtu"
  ip netns add "$SWITCH_NS"
  ip -n "$SWITCH_NS" link set lo up
  ip -n "$SWITCH_NS" link add "$BRIDGE" type bridge stp_state 0 forward_delay 0
  ip -n "$SWITCH_NS" link set "$BRIDGE" up
  local i ns port link
  for ((i = 0; i < n; i++)); do
    ns="$(host_ns "$i")" port="$PORT_PREFIX$i" link="$kbit"
    if [ "$i" = "$slow_host" ]; then link="$slow_kbit"; fi
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    # Both ends are created inside namespaces: the pair never appears in the root namespace.
    ip -n "$SWITCH_NS" link add "$port" mtu "$mtu" type veth peer name "$HOST_IF" mtu "$mtu" netns "$ns"
    ip -n "$SWITCH_NS" link set "$port" master "$BRIDGE"
    ip -n "$SWITCH_NS" link set "$port" up
    ip -n "$ns" addr add "$(host_ip "$i")/24" dev "$HOST_IF"
    ip -n "$ns" link set "$HOST_IF" up
    shape "$ns" "$HOST_IF" "$link" "$delay" "$queue"   # what host i sends
    shape "$SWITCH_NS" "$port" "$link" "" "$queue"     # what host i receives
  done

  mkdir -p "$STATE"
  : >"$STATE/hosts"
  : >"$STATE/hostfile"
  : >"$STATE/hostfile.hydra"
  for ((i = 0; i < n; i++)); do
    printf '%s %s\n' "$(host_ip "$i")" "$(host_ns "$i")" >>"$STATE/hosts"
    printf '%s slots=1\n' "$(host_ip "$i")" >>"$STATE/hostfile"         # Open MPI's format
    printf '%s:1\n' "$(host_ip "$i")" >>"$STATE/hostfile.hydra"         # Hydra's
  done
  printf 'hosts=%s\nrate=%s\nqueue=%s\ndelay=%s\nsubnet=%s\nmtu=%s\n' "$n" "$rate" "$queue" "$delay" "$SUBNET" "$mtu" \
    >"$STATE/config"
  [ -z "$slow_host" ] || printf 'slow_host=%s\nslow_rate=%s\n' "$slow_host" "$slow_rate" >>"$STATE/config"

  # Every host must reach every other one through the switch before anyone relies on it.
  for ((i = 1; i < n; i++)); do
    reachable "$(host_ns 0)" "$(host_ip "$i")" || die "host 0 cannot reach host $i ($(host_ip "$i")) through the switch"
  done
  [ "$ssh" = 0 ] || start_ssh "$n"
  trap - EXIT
  say "cluster up: $n hosts ($(host_ns 0)..$(host_ns $((n - 1)))), $rate per link${slow_host:+ ($slow_rate for host \
$slow_host)}; hostfile $STATE/hostfile"
}

cmd_status() {
  local namespaces
  mapfile -t namespaces < <(existing_namespaces)
  if [ "${#namespaces[@]}" -eq 0 ]; then echo "no cluster"; return 0; fi
  [ -f "$STATE/config" ] && sed 's/^/  /' "$STATE/config"
  local ns
  for ns in "${namespaces[@]}"; do
    [ "$ns" = "$SWITCH_NS" ] && continue
    printf '%s: %s\n' "$ns" "$(ip -n "$ns" -4 -br addr show dev "$HOST_IF" 2>/dev/null | awk '{print $3}')"
    tc -n "$ns" -s class show dev "$HOST_IF" 2>/dev/null | awk '/^class htb 1:1 / { c = 1; for (i = 1; i < NF; i++) if ($i == "rate") r = $(i + 1) }
      c && /Sent/ { printf "  sends at %s, sent %s bytes\n", r, $2; c = 0 }'
  done
  if ip netns list | awk '{print $1}' | grep -qx "$SWITCH_NS"; then
    echo "$SWITCH_NS: bridge $BRIDGE, ports $(ip -n "$SWITCH_NS" -br link show master "$BRIDGE" | awk '{printf "%s ", $1}')"
  fi
}

cmd_run() {
  [ "$(id -u)" -eq 0 ] || die "must run as root" 3
  [ -f "$STATE/hostfile" ] || die "no cluster is up (run '$0 up N --rate R' first)"
  local mpi_args=() n
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do mpi_args+=("$1"); shift; done
  [ $# -ge 2 ] || die "run needs '-- CMD [ARGS...]'"
  shift
  n="$(awk -F= '$1 == "hosts" {print $2}' "$STATE/config")"
  local hostfile="$STATE/hostfile" hydra_hostfile="$STATE/hostfile.hydra" first=0
  if [ -n "${GS_CLUSTER_RUN_HOSTS:-}" ]; then
    [[ $GS_CLUSTER_RUN_HOSTS =~ ^[0-9]+(,[0-9]+)*$ ]] || die "GS_CLUSTER_RUN_HOSTS must be host numbers like 1,2,3"
    local subset i
    IFS=, read -r -a subset <<<"$GS_CLUSTER_RUN_HOSTS"
    hostfile="$STATE/hostfile.hosts-${GS_CLUSTER_RUN_HOSTS//,/-}" hydra_hostfile="$hostfile.hydra"
    : >"$hostfile"
    : >"$hydra_hostfile"
    for i in "${subset[@]}"; do
      [ "$i" -lt "$n" ] || die "GS_CLUSTER_RUN_HOSTS: no host $i in a cluster of $n"
      printf '%s slots=1\n' "$(host_ip "$i")" >>"$hostfile"
      printf '%s:1\n' "$(host_ip "$i")" >>"$hydra_hostfile"
    done
    n="${#subset[@]}" first="${subset[0]}"
  fi
  local np_given=0 a
  for a in "${mpi_args[@]}"; do case "$a" in -np|-n|--np|-c) np_given=1 ;; esac; done
  [ "$np_given" = 1 ] || mpi_args=(-np "$n" "${mpi_args[@]}")
  local net="$SUBNET.0/24"
  mpi_launcher "" || die "no usable MPI launcher (set GRADSYNC_MPIEXEC to mpirun.openmpi or mpiexec.hydra)"
  mpi_env
  # The command's own tree's yield shim, when it has one (an MPICH tree).
  mpi_yield_shim "$(dirname "$1")"
  mpirun_flags "$n" shared
  local launch=()
  case "$MPI_FLAVOUR" in
    mpich)
      # Hydra starts one proxy per host through the agent and gives each host its own node id, so the ranks
      # see four nodes. The bytes do not cross the emulated links, though: UCX sees that the namespace-hosts
      # are one machine and moves data through shared memory, and forcing it onto TCP (UCX_TLS=tcp,self) left
      # MPICH 4.0's MPI_Finalize waiting forever in about half the runs here. With MPICH this checks the launch
      # and the per-host decisions (the ring's network chunk size), not the network.
      launch=(-f "$hydra_hostfile" -launcher rsh -launcher-exec "$HERE/netns_agent.sh") ;;
    *)
      if [ -x "$(dirname "$MPIEXEC")/prterun" ]; then
        # Open MPI 5 (the ULFM build, scripts/ulfm.sh): its runtime is PRRTE, whose launcher is called ssh and
        # whose options are --prtemca; it wants --allow-run-as-root as a flag.
        launch=(--hostfile "$hostfile"
                --prtemca plm_ssh_agent "$HERE/netns_agent.sh" --prtemca plm_ssh_no_tree_spawn 1
                --prtemca oob_tcp_if_include "$net"
                --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include "$net")
        [ "$(id -u)" -ne 0 ] || launch+=(--allow-run-as-root)
      else
        launch=(--hostfile "$hostfile"
                --mca plm rsh --mca plm_rsh_agent "$HERE/netns_agent.sh" --mca plm_rsh_no_tree_spawn 1
                --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include "$net" --mca oob_tcp_if_include "$net"
                --mca orte_startup_timeout "$STARTUP_TIMEOUT_S")
      fi
    ;;
  esac
  # GS_CLUSTER_STATE tells the agent where the host map is.
  exec ip netns exec "$(host_ns "$first")" env ${MPI_ENV[@]+"${MPI_ENV[@]}"} GS_CLUSTER_STATE="$STATE" \
    "$MPIEXEC" "${launch[@]}" "${MPIRUN_FLAGS[@]}" "${mpi_args[@]}" "$@"
}

[ $# -ge 1 ] || { usage; exit 2; }
command="$1"
shift
case "$command" in
  up) cmd_up "$@" ;;
  down) cmd_down ;;
  status) cmd_status ;;
  check) why="$(cannot_build)"; if [ -n "$why" ]; then echo "cannot build a cluster here: $why"; exit 3; fi
         echo "this machine can build an emulated cluster" ;;
  run) cmd_run "$@" ;;
  cut|heal)
    [[ ${1:-} =~ ^[0-9]+$ ]] || die "$command needs a host number"
    ip netns list | awk '{print $1}' | grep -qx "$(host_ns "$1")" || die "no host $1 ($(host_ns "$1")) in the cluster"
    ip -n "$SWITCH_NS" link set "$PORT_PREFIX$1" "$([ "$command" = cut ] && echo down || echo up)"
    say "host $1: link $([ "$command" = cut ] && echo cut || echo restored)" ;;
  -h|--help|help) usage ;;
  *) usage >&2; die "unknown command '$command'" 2 ;;
esac
