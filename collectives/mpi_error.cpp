#include "collectives/mpi_error.hpp"

#include "collectives/revocable.hpp"
#include "collectives/ulfm_ext.hpp"

#include <fmt/format.h>

#include <string>

namespace gradsync {
namespace {

bool is_process_failure(int rc) {
#if GRADSYNC_HAVE_ULFM
  int cls = rc;
  if (MPI_Error_class(rc, &cls) != MPI_SUCCESS) cls = rc;
  if (cls == MPIX_ERR_PROC_FAILED || cls == MPIX_ERR_PROC_FAILED_PENDING || cls == MPIX_ERR_REVOKED) return true;
  // MPI_Waitall and MPI_Testall with MPI_STATUSES_IGNORE answer MPI_ERR_IN_STATUS, whose statuses are gone: a
  // failure is then what this process knows of, a failed process or a revoked communicator. Asked of every
  // communicator gradsync holds, not only MPI_COMM_WORLD: a successor (--respawn) has a world of its own, and the
  // survivors' world does not hold the successors, so a dead peer may be in neither.
  if (cls != MPI_ERR_IN_STATUS) return false;
  const auto failed_in = [](MPI_Comm c) {
    MPI_Group failed = MPI_GROUP_NULL;
    int n = 0;
    if (MPIX_Comm_get_failed(c, &failed) == MPI_SUCCESS) {
      MPI_Group_size(failed, &n);
      MPI_Group_free(&failed);
    }
    return n > 0;
  };
  bool known = failed_in(MPI_COMM_WORLD);
  for_each_revocable([&](MPI_Comm c) {
    int flag = 0;
    if (!known && ((MPIX_Comm_is_revoked(c, &flag) == MPI_SUCCESS && flag) || failed_in(c))) known = true;
  });
  return known;
#else
  (void)rc;
  return false;
#endif
}

}  // namespace

void check_mpi(int rc, const char* call, int rank) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) length = 0;
  std::string message =
      fmt::format("{} failed on rank {}: {}", call, rank, std::string(text, static_cast<std::size_t>(length)));
  if (is_process_failure(rc)) throw ProcessFailure(std::move(message));
  throw MpiError(std::move(message));
}

}  // namespace gradsync
