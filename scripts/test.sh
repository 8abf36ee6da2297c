#!/usr/bin/env bash
# The test command: installs what is missing, builds, fetches MNIST, runs the suite (ctest runs doctest under
# mpiexec -n 4). Against Open MPI in build/ by default; --mpi mpich builds a second tree, build-mpich, against
# MPICH and runs the same suite there. Other arguments go to ctest, e.g. scripts/test.sh -L cluster
# Usage: scripts/test.sh [--mpi openmpi|mpich] [ctest arguments...]
set -euo pipefail
user_build_dir="${BUILD_DIR:-}"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
mpi=openmpi
ctest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --mpi) need_value "$1" $#; mpi="$2"; shift 2 ;;
    *) ctest_args+=("$1"); shift ;;
  esac
done
case "$mpi" in
  openmpi) ;;
  mpich) [ -n "$user_build_dir" ] || BUILD_DIR="$GRADSYNC_ROOT/build-mpich" ;;
  *) die "--mpi must be openmpi or mpich, got '$mpi'" ;;
esac
export BUILD_DIR
"$GRADSYNC_ROOT/scripts/setup.sh" --mpi "$mpi"
"$GRADSYNC_ROOT/scripts/fetch_mnist.sh"
cd "$BUILD_DIR"
status=0
rm -f Testing/Temporary/LastTest.log  # a run that writes none (ctest -N) must not list an older run's skips
ctest --output-on-failure "${ctest_args[@]+"${ctest_args[@]}"}" || status=$?
# ctest shows no output of an entry it skipped, nor of one that passed with some cases skipped: the doctest suite's
# "skipped: <case> [<reason>]" lines (tests/main.cpp) are repeated here with their entry, so every skip says why.
# The unit_skip_* entries skip a case on purpose to check the skip itself: not news.
skips=$(awk '
  /^ *[0-9]+\/[0-9]+ Testing: / { entry = $3 }
  /^skipped: / && entry !~ /^unit_skip_/ { print "  " entry ": " substr($0, 10) }' \
  Testing/Temporary/LastTest.log 2>/dev/null || true)
if [ -n "$skips" ]; then
  echo "Test cases skipped, with the reason:"
  echo "$skips"
fi
# The in-place recovery tests (label ulfm) skip themselves in a tree whose MPI has no ULFM; where the ULFM MPI is
# installed (scripts/ulfm.sh, which CI runs), they run again in build-ulfm, built from this same source.
if [ "$mpi" = openmpi ] && [ -z "$user_build_dir" ] && ulfm_prefix="$("$GRADSYNC_ROOT/scripts/ulfm.sh" prefix)"; then
  echo "The in-place recovery tests under ULFM ($ulfm_prefix), in build-ulfm:"
  "$GRADSYNC_ROOT/scripts/ulfm.sh" build
  (cd "$GRADSYNC_ROOT/build-ulfm" && ctest --output-on-failure -L ulfm) || status=$?
elif [ "$mpi" = openmpi ]; then
  echo "The in-place recovery tests (ctest -L ulfm) were skipped: no ULFM MPI here (bash scripts/ulfm.sh build installs it, about 15 minutes)"
fi
exit "$status"
