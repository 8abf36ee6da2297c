#include "collectives/comm.hpp"
#include "collectives/revocable.hpp"
#include "collectives/wire_meter.hpp"

#include <fmt/format.h>

#include <climits>

namespace gradsync {

Comm Comm::world() { return Comm(MPI_COMM_WORLD); }

Comm::Comm(MPI_Comm comm) : Comm(std::make_shared<MPI_Comm>(comm)) {}

Comm::Comm(std::shared_ptr<MPI_Comm> handle) : handle_(std::move(handle)) {
  if (*handle_ == MPI_COMM_NULL) return;
  int world_rank = -1;
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank), "MPI_Comm_rank (MPI_COMM_WORLD)", -1);
  check_mpi(MPI_Comm_set_errhandler(*handle_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", world_rank);
  check_mpi(MPI_Comm_rank(*handle_, &rank_), "MPI_Comm_rank", world_rank);
  check_mpi(MPI_Comm_size(*handle_, &size_), "MPI_Comm_size", world_rank);
}

namespace {

// A communicator this process created, freed when the last Comm holding it goes away. A destructor cannot report
// an error: a failed MPI_Comm_free leaks the handle, which MPI_Finalize reclaims.
std::shared_ptr<MPI_Comm> owned(MPI_Comm comm) {
  auto deleter = [](MPI_Comm* c) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (*c != MPI_COMM_NULL && !finalized) MPI_Comm_free(c);
    delete c;
  };
  std::shared_ptr<MPI_Comm> handle(new MPI_Comm(comm), deleter);
  if (comm != MPI_COMM_NULL) track_for_revoke(handle);
  return handle;
}

}  // namespace

Comm Comm::adopt(MPI_Comm comm) { return Comm(owned(comm)); }

Comm Comm::split(int color, int key) const {
  MPI_Comm out = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(native(), color, key, &out), "MPI_Comm_split", rank_);
  return Comm(owned(out));
}

Comm Comm::split_by_node() const {
  MPI_Comm out = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(native(), MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &out), "MPI_Comm_split_type",
            rank_);
  return Comm(owned(out));
}

bool Comm::on_one_node() const {
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(native(), MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node), "MPI_Comm_split_type",
            rank_);
  int node_size = 0;
  const int rc = MPI_Comm_size(node, &node_size);
  const int free_rc = MPI_Comm_free(&node);
  check_mpi(rc, "MPI_Comm_size", rank_);
  check_mpi(free_rc, "MPI_Comm_free", rank_);
  return node_size == size_;  // a node's ranks all see the same size, so one node holds everyone or no one sees it
}

std::pair<std::uint64_t, std::uint64_t> Comm::min_max(std::uint64_t value) const {
  std::uint64_t extremes[2] = {value, ~value};  // max of ~v is ~(min of v): both in one reduction
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, extremes, 2, MPI_UINT64_T, MPI_MAX, native()), "MPI_Allreduce (min_max)", rank_);
  return {~extremes[1], extremes[0]};
}

bool Comm::all_ok(bool ok) const {
  int flag = ok ? 1 : 0;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &flag, 1, MPI_INT, MPI_LAND, native()), "MPI_Allreduce (all_ok)", rank_);
  return flag == 1;
}

int Comm::to_int_count(std::size_t count, const char* call) const {
  if (count > static_cast<std::size_t>(INT_MAX))
    throw MpiError(fmt::format("{} on rank {}: count {} exceeds MPI's int limit", call, rank_, count));
  return static_cast<int>(count);
}

void Comm::send(const void* buf, std::size_t count, MPI_Datatype type, int dest, int tag) const {
  check_mpi(MPI_Send(buf, to_int_count(count, "MPI_Send"), type, dest, tag, native()), "MPI_Send", rank_);
  note_sent(count, type, rank_);
}

void Comm::recv(void* buf, std::size_t count, MPI_Datatype type, int source, int tag) const {
  MPI_Status status;
  check_mpi(MPI_Recv(buf, to_int_count(count, "MPI_Recv"), type, source, tag, native(), &status), "MPI_Recv", rank_);
  int got = 0;
  check_mpi(MPI_Get_count(&status, type, &got), "MPI_Get_count (after MPI_Recv)", rank_);
  if (got == MPI_UNDEFINED || static_cast<std::size_t>(got) != count)
    throw MpiError(fmt::format("MPI_Recv on rank {}: expected {} elements from rank {}, got {}", rank_, count,
                               status.MPI_SOURCE, got));
}

void Comm::sendrecv(const void* send_buf, std::size_t send_count, int dest, void* recv_buf, std::size_t recv_count,
                    int source, MPI_Datatype type, int tag) const {
  MPI_Status status;
  check_mpi(MPI_Sendrecv(send_buf, to_int_count(send_count, "MPI_Sendrecv"), type, dest, tag, recv_buf,
                         to_int_count(recv_count, "MPI_Sendrecv"), type, source, tag, native(), &status),
            "MPI_Sendrecv", rank_);
  note_sent(send_count, type, rank_);
  int got = 0;
  check_mpi(MPI_Get_count(&status, type, &got), "MPI_Get_count (after MPI_Sendrecv)", rank_);
  if (got == MPI_UNDEFINED || static_cast<std::size_t>(got) != recv_count)
    throw MpiError(fmt::format("MPI_Sendrecv on rank {}: expected {} elements from rank {}, got {}", rank_, recv_count,
                               source, got));
}

void Comm::barrier() const { check_mpi(MPI_Barrier(native()), "MPI_Barrier", rank_); }

}  // namespace gradsync
