#pragma once
// --compress with an allreduce --sync: each step the gradients are summed through a compressor with error feedback
// (trainers/compression/error_feedback.hpp), and every worker applies the same step with the mean.
#include <cstddef>
#include <memory>
#include <vector>

#include "trainers/sync_registry.hpp"
#include "trainers/train_config.hpp"

namespace gradsync {

// The synchronizer for config.compression on setup.workers; needs setup.layer_sizes (std::invalid_argument
// without them). Call on every worker with a config that passed validate() and validate_against_model(); collective
// over the workers when the compressor plans an allreduce.
std::unique_ptr<Synchronizer> make_compressed_sync(const TrainConfig& config, const SyncSetup& setup);

// Synchronizer::state_size() of that synchronizer on `workers` workers of a model with `layer_sizes` (0 without
// config.compression): what a checkpoint holds after the optimizer state. Local.
std::size_t compressed_state_size(const TrainConfig& config, const std::vector<std::size_t>& layer_sizes, int workers);

}  // namespace gradsync
