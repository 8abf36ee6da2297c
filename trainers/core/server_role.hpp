#pragma once
// What a serving rank does in a family with servers (SyncFamilyInfo's shape.servers): world ranks 0..servers-1 build one
// with the family's make_server, the others are workers with its synchronizer (trainers/loop/roles.hpp drives both). The
// parameter server is the one such family (trainers/families/ps/ps_training.hpp).
#include <cstdint>
#include <span>

#include "trainers/core/epoch_work.hpp"

namespace gradsync {

// What a server holds live of the run, for an in-place recovery (trainers/loop/in_place.hpp): its full-size buffers,
// current on the key ranges it holds (its own and those it replicates), at global step `steps`, and the same ranges
// one step earlier, before its last update (valid when has_previous). The spans point into the server.
struct ServerLiveState {
  std::int64_t steps = -1;  // -1: this server keeps nothing an in-place recovery can use
  std::span<const float> params, optimizer;
  bool has_previous = false;
  std::span<const float> previous_params, previous_optimizer;
};

class ServerRole {
 public:
  virtual ~ServerRole() = default;
  // Serves until every worker has pushed `steps` more gradients, then returns this epoch's server statistics.
  // Every server calls it with the same `steps`, while every worker makes `steps` calls of its step().
  virtual EpochWork serve(long steps) = 0;
  // Collective over the server ranks: rank 0 gets the whole current model (or optimizer state), others an empty span.
  // The span points into this object and is valid until the next serve() or gather call. Before the optimizer
  // state, every server and worker hands over the workers' own state (collect_worker_state).
  virtual std::span<const float> gather_model() = 0;
  virtual std::span<const float> gather_optimizer_state() = 0;
  // This server's full-size model and optimizer state, of which only its own part is current: what it writes into
  // its checkpoint piece (trainers/checkpoint/checkpoint_set.hpp). Valid until the next serve().
  virtual std::span<const float> local_model() const = 0;
  virtual std::span<const float> local_optimizer_state() = 0;
  // Collective with every worker's build.send_worker_state (SyncFamilyInfo), with nothing in flight: the workers' own
  // state that the servers checkpoint. No-op for a family whose workers keep none.
  virtual void collect_worker_state() {}
  // Local, no communication (after a ProcessFailure, with the run's communicators revoked): see ServerLiveState.
  virtual ServerLiveState live_state() const { return {}; }
};

}  // namespace gradsync
