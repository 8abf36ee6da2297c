#include "trainers/config/train_config.hpp"

#include <fmt/format.h>

#include <string_view>
#include <vector>

#include "collectives/methods.hpp"
#include "model/models.hpp"
#include "trainers/core/sync_registry.hpp"

namespace gradsync {

std::unique_ptr<Model> make_model(const TrainConfig& config, std::size_t features, std::size_t classes) {
  const ModelInfo& info = *config.model;
  if (const std::string problem = info.check ? info.check(features) : std::string(); !problem.empty())
    throw std::invalid_argument(fmt::format("--model {}: {}", info.name, problem));
  return info.make(config.hidden, features, classes);
}

std::size_t TrainConfig::per_worker_batch(int ranks) const {
  const int workers = worker_count(ranks);
  return global_batch > 0 && workers > 0 ? global_batch / static_cast<std::size_t>(workers) : batch;
}

int TrainConfig::server_ranks() const { return sync_family(sync.family).shape.servers ? servers : 0; }

bool TrainConfig::wire_bytes_counted() const {
  const SyncFamilyInfo& family = sync_family(sync.family);
  return !family.report.wire_bytes_counted || family.report.wire_bytes_counted(*this);
}

std::string TrainConfig::model_name() const {
  return model->hidden ? fmt::format("{}-{}", model->name, fmt::join(hidden, "-")) : std::string(model->name);
}

std::string TrainConfig::sync_name() const {
  const SyncFamilyInfo& family = sync_family(sync.family);
  std::string name{sync.name()};
  if (family.report.describe) name += family.report.describe(*this);
  if (average_every > 0) name += fmt::format("-avg{}", average_every);
  if ((average_every > 0 || family.shape.rounds) && (outer_lr != 1.0f || outer_momentum != 0.0f))
    name += fmt::format("-outer{}m{}", outer_lr, outer_momentum);
  if (compression.enabled()) name += fmt::format("-{}", compression.name());
  if (buckets) name += "-buckets";
  if (pipeline) name += "-pipe";
  if ((buckets || pipeline) && progress == Progress::thread) name += "-thread";
  return name;
}

SyncDimensions TrainConfig::sync_dimensions() const {
  SyncDimensions d{.family = std::string(sync_family_id(sync.family)),
                   .allreduce = sync.allreduce ? std::string(sync.allreduce->name) : std::string(),
                   .compressor = compression.name(),
                   .mode = {}};
  if (const SyncFamilyInfo& family = sync_family(sync.family); family.report.dimensions)
    family.report.dimensions(*this, d);
  std::vector<std::string_view> modes;
  if (!d.mode.empty()) modes.push_back(d.mode);
  if (buckets) modes.push_back("buckets");
  if (pipeline) modes.push_back("pipe");
  if ((buckets || pipeline) && progress == Progress::thread) modes.push_back("thread");
  d.mode = modes.empty() ? "blocking" : fmt::format("{}", fmt::join(modes, "+"));
  return d;
}

AllreduceOptions allreduce_options(const TrainConfig& config) {
  AllreduceOptions options;
  options.chunk_bytes = config.chunk_bytes;
  options.report_choices = true;  // auto says once per size what it chose
  return options;
}

}  // namespace gradsync
