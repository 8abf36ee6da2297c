#include "trainers/config/compression_checks.hpp"

#include <fmt/format.h>

#include "trainers/config/train_config.hpp"
#include "trainers/core/sync_registry.hpp"

namespace gradsync {

std::string validate_compression(const TrainConfig& c) {
  const CompressionChoice& choice = c.compression;
  if (!choice.enabled())
    return choice.error_feedback_given ? "--error-feedback: only with --compress (it is the compressor's residual)"
                                       : std::string{};
  const std::string flag = fmt::format("--compress {}", choice.name());
  if (std::string problem = choice.compressor->check_param(choice.param); !problem.empty())
    return fmt::format("--compress: {}", problem);
  const SyncFamilyInfo& family = sync_family(c.sync.family);
  if (family.checks.check_compression) return family.checks.check_compression(c);
  return fmt::format("{}: needs an allreduce --sync ({}), not {}", flag, allreduce_method_names(trains), c.sync.name());
}

std::string validate_against_model(const TrainConfig& c, std::span<const LayerShape> layers) {
  const CompressionChoice& choice = c.compression;
  if (!choice.enabled()) return {};
  const std::string problem = choice.compressor->check_model(choice.param, model_tensors(layers));
  return problem.empty() ? problem : "--compress " + problem;
}

}  // namespace gradsync
