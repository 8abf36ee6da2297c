#pragma once
#include <chrono>
#ifdef GRADSYNC_SIMULATED
#include <mpi.h>
#endif

namespace gradsync {

// Seconds on a monotonic clock, for the trainer's time accounting. A simulation build (cmake/smpi_compat.h)
// reads the simulated clock: there every rank is a thread of one process taking turns, so the wall clock would
// count the other ranks' turns too. Needs MPI initialized in that build.
inline double now_s() {
#ifdef GRADSYNC_SIMULATED
  return MPI_Wtime();
#else
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
#endif
}

}  // namespace gradsync
