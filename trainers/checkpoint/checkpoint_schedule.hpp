#pragma once
// When the trainer takes checkpoints, and taking them: every config.checkpoint_steps global steps (or a step
// interval measured from config.checkpoint_seconds), every config.checkpoint_every epochs and after the last.
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "collectives/comm.hpp"
#include "trainers/checkpoint/checkpoint_set.hpp"
#include "trainers/checkpoint/host_map.hpp"
#include "trainers/config/train_config.hpp"

namespace gradsync {

class CheckpointSchedule {
 public:
  // Collective over `world`: with config.checkpoint_dir, finds the hosts. `config` must outlive this object.
  CheckpointSchedule(const TrainConfig& config, const Comm& world);
  bool enabled() const { return hosts_.has_value(); }
  const HostMap& hosts() const { return *hosts_; }  // enabled() only

  // Collective over the world (CheckpointWriter's constructor), enabled() only: prepares this host's directory for
  // the sets of a run with `fingerprint` and `layout`, resumed after `resumed_step` global steps (-1: a fresh run).
  void open(const std::string& fingerprint, const StateLayout& layout, std::int64_t resumed_step);

  // Where a stretch of steps that starts at step `s` of an epoch of `steps`, global step `global`, ends: at the
  // next checkpoint, or after the steps that time the interval, or at the epoch's end.
  long stretch_end(long s, long steps, std::int64_t global) const;
  // Every rank, after each stretch: `done` steps took `seconds` here. With a time interval the first stretch fixes
  // it in steps (collective over the world: the slowest rank's time per step) and this returns true: no checkpoint
  // follows that stretch.
  bool after_stretch(double seconds, long done);
  // A checkpoint is due after `global` steps, inside an epoch (`last_in_epoch` false) or at its end (`epoch` done).
  bool due_inside(std::int64_t global) const;
  bool due_at_epoch_end(int epoch, bool last_epoch, std::int64_t global) const;

  // Collective over the world, with nothing in flight: writes a set of this rank's state (CheckpointWriter::write);
  // rank 0 says so unless config.quiet.
  void write(const CheckpointProgress& progress, std::span<const float> params, std::span<const float> optimizer);
  // The same in two halves (CheckpointWriter::take, write_taken): the state now, the history once it is known.
  void take(std::int64_t step, std::span<const float> params, std::span<const float> optimizer);
  void write_taken(const CheckpointProgress& progress);

 private:
  static constexpr long kTimedSteps = 50;  // enough that the first, slower steps do not dominate
  const TrainConfig& config_;
  Comm world_;
  std::optional<HostMap> hosts_;
  std::optional<CheckpointWriter> writer_;
  long interval_ = 0;    // global steps between checkpoints (0: at epoch ends only)
  bool timing_ = false;  // the interval is still to be measured
  double take_s_ = 0;    // how long take() took, for the write's line
};

}  // namespace gradsync
