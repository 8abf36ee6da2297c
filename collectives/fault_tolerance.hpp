#pragma once
// Surviving a lost process in place, with ULFM (User-Level Failure Mitigation: Open MPI 5 built --with-ft=ulfm,
// scripts/ulfm.sh, and started with `mpirun --with-ft ulfm`). A failure reaches gradsync as an MPI error from
// whichever call sees it first; check_mpi (mpi_error.hpp) throws it as ProcessFailure. The survivors then revoke
// every communicator (so no rank stays blocked in a collective with a dead peer), shrink the world to the ranks that
// are left, and re-form over it. Without ULFM these functions refuse (std::logic_error), and a failure ends the job
// as before; scripts/elastic.sh then relaunches it from the on-disk checkpoints.
#include <mpi.h>

#include <optional>
#include <string>
#include <vector>

#include "collectives/comm.hpp"

namespace gradsync {

// Whether this build's MPI has ULFM's MPIX_ functions (Open MPI 5 with the ftmpi extension). MPICH's partial ULFM
// is not used: its MPIX_Comm_shrink is not reliable after a failure in Debian's MPICH 4.0.
bool ulfm_compiled();
// Whether failures are survivable in this run: ulfm_compiled() and the run started with fault tolerance on
// (`mpirun --with-ft ulfm`, which sets the MPI_FT attribute of MPI_COMM_WORLD). Local; requires MPI initialized.
bool ulfm_enabled();
// Why ulfm_enabled() is false, as a sentence for an error or a skip; empty when it is true.
std::string ulfm_missing_reason();

// Revokes MPI_COMM_WORLD and every communicator gradsync made that is still alive (Comm::split and the like): every
// pending and later operation on them fails with ProcessFailure on every rank, so a rank blocked on a live peer that
// itself waits on a dead one is released too. Local, idempotent; the rank that first sees a failure calls it, and
// every rank that catches a ProcessFailure may. Requires ulfm_enabled().
void revoke_all();

// Collective over the ranks of `comm` that are alive (MPIX_Comm_shrink, which works on a revoked communicator and
// tolerates failures during the call): a new communicator of the survivors, in the order they had in `comm`.
// Throws MpiError if the shrink itself fails. Requires ulfm_enabled().
Comm shrink(const Comm& comm);

// Collective over the live ranks of `comm` (MPIX_Comm_agree): the bitwise AND of every live rank's `flag`, the same on
// every one of them even if ranks fail during the call. Throws ProcessFailure if a rank failed that not every
// caller had acknowledged (the caller then shrinks and agrees again). Requires ulfm_enabled().
int agree(const Comm& comm, int flag);

// The ranks of `comm` (its own numbering) this process knows to have failed, ascending (MPIX_Comm_get_failed).
// Local. Requires ulfm_enabled().
std::vector<int> failed_ranks(const Comm& comm);

// Collective over `survivors` (a shrink()'s communicator): starts `count` new processes running `command` (the
// program, then its arguments) with MPI_Comm_spawn, and returns the merged communicator, the survivors first in their
// order, then the new processes (which call join_as_successor()). It becomes the communicator leave_after_failure
// ends on. Throws SpawnRefused on every survivor alike if the launcher started none (no free slot on the job's hosts,
// say: an MPI_Comm_spawn error, agreed over `survivors`), ProcessFailure if a survivor is lost meanwhile, MpiError
// naming the call if the merge fails. Requires ulfm_enabled().
struct SpawnRefused : MpiError {
  using MpiError::MpiError;
};
Comm spawn_successors(const Comm& survivors, int count, const std::vector<std::string>& command);
// In a process spawn_successors started: the merged communicator of the job it joins (the survivors first, then
// the successors), collective with the survivors' spawn_successors; nullopt, without communication, in a process
// the launcher started. Requires MPI initialized.
std::optional<Comm> join_as_successor();

// Whether this process has shrunk a communicator (taken part in a recovery). Open MPI 5.0.7's MPI_Finalize then
// hangs now and then in its closing fence, which waits for the dead ranks (seen here in 2 of 8 runs at np 6 even
// after MPIX_Comm_failure_ack; open-mpi/ompi#11404), so MpiSession ends such a process with leave_after_failure.
bool survived_failure();
// After a barrier over the newest communicator shrink() made (its errors ignored: a rank lost now is lost anyway),
// flushes stdio and ends the process with `code`, without MPI_Finalize. For a process that survived_failure().
[[noreturn]] void leave_after_failure(int code);

}  // namespace gradsync
