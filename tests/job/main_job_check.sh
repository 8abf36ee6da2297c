#!/usr/bin/env bash
# The main job fits one screen: scripts/run.sh in its smallest form (1 run, 1 epoch) on the tree under test prints at
# most 40 lines, stdout and stderr together and not on a terminal, ends with its summary ("done in"), and keeps every
# run's line in the results folder (logs/scaling.messages) instead of on the screen.
# Usage: tests/job/main_job_check.sh BUILD_DIR
set -euo pipefail
build="$1"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
status=0
BUILD_DIR="$build" bash "$root/scripts/run.sh" --reps 1 --epochs 1 --out "$tmp/job" >"$tmp/screen" 2>&1 || status=$?
lines=$(wc -l <"$tmp/screen")
fail() { echo "FAIL: $*"; echo "--- the job's screen ($lines lines):"; cat "$tmp/screen"; exit 1; }
[ "$status" -eq 0 ] || fail "scripts/run.sh exited with $status"
[ "$lines" -le 40 ] || fail "the job printed $lines lines, more than one screen (40)"
tail -n 1 "$tmp/screen" | grep -q '^done in [0-9]* s$' || fail "the screen does not end with the summary's 'done in N s'"
grep -q '^Headline:' "$tmp/screen" || fail "no headline on the screen"
grep -q '\[1/' "$tmp/job/logs/scaling.messages" || fail "logs/scaling.messages lacks the runs' lines"
if grep -q '\[1/' "$tmp/screen"; then fail "the runs' lines reached the screen"; fi
echo "ok: the main job printed $lines lines (at most 40), its runs' lines in logs/scaling.messages"
