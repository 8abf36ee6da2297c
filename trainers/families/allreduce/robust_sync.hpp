#pragma once
// The allreduce family's synchronizer with a robust aggregator (config.robust.aggregation other than mean): the
// workers' gradients are combined by the aggregator (collectives/robust/robust_aggregation.hpp, the segmented form:
// a ring allreduce's traffic), whose result is mean-like, so every worker steps with it unscaled.
#include <cstddef>
#include <memory>

#include "trainers/config/train_config.hpp"
#include "trainers/core/sync_registry.hpp"

namespace gradsync {

// Collective over setup.workers (the aggregator's planning). Blocking steps only: validate_robustness refuses the
// overlap, compression and averaging options first. Throws std::invalid_argument on every worker alike when the
// aggregator does not accept the worker count.
std::unique_ptr<Synchronizer> make_robust_sync(const TrainConfig& config, const SyncSetup& setup);

// The floats its save_state() writes: centered clipping's reference (the previous aggregate), else none.
std::size_t robust_state_size(const TrainConfig& config, std::size_t parameter_count);

}  // namespace gradsync
