#pragma once
// A malicious worker's policy (config.robust, attacks/): what it does to its batch after gathering it (label-flip,
// backdoor) or to its gradient between the backward pass and the synchronizer's step (sign-flip, gaussian, alie,
// ipm). The synchronizer and the collectives do not know it exists.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "attacks/attack_spec.hpp"
#include "attacks/colluders.hpp"
#include "attacks/data_poisoning.hpp"
#include "collectives/comm.hpp"
#include "model/dataset.hpp"
#include "trainers/config/train_config.hpp"

namespace gradsync {

class WorkerAttack {
 public:
  // Collective over `workers` (the worker ranks; this worker's index is its rank there) when config.robust has a
  // colluding attack (alie, ipm: the malicious ranks' communicator is split off), else local; every worker calls it
  // at the same point with the same config. nullptr for an honest worker, and on every worker without an attack.
  // Throws std::invalid_argument on every worker alike for a backdoor on examples of `train` that are not square
  // images. Label-flip maps y to train.classes - 1 - y.
  static std::unique_ptr<WorkerAttack> make(const TrainConfig& config, const Comm& workers, const Dataset& train);

  // Data attacks, on the batch gather_batch just filled (its labels, and its images as bytes and, with has_rows, as
  // float rows): the poisoned images are copies this object owns, which batch.row_bytes then points to.
  // `step` is the global step (the draws' stream). No allocation.
  void on_batch(Batch& batch, std::int64_t step);
  // Gradient attacks: replaces the honest `grads` (this worker's mean gradient of global step `step`) with what the
  // attack sends. Collective over the malicious workers for alie and ipm.
  void on_gradient(std::span<float> grads, std::int64_t step);

 private:
  WorkerAttack(const TrainConfig& config, int index, int workers, const Dataset& train, std::optional<Comm> colluders);

  AttackSpec spec_;
  std::uint64_t seed_;
  int index_, workers_, classes_;
  double z_ = 0;  // alie's
  Trigger trigger_;
  std::optional<ColluderMoments> colluders_;
  std::vector<std::uint8_t> pixels_;  // backdoor: the batch's images, poisoned ones stamped
};

}  // namespace gradsync
