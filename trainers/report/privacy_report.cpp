#include "trainers/report/privacy_report.hpp"

#include <fmt/format.h>

#include "privacy/fixed_point.hpp"
#include "privacy/gaussian_noise.hpp"
#include "privacy/secure_aggregator.hpp"
#include "trainers/config/privacy_budget.hpp"

namespace gradsync {

std::string format_privacy_setup(const TrainConfig& c, int ranks, std::size_t train_rows, std::size_t parameter_count) {
  const PrivacyOptions& o = c.privacy;
  const int workers = c.worker_count(ranks);
  const std::size_t batch = c.per_worker_batch(ranks);
  std::string line;
  if (o.dp())
    line = fmt::format("DP-SGD: clip {} noise {} (each of {} worker(s) adds std {:.3g} to its mean gradient), q = {:.5f}",
                       o.dp_clip, o.dp_noise, workers,
                       noise_share_std(o.dp_noise, o.dp_clip, workers, static_cast<double>(batch)),
                       dp_sampling_rate(batch * static_cast<std::size_t>(workers), train_rows));
  if (o.secure_aggregation) {
    const FixedPoint fp(secure_range_for(o, workers, batch), workers);
    const double plain = 4.0 * static_cast<double>(parameter_count);
    const double masked = 4.0 * static_cast<double>(parameter_count + kCheckWords);
    line += fmt::format(
        "{}secure aggregation: values clipped to [-{:.4g}, {:.4g}], resolution {:.3g}; each worker's masked vector "
        "is {:.0f} bytes a step (uint32 codes + {} check words) against {:.0f} plain, summed by MPI_Allreduce",
        line.empty() ? "" : "\n", fp.range(), fp.range(), 1 / fp.scale(), masked, kCheckWords, plain);
  }
  return line;
}

std::string format_privacy_spent(const TrainConfig& c, const TrainResult& r) {
  if (!c.privacy.dp() || r.epochs.empty()) return {};
  const EpochReport& last = r.epochs.back();
  return fmt::format(
      "privacy: epsilon {:.4f} at delta {:g} after {} steps at q = {:.5f}, sigma {} (RDP of the sampled Gaussian "
      "mechanism, improved conversion; the shuffled fixed-size batches are accounted as Poisson sampling at q)",
      last.dp_epsilon, c.privacy.dp_delta, last.global_steps, last.dp_rate, c.privacy.dp_noise);
}

}  // namespace gradsync
