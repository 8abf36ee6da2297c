#!/usr/bin/env bash
# GRADSYNC_ISA is refused before any work, in one line naming the variable, its value and what is wrong, with the
# usage error's exit code (2): a name that is no instruction set, and a set above what this CPU runs.
# Usage: refusal_check.sh <train binary>
set -uo pipefail
train="$1"
fail() {
  echo "refusal_check: $*" >&2
  exit 1
}
expect_refusal() {  # <value> <text the one line must contain>
  local output status
  output=$(GRADSYNC_ISA="$1" "$train" --epochs 1 2>&1)
  status=$?
  echo "GRADSYNC_ISA=$1 -> exit $status: $output"
  [ "$status" = 2 ] || fail "GRADSYNC_ISA=$1: exit code $status, expected 2"
  [ "$(wc -l <<<"$output")" = 1 ] || fail "GRADSYNC_ISA=$1: more than one line"
  grep -qF "$2" <<<"$output" || fail "GRADSYNC_ISA=$1: the line does not say '$2'"
}
expect_refusal avx9 "train: error: GRADSYNC_ISA=avx9: not an instruction set (baseline, avx2, avx512)"
if grep -qw avx512bw /proc/cpuinfo && grep -qw avx512vl /proc/cpuinfo; then
  echo "(this CPU runs AVX-512: no set above it to refuse)"
else
  expect_refusal avx512 "train: error: GRADSYNC_ISA=avx512: this CPU runs at most"
fi
