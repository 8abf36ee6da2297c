#pragma once
// --secure-aggregation for the allreduce family: each step's gradients summed by privacy/'s SecureAggregator (fixed
// point in Z_2^32 under pairwise ChaCha20 masks), so no worker's gradient is on the wire in the clear.
#include <memory>

#include "trainers/config/train_config.hpp"
#include "trainers/core/sync_registry.hpp"

namespace gradsync {

// Collective over setup.workers (every worker calls it): agrees the pair keys (X25519, one all-gather) and plans the
// aggregator for setup.parameter_count values (> 0). Each step() then quantizes the gradient to the range
// secure_range_for() gives, masks it, sums it with MPI_Allreduce on uint32 (count + kCheckWords words a worker,
// whatever config.sync's method), checks the masks cancelled (std::runtime_error on every rank otherwise), and takes
// the SGD step with the mean.
std::unique_ptr<Synchronizer> make_secure_sync(const TrainConfig& config, const SyncSetup& setup);

}  // namespace gradsync
