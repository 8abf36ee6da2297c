# shellcheck shell=bash
# What the emulated-cluster tests share: their FAIL and SKIP lines (exit 1 and 77, which ctest reports as failed and
# skipped) and the check that a test's cluster left nothing behind. A test sets TEST (its name in messages) and
# CLUSTER (bench/cluster/cluster.sh), and exports GS_CLUSTER_PREFIX and GS_CLUSTER_STATE, before sourcing this.
fail() { printf '%s: FAIL: %s\n' "$TEST" "$*" >&2; exit 1; }
skip() { printf '%s: SKIP: %s\n' "$TEST" "$*"; exit 77; }

# The network namespaces of this test's cluster still present, one a line.
test_namespaces() { ip netns list | awk '{print $1}' | grep -E "^$GS_CLUSTER_PREFIX-(switch|h[0-9]+)\$" || true; }

# cluster_gone: takes the cluster down; status 1 and a FAIL line if one of its namespaces or its state folder remains.
# For a teardown, which runs from the EXIT trap and so reports rather than exits.
cluster_gone() {
  "$CLUSTER" down >/dev/null 2>&1
  local left
  left="$(test_namespaces)"
  [ -z "$left" ] || { printf '%s: FAIL: namespaces left behind: %s\n' "$TEST" "$left" >&2; return 1; }
  [ ! -e "$GS_CLUSTER_STATE" ] || { printf '%s: FAIL: %s left behind\n' "$TEST" "$GS_CLUSTER_STATE" >&2; return 1; }
}
