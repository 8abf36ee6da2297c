#pragma once
// The factory: a worker's synchronizer (or round trainer) from the configuration, built by its family
// (trainers/core/sync_registry.hpp).
#include <memory>

#include "trainers/config/train_config.hpp"
#include "trainers/core/sync_registry.hpp"
#include "trainers/core/synchronizer.hpp"

namespace gradsync {

// The synchronizer config.sync names, with config's overlap options (buckets, pipeline, progress) or model
// averaging (average_every). Call on every worker rank with a config that passed validate(). For a chunked method with
// the automatic chunk size it is collective over setup.workers (it asks whether all ranks share a node); otherwise
// local.
// config.sync must name a step-based family (not SyncFamilyInfo's shape.rounds: std::invalid_argument).
std::unique_ptr<Synchronizer> make_synchronizer(const TrainConfig& config, const SyncSetup& setup);
// The round trainer of a round-based family (shape.rounds), as make_synchronizer; std::invalid_argument for another.
std::unique_ptr<RoundTrainer> make_round_trainer(const TrainConfig& config, const SyncSetup& setup);

}  // namespace gradsync
