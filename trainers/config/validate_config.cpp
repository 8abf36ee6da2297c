#include "trainers/config/validate_config.hpp"

#include <fmt/format.h>

#include "collectives/methods.hpp"
#include "model/models.hpp"
#include "trainers/config/compression_checks.hpp"
#include "trainers/config/privacy_budget.hpp"
#include "trainers/config/robustness_options.hpp"
#include "trainers/core/fault_injection.hpp"
#include "trainers/core/sync_registry.hpp"

namespace gradsync {

namespace {

// Model averaging sums parameters, not gradients: a method that rounds them would drift the replicas' models.
bool averages(const AllreduceMethod& m) { return trains(m) && m.exact; }

// "ps, ring, mpi, ...": the named families with `flag` set, then the allreduce methods training uses.
std::string methods_with(bool FamilyShape::*flag) {
  std::string names;
  for (const SyncFamilyInfo* f : sync_family_table())
    if (f->shape.*flag && !f->name.empty()) names += fmt::format("{}, ", f->name);
  return names + allreduce_method_names(trains);
}

std::string validate_model(const TrainConfig& c) {
  if (c.model->hidden && c.hidden.empty())
    return fmt::format("--hidden: an {} needs at least one hidden layer", c.model->name);
  for (std::size_t h : c.hidden)
    if (h == 0) return "--hidden: layer widths must be positive";
  if (c.epochs <= 0) return fmt::format("--epochs: must be positive, got {}", c.epochs);
  if (c.batch == 0) return "--batch: must be positive";
  if (!(c.sgd.lr > 0)) return fmt::format("--lr: must be positive, got {}", c.sgd.lr);
  if (c.sgd.momentum < 0 || c.sgd.momentum >= 1) return "--momentum: must be in [0, 1)";
  if (c.sgd.weight_decay < 0) return "--weight-decay: must be >= 0";
  if (c.iterations_per_epoch < TrainConfig::kFullPass)
    return "--iterations-per-epoch: must be 'full', 'auto' or positive";
  if (c.threads < 1) return "--threads: must be >= 1";
  return {};
}

std::string validate_sync(const TrainConfig& c, int ranks) {
  const SyncFamilyInfo& family = sync_family(c.sync.family);
  if (family.checks.validate)
    if (std::string problem = family.checks.validate(c, ranks); !problem.empty()) return problem;
  if (c.average_every < 0) return "--average-every: must be >= 0";
  if (c.average_every > 0 && !(c.sync.allreduce && averages(*c.sync.allreduce)))
    return fmt::format("--average-every: model averaging needs an exact allreduce method ({})",
                       allreduce_method_names(averages));
  if (!(c.outer_lr > 0 && c.outer_lr <= 10)) return fmt::format("--outer-lr: must be in (0, 10], got {}", c.outer_lr);
  if (!(c.outer_momentum >= 0 && c.outer_momentum < 1))
    return fmt::format("--outer-momentum: must be in [0, 1), got {}", c.outer_momentum);
  if (c.stop_at_target && c.target_accuracy <= 0) return "--stop-at-target: needs --target-accuracy A";
  if (!(c.target_accuracy >= 0 && c.target_accuracy <= 1))
    return fmt::format("--target-accuracy: must be in (0, 1], got {}", c.target_accuracy);
  if (c.pipeline && (!family.shape.pipelines || c.average_every > 0))
    return fmt::format("--pipeline 1: needs a synchronizing method ({}) without --average-every",
                       methods_with(&FamilyShape::pipelines));
  if (c.buckets && (!family.shape.buckets || c.average_every > 0 || c.pipeline))
    return fmt::format("--buckets: needs an allreduce method ({}) without --average-every or --pipeline",
                       methods_with(&FamilyShape::buckets));
  if (c.buckets && c.bucket_bytes == 0) return "--bucket-kib: must be positive";
  return {};
}

std::string validate_checkpoints(const TrainConfig& c) {
  if (c.timeout_s < 0) return "--timeout: must be >= 0 seconds (0 turns the watchdog off)";
  if (c.checkpoint_every < 0) return "--checkpoint-every: must be >= 0 epochs (0: only after the last)";
  if (c.checkpoint_steps < TrainConfig::kTimeInterval)
    return "--checkpoint-steps: must be >= 0 (0: checkpoints at epoch ends only)";
  if (c.checkpoint_steps == TrainConfig::kTimeInterval && !(c.checkpoint_seconds > 0 && c.checkpoint_seconds < 1e7))
    return "--checkpoint-seconds: must be a number of seconds above 0 and below 1e7";
  if (c.checkpoint_replicas < 1) return fmt::format("--checkpoint-replicas {}: must be >= 1", c.checkpoint_replicas);
  if (c.resume && c.checkpoint_dir.empty()) return "--resume needs --checkpoint DIR (where the checkpoint is)";
  for (const FaultInjection::Kill& k : c.faults.kills)
    if (k.in_checkpoint && c.checkpoint_dir.empty())
      return fmt::format("--inject-kill {}:{}:checkpoint needs --checkpoint DIR (no checkpoint is written without it)",
                         k.step, k.rank);
  return {};
}

std::string validate_global_batch(const TrainConfig& c, int ranks) {
  const int workers = c.worker_count(ranks);
  if (c.global_batch > 0 && workers > 0 && c.global_batch % static_cast<std::size_t>(workers) != 0)
    return fmt::format("--global-batch {}: not a multiple of the {} workers of this run; use a multiple of {} (e.g. {})",
                       c.global_batch, workers, workers, (c.global_batch / workers + 1) * workers);
  return {};
}

// A robust aggregator selects among the workers' own gradients, which secure aggregation exists to hide: only their
// sum is ever seen.
std::string validate_robust_and_secure(const TrainConfig& c) {
  if (c.privacy.secure_aggregation && c.robust.robust())
    return "--secure-aggregation: the servers see only the sum of the masked gradients, and --robust-aggregation needs "
           "every worker's own; give one of them";
  return {};
}

}  // namespace

std::string validate(const TrainConfig& c, int ranks) {
  for (const std::string& problem :
       {validate_model(c), validate_sync(c, ranks), validate_compression(c), validate_checkpoints(c),
        validate_global_batch(c, ranks), validate(c.faults, ranks, c.server_ranks()), validate_robustness(c, ranks),
        validate_privacy(c), validate_robust_and_secure(c)})
    if (!problem.empty()) return problem;
  return {};
}

int fewest_ranks(const TrainConfig& c, std::string& problem) {
  for (int ranks = 1; ranks <= kMostRanks; ++ranks)
    if ((problem = validate(c, ranks)).empty()) return ranks;
  return 0;
}

std::string validate_model_against_data(const TrainConfig& c, std::size_t features) {
  const std::string problem = c.model->check ? c.model->check(features) : std::string();
  return problem.empty() ? problem : fmt::format("--model {}: {}", c.model->name, problem);
}

std::string validate_against_data(const TrainConfig& c, int ranks, std::size_t train_rows) {
  const int workers = c.worker_count(ranks);
  if (workers < 1) return {};  // validate() has already refused this
  if (const SyncFamilyInfo& family = sync_family(c.sync.family); family.checks.validate_against_data)
    return family.checks.validate_against_data(c, workers, train_rows);
  const std::size_t share = train_rows / static_cast<std::size_t>(workers);
  if (c.global_batch > 0 && c.per_worker_batch(ranks) > share)
    return fmt::format("--global-batch {}: {} per worker, larger than each worker's share of the training set ({})",
                       c.global_batch, c.per_worker_batch(ranks), share);
  if (c.batch > share)
    return fmt::format(
        "--batch {}: larger than each worker's share of the training set ({} images / {} worker{} = "
        "{}); use --batch {} or less",
        c.batch, train_rows, workers, workers == 1 ? "" : "s", share, share);
  return {};
}

}  // namespace gradsync
