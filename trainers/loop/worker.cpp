#include "trainers/loop/worker.hpp"

#include <fmt/format.h>

#include <cmath>

#include "collectives/watchdog.hpp"
#include "model/rng.hpp"
#include "trace/scope.hpp"
#include "trainers/checkpoint/checkpointing.hpp"
#include "trainers/core/clock.hpp"
#include "trainers/core/divergence.hpp"

namespace gradsync {

Worker::Worker(const TrainConfig& config, const Dataset& train, const Model& model, int index, int workers, int rank,
               int ranks, std::vector<float> params, Synchronizer& sync, std::int64_t steps_done)
    : Worker(config, train, model, index, workers, rank, ranks, std::move(params), sync, &sync, nullptr, steps_done) {}

Worker::Worker(const TrainConfig& config, const Dataset& train, const Model& model, int index, int workers, int rank,
               int ranks, std::vector<float> params, RoundTrainer& rounds, std::int64_t steps_done)
    : Worker(config, train, model, index, workers, rank, ranks, std::move(params), rounds, nullptr, &rounds, steps_done) {
}

Worker::Worker(const TrainConfig& config, const Dataset& train, const Model& model, int index, int workers, int rank,
               int ranks, std::vector<float> params, WorkerSync& sync, Synchronizer* steps, RoundTrainer* rounds,
               std::int64_t steps_done)
    : config_(config), train_(train), model_(model), index_(static_cast<std::size_t>(index)),
      workers_(static_cast<std::size_t>(workers)), rank_(rank), steps_done_(steps_done), applied_(steps_done),
      params_(std::move(params)), grads_{std::vector<float>(params_.size()),
                                         std::vector<float>(steps && steps->gradient_buffers() > 1 ? params_.size() : 0)},
      perm_(train.rows), slice_(config.batch), next_slice_(config.batch), batch_(config.batch, train.features),
      ws_(model, config.batch), sync_(sync), steps_(steps), rounds_(rounds),
      faults_(config.faults, config.seed, rank, ranks, index, workers) {
  // A resumed or recovered worker draws a stream of its own: noise drawn again would leak gradient differences.
  if (config.privacy.dp())
    private_.emplace(config.privacy, config.seed + 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(steps_done), rank,
                     workers, config.batch);
  sync_.start_from(params_);
}

EpochWork Worker::run_steps(int epoch, long from, long to, long origin_step, std::uint64_t origin) {
  if (rounds_) return run_rounds(from, to);
  EpochWork work;
  draw_permutation(epoch);
  if (from < to) take_slice(from, origin_step, origin, next_slice_);
  for (long s = from; s < to; ++s) {
    if (TraceRecorder* t = trace_recorder()) t->set_step(steps_done_);
    const TraceScope traced(SpanKind::step, "step");
    faults_.on_step_start(steps_done_);
    std::swap(slice_, next_slice_);
    const double t0 = now_s();
    gather_batch(train_, slice_, batch_, model_.reads_float_rows(slice_.size()));
    if (attack_) attack_->on_batch(batch_, steps_done_);
    if (s + 1 < to) {
      take_slice(s + 1, origin_step, origin, next_slice_);
      prefetch_examples(train_, next_slice_, batch_);
    }
    work.loss_sum += compute_gradient(epoch, s);
    if (attack_) attack_->on_gradient(grads(), steps_done_ - 1);  // the honest gradient was checked, then replaced
    const double t1 = now_s();
    steps_->step(params_, grads());
    // A pipelined step applies the step before's gradient and leaves its own in flight.
    applied_ = steps_done_ - (steps_->gradient_buffers() > 1 ? 1 : 0);
    if (steps_->gradient_buffers() > 1) current_ ^= 1;  // the synchronizer still reads the one just passed
    const double t2 = now_s();
    work.compute_s += t1 - t0;
    work.sync_s += t2 - t1;
    faults_.on_step_done(steps_done_);
  }
  const double t3 = now_s();
  sync_.drain(params_);
  applied_ = steps_done_;
  work.sync_s += now_s() - t3;
  work.hidden_s = sync_.take_hidden_seconds();
  work.steps = static_cast<double>(to - from);
  work.examples = static_cast<double>(to - from) * static_cast<double>(config_.batch);
  return work;
}

// A family that trains in rounds runs each step's local training itself (RoundTrainer::run_round).
EpochWork Worker::run_rounds(long from, long to) {
  EpochWork work;
  for (long s = from; s < to; ++s) {
    if (TraceRecorder* t = trace_recorder()) t->set_step(steps_done_);
    const TraceScope traced(SpanKind::step, "round");
    faults_.on_step_start(steps_done_);
    in_round_ = true;
    accumulate(work, rounds_->run_round(steps_done_, params_));
    in_round_ = false;
    faults_.on_step_done(steps_done_);
    set_watchdog_step(steps_done_++);
    applied_ = steps_done_;
  }
  return work;
}

void Worker::draw_permutation(int epoch) {
  if (epoch == perm_epoch_) return;
  shuffled_indices(perm_, config_.seed, static_cast<std::uint64_t>(epoch));
  perm_epoch_ = epoch;
}

// This worker's slice of global batch `step`.
void Worker::take_slice(long step, long origin_step, std::uint64_t origin, std::vector<std::uint32_t>& out) const {
  const std::size_t b = config_.batch, n = train_.rows;
  std::size_t next = (origin + (static_cast<std::size_t>(step - origin_step) * workers_ + index_) * b) % n;
  for (std::size_t j = 0; j < b; ++j, next = next + 1 == n ? 0 : next + 1) out[j] = perm_[next];  // wraps, no divide
}

// Forward and backward pass of step `step` into grads(), checked; returns the loss.
float Worker::compute_gradient(int epoch, long step) {
  const float loss = private_
                         ? private_->compute(model_, params_, batch_, grads(), ws_)
                         : model_.loss_and_gradient(params_, batch_, grads(), ws_, steps_->observer(params_, grads()));
  faults_.on_gradient(grads(), steps_done_, epoch, step);
  check_finite(loss, epoch, step);
  set_watchdog_step(steps_done_++);
  return loss;
}

// Stops the run where a NaN or Inf first appears, naming where, before it spreads through the sync.
void Worker::check_finite(float loss, int epoch, long step) {
  const bool loss_ok = std::isfinite(loss), grads_ok = all_finite(grads());
  if (loss_ok && grads_ok) return;
  throw DivergenceError(fmt::format("training diverged: {} at epoch {}, step {} (of the epoch; {} overall) on rank {}",
                                    loss_ok ? "NaN/Inf in the gradient" : "NaN/Inf loss", epoch + 1, step, steps_done_,
                                    rank_));
}

}  // namespace gradsync
