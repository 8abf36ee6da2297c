#!/usr/bin/env bash
# A build with -DBUILD_TESTING=OFF does not need doctest: configuring with doctest made unfindable
# (CMAKE_DISABLE_FIND_PACKAGE_doctest) succeeds with BUILD_TESTING=OFF, and the same configure with it ON fails,
# so the first result means something. Configure only: building is what the other entries do.
# Usage: without_tests_check.sh <source dir> <mpicc> <mpiexec>
set -uo pipefail
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
configure() {  # <BUILD_TESTING value> <dir>
  cmake -S "$1" -B "$3" -DBUILD_TESTING="$2" -DCMAKE_DISABLE_FIND_PACKAGE_doctest=ON -DMPI_C_COMPILER="$mpicc" \
    -DMPIEXEC_EXECUTABLE="$mpiexec" -DGRADSYNC_PYTHON=OFF >"$3.log" 2>&1
}
source_dir="$1" mpicc="$2" mpiexec="$3"
configure "$source_dir" OFF "$work/off" || { cat "$work/off.log"; echo "without_tests_check: BUILD_TESTING=OFF failed to configure without doctest" >&2; exit 1; }
! grep -q '^doctest_DIR' "$work/off/CMakeCache.txt" \
  || { echo "without_tests_check: BUILD_TESTING=OFF still looked doctest up" >&2; exit 1; }
if configure "$source_dir" ON "$work/on"; then
  echo "without_tests_check: BUILD_TESTING=ON configured without doctest: the check proves nothing" >&2
  exit 1
fi
grep -q doctest "$work/on.log" || { cat "$work/on.log"; echo "without_tests_check: ON failed, but not for doctest" >&2; exit 1; }
echo "BUILD_TESTING=OFF configures without doctest; ON refuses without it"
