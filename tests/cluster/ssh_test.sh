#!/usr/bin/env bash
# ctest (label cluster): the README's cross-host command ("Across hosts"), run as written over real ssh. An
# emulated 4-host cluster (bench/cluster/cluster.sh up --ssh) runs an ssh server in every host namespace with
# keys generated for this run; from host 0, Open MPI's mpirun starts the remote ranks with ssh, as on real hosts.
# The command is taken from README.md itself, so the README cannot drift from what is tested. Changed in it:
# the subnet (the test's own), the data folder (this tree's MNIST) and the length (--epochs 1 and 30 steps, so
# that the test takes seconds). `hosts` and `build/bin/train` resolve in a scratch folder that holds the hostfile
# and a link to this tree's build folder.
# Checks: the run ends with train's summary line on 4 ranks, every remote host's sshd logged the key login, and
# teardown leaves no namespace, sshd, key or configuration behind.
# Exit status 0 passed, 1 failed, 77 skipped (not root, no network namespaces, no sshd, or an MPICH tree: the
# README's command is Open MPI's).
# Usage: bench/cluster/ssh_test.sh [BIN_DIR]   (default build/bin)
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BIN="$(cd "${1:-$ROOT/build/bin}" && pwd)" || { echo "ssh_test: FAIL: no folder ${1:-$ROOT/build/bin}" >&2; exit 1; }
export GS_CLUSTER_PREFIX=gq GS_CLUSTER_SUBNET=10.99.2 GS_CLUSTER_STATE=/run/gradsync-cluster-ssh
CLUSTER="$HERE/../../bench/cluster/cluster.sh"
HOSTS=4
RUN_LIMIT_S=120
DATA="${GRADSYNC_MNIST_DIR:-$ROOT/data/mnist}"

TEST=ssh_test
# shellcheck source=tests/cluster/test_lib.sh
source "$HERE/test_lib.sh"
source "$ROOT/scripts/mpi.sh"
mpi_launcher "$BIN/.." || exit 1
[ "$MPI_FLAVOUR" = openmpi ] || skip "the README's cross-host command is Open MPI's mpirun; this tree is built against $MPI_FLAVOUR"
why="$("$CLUSTER" check 2>&1)" || skip "$why"
[ -x /usr/sbin/sshd ] || skip "/usr/sbin/sshd is missing (scripts/setup.sh installs openssh-server)"
command -v ssh >/dev/null || skip "the ssh client is missing (apt-get install openssh-client)"
[ -x "$BIN/train" ] || fail "$BIN/train is missing (build first)"
[ -e "$DATA/train-images-idx3-ubyte" ] || [ -e "$DATA/train-images-idx3-ubyte.gz" ] \
  || fail "no MNIST in $DATA (scripts/fetch_mnist.sh)"

# The README's command: the first sh block of its "## Across hosts" section, joined at its backslashes.
readme_cmd="$(awk '/^## Across hosts/ { f = 1 } f && /^```sh/ { b = 1; next } b && /^```/ { exit } b' "$ROOT/README.md" |
  sed -e ':a' -e '/\\$/N; s/\\\n//; ta' | tr -s ' ')"
[[ $readme_cmd == "mpirun --hostfile hosts "*"build/bin/train "* ]] \
  || fail "README.md's Across hosts block is not an 'mpirun --hostfile hosts ... build/bin/train ...' command: '$readme_cmd'"
cmd="${readme_cmd//10.0.0.0\/24/$GS_CLUSTER_SUBNET.0/24}"
cmd="${cmd//--data \/shared\/mnist/--data $DATA}"
cmd="${cmd//--epochs 5/--epochs 1} --iterations-per-epoch 30"
[[ $cmd == *"$GS_CLUSTER_SUBNET.0/24"* && $cmd == *"--data $DATA"* && $cmd == *"--epochs 1 "* ]] \
  || fail "README.md's command no longer has the subnet 10.0.0.0/24, --data /shared/mnist and --epochs 5 this test replaces: '$readme_cmd'"

