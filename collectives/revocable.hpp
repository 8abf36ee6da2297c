#pragma once
// The communicators a failure must revoke (collectives/fault_tolerance.hpp): every one gradsync created and still
// holds, and MPI_COMM_WORLD. Kept apart from fault_tolerance so that mpi_error.cpp, which classifies errors, can ask
// whether any of them was revoked without depending on Comm.
#include <mpi.h>

#include <functional>
#include <memory>

namespace gradsync {

// Remembers `comm` while any owner holds it (weakly). A no-op without ULFM. Thread-safe.
void track_for_revoke(const std::shared_ptr<MPI_Comm>& comm);
// Calls `f` on MPI_COMM_WORLD and on every tracked communicator still alive, under the registry's lock (`f` must
// not track another).
void for_each_revocable(const std::function<void(MPI_Comm)>& f);

}  // namespace gradsync
