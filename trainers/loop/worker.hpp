#pragma once
// One worker's share of the training loop (trainers/loop/trainer.hpp): its model replica, gradient buffers and batches,
// allocated once, and the steps it takes between checkpoints.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "model/dataset.hpp"
#include "model/model.hpp"
#include "trainers/config/train_config.hpp"
#include "trainers/core/epoch_work.hpp"
#include "trainers/core/fault_injection.hpp"
#include "trainers/core/synchronizer.hpp"
#include "trainers/loop/private_gradient.hpp"
#include "trainers/loop/worker_attack.hpp"

namespace gradsync {

class Worker {
 public:
  // The worker at world rank `rank` of `ranks`, index `index` among `workers`, starting from `params` after
  // `steps_done` global steps. `config` (with the per-worker batch resolved), `train`, `model` and `sync` must
  // outlive it.
  Worker(const TrainConfig& config, const Dataset& train, const Model& model, int index, int workers, int rank, int ranks,
         std::vector<float> params, Synchronizer& sync, std::int64_t steps_done);
  // The same, for a family that trains in rounds: each of its steps is a round `rounds` runs.
  Worker(const TrainConfig& config, const Dataset& train, const Model& model, int index, int workers, int rank, int ranks,
         std::vector<float> params, RoundTrainer& rounds, std::int64_t steps_done);

  // Steps [from, to) of `epoch`, then drain(): nothing is in flight when it returns (a checkpoint or the epoch's
  // end may follow). Global batch s takes the permutation's positions origin + (s - origin_step) * W * b onwards;
  // origin = origin_step * W * b except in an epoch resumed from a checkpoint written with another global batch.
  // Every worker calls it with the same arguments. Throws DivergenceError (divergence.hpp) on a NaN or Inf.
  EpochWork run_steps(int epoch, long from, long to, long origin_step, std::uint64_t origin);

  // After the last step and drain(): the synchronizer's finish() (the final model on every worker).
  void finish() { sync_.finish(params_); }
  // A malicious worker's attack (WorkerAttack::make), applied to each step's batch and gradient from then on.
  void attack_with(std::unique_ptr<WorkerAttack> attack) { attack_ = std::move(attack); }
  std::span<const float> params() const { return params_; }
  // Global steps whose updates params() holds, and steps begun (one more while a step is in flight): what an
  // in-place recovery takes from this worker (trainers/loop/in_place.hpp). Local.
  std::int64_t applied() const { return applied_; }
  std::int64_t started() const { return steps_done_ + (in_round_ ? 1 : 0); }

 private:
  Worker(const TrainConfig& config, const Dataset& train, const Model& model, int index, int workers, int rank, int ranks,
         std::vector<float> params, WorkerSync& sync, Synchronizer* steps, RoundTrainer* rounds, std::int64_t steps_done);
  EpochWork run_rounds(long from, long to);
  void draw_permutation(int epoch);
  void take_slice(long step, long origin_step, std::uint64_t origin, std::vector<std::uint32_t>& out) const;
  float compute_gradient(int epoch, long step);
  void check_finite(float loss, int epoch, long step);
  // The gradient buffer the next pass writes: the synchronizer may still read the other one (pipelined SGD).
  std::span<float> grads() { return grads_[current_]; }

  const TrainConfig& config_;
  const Dataset& train_;
  const Model& model_;
  std::size_t index_, workers_;
  int rank_;
  std::int64_t steps_done_;
  std::int64_t applied_;
  bool in_round_ = false;  // a round (run_rounds) is in flight: steps_done_ counts it only once it is done
  std::vector<float> params_;
  std::vector<float> grads_[2];
  int current_ = 0;
  std::vector<std::uint32_t> perm_, slice_, next_slice_;
  int perm_epoch_ = -1;  // the epoch perm_ was drawn for
  Batch batch_;
  Workspace ws_;
  WorkerSync& sync_;
  Synchronizer* steps_;   // the step-based synchronizer, or nullptr
  RoundTrainer* rounds_;  // the round trainer, or nullptr
  FaultHook faults_;
  std::unique_ptr<WorkerAttack> attack_;    // nullptr: an honest worker
  std::optional<PrivateGradient> private_;  // with DP-SGD (config.privacy.dp())
};

}  // namespace gradsync
