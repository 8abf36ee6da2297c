#!/usr/bin/env bash
# Asynchronous gossip on the real `train` binary, one case per call: async_check.sh BIN_DIR CASE. ctest runs each.
#   straggler  --sync gossip --async at 2..8 ranks (oversubscribed) with one rank 5 ms slow per step: every run ends,
#              in bounded time, with the mean model evaluated.
#   mismatch   ranks started with different --topology (an MPMD launch): every run fails with a message naming the
#              disagreement, within seconds, instead of hanging. train's start-up comparison of the ranks' settings
#              (trainers/cli/settings_agreement.hpp) names it now; the gossip's own check, for callers that build
#              the synchronizer themselves, is tests/test_gossip.cpp's.
set -euo pipefail
bin="${1:?usage: async_check.sh BIN_DIR CASE}"
case_name="${2:?usage: async_check.sh BIN_DIR CASE}"
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/mpi.sh"
test_launcher "$bin" 8 || exit 1
work="$(mktemp -d /tmp/gradsync-gossip.XXXXXX)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL ($case_name): $*" >&2; exit 1; }
short=(--sync gossip --iterations-per-epoch 60 --epochs 2 --timeout 60)

case "$case_name" in
  straggler)
    for np in 2 3 4 5 8; do
      for topology in ring exp; do
        start=$SECONDS
        timeout 120 "${mpirun_[@]}" -n "$np" "$bin/train" "${short[@]}" --async --topology "$topology" \
          --straggler 1:5 >"$work/run.log" 2>&1 || { cat "$work/run.log"; fail "np $np $topology: exit $?"; }
        grep -q "^done: gossip-$topology-async" "$work/run.log" || { cat "$work/run.log"; fail "np $np: no summary"; }
        grep -q "consensus" "$work/run.log" || { cat "$work/run.log"; fail "np $np: no consensus distance"; }
        echo "np $np $topology: $((SECONDS - start)) s"
      done
    done
    ;;
  mismatch)
    for sync in "--async" ""; do
      start=$SECONDS
      set +e
      timeout 60 "${mpirun_[@]}" -n 1 "$bin/train" "${short[@]}" $sync --topology ring : \
        -n 2 "$bin/train" "${short[@]}" $sync --topology exp >"$work/run.log" 2>&1
      code=$?
      set -e
      [ "$code" -ne 124 ] || { cat "$work/run.log"; fail "hung (killed after 60 s)"; }
      [ "$code" -ne 0 ] || { cat "$work/run.log"; fail "ranks that disagree on --topology trained"; }
      grep -qF "settings differ from rank 0's: --topology exp (rank 0: ring)" "$work/run.log" ||
        { cat "$work/run.log"; fail "no message naming the disagreement"; }
      echo "${sync:-sync}: failed with $code after $((SECONDS - start)) s, naming the disagreement"
    done
    ;;
  *) fail "unknown case" ;;
esac
echo "PASS ($case_name)"
