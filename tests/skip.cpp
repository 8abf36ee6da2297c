// The skip half of tests/test_support.hpp: which case is running, whether it was skipped and why.
#include <fmt/format.h>
#include <mpi.h>

#include <string>
#include <utility>

#include "collectives/comm.hpp"
#include "test_support.hpp"

namespace gradsync::test {
namespace {

// The reason the running case was skipped, "" while it was not.
std::string g_skip_reason;

}  // namespace

void begin_case() { g_skip_reason.clear(); }

std::string end_case() { return std::exchange(g_skip_reason, {}); }

bool skip_unless(bool available, const std::string& reason) {
  const Comm world = Comm::world();
  // Summed, not or-ed: the reason says when only some ranks lack it, a run across unlike hosts.
  int lacking = available ? 0 : 1, lacking_ranks = 0;
  check_mpi(MPI_Allreduce(&lacking, &lacking_ranks, 1, MPI_INT, MPI_SUM, world.native()), "MPI_Allreduce", world.rank());
  if (lacking_ranks == 0) return false;
  if (g_skip_reason.empty())  // the first reason a case met is the one that stopped it
    g_skip_reason = lacking_ranks == world.size()
                        ? reason
                        : fmt::format("{} (on {} of {} ranks)", reason, lacking_ranks, world.size());
  return true;
}

}  // namespace gradsync::test
