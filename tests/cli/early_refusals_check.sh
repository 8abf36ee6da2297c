#!/usr/bin/env bash
# Cheap checks first (issue 57): inputs that are wrong before any work are refused before any work, on every rank
# together (2 ranks: none hangs waiting for another), in one line beginning with the program's name, with the bad
# input's exit code (2, docs/reference.md). One case a run:
#   csv_path     train --csv / --epoch-csv in a directory that does not exist: the flag, the path, the OS's reason
#   csv_header   train --csv onto a CSV with another header: the file and both column counts (the same header appends)
#   tuning       GRADSYNC_TUNING naming a missing file, in train and bench_allreduce: the variable and the path
#   bench_sizes  bench_allreduce --min-bytes / --max-bytes that are not whole float32 elements
# The train cases give a --data that does not exist: the refusal must come before the data is read.
# Usage: early_refusals_check.sh BIN_DIR CASE
set -uo pipefail
bin="$(realpath "${1:?usage: early_refusals_check.sh BIN_DIR CASE}")"
case_="${2:?usage: early_refusals_check.sh BIN_DIR CASE}"
here="$(dirname "${BASH_SOURCE[0]}")"
source "$here/../../scripts/mpi.sh"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
test_launcher "$bin" 2 || exit 1
work="$(mktemp -d /tmp/gradsync-early.XXXXXX)"
trap 'rm -rf "$work"' EXIT
no_data=(--data "$work/no-such-data" --sync ring --epochs 1 --timeout 60)

# refused NAME PROGRAM TEXT... -- COMMAND...: COMMAND, on 2 ranks, ends with exit 2 within 30 s, printing exactly one
# line that begins "PROGRAM: error:" and holds every TEXT, and nothing of a run (no "gradsync train:" banner).
refused() {
  local name="$1" program="$2" texts=() code line
  shift 2
  while [ "$1" != "--" ]; do texts+=("$1"); shift; done
  shift
  timeout 30 "${mpirun_[@]}" -n 2 "$@" </dev/null >"$work/run.log" 2>&1
  code=$?
  echo "$name: exit $code: $(grep -m1 "^$program: error" "$work/run.log")"
  [ "$code" -ne 124 ] || { cat "$work/run.log"; fail "$name: hung (killed after 30 s)"; }
  [ "$code" -eq 2 ] || { cat "$work/run.log"; fail "$name: exit $code, expected 2"; }
  [ "$(grep -c "^$program: error" "$work/run.log")" -eq 1 ] || { cat "$work/run.log"; fail "$name: not one line"; }
  line="$(grep "^$program: error" "$work/run.log")"
  for t in "${texts[@]}"; do grep -qF -- "$t" <<<"$line" || fail "$name: the line does not say '$t'"; done
  ! grep -qE "^gradsync train:|^epoch |^# bench_allreduce" "$work/run.log" || { cat "$work/run.log"; fail "$name: ran"; }
}

case "$case_" in
  csv_path)
    for flag in --csv --epoch-csv; do
      refused "train $flag" train "$flag" "/nonexistent/dir/x.csv" "No such file or directory" -- \
        env -u GRADSYNC_TUNING "$bin/train" "${no_data[@]}" "$flag" /nonexistent/dir/x.csv
    done
    ;;
  csv_header)
    printf 'a,b,c\n1,2,3\n' >"$work/old.csv"
    refused "train --csv (other header)" train "--csv $work/old.csv" "header differs" "3 columns" "21 in this run" -- \
      env -u GRADSYNC_TUNING "$bin/train" "${no_data[@]}" --csv "$work/old.csv"
    [ "$(cat "$work/old.csv")" = "$(printf 'a,b,c\n1,2,3')" ] || fail "the refused file was changed"
    # A new file and one with this run's header pass the check: the run goes on to the data (refused there, for its
    # --data), and the check leaves no new file behind.
    header="$(sed -n '/kTrainCsvHeader =/,/;/p' "$here/../../trainers/report/report.hpp" | grep -o '"[^"]*"' | tr -d '"\n')"
    printf '%s\n' "$header" >"$work/same.csv"
    for csv in new.csv same.csv; do
      timeout 30 "${mpirun_[@]}" -n 2 env -u GRADSYNC_TUNING "$bin/train" "${no_data[@]}" --csv "$work/$csv" \
        </dev/null >"$work/run.log" 2>&1
      echo "train --csv $csv: $(grep -m1 "^train: error" "$work/run.log")"
      grep -q "no-such-data" "$work/run.log" || { cat "$work/run.log"; fail "--csv $csv was refused"; }
    done
    [ ! -e "$work/new.csv" ] || fail "the check left a new --csv file behind"
    ;;
  tuning)
    refused "train" train "GRADSYNC_TUNING=$work/missing.txt" "No such file or directory" -- \
      env GRADSYNC_TUNING="$work/missing.txt" "$bin/train" "${no_data[@]}"
    refused "bench_allreduce" bench_allreduce "GRADSYNC_TUNING=$work/missing.txt" "No such file or directory" -- \
      env GRADSYNC_TUNING="$work/missing.txt" "$bin/bench_allreduce" --methods auto --max-bytes 64 --reps 1 --iters 1
    ;;
  bench_sizes)
    # A tiny sweep around each bad size, so that a binary without the check is done in a moment.
    small=(--methods ring --reps 1 --iters 1 --warmup 0)
    for args in "--min-bytes 6 --max-bytes 64" "--min-bytes 2 --max-bytes 64" "--max-bytes 1023 --min-bytes 4" \
      "--min-bytes 0 --max-bytes 64"; do
      read -r flag value other_flag other <<<"$args"
      refused "bench_allreduce $args" bench_allreduce "$flag $value" "4-byte float32" -- \
        env -u GRADSYNC_TUNING "$bin/bench_allreduce" "${small[@]}" "$flag" "$value" "$other_flag" "$other"
    done
    ;;
  *) fail "unknown case '$case_'" ;;
esac
echo "PASS"
