#include "collectives/mpi_session.hpp"

#include <csignal>
#include <cstdlib>

#include "collectives/comm.hpp"
#include "collectives/fault_tolerance.hpp"

namespace gradsync {

MpiSession::MpiSession(int& argc, char**& argv, int thread_level) {
  check_mpi(MPI_Init_thread(&argc, &argv, thread_level, &provided_), "MPI_Init_thread", -1);
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_), "MPI_Comm_rank (MPI_COMM_WORLD)", -1);
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &world_size_), "MPI_Comm_size (MPI_COMM_WORLD)", world_rank_);
  // A survivor whose MPI writes to the socket of a peer that has just died gets SIGPIPE, which by default kills it
  // too: a successor (whose messages go over TCP even on one node) died of it in CI, a second loss nobody planned.
  // Ignored, the write fails with EPIPE and reaches gradsync as the failure it is. Only where failures are
  // survivable: elsewhere a closed stdout should still end the process quietly.
  if (ulfm_enabled()) std::signal(SIGPIPE, SIG_IGN);
}

namespace {
int exit_code = 0;
}  // namespace

void MpiSession::set_exit_code(int code) { exit_code = code; }

// A destructor cannot report a failed MPI_Finalize; the process is ending either way.
MpiSession::~MpiSession() {
  if (survived_failure()) leave_after_failure(exit_code);
  MPI_Finalize();
}

void MpiSession::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; should an MPI's do, this process still ends
}

int mpi_thread_level() {
  int provided = MPI_THREAD_SINGLE;
  check_mpi(MPI_Query_thread(&provided), "MPI_Query_thread", -1);
  return provided;
}

}  // namespace gradsync
