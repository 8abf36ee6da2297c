/* Preloaded into MPICH ranks that share cores (scripts/mpi.sh, mpirun_flags): MPICH 4.0's ch4:ucx device waits
 * by calling ucp_worker_progress in a loop that never yields the CPU, and has no setting that makes it yield
 * (MPIR_CVAR_POLLS_BEFORE_YIELD applies to ch3:nemesis only). A rank spinning there keeps the rank it waits for
 * off the core until the scheduler's time slice ends, every message. This wrapper yields after a poll that found
 * nothing, as Open MPI's mpi_yield_when_idle does; a poll that made progress returns at once. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

typedef unsigned (*progress_fn)(void*);

unsigned ucp_worker_progress(void* worker) {
  static progress_fn real = NULL;
  if (real == NULL) {
    real = (progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
    if (real == NULL) {
      fprintf(stderr, "libgradsync_ucx_yield: ucp_worker_progress not found in the libraries after this one\n");
      abort();
    }
  }
  const unsigned events = real(worker);
  if (events == 0) sched_yield();
  return events;
}