root_links() { ip -o link show | awk -F': ' '{print $2}' | sort; }
links_before="$(root_links)"
privsep_before="$([ -d /run/sshd ] && echo yes || echo no)"
"$CLUSTER" down >/dev/null 2>&1 || true   # a previous run of this test that was killed
work="$(mktemp -d /tmp/gradsync-ssh-test.XXXXXX)"
ssh_dir=""

teardown() {
  rm -rf "$work"
  cluster_gone || return 1
  [ "$links_before" = "$(root_links)" ] || { printf 'ssh_test: FAIL: root namespace links changed\n' >&2; return 1; }
  [ -z "$ssh_dir" ] || [ ! -e "$ssh_dir" ] || { printf 'ssh_test: FAIL: keys left in %s\n' "$ssh_dir" >&2; return 1; }
  if pgrep -f "sshd -f /tmp/gradsync-ssh\." >/dev/null; then printf 'ssh_test: FAIL: an sshd of the cluster still runs\n' >&2; return 1; fi
  [ "$privsep_before" = "$([ -d /run/sshd ] && echo yes || echo no)" ] \
    || { printf 'ssh_test: FAIL: /run/sshd was left different\n' >&2; return 1; }
  return 0
}
status=0
trap 'teardown || status=1; exit $status' EXIT
trap 'status=130; exit' INT TERM

"$CLUSTER" up "$HOSTS" --rate 1gbit --ssh || { status=1; fail "cluster.sh up --ssh failed"; }
ssh_dir="$(cat "$GS_CLUSTER_STATE/ssh_dir")"
# cluster.sh up logged in to every host already (its readiness check): only logins after this point count.
logins_before=()
for ((i = 1; i < HOSTS; i++)); do logins_before[i]="$(grep -c "Accepted publickey" "$ssh_dir/sshd-$i.log")"; done
# The hostfile of the README (one host per line with one slot), and build/ as the README's relative path.
awk '{ print $1 " slots=1" }' "$GS_CLUSTER_STATE/hosts" >"$work/hosts"
ln -s "$BIN/.." "$work/build"
# The README says mpirun: the one this tree was configured with, whatever Debian's alternatives point mpirun at.
mkdir "$work/path" && ln -s "$(command -v "$MPIEXEC")" "$work/path/mpirun"
echo "ssh_test: running in host 0: $cmd"
# ssh's options come from the environment, as a user's ~/.ssh/config would give them, so the command stays the
# README's. All namespace-hosts share this machine's cores: ranks yield when idle (an MCA setting in the
# environment, which the command line does not override).
rc=0
out="$(cd "$work" && timeout -k 10 "$RUN_LIMIT_S" ip netns exec gq-h0 env OMPI_ALLOW_RUN_AS_ROOT=1 \
  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=ssh OMPI_MCA_plm_rsh_args="-F $GS_CLUSTER_STATE/ssh_config" \
  OMPI_MCA_mpi_yield_when_idle=1 PATH="$work/path:$PATH" bash -c "$cmd" 2>&1)" || rc=$?
echo "$out" | sed 's/^/[train] /'
[ "$rc" -eq 0 ] || { status=1; fail "the README's command exited $rc$( [ "$rc" -eq 124 ] && echo " (out of time)")"; }
echo "$out" | grep -q "^done: ring .* on $HOSTS rank(s)" || { status=1; fail "no 'done: ring ... on $HOSTS rank(s)' summary line"; }
for ((i = 1; i < HOSTS; i++)); do
  logins="$(grep -c "Accepted publickey for root from $GS_CLUSTER_SUBNET.1 " "$ssh_dir/sshd-$i.log")"
  [ "$logins" -gt "${logins_before[i]}" ] \
    || { status=1; fail "host $i's sshd logged no key login from host 0 during the run: its rank was not started over ssh"; }
done
echo "ssh_test: PASS: the README's cross-host command ran over ssh on $HOSTS namespace-hosts"
