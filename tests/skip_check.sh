#!/usr/bin/env bash
# Runs the doctest binary on the skip-check suites (tests/test_skip.cpp) and checks what ctest and a reader see:
# the exit code, the skipped case listed with its reason and the ranks that lacked it, and the count line.
# Usage: skip_check.sh <expected exit code> <expected count line> <launcher and binary...>
set -uo pipefail
want_status="$1" want_counts="$2"
shift 2
output=$("$@" 2>&1)
status=$?
echo "$output"
ranks=$(sed -n 's/^gradsync tests on \([0-9]*\) rank.*/\1/p' <<<"$output")
fail() {
  echo "skip_check: $*" >&2
  exit 1
}
[ "$status" = "$want_status" ] || fail "exit code $status, expected $want_status"
# At 1 rank the last rank is every rank: the reason then names no count.
if [ "$ranks" = 1 ]; then detail=""; else detail=" (on 1 of $ranks ranks)"; fi
grep -qxF "skipped: a precondition the last rank lacks skips the case on every rank [the last rank lacks it$detail]" \
  <<<"$output" || fail "the skipped case is not listed with its reason"
grep -qxF "test cases over $ranks ranks: $want_counts" <<<"$output" || fail "no count line '$want_counts'"
