#include "trainers/loop/steps_per_epoch.hpp"

#include <algorithm>

#include "trainers/core/sync_registry.hpp"

namespace gradsync {

long steps_per_epoch(const TrainConfig& config, std::size_t rows, int workers) {
  if (sync_family(config.sync.family).shape.rounds) return 1;  // an epoch is a round (federated averaging)
  if (config.iterations_per_epoch > 0) return config.iterations_per_epoch;
  const std::size_t share = config.iterations_per_epoch == TrainConfig::kAuto ? static_cast<std::size_t>(workers) : 1;
  return std::max<long>(1, static_cast<long>(rows / (config.batch * share)));
}

}  // namespace gradsync
