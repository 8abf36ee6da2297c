#include "trainers/loop/make_synchronizer.hpp"

namespace gradsync {

std::unique_ptr<Synchronizer> make_synchronizer(const TrainConfig& config, const SyncSetup& setup) {
  return sync_family(config.sync.family).make(config, setup);
}

}  // namespace gradsync
