#pragma once
// What each rank does in a training run: world ranks 0..servers-1 of a family with servers serve, in the role its
// registry entry makes (trainers/core/server_role.hpp); every other rank is a worker with the synchronizer
// config.sync names.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "collectives/comm.hpp"
#include "model/dataset.hpp"
#include "model/model.hpp"
#include "model/sgd.hpp"
#include "trainers/checkpoint/checkpointing.hpp"
#include "trainers/config/train_config.hpp"
#include "trainers/core/epoch_work.hpp"
#include "trainers/core/server_role.hpp"
#include "trainers/core/sync_registry.hpp"
#include "trainers/core/synchronizer.hpp"
#include "trainers/loop/live_state.hpp"
#include "trainers/loop/replica_spread.hpp"
#include "trainers/loop/worker.hpp"

namespace gradsync {

class Roles {
 public:
  // Collective over `world` (the communicator splits, the synchronizer's planning). Every rank starts from `start`'s
  // model and optimizer state (a full-size optimizer state, or empty for a fresh one). `config` (with the per-worker
  // batch resolved), `train` and `model` must outlive this object.
  Roles(const TrainConfig& config, const Dataset& train, const Model& model, const Comm& world, const ResumePoint& start);
  ~Roles();

  bool serves() const { return server_ != nullptr; }
  int servers() const { return servers_; }
  int workers() const { return workers_; }

  // Steps [from, to) of `epoch` (Worker::run_steps), or serving them: every rank calls it with the same arguments.
  EpochWork run(int epoch, long from, long to, long origin_step, std::uint64_t origin);
  // Every rank after the last epoch's steps: the workers' synchronizers leave the final model.
  void finish();
  // This rank's full-size state, of which a server's key range alone is current: what its checkpoint piece holds.
  // The optimizer state is followed, on workers, by their synchronizer's own (Synchronizer::save_state). Where each
  // worker keeps its own model (gossip) the piece holds the workers' mean model and mean optimizer state, and the
  // synchronizer's state holds every worker's own. Every rank calls both together: they may be collective over the
  // workers.
  std::span<const float> local_params();
  std::span<const float> local_optimizer_state();
  // Every rank calls these together: the whole current model (optimizer state) on rank 0, gathered from the servers,
  // the workers' mean when each keeps its own (Synchronizer::keeps_replicas), or the worker's replica. Valid until the
  // next run().
  std::span<const float> model_on_root();
  std::span<const float> optimizer_state_on_root();
  // Every rank, right after model_on_root(): how far apart the workers' own models are (report/replicas.hpp), or an
  // empty spread when they share one. Collective over the workers.
  ReplicaSpread replica_spread(const Dataset& test, Workspace& ws);

  // Local, no communication (the run's communicators may be revoked): what this rank holds as an in-place recovery
  // takes it (trainers/loop/in_place.hpp): a worker's model, optimizer state and step counts, or a server's
  // ServerLiveState (its held key ranges, now and one step back). Throws std::logic_error on a server that keeps
  // none (the family's checks.in_place_refusal refuses such a run first).
  void take_live_state(LiveState& live) const;

 private:
  const SyncFamilyInfo& family_;
  int servers_, workers_;
  Comm worker_comm_, server_comm_;
  Comm
      sync_comm_;  // every rank: the synchronizer's and the servers' own messages (a parameter server's pushes and pulls)
  Sgd sgd_;
  // A worker's synchronizer: one of the two kinds, as its family makes (SyncFamilyInfo's shape.rounds), and the
  // interface they share.
  std::unique_ptr<Synchronizer> steps_;
  std::unique_ptr<RoundTrainer> rounds_;
  WorkerSync* sync_ = nullptr;
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<ServerRole> server_;
  // A worker's optimizer state, then its synchronizer's, when the synchronizer keeps any (else empty). Collective.
  std::span<const float> worker_state();
  // Collective: the workers of a family with servers send them their own state (SyncFamilyInfo's
  // build.send_worker_state).
  void hand_worker_state_to_servers();
  std::vector<float> checkpoint_state_;
  const Model& model_;
  std::vector<float> mean_, mean_state_;  // the workers' mean model and optimizer state, when each keeps its own
};

}  // namespace gradsync
