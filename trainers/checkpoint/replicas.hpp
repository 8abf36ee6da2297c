#pragma once
// Checkpoints of families whose workers keep models of their own (gossip, local SGD between its averages).
#include <cstddef>
#include <span>
#include <vector>

#include "collectives/comm.hpp"
#include "model/sgd.hpp"

namespace gradsync {

// Each worker's model and optimizer state are its own, so a checkpoint keeps every worker's: they are gathered into
// the synchronizer's state (worker after worker: its model, then its optimizer state), which every worker then holds
// alike, and a resumed worker takes its own back. On another number of workers some replicas would have no rank to
// go to, or some ranks no replica: refused. `workers` and `sgd` are the synchronizer's and must outlive this object.
class Replicas {
 public:
  Replicas(const Comm& workers, Sgd& sgd, std::size_t count) : workers_(workers), sgd_(sgd), count_(count) {}
  // Floats save() writes: one model and one optimizer state per worker.
  std::size_t state_size() const { return static_cast<std::size_t>(workers_.size()) * block(); }
  // Collective over the workers, after start_from(): every worker's model and optimizer state into `out`
  // (state_size() floats, the caller's), the same bits on every worker.
  void save(std::span<float> out) const;
  // Local: keeps this worker's (`index`) part of `saved` until start_from(). Throws CheckpointError when `saved` is
  // not state_size() floats of `saved_workers` == this run's workers.
  void load(std::span<const float> saved, int saved_workers, int index);
  // The worker's model buffer (Synchronizer::start_from): a loaded replica goes into it and the optimizer state.
  void start_from(std::span<float> params);

 private:
  std::size_t block() const { return count_ + sgd_.state().size(); }
  const Comm& workers_;
  Sgd& sgd_;
  std::size_t count_;
  std::span<float> params_;     // the worker's model (start_from)
  std::vector<float> pending_;  // a resumed worker's own model and optimizer state, until start_from
};

}  // namespace gradsync
