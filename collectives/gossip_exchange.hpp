#pragma once
// One synchronous gossip step's communication (D-PSGD): this rank's vector goes to each neighbour the topology
// gives it at the step, theirs come back, and mix() forms the weighted average. Planned once (the neighbourhoods of
// a period, one inbox per neighbour), run every step; nothing is allocated per step.
#include <mpi.h>

#include <cstddef>
#include <span>
#include <vector>

#include "collectives/comm.hpp"
#include "collectives/topology.hpp"

namespace gradsync {

class GossipExchange {
 public:
  // Collective over `comm`: every rank passes the same topology and count (checked: a mismatch throws MismatchError
  // on every rank, naming each rank's, instead of a hang or a truncated message). `comm` must outlive this object.
  GossipExchange(const Comm& comm, Topology topology, std::size_t count);

  // Posts `mine` (count floats) to every neighbour at `step` and the receives of theirs. Every rank calls the same
  // steps in the same order; `mine` stays the caller's and must not change until wait() returns. A start() before
  // the previous exchange was waited for is a std::logic_error.
  void start(long step, std::span<const float> mine);
  // Moves the exchange on without blocking; true once it is complete (then wait() returns at once).
  bool test();
  void wait();
  // After wait(): out = self_weight * mine + the neighbours' weighted vectors. `out` may be `mine` itself.
  void mix(std::span<const float> mine, std::span<float> out) const;

  const Neighbourhood& neighbours(long step) const { return plan_[static_cast<std::size_t>(step % period())]; }
  int period() const { return static_cast<int>(plan_.size()); }
  // Bytes this rank sends per step, averaged over a period.
  double bytes_per_step() const;

 private:
  const Comm& comm_;
  std::size_t count_;
  int tag_;
  std::vector<Neighbourhood> plan_;  // one per step of the period
  std::vector<float> inbox_;         // one count-sized part per peer, for the largest neighbourhood
  std::vector<MPI_Request> requests_;
  long step_ = -1;  // the step in flight or last completed
  bool in_flight_ = false;
};

}  // namespace gradsync
