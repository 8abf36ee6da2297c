#pragma once
// What a worker's synchronizer is, in two kinds: a Synchronizer turns each step's gradient, which the worker computes,
// into the next step's parameters; a RoundTrainer runs each step's local training itself (a round of federated
// averaging). Both are a WorkerSync (what every worker's synchronizer does at epoch ends and with replicas) and carry
// their checkpoint state as a SyncState. A family's registry entry (trainers/core/sync_registry.hpp) makes one kind.
#include <cstddef>
#include <cstdint>
#include <span>

#include "model/model.hpp"
#include "trainers/core/epoch_work.hpp"
#include "trainers/core/sync_state.hpp"

namespace gradsync {

class WorkerSync : public SyncState {
 public:
  // Called by every worker at the end of each epoch: applies what is still in flight, so that `params` is the
  // epoch's complete model (evaluation, checkpoints) and no communication crosses the epoch's end.
  virtual void drain(std::span<float> /*params*/) {}
  // Called by every worker once, after its last step and drain(); leaves the final model in `params`.
  virtual void finish(std::span<float> /*params*/) {}
  // Called once by the worker that steps with this synchronizer, before its first step, with the buffer it passes to
  // every step (the same memory, the worker's): a family whose workers keep replicas of their own puts a resumed
  // one there (what load_state() took) and checkpoints it from there.
  virtual void start_from(std::span<float> /*params*/) {}
  // Whether each worker keeps a model of its own between steps (gossip): the model a run evaluates and checkpoints
  // is then the workers' mean, and the spread of theirs is reported beside it (trainers/loop/replica_spread.hpp).
  virtual bool keeps_replicas() const { return false; }
  // Seconds of communication that were in flight while the worker was not waiting for it (hidden behind compute)
  // since the last call.
  virtual double take_hidden_seconds() { return 0; }
};

// Step-based training: every worker calls step() once per step, in lockstep for the synchronous methods;
// afterwards `params` holds the parameters for the next step.
class Synchronizer : public WorkerSync {
 public:
  // `grads` is this worker's mean gradient over its slice of the global batch; it may be overwritten. Both spans
  // hold the whole model (parameter_count floats, the same count on every worker) and stay owned by the caller.
  // With gradient_buffers() == 2 (pipelined SGD) the synchronizer still reads `grads` after step() returns, until
  // the next step() returns: the worker computes the next gradient into its other buffer meanwhile.
  virtual void step(std::span<float> params, std::span<float> grads) = 0;
  // How many gradient buffers the worker alternates between: 1, or 2 when step() returns before `grads` is used.
  virtual int gradient_buffers() const { return 1; }
  // The observer of the pass that is about to compute `grads` (the next step()'s) from `params`, or nullptr: a
  // synchronizer that overlaps communication with that pass starts or moves it on from there. `params` do not change
  // until that step() is called.
  virtual PassObserver* observer(std::span<const float> /*params*/, std::span<float> /*grads*/) { return nullptr; }
};

// Round-based training (SyncFamilyInfo's rounds): each of the loop's steps is a round of local training that the
// synchronizer runs itself (federated averaging: trainers/families/fedavg/).
class RoundTrainer : public WorkerSync {
 public:
  // Round `round` (0-based over the whole run, so a resumed run draws what the uninterrupted one would) from the
  // global model in `params`, which holds the next global model afterwards, the same bits on every worker. Every
  // worker calls it with the same round; collective over the workers. Returns this worker's work: the local steps and
  // their losses, the examples they took, compute and communication seconds.
  virtual EpochWork run_round(std::int64_t round, std::span<float> params) = 0;
};

}  // namespace gradsync
