#include "collectives/ps_allreduce.hpp"
#include "collectives/allreduce_method.hpp"
#include "collectives/wire_meter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace gradsync {
PsAllreduce::PsAllreduce(Comm comm, AllreduceOptions options, std::string name)
    : Allreduce(std::move(comm), options), name_(std::move(name)), push_tag_(comm_.reserve_tags(2)),
      pull_tag_(push_tag_ + 1), peer_requests_(static_cast<std::size_t>(comm_.size())),
      server_requests_(static_cast<std::size_t>(std::max(options_.servers, 1))) {
  if (options_.servers < 1 || (comm_.size() > 1 && options_.servers >= comm_.size()))
    throw std::invalid_argument(fmt::format("{}: {} server rank(s) need at least {} ranks, the communicator has {}",
                                            name_, options_.servers, options_.servers + 1, comm_.size()));
}

bool PsAllreduce::contributes(int rank) const {
  return comm_.size() == 1 || !is_server(rank) || options_.server_contributes;
}

ElementRange PsAllreduce::result_range(int rank, std::size_t count) const {
  if (contributes(rank)) return {0, count};
  return partition(count, options_.servers, static_cast<std::size_t>(rank));
}

void PsAllreduce::begin(std::byte* data, std::size_t count, Dtype type) {
  data_ = data;
  count_ = count;
  type_ = type;
  const bool contributor = contributes(comm_.rank()), server = is_server(comm_.rank());
  if (contributor) post_transfers(true);
  if (server) {
    post_gather();
    phase_ = Phase::gather;
    cursor_ = next_contributor(-1);
  } else {
    phase_ = Phase::push;
    cursor_ = 0;
  }
  set_stage();
}

bool PsAllreduce::advance() {
  const int me = comm_.rank(), k = options_.servers;
  switch (phase_) {
    case Phase::gather:
      add_part(cursor_);
      cursor_ = next_contributor(cursor_);
      if (cursor_ < comm_.size()) break;
      post_results();
      phase_ = contributes(me) ? Phase::push : Phase::results;
      cursor_ = 0;
      break;
    case Phase::push:
      if (++cursor_ < k) break;
      post_transfers(false);  // the push buffers are free now: the pull overwrites them
      phase_ = Phase::pull;
      cursor_ = 0;
      break;
    case Phase::pull:
      if (++cursor_ < k) break;
      if (!is_server(me)) return true;
      phase_ = Phase::results;
      break;
    case Phase::results: return true;
  }
  set_stage();
  return false;
}

// One request per stage while gathering, pushing and pulling, so that a watchdog report names the peer that never
// answered.
void PsAllreduce::set_stage() {
  const int me = comm_.rank();
  switch (phase_) {
    case Phase::gather:
      stage_ = {cursor_ == me ? std::span<MPI_Request>{} : std::span<MPI_Request>{&peer_requests_[cursor_], 1},
                "ps server: receiving a push", cursor_};
      return;
    case Phase::push:
    case Phase::pull:
      stage_ = {{&server_requests_[cursor_], 1}, phase_ == Phase::push ? "ps worker: push" : "ps worker: pull", cursor_};
      return;
    case Phase::results: stage_ = {peer_requests_, "ps server: sending results"}; return;
  }
}

int PsAllreduce::next_contributor(int after) const {
  int peer = after + 1;
  while (peer < comm_.size() && !contributes(peer)) ++peer;
  return peer;
}

