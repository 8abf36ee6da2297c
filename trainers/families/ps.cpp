// --sync ps: the parameter-server trainer (trainers/ps/ps_training.hpp). World ranks 0..servers-1 serve, the rest work.
#include <fmt/format.h>

#include "trainers/config/train_config.hpp"
#include "trainers/families/sync_registry.hpp"
#include "trainers/ps/ps_training.hpp"

namespace gradsync {
namespace {

std::string validate_ps(const TrainConfig& c, int ranks) {
  if (ranks < 2) return "--sync ps needs at least 2 ranks (1 server + 1 worker); run it under mpirun -n 2 or more";
  if (c.servers < 1 || c.servers >= ranks)
    return fmt::format("--servers {}: needs 1 <= servers < ranks ({}), leaving at least one worker", c.servers, ranks);
  return {};
}

}  // namespace

extern const SyncFamilyInfo ps_sync_family = {
    .family = SyncFamily::ps,
    .name = "ps",
    .servers = true,
    .pipelines = true,
    .validate = validate_ps,
    .make =
        [](const TrainConfig& config, const SyncSetup& s) {
          return make_ps_worker(s.world, ps_layout(config, s.world.size(), s.parameter_count), config, s.layers);
        },
};

}  // namespace gradsync
