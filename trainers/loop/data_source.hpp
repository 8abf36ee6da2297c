#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "collectives/comm.hpp"

#include "model/dataset.hpp"
#include "trainers/config/train_config.hpp"

namespace gradsync {

// Where a dataset lives when --data is not given: data/mnist in the source tree (scripts/fetch_mnist.sh puts it
// there), or Debian's dataset-fashion-mnist package.
std::string default_data_dir(DatasetId dataset);
// The folder `config`'s data is read from: --data, or the dataset's default_data_dir.
std::string data_dir(const TrainConfig& config);

// Loads the configured dataset on this rank alone (no communication); throws DataError naming the file and the
// fix.
TrainTest load_training_data(const TrainConfig& config);

// For a tool that runs alone (no other ranks to agree with; before or without MPI_Init): the dataset, or nullopt
// after printing "<program>: error: <why>" to stderr for bad data (DataError), which such a tool answers with exit 2.
std::optional<TrainTest> load_training_data_alone(const TrainConfig& config, std::string_view program);

// Collective over `world`: every rank loads the dataset, and all learn whether every rank could (Comm::all_ok),
// so that they stop together. A rank that failed prints "<program>: error (rank R): <why>" to stderr; then every
// rank gets nullopt.
std::optional<TrainTest> load_training_data_on_every_rank(const TrainConfig& config, const Comm& world,
                                                          std::string_view program);

}  // namespace gradsync
