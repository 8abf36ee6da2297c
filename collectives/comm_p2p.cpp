// Comm's nonblocking point-to-point calls and the checked completion of their requests (collectives/comm.hpp states
// their contracts).
#include <fmt/format.h>

#include <utility>

#include "collectives/comm.hpp"
#include "collectives/wire_meter.hpp"

namespace gradsync {
namespace {

// check_mpi with a call description that names what the call was for; formatted only when the call failed.
template <class... Args>
void check_mpi_named(int rc, int rank, fmt::format_string<Args...> call, Args&&... args) {
  if (rc != MPI_SUCCESS) check_mpi(rc, fmt::format(call, std::forward<Args>(args)...).c_str(), rank);
}

}  // namespace

MPI_Request Comm::isend_raw(const void* data, std::size_t count, MPI_Datatype type, int dest, int tag) const {
  MPI_Request request = MPI_REQUEST_NULL;
  const int rc = MPI_Isend(data, to_int_count(count, "MPI_Isend"), type, dest, tag, native(), &request);
  check_mpi_named(rc, rank_, "MPI_Isend (to rank {}, tag {})", dest, tag);
  note_sent(count, type, rank_);
  return request;
}

MPI_Request Comm::issend_raw(const void* data, std::size_t count, MPI_Datatype type, int dest, int tag) const {
  MPI_Request request = MPI_REQUEST_NULL;
  const int rc = MPI_Issend(data, to_int_count(count, "MPI_Issend"), type, dest, tag, native(), &request);
  check_mpi_named(rc, rank_, "MPI_Issend (to rank {}, tag {})", dest, tag);
  note_sent(count, type, rank_);
  return request;
}

MPI_Request Comm::irecv_raw(void* data, std::size_t count, MPI_Datatype type, int source, int tag) const {
  MPI_Request request = MPI_REQUEST_NULL;
  const int rc = MPI_Irecv(data, to_int_count(count, "MPI_Irecv"), type, source, tag, native(), &request);
  check_mpi_named(rc, rank_, "MPI_Irecv (from rank {}, tag {})", source, tag);
  return request;
}

void Comm::wait(MPI_Request& request, const char* what) const {
  check_mpi_named(MPI_Wait(&request, MPI_STATUS_IGNORE), rank_, "MPI_Wait ({})", what);
}

void Comm::wait_all(std::span<MPI_Request> requests, const char* what) const {
  const int n = to_int_count(requests.size(), "MPI_Waitall");
  check_mpi_named(MPI_Waitall(n, requests.data(), MPI_STATUSES_IGNORE), rank_, "MPI_Waitall ({})", what);
}

bool Comm::test_all(std::span<MPI_Request> requests, const char* what) const {
  const int n = to_int_count(requests.size(), "MPI_Testall");
  int done = 0;
  check_mpi_named(MPI_Testall(n, requests.data(), &done, MPI_STATUSES_IGNORE), rank_, "MPI_Testall ({})", what);
  return done != 0;
}

int Comm::wait_any(std::span<MPI_Request> requests, const char* what) const {
  const int n = to_int_count(requests.size(), "MPI_Waitany");
  int index = MPI_UNDEFINED;
  check_mpi_named(MPI_Waitany(n, requests.data(), &index, MPI_STATUS_IGNORE), rank_, "MPI_Waitany ({})", what);
  return index == MPI_UNDEFINED ? -1 : index;
}

}  // namespace gradsync
