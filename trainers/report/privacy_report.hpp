#pragma once
// What train prints of a run's privacy options (trainers/config/privacy_options.hpp): its setup before training and
// the epsilon spent at the end. Rank 0's; empty strings when the options are off.
#include <cstddef>
#include <string>

#include "trainers/config/train_config.hpp"
#include "trainers/core/train_result.hpp"

namespace gradsync {

// DP-SGD's clip, noise, sampling rate and each worker's noise share; secure aggregation's range, resolution and the
// bytes each worker's masked vector holds a step beside the plain gradient's. For a run on `ranks` processes (its
// workers and their batch as the run resolves them: config.worker_count, config.per_worker_batch, so a --global-batch
// counts) over `train_rows` examples and a model of `parameter_count` floats.
std::string format_privacy_setup(const TrainConfig& config, int ranks, std::size_t train_rows,
                                 std::size_t parameter_count);

// After the run: epsilon at delta after its global steps, and how the accountant treated the batches.
std::string format_privacy_spent(const TrainConfig& config, const TrainResult& result);

}  // namespace gradsync
