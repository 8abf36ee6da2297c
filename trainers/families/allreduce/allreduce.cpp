// --sync with an allreduce method: the gradient is summed by that method, or through a compressor
// (config.compression), blocking, in buckets during the backward pass (config.buckets) or one step late
// (config.pipeline); or, with config.average_every, the models are averaged.
#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#include "collectives/methods.hpp"
#include "trainers/checkpoint/replicas.hpp"
#include "trainers/config/train_config.hpp"
#include "trainers/core/sync_registry.hpp"
#include "trainers/families/allreduce/robust_sync.hpp"
#include "trainers/families/allreduce/secure_sync.hpp"
#include "trainers/gradient_compression/compressed_jobs.hpp"
#include "trainers/overlap/overlapped_sync.hpp"

namespace gradsync {
namespace {

// Synchronous data parallelism: sum the gradients, and every worker applies the same step with the mean.
class GradientAllreduce final : public Synchronizer {
 public:
  GradientAllreduce(std::unique_ptr<Allreduce> allreduce, Sgd& sgd)
      : allreduce_(std::move(allreduce)), sgd_(sgd), inv_workers_(1.0f / static_cast<float>(allreduce_->comm().size())) {}
  void step(std::span<float> params, std::span<float> grads) override {
    allreduce_->run(grads);
    sgd_.step(params, grads, inv_workers_);
  }

 private:
  std::unique_ptr<Allreduce> allreduce_;
  Sgd& sgd_;
  float inv_workers_;
};

// Local SGD: each worker steps on its own gradient and the parameters are averaged every `every` steps.
// With every = 1 and plain SGD this is exactly synchronous SGD (averaging commutes with the linear update).
// With an outer optimizer (DiLoCo, Douillard et al. 2023) the mean is not taken as it is: the difference between the
// model of the last average and the new mean is an outer gradient, and Nesterov momentum steps on it:
//   delta = anchor - mean;  m = mu * m + delta;  anchor -= outer_lr * (delta + mu * m);  every worker <- anchor.
// outer_lr 1 and mu 0 make anchor = mean; that case keeps the plain average's arithmetic, bit for bit.
// Between averages the workers' models differ: a checkpoint keeps each one (Replicas), then the outer optimizer's
// anchor and momentum (the same on every worker), and the run evaluates the workers' mean.
class ModelAveraging final : public Synchronizer {
 public:
  ModelAveraging(std::unique_ptr<Allreduce> allreduce, Sgd& sgd, int every, float outer_lr, float outer_momentum,
                 std::size_t count, std::int64_t steps_done)
      : allreduce_(std::move(allreduce)), sgd_(sgd), every_(every),
        inv_workers_(1.0f / static_cast<float>(allreduce_->comm().size())), outer_lr_(outer_lr),
        outer_momentum_(outer_momentum), outer_(outer_lr != 1.0f || outer_momentum != 0.0f), count_(count),
        replicas_(allreduce_->comm(), sgd, count), steps_(steps_done) {}
  bool keeps_replicas() const override { return true; }
  void start_from(std::span<float> params) override { replicas_.start_from(params); }
  std::size_t state_size() const override { return replicas_.state_size() + outer_state_size(); }
  void save_state(std::span<float> out) override {
    replicas_.save(out.first(replicas_.state_size()));
    if (!outer_) return;
    const std::span<float> outer = out.subspan(replicas_.state_size());
    std::ranges::copy(anchor_, outer.begin());
    std::ranges::copy(velocity_, outer.begin() + static_cast<std::ptrdiff_t>(anchor_.size()));
  }
  void load_state(std::span<const float> saved, int saved_workers, int index) override {
    const std::size_t outer = outer_state_size();
    replicas_.load(saved.first(saved.size() - std::min(outer, saved.size())), saved_workers, index);
    if (!outer_) return;
    const std::span<const float> state = saved.last(outer);
    anchor_.assign(state.begin(), state.begin() + static_cast<std::ptrdiff_t>(outer / 2));
    velocity_.assign(state.begin() + static_cast<std::ptrdiff_t>(outer / 2), state.end());
  }
  void step(std::span<float> params, std::span<float> grads) override {
    if (outer_ && anchor_.empty()) {  // the model every worker starts from is the first anchor
      anchor_.assign(params.begin(), params.end());
      velocity_.assign(params.size(), 0.0f);
    }
    sgd_.step(params, grads);
    if (++steps_ % every_ == 0) average(params);
  }
  // A run that does not end on an averaging step still ends with one model on every worker.
  void finish(std::span<float> params) override {
    if (steps_ % every_ != 0) average(params);
  }

 private:
  void average(std::span<float> params) {
    allreduce_->run(params);
    for (float& p : params) p *= inv_workers_;
    if (outer_) outer_step(params);
  }
  void outer_step(std::span<float> params) {
    const float mu = outer_momentum_;
    for (std::size_t k = 0; k < params.size(); ++k) {
      const float delta = anchor_[k] - params[k];
      velocity_[k] = mu * velocity_[k] + delta;
      anchor_[k] -= outer_lr_ * (delta + mu * velocity_[k]);
      params[k] = anchor_[k];
    }
  }

