#!/usr/bin/env bash
# Every binary that reads MNIST refuses a bad --data in one line naming the path and what is wrong, with the bad
# input's exit code (2, docs/reference.md), before any work: a directory that does not exist, a file given as the
# directory, and a directory without the IDX files. Never an abort or a stack of MPI messages.
# Usage: bad_data_check.sh <binary>...
set -uo pipefail
fail() {
  echo "bad_data_check: $*" >&2
  exit 1
}
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
touch "$work/a-file"
mkdir "$work/empty"
expect_refusal() {  # <binary> <--data value> <text the one line must contain>
  local name output status
  name="$(basename "$1")"
  output=$(cd "$work" && "$1" --data "$2" 2>&1)
  status=$?
  echo "$name --data $2 -> exit $status: $output"
  [ "$status" = 2 ] || fail "$name --data $2: exit code $status, expected 2"
  [ "$(wc -l <<<"$output")" = 1 ] || fail "$name --data $2: more than one line"
  grep -qF -- "$2" <<<"$output" || fail "$name --data $2: the line does not name the path"
  grep -qF -- "$3" <<<"$output" || fail "$name --data $2: the line does not say '$3'"
}
for binary in "$@"; do
  binary="$(realpath "$binary")"  # the runs start in a scratch directory
  expect_refusal "$binary" "$work/missing" "no such directory"
  expect_refusal "$binary" "$work/a-file" "not a directory"
  expect_refusal "$binary" "$work/empty" "missing train-images-idx3-ubyte"
done
