#include <fmt/format.h>

#include <stdexcept>

#include "attacks/gradient_attacks.hpp"
#include "trainers/config/robustness_options.hpp"
#include "trainers/config/train_config.hpp"

namespace gradsync {

std::string check_attack_pairing(const RobustnessOptions& r) {
  if (r.byzantine < 0) return fmt::format("--byzantine: must be >= 0, got {}", r.byzantine);
  if (r.attack && r.byzantine == 0)
    return fmt::format("--attack {}: needs --byzantine F > 0 (how many workers run it: the last F)", r.attack->text);
  if (!r.attack && r.byzantine > 0)
    return fmt::format("--byzantine {}: needs --attack NAME (what the malicious workers do: {})", r.byzantine,
                       attack_names());
  return {};
}

namespace {

// The overlap and averaging options a robust aggregator cannot take: each sums its own ranges, or models.
std::string check_aggregation_options(const TrainConfig& c) {
  const std::string& spec = c.robust.aggregation.text;
  if (c.buckets)
    return fmt::format("--robust-aggregation {}: not with --buckets (buckets are summed as they finish)", spec);
  if (c.pipeline) return fmt::format("--robust-aggregation {}: not with --pipeline 1 (blocking steps only)", spec);
  if (c.compression.enabled())
    return fmt::format(
        "--robust-aggregation {}: not with --compress {} (a compressed sum is not a median of "
        "gradients)",
        spec, c.compression.name());
  if (c.average_every > 0)
    return fmt::format("--robust-aggregation {}: not with --average-every (that averages models, not gradients)", spec);
  return {};
}

// A gradient attack changes what the worker sends after its backward pass: not where the gradient has left during it
// (buckets) or where models are averaged instead.
std::string check_attack_options(const TrainConfig& c) {
  const AttackSpec& a = *c.robust.attack;
  if (attack_target(a.kind) != AttackTarget::gradient) return {};
  if (c.buckets)
    return fmt::format("--attack {}: not with --buckets (the gradient leaves during the backward pass)", a.text);
  if (c.average_every > 0)
    return fmt::format("--attack {}: not with --average-every (the models are averaged, not the gradients)", a.text);
  return {};
}

}  // namespace

std::string validate_robustness(const TrainConfig& c, int ranks) {
  const RobustnessOptions& r = c.robust;
  if (std::string problem = check_attack_pairing(r); !problem.empty()) return problem;
  const bool attacked = r.byzantine > 0;
  if ((attacked || r.robust()) && c.sync.family != SyncFamily::allreduce)
    return fmt::format("{}: only with an allreduce method so far (--sync ring, mpi, ...), not --sync {}",
                       attacked ? "--byzantine" : "--robust-aggregation", c.sync.name());
  if (r.robust())
    if (std::string problem = check_aggregation_options(c); !problem.empty()) return problem;
  const int workers = c.worker_count(ranks);
  if (attacked) {
    if (std::string problem = check_attack_options(c); !problem.empty()) return problem;
    if (r.byzantine >= workers)
      return fmt::format("--byzantine {}: must be fewer than the {} workers of this run", r.byzantine, workers);
    if (r.attack->kind == AttackKind::alie && r.attack->scale == 0) try {
        (void)alie_z(workers, r.byzantine);
      } catch (const std::invalid_argument& e) {
        return fmt::format("--attack {}: {}", r.attack->text, e.what());
      }
  }
  if (r.robust()) try {
      (void)resolved_for(r.aggregation, workers);
    } catch (const std::invalid_argument& e) {
      return fmt::format("--robust-aggregation: {}", e.what());
    }
  return {};
}

}  // namespace gradsync
