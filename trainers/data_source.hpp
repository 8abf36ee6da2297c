#pragma once
#include <string>

#include "model/dataset.hpp"
#include "trainers/train_config.hpp"

namespace gradsync {

// Where a dataset lives when --data is not given: data/mnist in the source tree (scripts/fetch_mnist.sh puts it
// there), or Debian's dataset-fashion-mnist package.
std::string default_data_dir(const std::string& dataset);

// Loads the configured dataset on this rank alone (no communication); throws DataError naming the file and the
// fix. Under MPI the callers settle failures with Comm::all_ok, so that every rank stops together.
TrainTest load_training_data(const TrainConfig& config);

}  // namespace gradsync
