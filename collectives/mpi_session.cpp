#include "collectives/mpi_session.hpp"

#include <cstdlib>

#include "collectives/comm.hpp"
#include "collectives/fault_tolerance.hpp"

namespace gradsync {

MpiSession::MpiSession(int& argc, char**& argv, int thread_level) {
  check_mpi(MPI_Init_thread(&argc, &argv, thread_level, &provided_), "MPI_Init_thread", -1);
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_), "MPI_Comm_rank (MPI_COMM_WORLD)", -1);
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &world_size_), "MPI_Comm_size (MPI_COMM_WORLD)", world_rank_);
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
