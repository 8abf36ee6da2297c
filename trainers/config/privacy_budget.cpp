#include "trainers/config/privacy_budget.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "privacy/gaussian_noise.hpp"
#include "privacy/rdp_accountant.hpp"
#include "trainers/config/train_config.hpp"
#include "trainers/core/sync_registry.hpp"

namespace gradsync {

double dp_sampling_rate(std::size_t global_batch, std::size_t train_rows) {
  if (train_rows == 0) return 1;
  return std::min(1.0, static_cast<double>(global_batch) / static_cast<double>(train_rows));
}

double dp_epsilon_after(const PrivacyOptions& o, double q, std::uint64_t steps) {
  if (!o.dp()) return -1;
  return dp_sgd_epsilon(q, o.dp_noise, steps, o.dp_delta).epsilon;
}

double secure_range_for(const PrivacyOptions& o, int workers, std::size_t batch) {
  if (o.secure_range > 0) return o.secure_range;
  if (!o.dp()) return 1;
  return o.dp_clip + 8 * noise_share_std(o.dp_noise, o.dp_clip, workers, static_cast<double>(batch));
}

namespace {

std::string validate_dp(const TrainConfig& c) {
  const PrivacyOptions& o = c.privacy;
  if (!(o.dp_clip >= 0) || !std::isfinite(o.dp_clip)) return fmt::format("--dp-clip: must be > 0, got {}", o.dp_clip);
  if (!(o.dp_noise >= 0) || !std::isfinite(o.dp_noise))
    return fmt::format("--dp-noise: must be >= 0, got {}", o.dp_noise);
  if (!(o.dp_delta > 0 && o.dp_delta < 1)) return fmt::format("--dp-delta: must be in (0, 1), got {}", o.dp_delta);
  if (!o.dp()) return {};
  // Each worker's noise share is a 1/p part of the sum's variance: it adds up only where every step sums all the
  // workers' gradients into one model.
  if (c.sync.family != SyncFamily::serial && c.sync.family != SyncFamily::allreduce)
    return fmt::format(
        "--dp-clip: DP-SGD needs every step to sum all workers' gradients (--sync serial or an "
        "allreduce method), not --sync {}",
        sync_family(c.sync.family).name);
  if (c.average_every > 0) return "--dp-clip: not with --average-every (each worker steps on its own noise share)";
  if (c.buckets || c.pipeline)
    return fmt::format("--dp-clip: not with {} (the noise is added to the whole gradient after the backward pass)",
                       c.buckets ? "--buckets" : "--pipeline 1");
  return {};
}

std::string validate_secure(const TrainConfig& c) {
  const PrivacyOptions& o = c.privacy;
  if (!(o.secure_range >= 0) || !std::isfinite(o.secure_range))
    return fmt::format("--secure-range: must be > 0, got {}", o.secure_range);
  if (!o.secure_aggregation) return {};
  if (c.sync.family != SyncFamily::allreduce)
    return fmt::format("--secure-aggregation: needs an allreduce method (--sync ring, ...), not --sync {}",
                       sync_family(c.sync.family).name);
  if (c.compression.enabled())
    return fmt::format("--secure-aggregation: not with --compress {} (the masked sum is of fixed-point codes)",
                       c.compression.name());
  if (c.buckets) return "--secure-aggregation: not with --buckets (one masked vector a step)";
  if (c.pipeline) return "--secure-aggregation: not with --pipeline 1 (one masked vector a step)";
  if (c.average_every > 0) return "--secure-aggregation: not with --average-every (it sums gradients, not models)";
  return {};
}

}  // namespace

std::string validate_privacy(const TrainConfig& c) {
  if (std::string problem = validate_dp(c); !problem.empty()) return problem;
  return validate_secure(c);
}

}  // namespace gradsync
