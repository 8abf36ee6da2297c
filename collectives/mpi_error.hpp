#pragma once
// The one place an MPI return code becomes an exception naming the call and the rank (collectives/comm.hpp and every
// MPI call site use it).
#include <mpi.h>

#include <stdexcept>

namespace gradsync {

struct MpiError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A peer process failed, or the communicator was revoked after one did (ULFM's error classes
// MPIX_ERR_PROC_FAILED, MPIX_ERR_PROC_FAILED_PENDING and MPIX_ERR_REVOKED): the job can re-form over the survivors
// (collectives/fault_tolerance.hpp). Never thrown by an MPI without ULFM.
struct ProcessFailure : MpiError {
  using MpiError::MpiError;
};

// Throws MpiError "MPI_Sendrecv failed on rank 3: <MPI's error string>" unless rc == MPI_SUCCESS; ProcessFailure when
// rc's class says a process failed.
void check_mpi(int rc, const char* call, int rank);

}  // namespace gradsync
