// --sync serial: one rank, whose optimizer step is the whole synchronization.
#include <fmt/format.h>

#include "trainers/config/train_config.hpp"
#include "trainers/core/sync_registry.hpp"

namespace gradsync {
namespace {

class LocalSgd final : public Synchronizer {
 public:
  explicit LocalSgd(Sgd& sgd) : sgd_(sgd) {}
  void step(std::span<float> params, std::span<float> grads) override { sgd_.step(params, grads); }

 private:
  Sgd& sgd_;
};

std::string validate_serial(const TrainConfig&, int ranks) {
  if (ranks == 1) return {};
  return fmt::format("--sync serial runs on one rank, but {} were started; use ps or {}", ranks,
                     allreduce_method_names(trains, " | "));
}

}  // namespace

extern const SyncFamilyInfo serial_sync_family = {
    .family = SyncFamily::serial,
    .name = "serial",
    .shape = {},
    .flags = {},
    .checks = {.validate = validate_serial},
    .report = {},
    .build = {.make = [](const TrainConfig&, const SyncSetup& setup) -> std::unique_ptr<Synchronizer> {
      return std::make_unique<LocalSgd>(setup.sgd);
    }},
};

}  // namespace gradsync
