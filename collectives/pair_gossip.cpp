#include "collectives/pair_gossip.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "collectives/agreement.hpp"
#include "collectives/dtype.hpp"
#include "collectives/watchdog.hpp"

namespace gradsync {
namespace {

// Every rank's neighbours over a whole period, sorted.
std::vector<int> union_neighbours(Topology t, int p, int rank) {
  std::vector<int> all;
  for (int s = 0; s < topology_period(t, p); ++s)
    for (const Peer& peer : neighbourhood(t, p, rank, s).peers) all.push_back(peer.rank);
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

void average_into(std::span<float> model, std::span<const float> other) {
  // (a + b) * 0.5 is the same bits on both sides whichever is a: both ranks end with one vector.
  for (std::size_t k = 0; k < model.size(); ++k) model[k] = (model[k] + other[k]) * 0.5f;
}

}  // namespace

std::vector<int> passive_neighbours(Topology topology, int p, int active) {
  std::vector<int> peers;
  for (int n : union_neighbours(topology, p, active))
    if (n % 2 == 1) peers.push_back(n);
  // By clockwise distance: where every active rank has the same offsets, step t shifts them all by one odd offset,
  // so no two active ranks pick the same passive one.
  std::sort(peers.begin(), peers.end(), [&](int x, int y) { return (x - active + p) % p < (y - active + p) % p; });
  return peers;
}

int pair_gossip_peer(Topology topology, int p, int active, long step) {
  const std::vector<int> peers = passive_neighbours(topology, p, active);
  return peers.empty() ? -1 : peers[static_cast<std::size_t>(step % static_cast<long>(peers.size()))];
}

PairGossip::PairGossip(const Comm& comm, Topology topology, std::size_t count, long first_step)
    : comm_(comm), count_(count), first_step_(first_step), request_tag_(comm.reserve_tags(2)),
      reply_tag_(request_tag_ + 1), passive_peers_(static_cast<std::size_t>(comm.size())),
      answered_(static_cast<std::size_t>(comm.size()), 0), inbox_(count) {
  check_agreement(comm, "asynchronous gossip",
                  {.method = fingerprint_of_name(fmt::format("pair-gossip/{}", topology_info(topology).name)),
                   .count = count,
                   .dtype = static_cast<std::uint64_t>(Dtype::f32)});
  const int p = comm.size(), me = comm.rank();
  for (int r = 0; r < p; r += 2) passive_peers_[static_cast<std::size_t>(r)] = passive_neighbours(topology, p, r);
  if (!active())
    for (int n : union_neighbours(topology, p, me))
      if (n % 2 == 0) active_peers_.push_back(n);
}

int PairGossip::peer_of(int rank, long step) const {
  const std::vector<int>& peers = passive_peers_[static_cast<std::size_t>(rank)];
  if (peers.empty()) return -1;
  return peers[static_cast<std::size_t>(step % static_cast<long>(peers.size()))];
}

long PairGossip::requests_for(int rank, int passive, long steps) const {
  const std::vector<int>& peers = passive_peers_[static_cast<std::size_t>(rank)];
  const auto at = std::find(peers.begin(), peers.end(), passive);
  if (at == peers.end()) return 0;
  const long first = at - peers.begin(), n = static_cast<long>(peers.size());  // steps first, first + n, ...
  return steps > first ? (steps - 1 - first) / n + 1 : 0;
}

void PairGossip::average_with_peer(long step, std::span<float> model) {
  if (!active()) throw std::logic_error("PairGossip::average_with_peer: called on a passive rank");
  const int peer = peer_of(comm_.rank(), step);
  if (peer < 0) return;
  MPI_Request requests[2] = {comm_.irecv(std::span(inbox_), peer, reply_tag_),
                             comm_.isend(std::span<const float>(model), peer, request_tag_)};
  {
    const WaitScope waiting("asynchronous gossip: the passive peer's answer", step, peer);
    comm_.wait_all(requests, "asynchronous gossip with the passive peer");
  }
  average_into(model, inbox_);
}

// The answer leaves while the request still arrives: both directions of the link at once, not one after the other
// (on a slow link that halves the exchange).
void PairGossip::answer(int source, std::span<float> model) {
  MPI_Request requests[2] = {comm_.irecv(std::span(inbox_), source, request_tag_),
                             comm_.isend(std::span<const float>(model), source, reply_tag_)};
  {
    const WaitScope waiting("asynchronous gossip: answering an active peer", -1, source);
    comm_.wait_all(requests, "asynchronous gossip with an active peer");
  }
  average_into(model, inbox_);
  ++answered_[static_cast<std::size_t>(source)];
}

int PairGossip::serve(std::span<float> model) {
  int answered = 0;
  for (;;) {
    int arrived = 0;
    MPI_Status status;
    check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, request_tag_, comm_.native(), &arrived, &status),
              "MPI_Iprobe (asynchronous gossip)", comm_.rank());
    if (!arrived) return answered;
    answer(status.MPI_SOURCE, model);
    ++answered;
  }
}

void PairGossip::serve_until(long steps, std::span<float> model) {
  for (int a : active_peers_) {
    const long expected = requests_for(a, comm_.rank(), steps) - requests_for(a, comm_.rank(), first_step_);
    while (answered_[static_cast<std::size_t>(a)] < expected) {
      // Any active rank's request may come first: answer it, whoever sent it, rather than make it wait.
      MPI_Status status;
      {
        const WaitScope waiting("asynchronous gossip: a request from an active peer", steps, a);
        check_mpi(MPI_Probe(MPI_ANY_SOURCE, request_tag_, comm_.native(), &status), "MPI_Probe (asynchronous gossip)",
                  comm_.rank());
      }
      answer(status.MPI_SOURCE, model);
    }
  }
}

}  // namespace gradsync
