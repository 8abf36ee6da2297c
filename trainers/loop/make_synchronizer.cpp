#include "trainers/loop/make_synchronizer.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace gradsync {

std::unique_ptr<Synchronizer> make_synchronizer(const TrainConfig& config, const SyncSetup& setup) {
  const SyncFamilyInfo& family = sync_family(config.sync.family);
  if (!family.build.make)
    throw std::invalid_argument(fmt::format("make_synchronizer: --sync {} trains in rounds", config.sync.name()));
  return family.build.make(config, setup);
}

std::unique_ptr<RoundTrainer> make_round_trainer(const TrainConfig& config, const SyncSetup& setup) {
  const SyncFamilyInfo& family = sync_family(config.sync.family);
  if (!family.build.make_rounds)
    throw std::invalid_argument(fmt::format("make_round_trainer: --sync {} trains in steps", config.sync.name()));
  return family.build.make_rounds(config, setup);
}

}  // namespace gradsync
