#include "trainers/train_config.hpp"

#include <fmt/format.h>

#include "collectives/methods.hpp"

namespace gradsync {

std::vector<std::size_t> TrainConfig::layer_sizes(std::size_t inputs, std::size_t classes) const {
  std::vector<std::size_t> sizes = {inputs};
  if (model == "mlp") sizes.insert(sizes.end(), hidden.begin(), hidden.end());
  sizes.push_back(classes);
  return sizes;
}

std::size_t TrainConfig::per_worker_batch(int ranks) const {
  const int workers = worker_count(ranks);
  return global_batch > 0 && workers > 0 ? global_batch / static_cast<std::size_t>(workers) : batch;
}

std::string TrainConfig::model_name() const {
  return model == "mlp" ? fmt::format("mlp-{}", fmt::join(hidden, "-")) : model;
}

std::string TrainConfig::sync_name() const {
  std::string name = sync;
  if (is_ps()) {
    name += "-" + ps_mode;
    if (ps_mode == "ssp") name += std::to_string(staleness);
    if (servers > 1) name += fmt::format("-k{}", servers);
  }
  if (average_every > 0) name += fmt::format("-avg{}", average_every);
  if (buckets) name += "-buckets";
  if (pipeline) name += "-pipe";
  if ((buckets || pipeline) && progress == "thread") name += "-thread";
  return name;
}

namespace {

// The allreduce methods (collectives/methods.hpp) training synchronizes with: those leaving the whole sum on every
// rank. --sync ps is the parameter-server trainer (ps_training.hpp), not the ps allreduce.
bool trains(const AllreduceMethod& m) { return m.every_rank_gets_sum(); }
// Model averaging sums parameters, not gradients: a method that rounds them would drift the replicas' models.
bool averages(const AllreduceMethod& m) { return trains(m) && m.exact; }

}  // namespace

std::string validate(const TrainConfig& c, int ranks) {
  const AllreduceMethod* allreduce = find_allreduce_method(c.sync);
  if (allreduce && !trains(*allreduce)) allreduce = nullptr;
  if (c.sync != "serial" && c.sync != "ps" && !allreduce)
    return fmt::format("--sync: unknown method '{}' (choose serial, ps or an allreduce: {})", c.sync,
                       allreduce_method_names(trains));
  if (c.model != "softmax" && c.model != "mlp")
    return fmt::format("--model: unknown model '{}' (choose softmax or mlp)", c.model);
  if (c.model == "mlp" && c.hidden.empty()) return "--hidden: an mlp needs at least one hidden layer";
  for (std::size_t h : c.hidden)
    if (h == 0) return "--hidden: layer widths must be positive";
  if (c.epochs <= 0) return fmt::format("--epochs: must be positive, got {}", c.epochs);
  if (c.batch == 0) return "--batch: must be positive";
  if (!(c.sgd.lr > 0)) return fmt::format("--lr: must be positive, got {}", c.sgd.lr);
  if (c.sgd.momentum < 0 || c.sgd.momentum >= 1) return "--momentum: must be in [0, 1)";
  if (c.sgd.weight_decay < 0) return "--weight-decay: must be >= 0";
  if (c.dataset != "mnist" && c.dataset != "fashion")
    return fmt::format("--dataset: unknown dataset '{}' (choose mnist or fashion)", c.dataset);
  if (c.iterations_per_epoch < TrainConfig::kFullPass)
    return "--iterations-per-epoch: must be 'full', 'auto' or positive";
  if (c.threads < 1) return "--threads: must be >= 1";
  if (c.sync == "serial" && ranks != 1)
    return fmt::format("--sync serial runs on one rank, but {} were started; use ps or {}", ranks,
                       allreduce_method_names(trains, " | "));
  if (c.average_every < 0) return "--average-every: must be >= 0";
  if (c.average_every > 0 && !(allreduce && averages(*allreduce)))
    return fmt::format("--average-every: model averaging needs an exact allreduce method ({})",
                       allreduce_method_names(averages));
  if (c.ps_mode != "bsp" && c.ps_mode != "asp" && c.ps_mode != "ssp")
    return fmt::format("--ps-mode: unknown mode '{}' (choose bsp, asp or ssp)", c.ps_mode);
  if (c.staleness < 0) return "--staleness: must be >= 0";
  if (c.is_ps()) {
    if (ranks < 2) return "--sync ps needs at least 2 ranks (1 server + 1 worker); run it under mpirun -n 2 or more";
    if (c.servers < 1 || c.servers >= ranks)
      return fmt::format("--servers {}: needs 1 <= servers < ranks ({}), leaving at least one worker", c.servers, ranks);
  }
  if (c.progress != "calls" && c.progress != "thread")
    return fmt::format("--progress: unknown '{}' (choose calls or thread)", c.progress);
  if (c.pipeline && (c.sync == "serial" || c.average_every > 0))
    return fmt::format("--pipeline 1: needs a synchronizing method (ps, {}) without --average-every",
                       allreduce_method_names(trains));
  if (c.buckets && (c.sync == "serial" || c.is_ps() || c.average_every > 0 || c.pipeline))
    return fmt::format("--buckets: needs an allreduce method ({}) without --average-every or --pipeline",
                       allreduce_method_names(trains));
  if (c.buckets && c.bucket_bytes == 0) return "--bucket-kib: must be positive";
  if (c.timeout_s < 0) return "--timeout: must be >= 0 seconds (0 turns the watchdog off)";
  if (c.checkpoint_every < 0) return "--checkpoint-every: must be >= 0 epochs (0: only after the last)";
  if (c.checkpoint_steps < TrainConfig::kTimeInterval)
    return "--checkpoint-steps: must be >= 0 (0: checkpoints at epoch ends only)";
  if (c.checkpoint_steps == TrainConfig::kTimeInterval && !(c.checkpoint_seconds > 0 && c.checkpoint_seconds < 1e7))
    return "--checkpoint-seconds: must be a number of seconds above 0 and below 1e7";
  if (c.checkpoint_replicas < 1) return fmt::format("--checkpoint-replicas {}: must be >= 1", c.checkpoint_replicas);
  if (c.global_batch > 0 && c.worker_count(ranks) > 0 &&
      c.global_batch % static_cast<std::size_t>(c.worker_count(ranks)) != 0)
    return fmt::format("--global-batch {}: not a multiple of the {} workers of this run; use a multiple of {} (e.g. {})",
                       c.global_batch, c.worker_count(ranks), c.worker_count(ranks),
                       (c.global_batch / c.worker_count(ranks) + 1) * c.worker_count(ranks));
  if (c.resume && c.checkpoint_dir.empty()) return "--resume needs --checkpoint DIR (where the checkpoint is)";
  if (!c.checkpoint_dir.empty() && c.average_every > 0)
    return "--checkpoint: not supported with --average-every (workers hold different models between averages)";
  if (c.straggler_rank >= ranks)
    return fmt::format("--straggler: rank {} does not exist ({} ranks)", c.straggler_rank, ranks);
  if (c.straggler_rank != -1 && !(c.straggler_ms >= 0 && c.straggler_ms < 1e7))
    return "--straggler: milliseconds must be a number from 0 to 1e7";
  if (c.is_ps() && c.straggler_rank >= 0 && c.straggler_rank < c.servers)
    return fmt::format("--straggler: rank {} is a parameter server (ranks 0..{}); choose a worker rank", c.straggler_rank,
                       c.servers - 1);
  return {};
}

std::string validate_against_data(const TrainConfig& c, int ranks, std::size_t train_rows) {
  const int workers = c.worker_count(ranks);
  if (workers < 1) return {};  // validate() has already refused this
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
