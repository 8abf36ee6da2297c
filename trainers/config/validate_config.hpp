#pragma once
// The checks of a whole configuration, apart from the configuration itself so that a family's or a compressor's own
// checks (which read TrainConfig) are called from here without including each other.
#include <cstddef>
#include <string>

#include "trainers/config/train_config.hpp"

namespace gradsync {

// Checks the configuration for a run on `ranks` processes. Returns an empty string if it is valid, otherwise
// a one-line message naming the flag and the problem.
std::string validate(const TrainConfig& config, int ranks);

// The fewest ranks, up to kMostRanks, on which validate() accepts the configuration (train --print-run, for drivers
// that skip a run on fewer); 0 when it accepts none, with `problem` set to its message on kMostRanks ranks.
inline constexpr int kMostRanks = 4096;
int fewest_ranks(const TrainConfig& config, std::string& problem);

// The checks that need the training set, once it is loaded: `train_rows` images shared by the workers of a run
// on `ranks` processes. Returns an empty string if the configuration fits the data, otherwise a one-line message
// naming the flag, its value and the limit. A per-worker batch larger than a worker's share would make every
// global batch repeat images (and, with the full-pass schedule, train one step an epoch).
std::string validate_against_data(const TrainConfig& config, int ranks, std::size_t train_rows);

// Whether config.model takes examples of `features` features (the CNN: square images whose side is a multiple of
// 4). Empty, or a one-line message naming --model.
std::string validate_model_against_data(const TrainConfig& config, std::size_t features);

}  // namespace gradsync
