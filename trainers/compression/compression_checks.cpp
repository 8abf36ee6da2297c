#include "trainers/compression/compression_checks.hpp"

#include <fmt/format.h>

#include "trainers/config/train_config.hpp"
#include "trainers/families/sync_registry.hpp"

namespace gradsync {
namespace {

std::string pushable_compressors() {
  std::string names;
  for (const CompressorInfo* c : compressor_table())
    if (c->make_codec) names += fmt::format("{}{}", names.empty() ? "" : ", ", c->name);
  return names;
}

}  // namespace

std::string validate_compression(const TrainConfig& c) {
  const CompressionChoice& choice = c.compression;
  if (!choice.enabled())
    return choice.error_feedback_given ? "--error-feedback: only with --compress (it is the compressor's residual)"
                                       : std::string{};
  const std::string flag = fmt::format("--compress {}", choice.name());
  if (std::string problem = choice.compressor->check_param(choice.param); !problem.empty())
    return fmt::format("--compress: {}", problem);
  if (c.sync.family == SyncFamily::ps) {
    if (choice.compressor->make_codec) return {};
    return fmt::format(
        "{}: the parameter server (--sync ps) takes pushes it can decode key range by key range ({}); this "
        "compressor has no such part (PowerSGD's factors are sums that every worker needs back before its next "
        "product), so it needs an allreduce method ({})",
        flag, pushable_compressors(), allreduce_method_names(trains));
  }
  if (!c.sync.allreduce)
    return fmt::format("{}: needs an allreduce --sync ({}), not {}", flag, allreduce_method_names(trains), c.sync.name());
  if (c.average_every > 0) return fmt::format("{}: not with --average-every (that averages models, not gradients)", flag);
  return {};
}

std::string validate_against_model(const TrainConfig& c, std::span<const LayerShape> layers) {
  const CompressionChoice& choice = c.compression;
  if (!choice.enabled()) return {};
  const std::string problem = choice.compressor->check_model(choice.param, model_tensors(layers));
  return problem.empty() ? problem : "--compress " + problem;
}

}  // namespace gradsync
