#pragma once
#include <string>

#include "model/dataset.hpp"
#include "trainers/train_config.hpp"

namespace gradsync {

// Where a dataset lives when --data is not given: data/mnist in the source tree (scripts/fetch_mnist.sh puts it
// there), or Debian's dataset-fashion-mnist package.
std::string default_data_dir(const std::string& dataset);

// Loads the configured dataset; throws DataError naming the file and the fix.
TrainTest load_training_data(const TrainConfig& config);

}  // namespace gradsync