// Receives the key range from every contributing peer at once (the network may deliver them concurrently); the
// stages then add them in rank order as each arrives. The sum accumulates in place in this rank's key range. Our
// own range is the first term only if we are the lowest contributing rank; otherwise it waits in our inbox slot for
// its turn.
void PsAllreduce::post_gather() {
  const int p = comm_.size(), me = comm_.rank();
  const std::size_t elem = dtype_size(type_);
  const ElementRange key = partition(count_, options_.servers, static_cast<std::size_t>(me));
  const std::size_t range_bytes = key.size() * elem;
  const int n = comm_.to_int_count(key.size(), "MPI_Irecv");
  inbox_.grow_to(range_bytes * static_cast<std::size_t>(p));
  for (int peer = 0; peer < p; ++peer) {
    peer_requests_[peer] = MPI_REQUEST_NULL;
    if (peer != me && contributes(peer))
      check_mpi(MPI_Irecv(inbox_.data() + range_bytes * peer, n, mpi_type(type_), peer, push_tag_, comm_.native(),
                          &peer_requests_[peer]),
                "MPI_Irecv (ps push)", me);
  }
  // An empty key range (count < servers) still takes part in the exchange, but memcpy must not see the null
  // pointers of empty buffers.
  if (contributes(me) && me != next_contributor(-1) && range_bytes > 0)
    std::memcpy(inbox_.data() + range_bytes * me, data_ + key.begin * elem, range_bytes);
}

void PsAllreduce::add_part(int peer) {
  const int me = comm_.rank();
  const std::size_t elem = dtype_size(type_);
  const ElementRange key = partition(count_, options_.servers, static_cast<std::size_t>(me));
  const std::size_t range_bytes = key.size() * elem;
  std::byte* sum = data_ + key.begin * elem;
  const std::byte* part = inbox_.data() + range_bytes * peer;
  if (peer == next_contributor(-1)) {
    if (peer != me && range_bytes > 0) std::memcpy(sum, part, range_bytes);
  } else {
    add_into(sum, part, key.size(), type_);
  }
}

void PsAllreduce::post_results() {
  const int p = comm_.size(), me = comm_.rank();
  const ElementRange key = partition(count_, options_.servers, static_cast<std::size_t>(me));
  const int n = comm_.to_int_count(key.size(), "MPI_Isend");
  std::byte* sum = data_ + key.begin * dtype_size(type_);
  for (int peer = 0; peer < p; ++peer) {
    peer_requests_[peer] = MPI_REQUEST_NULL;
    if (peer != me && contributes(peer)) {
      check_mpi(MPI_Isend(sum, n, mpi_type(type_), peer, pull_tag_, comm_.native(), &peer_requests_[peer]),
                "MPI_Isend (ps pull)", me);
      note_sent(key.size(), mpi_type(type_), me);
    }
  }
}

void PsAllreduce::post_transfers(bool push) {
  const int me = comm_.rank(), k = options_.servers;
  const std::size_t elem = dtype_size(type_);
  for (int server = 0; server < k; ++server) {
    server_requests_[server] = MPI_REQUEST_NULL;
    if (server == me) continue;
    const ElementRange key = partition(count_, k, static_cast<std::size_t>(server));
    const int n = comm_.to_int_count(key.size(), "MPI_Isend");
    std::byte* range = data_ + key.begin * elem;
    if (push) {
      check_mpi(MPI_Isend(range, n, mpi_type(type_), server, push_tag_, comm_.native(), &server_requests_[server]),
                "MPI_Isend (ps push)", me);
      note_sent(key.size(), mpi_type(type_), me);
    } else
      check_mpi(MPI_Irecv(range, n, mpi_type(type_), server, pull_tag_, comm_.native(), &server_requests_[server]),
                "MPI_Irecv (ps pull)", me);
  }
}

extern const AllreduceMethod ps_allreduce_method = {
    .name = "ps",
    .summary = "central parameter server on rank 0: workers push, the server sums in rank order and sends back",
    .servers = ServerRanks::one,
    .make = [](const Comm& comm, const AllreduceOptions& o) -> std::unique_ptr<Allreduce> {
      AllreduceOptions one = o;
      one.servers = 1;
      return std::make_unique<PsAllreduce>(comm, one, "ps");
    },
};

extern const AllreduceMethod ps_sharded_allreduce_method = {
    .name = "ps-sharded",
    .summary = "parameter server sharded over ranks 0..servers-1, each owning a key range",
    .servers = ServerRanks::some,
    .make = [](const Comm& comm, const AllreduceOptions& o) -> std::unique_ptr<Allreduce> {
      return std::make_unique<PsAllreduce>(comm, o, "ps-sharded");
    },
};

}  // namespace gradsync
