#!/usr/bin/env bash
# The drivers' default run lists are sync specs train accepts (train --spec S --print-run, which the drivers ask
# through scripts/common.sh spec_run before any run), and spec_run ends a script with train's message naming the
# modifier when train refuses one. A default train refused would otherwise fail only when someone ran the driver,
# some of them on an emulated cluster or in hours of simulation.
# Usage: tests/structure/driver_specs.sh BIN_DIR (the build's bin/, with train)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="$(cd "${1:?usage: driver_specs.sh BIN_DIR}" && pwd)"
fail() {
  printf 'FAIL: %s\n' "$*"
  exit 1
}
[ -x "$bin/train" ] || fail "no $bin/train"

# defaults FILE VAR: VAR's default in FILE, its assignments at the top level: VAR="..." and VAR+="...".
defaults() { sed -n -E "s/^$2\\+?=\"([^\"]*)\"\$/\\1/p" "$root/$1" | tr '\n' ' '; }

# check FILE VAR [OWN...]: every word of VAR's default is a spec train accepts, but the driver's own words OWN.
check() {
  local file="$1" var="$2" words spec out n=0
  shift 2
  words="$(defaults "$file" "$var")"
  [ -n "${words// /}" ] || fail "$file: no default $var=\"...\" at its top level"
  for spec in $words; do
    [[ " $* " != *" $spec "* ]] || continue
    out="$("$bin/train" --spec "$spec" --print-run 2>&1)" || fail "$file $var: train refuses '$spec': $out"
    [[ $out =~ ^[^[:space:]]+$'\t'[1-9][0-9]*$ ]] || fail "$file $var: train --spec '$spec' --print-run said '$out'"
    n=$((n + 1))
  done
  echo "$file: the $n specs of $var's default are train's"
}
check bench/scaling.sh methods
check bench/straggler.sh methods
check bench/gossip_convergence.sh methods
check bench/cluster/bench_decentralized.sh runs
check bench/sim/experiments/gossip-scale.sh syncs
check bench/sim/experiments/train-scale.sh syncs ps-sharded
check scripts/run.sh METHODS

# spec_run itself, as the drivers source it.
spec_run_says() {  # SPEC [FLAG]: what a script calling spec_run prints (stdout and stderr), and its exit status
  BUILD_DIR="$(dirname "$bin")" bash -c 'source "$1/scripts/common.sh"; shift; spec_run "$@"; echo "$run_name $run_min_np"' \
    _ "$root" "$@" 2>&1
}
got="$(spec_run_says "ps+mode=ssp+staleness=2+servers=2")" || fail "spec_run refused ps+mode=ssp+staleness=2+servers=2: $got"
[ "$got" = "ps-ssp2-k2 3" ] || fail "spec_run ps+mode=ssp+staleness=2+servers=2: '$got', not 'ps-ssp2-k2 3'"
if got="$(spec_run_says "ps+mode=xyz" --runs)"; then fail "spec_run accepted ps+mode=xyz: $got"; fi
[[ $got == "error: --runs: --spec 'ps+mode=xyz' (+mode=xyz): --ps-mode"* ]] ||
  fail "spec_run ps+mode=xyz: '$got' does not name the flag, the spec and the modifier"
echo "spec_run: names and rank counts from train; a refused spec ends the script with train's message"
