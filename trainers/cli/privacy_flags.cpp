#include "trainers/cli/privacy_flags.hpp"

#include <fmt/format.h>

namespace gradsync {

void add_privacy_options(CLI::App& app, PrivacyOptions& o) {
  app.add_option("--dp-clip", o.dp_clip,
                 "DP-SGD: clip each example's gradient to this L2 norm (dense models: softmax, mlp, 2nn; --sync serial "
                 "or an allreduce method, without --buckets, --pipeline or --average-every)");
  app.add_option("--dp-noise", o.dp_noise,
                 "with --dp-clip: noise multiplier sigma, the global batch's sum carries N(0, (sigma clip)^2), each "
                 "worker adding its 1/p share of the variance before its gradient leaves it (seeded from --seed and "
                 "the rank: reproducible, not cryptographic); epsilon is reported each epoch by the RDP accountant, "
                 "which treats the shuffled fixed-size batches as Poisson sampling at q = global batch / training set")
      ->capture_default_str();
  app.add_option("--dp-delta", o.dp_delta, "with --dp-clip: the delta at which epsilon is reported")
      ->capture_default_str();
  app.add_flag("--secure-aggregation", o.secure_aggregation,
               "sum the gradients as fixed-point codes in Z_2^32 masked by X25519-agreed ChaCha20 pair masks that "
               "cancel in the sum (an allreduce method, through MPI_Allreduce on uint32; not with --compress, "
               "--buckets, --pipeline or --average-every)");
  app.add_option("--secure-range", o.secure_range,
                 "with --secure-aggregation: clip each gradient value to [-R, R] before quantizing (default: 1; with "
                 "--dp-clip, the clip plus 8 standard deviations of a worker's noise share)");
}

void check_privacy_flags(const CLI::App& app, const PrivacyOptions& o) {
  for (const char* flag : {"--dp-noise", "--dp-delta"})
    if (app.count(flag) > 0 && app.count("--dp-clip") == 0)
      throw CLI::ValidationError(flag, "only with --dp-clip C (DP-SGD's per-example clip norm)");
  if (app.count("--dp-clip") > 0 && !(o.dp_clip > 0))
    throw CLI::ValidationError("--dp-clip", fmt::format("must be > 0, got {}", o.dp_clip));
  if (app.count("--secure-range") > 0 && !o.secure_aggregation)
    throw CLI::ValidationError("--secure-range", "only with --secure-aggregation");
  if (app.count("--secure-range") > 0 && !(o.secure_range > 0))
    throw CLI::ValidationError("--secure-range", fmt::format("must be > 0, got {}", o.secure_range));
}

}  // namespace gradsync
