// SKIP_UNLESS seen from outside (tests/skip_check.sh runs these suites alone): a case skipped on one rank only is
// skipped on every rank, with its reason and the ranks that lacked it; a run whose cases were all skipped exits 77,
// and one in which others ran lists the skipped case and exits 0. unit_mpi4 never runs them.
#include <doctest/doctest.h>

#include "collectives/comm.hpp"
#include "test_support.hpp"

using namespace gradsync;

TEST_CASE("a precondition the last rank lacks skips the case on every rank" * doctest::test_suite("skip_check_skips")) {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.rank() != world.size() - 1, "the last rank lacks it");
  FAIL("ran on past SKIP_UNLESS");
}

TEST_CASE("a precondition every rank has runs the case" * doctest::test_suite("skip_check_runs")) {
  SKIP_UNLESS(true, "never skipped");
  CHECK(Comm::world().size() >= 1);
}
