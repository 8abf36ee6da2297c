#pragma once
// Asynchronous pairwise gossip (AD-PSGD, Lian et al. 2018): no step barrier; at each of its steps an active rank
// averages its vector with one passive neighbour, and a passive rank answers whatever requests have arrived when it
// looks (between its steps). The ranks split by parity: even ranks are active, odd ones passive, so two ranks never
// wait on each other at once and nothing can deadlock. An active rank waits only for its peer; a slow rank slows
// only the active ranks whose turn it is.
//
// Which peer: active rank a's passive neighbours (odd ranks among its topology neighbours over a whole period) in
// order of their clockwise distance from a, step t taking the (t mod n)-th. On a graph where every rank has the same
// offsets (ring, exp, complete, an even p) each step is then a matching: no passive rank has two requests at once. Every
// passive rank derives from the same rule how many requests each active neighbour sends it in any number of steps, so
// serve_until() knows when a stretch's requests are done.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "collectives/comm.hpp"
#include "collectives/topology.hpp"

namespace gradsync {

// Active (even) rank `active`'s passive neighbours among p ranks, in the order its steps take them; and the one it
// averages with at its step `step` (-1: none, as on one rank). PairGossip follows exactly these.
std::vector<int> passive_neighbours(Topology topology, int p, int active);
int pair_gossip_peer(Topology topology, int p, int active, long step);

class PairGossip {
 public:
  // Collective over `comm` (the configuration is checked as GossipExchange's is). `comm` must outlive this object.
  // Steps are numbered from `first_step` (a resumed run's), the same on every rank.
  PairGossip(const Comm& comm, Topology topology, std::size_t count, long first_step = 0);

  bool active() const { return comm_.rank() % 2 == 0; }
  // The passive rank active rank `rank` averages with at its step `step`, or -1 when it has none (a run on one rank).
  int peer_of(int rank, long step) const;

  // Active ranks, at their step `step` (0, 1, 2, ... in order): `model` (count floats) becomes the average of itself
  // and the peer's. Blocks until the peer answers.
  void average_with_peer(long step, std::span<float> model);
  // Passive ranks: answers every request that has arrived, without waiting; `model` becomes the average with each
  // in turn. Returns how many it answered.
  int serve(std::span<float> model);
  // Passive ranks: answers requests until every active neighbour's requests of its steps [first_step, steps) are
  // answered.
  void serve_until(long steps, std::span<float> model);

  // Bytes this rank sends per step of its own, averaged over the run's ranks' roles (each exchange moves the vector
  // both ways).
  double bytes_per_exchange() const { return static_cast<double>(count_ * sizeof(float)); }

 private:
  // Requests active rank `rank` sends to `passive` in its steps [0, steps).
  long requests_for(int rank, int passive, long steps) const;
  void answer(int source, std::span<float> model);

  const Comm& comm_;
  std::size_t count_;
  long first_step_;
  int request_tag_, reply_tag_;
  std::vector<std::vector<int>> passive_peers_;  // per rank: its passive neighbours (filled for active ranks)
  std::vector<int> active_peers_;                // a passive rank's active neighbours
  std::vector<long> answered_;                   // per rank: requests answered so far (passive)
  std::vector<float> inbox_;
};

}  // namespace gradsync
