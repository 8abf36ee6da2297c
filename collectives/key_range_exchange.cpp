#include "collectives/key_range_exchange.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "collectives/mpi_error.hpp"
#include "collectives/wire_meter.hpp"

namespace gradsync {

KeyRangeExchange::KeyRangeExchange(Comm comm, int servers, bool servers_push)
    : comm_(std::move(comm)), servers_(servers), first_pusher_(servers_push ? 0 : std::min(servers, comm_.size())),
      push_tag_(comm_.reserve_tags(2)), pull_tag_(push_tag_ + 1),
      worker_requests_(2 * static_cast<std::size_t>(std::max(servers, 1)), MPI_REQUEST_NULL),
      pusher_requests_(static_cast<std::size_t>(comm_.size() - first_pusher_), MPI_REQUEST_NULL) {
  if (servers < 1) throw std::invalid_argument(fmt::format("KeyRangeExchange: {} servers (needs at least 1)", servers));
}

void KeyRangeExchange::push(int server, const void* data, std::size_t n, MPI_Datatype type) {
  check_mpi(
      MPI_Isend(data, comm_.to_int_count(n, "MPI_Isend"), type, server, push_tag_, comm_.native(), &push_request(server)),
      "MPI_Isend (ps push)", comm_.rank());
  note_sent(n, type, comm_.rank());
}

void KeyRangeExchange::pull(int server, void* data, std::size_t n, MPI_Datatype type) {
  check_mpi(
      MPI_Irecv(data, comm_.to_int_count(n, "MPI_Irecv"), type, server, pull_tag_, comm_.native(), &pull_request(server)),
      "MPI_Irecv (ps pull)", comm_.rank());
}

void KeyRangeExchange::push_ranges(const std::byte* data, std::size_t count, Dtype type) {
  const std::size_t elem = dtype_size(type);
  for (int s = 0; s < servers_; ++s) {
    push_request(s) = MPI_REQUEST_NULL;
    if (s == comm_.rank()) continue;
    const ElementRange key = key_range(count, s);
    push(s, data + key.begin * elem, key.size(), mpi_type(type));
  }
}

void KeyRangeExchange::pull_ranges(std::byte* data, std::size_t count, Dtype type) {
  const std::size_t elem = dtype_size(type);
  for (int s = 0; s < servers_; ++s) {
    pull_request(s) = MPI_REQUEST_NULL;
    if (s == comm_.rank()) continue;
    const ElementRange key = key_range(count, s);
    pull(s, data + key.begin * elem, key.size(), mpi_type(type));
  }
}

void KeyRangeExchange::plan_inbox(std::size_t slot_bytes) {
  inbox_.grow_to(slot_bytes * static_cast<std::size_t>(pushers()));
  slot_bytes_ = slot_bytes;
}

void KeyRangeExchange::receive(int i, void* data, std::size_t n, MPI_Datatype type) {
  check_mpi(MPI_Irecv(data, comm_.to_int_count(n, "MPI_Irecv"), type, pusher_rank(i), push_tag_, comm_.native(),
                      &pusher_request(i)),
            "MPI_Irecv (ps push)", comm_.rank());
}

void KeyRangeExchange::fold(int i, std::byte* sum, std::size_t n, Dtype type) {
  const std::byte* part = slot(i);
  if (i > 0)
    add_into(sum, part, n, type);
  else if (part != sum && n > 0)  // memcpy must not see the null pointers of empty ranges
    std::memcpy(sum, part, n * dtype_size(type));
}

void KeyRangeExchange::answer(int i, const void* data, std::size_t n, MPI_Datatype type) {
  check_mpi(MPI_Isend(data, comm_.to_int_count(n, "MPI_Isend"), type, pusher_rank(i), pull_tag_, comm_.native(),
                      &pusher_request(i)),
            "MPI_Isend (ps answer)", comm_.rank());
  note_sent(n, type, comm_.rank());
}

void KeyRangeExchange::answer_all(const void* data, std::size_t n, MPI_Datatype type) {
  for (int i = 0; i < pushers(); ++i) {
    pusher_request(i) = MPI_REQUEST_NULL;
    if (pusher_rank(i) != comm_.rank()) answer(i, data, n, type);
  }
}

void KeyRangeExchange::answer_now(int i, const void* data, std::size_t n, MPI_Datatype type) {
  comm_.send(data, n, type, pusher_rank(i), pull_tag_);
}

}  // namespace gradsync
