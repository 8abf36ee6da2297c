#include "trainers/config/train_config.hpp"

#include <fmt/format.h>

#include "collectives/methods.hpp"
#include "model/models.hpp"
#include "trainers/families/sync_registry.hpp"

namespace gradsync {

std::unique_ptr<Model> make_model(const TrainConfig& config, std::size_t features, std::size_t classes) {
  const ModelInfo* info = find_model(config.model);
  if (!info)
    throw std::invalid_argument(fmt::format("--model: unknown model '{}' (choose {})", config.model, model_names(", ")));
  if (const std::string problem = info->check ? info->check(features) : std::string(); !problem.empty())
    throw std::invalid_argument(fmt::format("--model {}: {}", config.model, problem));
  return info->make(config.hidden, features, classes);
}

std::size_t TrainConfig::per_worker_batch(int ranks) const {
  const int workers = worker_count(ranks);
  return global_batch > 0 && workers > 0 ? global_batch / static_cast<std::size_t>(workers) : batch;
}

int TrainConfig::server_ranks() const { return sync_family(sync.family).servers ? servers : 0; }

bool TrainConfig::wire_bytes_counted() const {
  if (sync.family == SyncFamily::fedavg) return !(fed.aggregate && fed.aggregate->library);
  const bool allreduces = sync.allreduce && (!compression.enabled() || compression.compressor->uses_allreduce);
  return !(allreduces && sync.allreduce->library);
}

std::string TrainConfig::model_name() const {
  const ModelInfo* info = find_model(model);
  return info && info->hidden ? fmt::format("{}-{}", model, fmt::join(hidden, "-")) : model;
}

std::string TrainConfig::sync_name() const {
  std::string name{sync.name()};
  if (sync.family == SyncFamily::ps) {
    name += fmt::format("-{}", ps_mode_name(ps_mode));
    if (ps_mode == PsMode::ssp) name += std::to_string(staleness);
    if (servers > 1) name += fmt::format("-k{}", servers);
  }
  if (sync.family == SyncFamily::gossip)
    name += fmt::format("-{}{}", topology_info(topology).name, gossip_async ? "-async" : "");
  if (sync.family == SyncFamily::fedavg) {
    name += fmt::format("-K{}-C{}-{}{}-B{}-{}", fed.clients, fed.client_fraction, fed.local_steps > 0 ? "S" : "E",
                        fed.local_steps > 0 ? fed.local_steps : fed.local_epochs,
                        fed.full_batch ? std::string("all") : std::to_string(batch), fed.partition.name());
    if (fed.aggregate && fed.aggregate->name != "ring") name += fmt::format("-{}", fed.aggregate->name);
    if (fed.prox_mu != 0.0f) name += fmt::format("-prox{}", fed.prox_mu);
  }
  if (average_every > 0) name += fmt::format("-avg{}", average_every);
  if ((average_every > 0 || sync.family == SyncFamily::fedavg) && (outer_lr != 1.0f || outer_momentum != 0.0f))
    name += fmt::format("-outer{}m{}", outer_lr, outer_momentum);
  if (compression.enabled()) name += fmt::format("-{}", compression.name());
  if (buckets) name += "-buckets";
  if (pipeline) name += "-pipe";
  if ((buckets || pipeline) && progress == Progress::thread) name += "-thread";
  return name;
}

AllreduceOptions allreduce_options(const TrainConfig& config) {
  AllreduceOptions options;
  options.chunk_bytes = config.chunk_bytes;
  options.report_choices = true;  // auto says once per size what it chose
  return options;
}

}  // namespace gradsync
