#pragma once
// MPI's lifetime in a program's main(): initialized once, finalized on the way out, or the whole job aborted.
#include <mpi.h>

namespace gradsync {

class MpiSession {
 public:
  // MPI_Init_thread, asking for `thread_level` (MPI_THREAD_SINGLE ... MPI_THREAD_MULTIPLE); MPI may provide less,
  // which provided() says. Call once per process, before any other MPI call. Throws MpiError if MPI cannot start.
  // Where failures are survivable (ulfm_enabled()), sets SIGPIPE to ignored for the whole process.
  MpiSession(int& argc, char**& argv, int thread_level);
  // MPI_Finalize: collective over MPI_COMM_WORLD, so every rank's session must end (or the job be aborted). A process
  // that survived a failure (collectives/fault_tolerance.hpp) ends here without it, with set_exit_code's status.
  ~MpiSession();
  // The status the process ends with if ~MpiSession ends it (main's own return value otherwise).
  static void set_exit_code(int code);
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int provided() const { return provided_; }
  // This process's rank and the job's size in MPI_COMM_WORLD, read once at the start so that an error handler can
  // name the rank without another MPI call.
  int world_rank() const { return world_rank_; }
  int world_size() const { return world_size_; }

  // Ends every process of the job with exit status `code` (MPI_Abort on MPI_COMM_WORLD). For a rank that hit an
  // error the others cannot learn of: they would wait forever in their next collective for it.
  [[noreturn]] static void abort(int code);

 private:
  int provided_ = MPI_THREAD_SINGLE;
  int world_rank_ = 0;
  int world_size_ = 1;
};

// The thread level MPI was initialized with (MPI_Query_thread): a thread other than main's may make MPI calls only
// if this is at least MPI_THREAD_SERIALIZED. Requires MPI initialized; throws MpiError if the query fails.
int mpi_thread_level();

}  // namespace gradsync
