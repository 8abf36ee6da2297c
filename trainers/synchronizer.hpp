#pragma once
// What a worker does with its gradient each step. Every worker calls step() once per step, in lockstep for
// the synchronous methods; afterwards `params` holds the parameters for the next step.
#include <memory>
#include <span>

#include "collectives/allreduce.hpp"
#include "model/sgd.hpp"
#include "trainers/train_config.hpp"

namespace gradsync {

class Synchronizer {
 public:
  virtual ~Synchronizer() = default;
  // `grads` is this worker's mean gradient over its slice of the global batch; it may be overwritten. Both spans
  // hold the whole model (parameter_count floats, the same count on every worker) and stay owned by the caller.
  virtual void step(std::span<float> params, std::span<float> grads) = 0;
  // Called by every worker once, after its last step; leaves the final model in `params`.
  virtual void finish(std::span<float> /*params*/) {}
};

// serial, ring and mpi (with or without model averaging). For ring with the automatic chunk size this is
// collective over `workers`, the communicator of the worker ranks (it asks whether all ranks share a node); for
// serial, mpi and a ring with a given chunk size it is local. `sgd` must outlive the returned object. The PS
// worker lives in ps_training.hpp.
std::unique_ptr<Synchronizer> make_allreduce_synchronizer(const TrainConfig& config, const Comm& workers, Sgd& sgd);

}  // namespace gradsync
