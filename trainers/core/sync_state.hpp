#pragma once
// Training state of a worker's synchronizer of its own, beyond the model and the optimizer's (a compressor's residuals
// and warm start: trainers/gradient_compression/compressed_jobs.hpp; gossip's replicas), which checkpoints carry after
// the optimizer state (trainers/checkpoint/checkpoint_set.hpp). A synchronizer without any keeps the defaults.
#include <cstddef>
#include <span>

namespace gradsync {

class SyncState {
 public:
  virtual ~SyncState() = default;
  // How many floats save_state() writes on this run's workers (the same on every worker); 0: none.
  virtual std::size_t state_size() const { return 0; }
  // Collective over the workers, with nothing in flight: writes the state into `out` (state_size() floats, the
  // caller's), the same bits on every worker.
  virtual void save_state(std::span<float> /*out*/) {}
  // Local, before the first step: puts back `saved`, what save_state() wrote in a run of `saved_workers` workers,
  // on the worker at `index` of this run's. Throws CheckpointError if `saved` cannot be such a state.
  virtual void load_state(std::span<const float> /*saved*/, int /*saved_workers*/, int /*index*/) {}
  // (A family with servers may checkpoint a worker's state on its servers instead: SyncFamilyInfo's
  // send_worker_state.)
};

}  // namespace gradsync
