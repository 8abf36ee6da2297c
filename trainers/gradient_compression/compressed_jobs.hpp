#pragma once
// --compress with an allreduce --sync: each range of the gradient (the whole gradient, or a bucket with --buckets)
// is summed through a compressor planned on that range's tensors alone, with error feedback on that range's slice of
// the worker's residual (compression/error_feedback.hpp); every worker applies the same step with the
// mean. The jobs run blocking, bucketed or pipelined (trainers/overlap/overlapped_sync.hpp).
//
// Their state for checkpoints: every range's compressor state (the same on every worker) in range order, then with
// error feedback every worker's whole residual, in worker order and buffer order, gathered when saved.
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "collectives/allreduce.hpp"
#include "trainers/config/train_config.hpp"
#include "trainers/core/sync_registry.hpp"
#include "trainers/overlap/gradient_jobs.hpp"

namespace gradsync {

// The jobs for config.compression on setup.workers, one per range of `ranges` (gradient_ranges(): each range
// whole layers); needs setup.layers (std::invalid_argument without them). Call on every worker with a config
// that passed validate() and validate_against_model(); collective over the workers when the compressor plans an
// allreduce.
std::unique_ptr<GradientJobs> make_compressed_jobs(const TrainConfig& config, const SyncSetup& setup,
                                                   std::vector<ElementRange> ranges);

// GradientJobs::state_size() of those jobs on `workers` workers of a model of `layers`, cut as
// gradient_ranges() cuts it (0 without config.compression): what a checkpoint holds after the optimizer state.
// Local.
std::size_t compressed_state_size(const TrainConfig& config, std::span<const LayerShape> layers, int workers);

}  // namespace gradsync
