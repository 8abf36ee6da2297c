#!/usr/bin/env bash
# The start-up check of a native build, end to end: a binary built for AVX-512 (built_for_avx512.cpp) on a CPU
# without it exits 1 with one line naming the missing features and the fix, and never dies on an illegal
# instruction; on a CPU with AVX-512 it runs. Usage: native_check.sh <built_for_avx512 binary>
set -uo pipefail
output=$("$1" 2>&1)
status=$?
echo "exit $status: $output"
if grep -qw avx512f /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo && grep -qw avx512vl /proc/cpuinfo; then
  [ "$status" = 0 ] || { echo "native_check: refused on a CPU with AVX-512" >&2; exit 1; }
  exit 0
fi
[ "$status" = 1 ] || { echo "native_check: exit $status, expected 1 (132 is an illegal instruction)" >&2; exit 1; }
[ "$(wc -l <<<"$output")" = 1 ] || { echo "native_check: more than one line" >&2; exit 1; }
grep -q "built with GRADSYNC_NATIVE=ON for a CPU with .*avx512f.*which this CPU lacks; rebuild with -DGRADSYNC_NATIVE=OFF" \
  <<<"$output" || { echo "native_check: the line does not name avx512f and the fix" >&2; exit 1; }
