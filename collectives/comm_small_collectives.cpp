// Comm's typed broadcasts, reductions and gathers of small values (collectives/comm.hpp states their contracts).
#include "collectives/comm.hpp"

namespace gradsync {

void start_iallreduce_in_place(void* data, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request* request,
                               std::vector<std::byte>& send_copy, const char* call, int rank) {
  const void* send = MPI_IN_PLACE;
#ifdef GRADSYNC_SIMULATED
  int type_bytes = 0;
  check_mpi(MPI_Type_size(type, &type_bytes), call, rank);
  const auto* bytes = static_cast<const std::byte*>(data);
  send_copy.assign(bytes, bytes + static_cast<std::size_t>(count) * static_cast<std::size_t>(type_bytes));
  send = send_copy.data();
#else
  (void)send_copy;
#endif
  check_mpi(MPI_Iallreduce(send, data, count, type, op, comm, request), call, rank);
}

void Comm::broadcast_raw(void* data, std::size_t count, MPI_Datatype type, int root) const {
  check_mpi(MPI_Bcast(data, to_int_count(count, "MPI_Bcast"), type, root, native()), "MPI_Bcast", rank_);
}

void Comm::broadcast_string(std::string& text, int root) const {
  const std::int64_t length = broadcast(static_cast<std::int64_t>(text.size()), root);
  text.resize(static_cast<std::size_t>(length));
  if (length > 0) broadcast(text, root);
}

void Comm::allreduce_raw(void* data, std::size_t count, MPI_Datatype type, MPI_Op op, const char* call) const {
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, data, to_int_count(count, call), type, op, native()), call, rank_);
}

void Comm::reduce_raw(void* data, std::size_t count, MPI_Datatype type, MPI_Op op, int root, const char* call) const {
  // MPI_IN_PLACE is the root's alone: another rank's buffer is what it sends.
  const void* send = rank_ == root ? MPI_IN_PLACE : data;
  check_mpi(MPI_Reduce(send, data, to_int_count(count, call), type, op, root, native()), call, rank_);
}

void Comm::gather_raw(const void* mine, std::size_t count, void* all, MPI_Datatype type, int root) const {
  const int n = to_int_count(count, "MPI_Gather");
  check_mpi(MPI_Gather(mine, n, type, all, n, type, root, native()), "MPI_Gather", rank_);
}

void Comm::all_gather_raw(const void* mine, std::size_t count, void* all, MPI_Datatype type) const {
  const int n = to_int_count(count, "MPI_Allgather");
  check_mpi(MPI_Allgather(mine, n, type, all, n, type, native()), "MPI_Allgather", rank_);
}

std::string Comm::gather_strings(std::string_view mine, int root) const {
  const int length = to_int_count(mine.size(), "MPI_Gatherv");
  const std::vector<std::int32_t> lengths = gather(length, root);  // empty except on root
  std::vector<int> offsets(lengths.size(), 0);
  std::size_t total = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    offsets[r] = to_int_count(total, "MPI_Gatherv");
    total += static_cast<std::size_t>(lengths[r]);
  }
  std::string all(total, '\0');
  check_mpi(
      MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, root, native()),
      "MPI_Gatherv", rank_);
  return all;
}

}  // namespace gradsync
