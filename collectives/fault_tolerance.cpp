#include "collectives/fault_tolerance.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include "collectives/mpi_error.hpp"
#include "collectives/revocable.hpp"
#include "collectives/ulfm_ext.hpp"

namespace gradsync {
namespace {

// The newest communicator shrink() made, a duplicate kept for leave_after_failure's barrier.
struct Shrunk {
  std::mutex mutex;
  MPI_Comm newest = MPI_COMM_NULL;
};
Shrunk& shrunk() {
  static Shrunk s;
  return s;
}

[[maybe_unused]] int world_rank() {
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

void require_ulfm(const char* what) {
  if (!ulfm_enabled()) throw std::logic_error(std::string(what) + ": " + ulfm_missing_reason());
}

}  // namespace

bool ulfm_compiled() { return GRADSYNC_HAVE_ULFM != 0; }

bool ulfm_enabled() {
#if GRADSYNC_HAVE_ULFM
  int* value = nullptr;
  int found = 0;
  if (MPI_Comm_get_attr(MPI_COMM_WORLD, MPIX_FT, &value, &found) != MPI_SUCCESS) return false;
  return found && value && *value;
#else
  return false;
#endif
}

std::string ulfm_missing_reason() {
  if (!ulfm_compiled())
    return "this build's MPI has no ULFM (build Open MPI 5 with it and gradsync against it: bash scripts/ulfm.sh build)";
  if (!ulfm_enabled()) return "this run was started without fault tolerance (start it with mpirun --with-ft ulfm)";
  return "";
}

void revoke_all() {
  require_ulfm("revoke_all");
#if GRADSYNC_HAVE_ULFM
  // Revoking is local and cannot be refused by a dead peer; a communicator already revoked answers
  // MPIX_ERR_REVOKED, which is what we want anyway, so return codes are not errors here.
  for_each_revocable([](MPI_Comm c) { MPIX_Comm_revoke(c); });
#endif
}

bool survived_failure() {
  Shrunk& s = shrunk();
  const std::lock_guard lock(s.mutex);
  return s.newest != MPI_COMM_NULL;
}

void leave_after_failure(int code) {
  MPI_Comm last = MPI_COMM_NULL;
  {
    Shrunk& s = shrunk();
    const std::lock_guard lock(s.mutex);
    last = s.newest;
  }
  // Every survivor is done with its messages before any leaves: a rank gone too early would look failed to the rest.
  if (last != MPI_COMM_NULL) MPI_Barrier(last);
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);
}

Comm shrink(const Comm& comm) {
  require_ulfm("shrink");
#if GRADSYNC_HAVE_ULFM
  MPI_Comm out = MPI_COMM_NULL;
  check_mpi(MPIX_Comm_shrink(comm.native(), &out), "MPIX_Comm_shrink", world_rank());
  {
    Shrunk& s = shrunk();
    const std::lock_guard lock(s.mutex);
    if (s.newest != MPI_COMM_NULL) MPI_Comm_free(&s.newest);
    MPI_Comm_dup(out, &s.newest);  // a failure here leaves it null: leave_after_failure then skips its barrier
  }
  return Comm::adopt(out);
#else
  return comm;
#endif
}

namespace {

// `merged` is the job's communicator from now on: leave_after_failure ends on it, and MPI_Finalize (collective over
// every connected process, the lost ones among them) is skipped.
void note_newest(MPI_Comm merged) {
  Shrunk& s = shrunk();
  const std::lock_guard lock(s.mutex);
  if (s.newest != MPI_COMM_NULL) MPI_Comm_free(&s.newest);
  MPI_Comm_dup(merged, &s.newest);
}

}  // namespace

Comm spawn_successors([[maybe_unused]] const Comm& survivors, [[maybe_unused]] int count,
                      [[maybe_unused]] const std::vector<std::string>& command) {
  require_ulfm("spawn_successors");
  if (command.empty() || count < 1) throw std::invalid_argument("spawn_successors: no command, or no process to start");
  std::vector<char*> args;
  for (std::size_t i = 1; i < command.size(); ++i) args.push_back(const_cast<char*>(command[i].c_str()));
  args.push_back(nullptr);
  MPI_Comm inter = MPI_COMM_NULL, merged = MPI_COMM_NULL;
  const int rc = MPI_Comm_spawn(command[0].c_str(), args.data(), count, MPI_INFO_NULL, 0, survivors.native(), &inter,
                                MPI_ERRCODES_IGNORE);
  // A launcher that has nowhere to start them answers the root, which tells the others; the agreement makes sure no
  // survivor waits in a merge that another has given up on.
  if (agree(survivors, rc == MPI_SUCCESS ? 1 : 0) != 1) {
    if (inter != MPI_COMM_NULL) MPI_Comm_free(&inter);
    char text[MPI_MAX_ERROR_STRING] = "another survivor's spawn failed";
    int length = 0;
    if (rc != MPI_SUCCESS) MPI_Error_string(rc, text, &length);
    throw SpawnRefused(fmt::format("MPI_Comm_spawn of {} successor(s) failed: {}", count, text));
  }
  check_mpi(MPI_Intercomm_merge(inter, 0, &merged), "MPI_Intercomm_merge", world_rank());
  MPI_Comm_free(&inter);
  note_newest(merged);
  return Comm::adopt(merged);
}

std::optional<Comm> join_as_successor() {
  MPI_Comm parent = MPI_COMM_NULL;
  check_mpi(MPI_Comm_get_parent(&parent), "MPI_Comm_get_parent", world_rank());
  if (parent == MPI_COMM_NULL) return std::nullopt;
  MPI_Comm merged = MPI_COMM_NULL;
  check_mpi(MPI_Intercomm_merge(parent, 1, &merged), "MPI_Intercomm_merge", world_rank());
  note_newest(merged);
  return Comm::adopt(merged);
}

int agree([[maybe_unused]] const Comm& comm, int flag) {
  require_ulfm("agree");
#if GRADSYNC_HAVE_ULFM
  check_mpi(MPIX_Comm_agree(comm.native(), &flag), "MPIX_Comm_agree", world_rank());
#endif
  return flag;
}

std::vector<int> failed_ranks([[maybe_unused]] const Comm& comm) {
  require_ulfm("failed_ranks");
  std::vector<int> ranks;
#if GRADSYNC_HAVE_ULFM
  MPI_Group failed = MPI_GROUP_NULL, all = MPI_GROUP_NULL;
  check_mpi(MPIX_Comm_get_failed(comm.native(), &failed), "MPIX_Comm_get_failed", world_rank());
  int n = 0;
  MPI_Group_size(failed, &n);
  if (n > 0) {
    std::vector<int> in_failed(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) in_failed[static_cast<std::size_t>(i)] = i;
    ranks.resize(static_cast<std::size_t>(n));
    check_mpi(MPI_Comm_group(comm.native(), &all), "MPI_Comm_group", world_rank());
    check_mpi(MPI_Group_translate_ranks(failed, n, in_failed.data(), all, ranks.data()), "MPI_Group_translate_ranks",
              world_rank());
    MPI_Group_free(&all);
    std::ranges::sort(ranks);
  }
  MPI_Group_free(&failed);
#endif
  return ranks;
}

}  // namespace gradsync
