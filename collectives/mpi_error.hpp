#pragma once
// The one place an MPI return code becomes an exception naming the call and the rank (collectives/comm.hpp and every
// MPI call site use it).
#include <mpi.h>

#include <stdexcept>

namespace gradsync {

struct MpiError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws MpiError "MPI_Sendrecv failed on rank 3: <MPI's error string>" unless rc == MPI_SUCCESS.
void check_mpi(int rc, const char* call, int rank);

}  // namespace gradsync
