#include "trainers/loop/roles.hpp"

#include <algorithm>
#include <stdexcept>

#include "collectives/wire_meter.hpp"

#include "trainers/config/train_config.hpp"
#include "trainers/core/sync_registry.hpp"
#include "trainers/loop/make_synchronizer.hpp"

namespace gradsync {

Roles::Roles(const TrainConfig& config, const Dataset& train, const Model& model, const Comm& world,
             const ResumePoint& start)
    : family_(sync_family(config.sync.family)), servers_(config.server_ranks()),
      workers_(config.worker_count(world.size())),
      // Splits are collective, so every rank makes both communicators.
      worker_comm_(world.split(world.rank() < servers_ ? MPI_UNDEFINED : 0, world.rank())),
      server_comm_(world.split(world.rank() < servers_ ? 0 : MPI_UNDEFINED, world.rank())),
      sync_comm_(world.split(0, world.rank())), sgd_(config.sgd, model.parameter_count()), model_(model) {
  const int me = world.rank();
  // The optimizer's state comes first; a synchronizer's own may follow (the workers' residuals).
  const std::span<const float> saved = start.optimizer_state;
  const std::size_t velocity = std::min(saved.size(), sgd_.state().size());  // empty in a fresh run
  if (me < servers_) {
    server_ = family_.build.make_server(
        config, {sync_comm_, server_comm_, start.params, saved.first(velocity), model.layers(), start.steps_done});
    return;
  }
  std::copy_n(saved.begin(), velocity, sgd_.state().begin());
  const SyncSetup setup{sync_comm_,       worker_comm_, sgd_,  model.layers(), model.parameter_count(),
                        start.steps_done, &train,       &model};
  WorkerSync* sync = nullptr;
  if (family_.shape.rounds) {
    rounds_ = make_round_trainer(config, setup);
    sync = rounds_.get();
  } else {
    steps_ = make_synchronizer(config, setup);
    sync = steps_.get();
  }
  sync_ = sync;
  if (config.resume && (sync_->state_size() > 0 || saved.size() > velocity))
    sync_->load_state(saved.subspan(velocity), static_cast<int>(start.manifest.workers), me - servers_);
  worker_ = rounds_ ? std::make_unique<Worker>(config, train, model, me - servers_, workers_, me, world.size(),
                                               start.params, *rounds_, start.steps_done)
                    : std::make_unique<Worker>(config, train, model, me - servers_, workers_, me, world.size(),
                                               start.params, *steps_, start.steps_done);
  worker_->attack_with(WorkerAttack::make(config, worker_comm_, train));  // collective over the workers
}

Roles::~Roles() = default;

EpochWork Roles::run(int epoch, long from, long to, long origin_step, std::uint64_t origin) {
  const std::uint64_t sent_before = bytes_sent_so_far();
  EpochWork work = server_ ? server_->serve(to - from) : worker_->run_steps(epoch, from, to, origin_step, origin);
  work.wire_bytes = static_cast<double>(bytes_sent_so_far() - sent_before);
  return work;
}

void Roles::finish() {
  if (worker_) worker_->finish();
}

std::span<const float> Roles::local_params() {
  if (server_) return server_->local_model();
  if (!sync_->keeps_replicas()) return worker_->params();
  mean_model(worker_comm_, worker_->params(), mean_);
  return mean_;
}

std::span<const float> Roles::local_optimizer_state() {
  hand_worker_state_to_servers();
  return server_ ? server_->local_optimizer_state() : worker_state();
}

void Roles::hand_worker_state_to_servers() {
  if (server_)
    server_->collect_worker_state();
  else if (family_.build.send_worker_state)
    family_.build.send_worker_state(*steps_);
}

std::span<const float> Roles::worker_state() {
  if (sync_->state_size() == 0) return sgd_.state();
  // Allocated at the first checkpoint, not before: a gossip run's state is every worker's model, which a run that
  // never checkpoints should not hold on every rank.
  if (checkpoint_state_.empty()) checkpoint_state_.resize(sgd_.state().size() + sync_->state_size());
  const std::span<float> all(checkpoint_state_);
  if (sync_->keeps_replicas()) {  // the workers' own optimizer states are in the synchronizer's
    mean_model(worker_comm_, sgd_.state(), mean_state_);
    std::ranges::copy(mean_state_, all.begin());
  } else {
    std::ranges::copy(sgd_.state(), all.begin());
  }
  sync_->save_state(all.subspan(sgd_.state().size()));
  return all;
}

std::span<const float> Roles::model_on_root() {
  if (server_) return server_->gather_model();
  if (!sync_->keeps_replicas()) return worker_->params();
  mean_model(worker_comm_, worker_->params(), mean_);
  return mean_;
}

ReplicaSpread Roles::replica_spread(const Dataset& test, Workspace& ws) {
  if (server_ || !sync_->keeps_replicas()) return {};
  return gradsync::replica_spread(worker_comm_, worker_->params(), mean_, model_, test, ws);
}

void Roles::take_live_state(LiveState& live) const {
  live.server = -1;
  if (server_) {
    const ServerLiveState held = server_->live_state();
    if (held.steps < 0) throw std::logic_error("take_live_state: this server's key range does not re-form in place");
    live.server = server_comm_.rank();
    live.params.assign(held.params.begin(), held.params.end());
    live.optimizer.assign(held.optimizer.begin(), held.optimizer.end());
    live.has_previous = held.has_previous;
    live.previous_params.assign(held.previous_params.begin(), held.previous_params.end());
    live.previous_optimizer.assign(held.previous_optimizer.begin(), held.previous_optimizer.end());
    live.applied = live.started = held.steps;
    live.own_replica = false;
    return;
  }
  live.params.assign(worker_->params().begin(), worker_->params().end());
  live.optimizer.assign(sgd_.state().begin(), sgd_.state().end());
  live.applied = worker_->applied();
  live.started = worker_->started();
  live.own_replica = sync_->keeps_replicas();
}

std::span<const float> Roles::optimizer_state_on_root() {
  hand_worker_state_to_servers();
  return server_ ? server_->gather_optimizer_state() : worker_state();
}

}  // namespace gradsync
