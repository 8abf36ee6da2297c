#include "collectives/ps_allreduce.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "collectives/watchdog.hpp"

namespace gradsync {
namespace {

constexpr int kTagPush = 0x50;
constexpr int kTagPull = 0x51;

}  // namespace

PsAllreduce::PsAllreduce(Comm comm, AllreduceOptions options, std::string name)
    : Allreduce(std::move(comm), options),
      name_(std::move(name)),
      peer_requests_(static_cast<std::size_t>(comm_.size())),
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

// Ordering matters when servers also contribute. Each blocking wait below depends only on work that every
// rank has already started: pushes are posted before serving (or two servers would wait for each other's
// push), and a server completes its result sends only after pulling its own result (or two servers would
// each wait, in a rendezvous send, for the other to post its pull).
void PsAllreduce::reduce(void* data, std::size_t count, Dtype type) {
  auto* bytes = static_cast<std::byte*>(data);
  const bool contributor = contributes(comm_.rank()), server = is_server(comm_.rank());
  if (contributor) start_transfers(bytes, count, type, kTagPush);
  if (server) serve(bytes, count, type);
  if (contributor) {
    finish_transfers("MPI_Waitall (ps push)");  // push buffers are about to be overwritten by the pull
    start_transfers(bytes, count, type, kTagPull);
    finish_transfers("MPI_Waitall (ps pull)");
  }
  if (server) {
    const WaitScope wait("MPI_Waitall (ps server sending results)");
    check_mpi(MPI_Waitall(comm_.size(), peer_requests_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall (ps results)",
              comm_.rank());
  }
}

// Receive the key range from every contributing peer at once (the network may deliver them concurrently),
// then add them in rank order as each arrives, then start sending the summed range back to every contributor
// (reduce() completes those sends).
void PsAllreduce::serve(std::byte* data, std::size_t count, Dtype type) {
  const int p = comm_.size(), me = comm_.rank();
  const std::size_t elem = dtype_size(type);
  const ElementRange key = partition(count, options_.servers, static_cast<std::size_t>(me));
  const std::size_t range_bytes = key.size() * elem;
  const int n = comm_.to_int_count(key.size(), "MPI_Irecv");
  if (inbox_.size() < range_bytes * static_cast<std::size_t>(p)) inbox_.resize(range_bytes * static_cast<std::size_t>(p));

  for (int peer = 0; peer < p; ++peer) {
    peer_requests_[peer] = MPI_REQUEST_NULL;
    if (peer != me && contributes(peer))
      check_mpi(MPI_Irecv(inbox_.data() + range_bytes * peer, n, mpi_type(type), peer, kTagPush, comm_.native(),
                          &peer_requests_[peer]),
                "MPI_Irecv (ps push)", me);
  }
  // The sum accumulates in place, in rank order. Our own range is the first term only if we are the lowest
  // contributing rank; otherwise it waits in our inbox slot for its turn.
  std::byte* sum = data + key.begin * elem;
  int first = 0;
  while (!contributes(first)) ++first;
  // An empty key range (count < servers) still takes part in the exchange, but memcpy must not see the null
  // pointers of empty buffers.
  if (contributes(me) && me != first && range_bytes > 0) std::memcpy(inbox_.data() + range_bytes * me, sum, range_bytes);
  for (int peer = first; peer < p; ++peer) {
    if (!contributes(peer)) continue;
    if (peer != me) {
      const WaitScope wait("MPI_Wait (ps server receiving a push)", -1, peer);
      check_mpi(MPI_Wait(&peer_requests_[peer], MPI_STATUS_IGNORE), "MPI_Wait (ps push)", me);
    }
    const std::byte* part = inbox_.data() + range_bytes * peer;
    if (peer == first) {
      if (peer != me && range_bytes > 0) std::memcpy(sum, part, range_bytes);
    } else {
      add_into(sum, part, key.size(), type);
    }
  }
  for (int peer = 0; peer < p; ++peer) {
    peer_requests_[peer] = MPI_REQUEST_NULL;
    if (peer != me && contributes(peer))
      check_mpi(MPI_Isend(sum, n, mpi_type(type), peer, kTagPull, comm_.native(), &peer_requests_[peer]),
                "MPI_Isend (ps pull)", me);
  }
}

void PsAllreduce::start_transfers(std::byte* data, std::size_t count, Dtype type, int tag) {
  const int me = comm_.rank(), k = options_.servers;
  const std::size_t elem = dtype_size(type);
  for (int server = 0; server < k; ++server) {
    server_requests_[server] = MPI_REQUEST_NULL;
    if (server == me) continue;
    const ElementRange key = partition(count, k, static_cast<std::size_t>(server));
    const int n = comm_.to_int_count(key.size(), "MPI_Isend");
    std::byte* range = data + key.begin * elem;
    if (tag == kTagPush)
      check_mpi(MPI_Isend(range, n, mpi_type(type), server, tag, comm_.native(), &server_requests_[server]),
                "MPI_Isend (ps push)", me);
    else
      check_mpi(MPI_Irecv(range, n, mpi_type(type), server, tag, comm_.native(), &server_requests_[server]),
                "MPI_Irecv (ps pull)", me);
  }
}

void PsAllreduce::finish_transfers(const char* what) {
  // One server at a time, so that a watchdog report names the server that never answered.
  for (int server = 0; server < options_.servers; ++server) {
    const WaitScope wait("MPI_Wait (ps worker push/pull)", -1, server);
    check_mpi(MPI_Wait(&server_requests_[static_cast<std::size_t>(server)], MPI_STATUS_IGNORE), what, comm_.rank());
  }
}

}  // namespace gradsync