  std::unique_ptr<Allreduce> allreduce_;
  Sgd& sgd_;
  int every_;
  float inv_workers_;
  // The outer optimizer's anchor and momentum, one model each (none without it).
  std::size_t outer_state_size() const { return outer_ ? 2 * count_ : 0; }

  float outer_lr_, outer_momentum_;
  bool outer_;
  std::vector<float> anchor_, velocity_;  // the model of the last average and the outer momentum (with outer_)
  std::size_t count_;
  Replicas replicas_;
  std::int64_t steps_;  // global steps taken: averages fall where they would have without a checkpoint
};

// The one place that pairs what sums a range of the gradient (its allreduce, or its error-fed compressor) with how
// the ranges overlap the computation (bucketed, pipelined, or not at all).
std::unique_ptr<Synchronizer> make_job_sync(const TrainConfig& config, const SyncSetup& s) {
  if (config.buckets && (s.layers.empty() || s.parameter_count == 0))
    throw std::invalid_argument("make_synchronizer: buckets need the model's layers and size");
  // A compressor works on whole tensors. A dense bucket may end between a layer's rows where a bucket is cheap: on two
  // workers (one or two exchanges per bucket), or with a communication thread. With progress by calls on more
  // workers each bucket is a chain of stages that each wait for a poll (a ring of P ranks 2(P-1) of them), and more
  // buckets cost more than their earlier start saves (docs/overlap.md has the simulated runs).
  const bool compressed = config.compression.enabled();
  const bool rows = !compressed && (s.workers.size() <= 2 || config.progress == Progress::thread);
  std::vector<ElementRange> ranges = gradient_ranges(config, s.layers, s.parameter_count, rows);
  std::unique_ptr<GradientJobs> jobs = compressed ? make_compressed_jobs(config, s, std::move(ranges))
                                                  : make_allreduce_jobs(config, s.workers, std::move(ranges));
  if (config.pipeline) return make_pipelined_sync(config, s.workers, s.sgd, std::move(jobs));
  if (config.buckets) return make_bucketed_sync(config, s.workers, s.sgd, std::move(jobs));
  return make_blocking_sync(s.workers, s.sgd, std::move(jobs));
}

// Local SGD: the averaging period and its outer optimizer.
constexpr SpecModifier kAllreduceModifiers[] = {
    {"average=H", "--average-every"}, {"outer-lr=LR", "--outer-lr"}, {"outer-momentum=MU", "--outer-momentum"}};

std::unique_ptr<Synchronizer> make_allreduce_family(const TrainConfig& config, const SyncSetup& s) {
  if (config.robust.robust()) return make_robust_sync(config, s);  // blocking only (validate_robustness)
  if (config.privacy.secure_aggregation) return make_secure_sync(config, s);
  if (config.compression.enabled() || config.pipeline || config.buckets) return make_job_sync(config, s);
  auto allreduce = config.sync.allreduce->make(s.workers, allreduce_options(config));
  if (config.average_every > 0)
    return std::make_unique<ModelAveraging>(std::move(allreduce), s.sgd, config.average_every, config.outer_lr,
                                            config.outer_momentum, s.parameter_count, s.steps_done);
  return std::make_unique<GradientAllreduce>(std::move(allreduce), s.sgd);
}

}  // namespace

extern const SyncFamilyInfo allreduce_sync_family = {
    .family = SyncFamily::allreduce,
    .name = "",  // named by its methods (collectives/methods.hpp)
    .shape = {.pipelines = true, .buckets = true},
    .flags = {.spec_modifiers = kAllreduceModifiers},
    .checks = {.check_compression = [](const TrainConfig& c) -> std::string {
      if (c.average_every > 0)
        return fmt::format("--compress {}: not with --average-every (that averages models, not gradients)",
                           c.compression.name());
      return {};
    }},
    .report = {.dimensions =
                   [](const TrainConfig& c, SyncDimensions& d) {
                     if (c.average_every > 0) d.mode = "local-sgd";
                   },
               // Not when the wire bytes are a library collective's, which gradsync's meter cannot see.
               .wire_bytes_counted =
                   [](const TrainConfig& c) {
                     if (c.privacy.secure_aggregation) return false;  // MPI_Allreduce of the masked codes
                     return !(c.sync.allreduce && c.sync.allreduce->library &&
                              (!c.compression.enabled() || c.compression.compressor->uses_allreduce));
                   }},
    // Local SGD's state: every worker's model and optimizer state (Replicas), then the outer optimizer's two models.
    .build = {.state_size = [](const TrainConfig& c, std::size_t parameter_count, int workers) -> std::size_t {
                if (c.robust.robust()) return robust_state_size(c, parameter_count);
                if (c.average_every == 0) return 0;
                const std::size_t momentum = c.sgd.momentum != 0.0f ? parameter_count : 0;
                const bool outer = c.outer_lr != 1.0f || c.outer_momentum != 0.0f;
                return static_cast<std::size_t>(workers) * (parameter_count + momentum) +
                       (outer ? 2 * parameter_count : 0);
              },
              .make = make_allreduce_family},
};

}  // namespace gradsync
