#pragma once
// The parameter server of the training loop: servers own the master copy of their key range and apply the
// optimizer; workers push gradients and pull parameters. Consistency modes:
//   bsp  every step waits for all workers; the server sums in rank order and applies one update
//   asp  every gradient is applied as it arrives and its worker gets the new parameters at once
//   ssp  as asp, but a worker that is more than `staleness` steps ahead of the slowest waits (0 = bsp)
// Under asp/ssp each gradient (and the weight decay) is applied with 1/W, so a round of W gradients moves as
// far as one bsp step; momentum then decays per gradient, i.e. W times per round. With plain SGD, ssp with
// staleness 0 computes what bsp computes, summed in arrival order instead of rank order.
// With --compress (top-k, sign) the workers push compressed parts and the servers decode them
// (trainers/gradient_compression/compressed_push.hpp); the servers keep each worker's error-feedback residual in their
// checkpoint pieces, key range by key range, after the optimizer's state.
// Workers (ps_worker.cpp) and servers (ps_server.cpp) talk through the parameter server's exchange,
// collectives/key_range_exchange.hpp, which the ps allreduce methods use too; the family's registry entry is
// trainers/families/ps/ps.cpp.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "collectives/comm.hpp"
#include "model/layer_shape.hpp"
#include "model/sgd.hpp"
#include "trainers/config/train_config.hpp"
#include "trainers/core/epoch_work.hpp"
#include "trainers/core/server_role.hpp"
#include "trainers/core/synchronizer.hpp"

namespace gradsync {

struct PsLayout {
  int servers = 1;
  int workers = 1;
  std::size_t parameter_count = 0;
  ElementRange key_range(int server) const { return partition(parameter_count, servers, server); }
};

// The layout of a run of `config` on `ranks` processes with a model of `parameter_count` floats.
inline PsLayout ps_layout(const TrainConfig& config, int ranks, std::size_t parameter_count) {
  return {config.server_ranks(), config.worker_count(ranks), parameter_count};
}

// Worker side: push grads to every server, pull the new parameters. Call it only on worker ranks (world rank >=
// layout.servers), with the layout the servers got; every worker calls step() once per step, with full-size
// spans (layout.parameter_count floats). With config.pipeline the worker pushes and computes on: see
// PipelinedPsWorker in ps_training.cpp. With config.compression, the model's `layers` (Model::layers()) cut the
// parts (std::invalid_argument without them).
std::unique_ptr<Synchronizer> make_ps_worker(const Comm& world, const PsLayout& layout, const TrainConfig& config = {},
                                             std::span<const LayerShape> layers = {});
// Collective with every server's ParameterServer::collect_worker_state, with nothing in flight: sends `worker`'s own
// state (a compressed push's error-feedback residual), key range by key range, to the servers that checkpoint it.
// `worker` is what make_ps_worker returned (else std::logic_error). Such a worker's state_size() is 0 (the state is
// not replicated), and load_state() takes the saved workers' states, one whole model each, in worker order. No-op
// without a compressed push with error feedback.
void send_state_to_servers(Synchronizer& worker);

// Server side of one rank (world rank < layout.servers). `servers` is the communicator of the server ranks
// (world ranks 0..servers-1, in order). `master` is the full-size initial model (identical on every rank); the
// server owns and updates its key range of it. `optimizer_state` is empty or full-size too (a checkpoint's
// momentum); other sizes throw std::invalid_argument. With config.compression, `layers` as make_ps_worker's.
// `steps_done`: the global steps `master` holds (a resumed or re-formed run's), from which config.faults' kills
// count the rounds.
//
// With bsp and replicas R > 1 (PsOptions::replicas, at most the server count), server s also holds the key ranges of
// servers s-1, ..., s-R+1 (mod the server count): each round every server sends its range's sum of the pushes to the
// next R-1 servers (MPI_Issend, one range each) and takes theirs, and applies the same optimizer step to each range it
// holds, before it answers any worker, so that a range a worker has pulled is held by all R of its servers. Under bsp
// every server also keeps the ranges it holds as they were one round back (live_state()).
class ParameterServer final : public ServerRole {
 public:
  ParameterServer(const Comm& world, const Comm& servers, PsLayout layout, const TrainConfig& config,
                  std::vector<float> master, std::span<const float> optimizer_state = {},
                  std::span<const LayerShape> layers = {}, std::int64_t steps_done = 0);
  ~ParameterServer() override;
  // ServerRole's, with: every server calls serve() with the same `steps`, while every worker makes `steps` calls of
  // its step(). The optimizer state is the optimizer's (full-size, or empty), then, with a compressed push and error
  // feedback, every worker's residual (full-size each, in worker order): blocks of the model's size, of which a
  // server's local one holds its key range of each. collect_worker_state(), with every worker's
  // send_state_to_servers(): this server's key range of every worker's residual, into its optimizer state.
  EpochWork serve(long steps) override;
  std::span<const float> gather_model() override;
  std::span<const float> gather_optimizer_state() override;
  void collect_worker_state() override;
  std::span<const float> local_model() const override;
  std::span<const float> local_optimizer_state() override;
  ServerLiveState live_state() const override;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gradsync
