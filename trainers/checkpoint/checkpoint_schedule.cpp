#include "trainers/checkpoint/checkpoint_schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "trainers/core/clock.hpp"

namespace gradsync {

CheckpointSchedule::CheckpointSchedule(const TrainConfig& config, const Comm& world) : config_(config), world_(world) {
  if (config.checkpoint_dir.empty()) return;
  hosts_.emplace(world);
  interval_ = std::max(0L, config.checkpoint_steps);
  timing_ = config.checkpoint_steps == TrainConfig::kTimeInterval;
}

void CheckpointSchedule::open(const std::string& fingerprint, const StateLayout& layout, std::int64_t resumed_step) {
  writer_.emplace(config_, world_, *hosts_, fingerprint, layout, resumed_step);
}

long CheckpointSchedule::stretch_end(long s, long steps, std::int64_t global) const {
  if (timing_) return std::min(steps, s + kTimedSteps);
  if (interval_ > 0) return std::min<long>(steps, s + (interval_ - global % interval_));
  return steps;
}

bool CheckpointSchedule::after_stretch(double seconds, long done) {
  if (!timing_) return false;
  const double per_step = world_.max(seconds / static_cast<double>(done));  // the slowest rank's
  interval_ = std::max<long>(1, std::lround(config_.checkpoint_seconds / per_step));
  timing_ = false;
  if (world_.rank() == 0 && !config_.quiet)
    fmt::print("checkpoint every {} steps (--checkpoint-seconds {} at {:.3f} ms per step)\n", interval_,
               config_.checkpoint_seconds, per_step * 1e3);
  return true;
}

bool CheckpointSchedule::due_inside(std::int64_t global) const {
  return enabled() && interval_ > 0 && global % interval_ == 0;
}

bool CheckpointSchedule::due_at_epoch_end(int epoch, bool last_epoch, std::int64_t global) const {
  return enabled() && ((config_.checkpoint_every > 0 && (epoch + 1) % config_.checkpoint_every == 0) || last_epoch ||
                       (interval_ > 0 && global % interval_ == 0));
}

void CheckpointSchedule::write(const CheckpointProgress& progress, std::span<const float> params,
                               std::span<const float> optimizer) {
  take(progress.step, params, optimizer);
  write_taken(progress);
}

void CheckpointSchedule::take(std::int64_t step, std::span<const float> params, std::span<const float> optimizer) {
  const double t0 = now_s();
  writer_->take(step, params, optimizer);
  take_s_ = now_s() - t0;
}

void CheckpointSchedule::write_taken(const CheckpointProgress& progress) {
  const double t0 = now_s();
  const Manifest m = writer_->write_taken(progress);
  if (world_.rank() != 0 || config_.quiet) return;
  fmt::print(
      "checkpoint: step {}, params crc {:08x}, optimizer crc {:08x}, {} piece(s) on {} host(s) each, "
      "{:.1f} ms\n",
      m.step, m.params_crc, m.optimizer_crc, m.pieces.size(), std::min(config_.checkpoint_replicas, hosts_->hosts()),
      (take_s_ + now_s() - t0) * 1e3);
  std::fflush(stdout);
}

}  // namespace gradsync
