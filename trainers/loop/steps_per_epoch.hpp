#pragma once
// How many steps an epoch takes (the loop and the benchmarks that plan runs ask the same function).
#include <cstddef>

#include "trainers/config/train_config.hpp"

namespace gradsync {

// Steps each worker takes per epoch (at least 1): see TrainConfig::iterations_per_epoch.
long steps_per_epoch(const TrainConfig& config, std::size_t rows, int workers);

}  // namespace gradsync
