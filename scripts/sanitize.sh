#!/usr/bin/env bash
# Builds gradsync with AddressSanitizer and UndefinedBehaviorSanitizer (GRADSYNC_SANITIZE=ON) into build-asan and
# runs tests there through ctest, so the doctest suite runs under mpirun -n 4 exactly as tests/CMakeLists.txt
# declares it. Default: the doctest suite and the short soak (the fault-injection tests time a killed job to
# the second, which a sanitized build is too slow for). Exits non-zero if a test fails or a sanitizer reports
# anything, leaks included (Open MPI's own are suppressed, see below).
#   scripts/sanitize.sh [--no-leak-check] [ctest arguments, replacing the default selection, e.g. -L reliability]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

leak_check=1
if [ "${1:-}" = "--no-leak-check" ]; then
  leak_check=0
  shift
fi

asan_dir="${ASAN_BUILD_DIR:-$GRADSYNC_ROOT/build-asan}"

"$GRADSYNC_ROOT/scripts/setup.sh" --no-build
"$GRADSYNC_ROOT/scripts/fetch_mnist.sh"

say "configuring $asan_dir (ASan + UBSan, RelWithDebInfo for line numbers in stacks)"
cmake -S "$GRADSYNC_ROOT" -B "$asan_dir" -DGRADSYNC_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
say "building (one job: the sanitized compile is slow and memory-hungry, and the machine is shared)"
if ! cmake --build "$asan_dir" -j1 >"$asan_dir/build.log" 2>&1; then
  grep -E "error|Error" "$asan_dir/build.log" | head -40 >&2
  die "sanitized build failed (full log: $asan_dir/build.log)"
fi

# Open MPI keeps one-time allocations (hwloc topology, plugin state, ORTE bookkeeping) until exit by design:
# the same small set per rank, every run. Rather than turn LeakSanitizer off, which would hide leaks in
# our code, suppress the leaks whose allocation stack passes through Open MPI's libraries. That needs whole
# stacks: those libraries have no frame pointers, so ASan's default fast unwinder stops right above malloc and
# nothing would match; fast_unwind_on_malloc=0 unwinds with DWARF instead (slower, but only here).
# A leak allocated by our own code has none of these libraries on its stack and is still reported.
suppressions="$asan_dir/lsan-openmpi.supp"
printf 'leak:%s\n' libmpi.so libopen-pal.so libopen-rte.so libhwloc.so libevent libpmix.so libucp.so libucs.so \
  libuct.so mca_ >"$suppressions"
if [ "$leak_check" = 1 ]; then
  export ASAN_OPTIONS="detect_leaks=1:fast_unwind_on_malloc=0:halt_on_error=1"
  export LSAN_OPTIONS="suppressions=$suppressions"
else
  export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1"
fi
# Reports go to stderr, which ctest captures: GCC's UBSan ignores log_path when it runs alongside ASan, so the
# one place that sees every report is the test output, and the summary below searches it.
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
command -v llvm-symbolizer >/dev/null || command -v addr2line >/dev/null ||
  say "no symbolizer (llvm-symbolizer or addr2line): stacks will show addresses only"
[ "$#" -gt 0 ] || set -- -R '^(unit_.*|soak_.*)$'

log="$asan_dir/ctest.log"
say "running ctest $* in $asan_dir with ASAN_OPTIONS=$ASAN_OPTIONS ${LSAN_OPTIONS:+LSAN_OPTIONS=$LSAN_OPTIONS }UBSAN_OPTIONS=$UBSAN_OPTIONS (full output: $log)"
set +e
# -V keeps the output of passing tests too: a report in a rank that somehow exited 0 is still a finding.
(cd "$asan_dir" && ctest -V "$@") >"$log" 2>&1
ctest_status=$?
set -e

grep -E "^ *[0-9]+/[0-9]+ Test +#" "$log" | sed 's/^/  /' || true
# The first line of each report; with -V ctest prefixes every output line with "<test number>: ".
report_pattern='runtime error:|ERROR: AddressSanitizer|ERROR: LeakSanitizer'
reports=$(grep -cE "$report_pattern" "$log" || true)
result_line="$(grep -E "tests passed|No tests were found" "$log" | tail -1 || true)"
echo
echo "==== sanitizer run summary ===="
echo "build:    $asan_dir (-fsanitize=address,undefined -fno-sanitize-recover=all, RelWithDebInfo)"
if [ "$leak_check" = 1 ]; then echo "leaks:    checked; Open MPI's own suppressed ($suppressions)"; else echo "leaks:    not checked (--no-leak-check)"; fi
echo "tests:    ${result_line:-ctest printed no result line (status $ctest_status)}"
echo "findings: $reports sanitizer report(s)"
if [ "$reports" -gt 0 ]; then
  # Each report: its first line and the stack under it, up to the blank line that ends it.
  awk -v pat="$report_pattern" '$0 ~ pat {show = 1} show {print "  " $0} show && /^([0-9]+:)? *$/ {show = 0}' "$log" |
    head -80
fi
if [ "$ctest_status" -ne 0 ] || [ "$reports" -gt 0 ]; then
  [ "$ctest_status" -eq 0 ] || grep -A3 "The following tests FAILED" "$log" | sed 's/^/  /' || true
  echo "result:   FAILED (ctest status $ctest_status, $reports sanitizer report(s)); full output: $log"
  exit 1
fi
echo "result:   clean: every test passed, no ASan/UBSan report"
