#pragma once
// Where a training run starts: the seed's initial model, or with config.resume the newest complete checkpoint set,
// checked once the roles hold it.
#include <string>

#include "collectives/comm.hpp"
#include "model/model.hpp"
#include "trainers/checkpoint/checkpoint_schedule.hpp"
#include "trainers/checkpoint/checkpointing.hpp"
#include "trainers/config/train_config.hpp"
#include "trainers/loop/roles.hpp"

namespace gradsync {

// Every rank: with config.resume, the set load_newest_checkpoint finds (collective over `world`; CheckpointError on
// every rank if none is usable; `schedule` must be enabled), else `model` initialized from the seed, the same on
// every rank.
ResumePoint starting_point(const TrainConfig& config, const Comm& world, const CheckpointSchedule& schedule,
                           const std::string& fingerprint, const Model& model);

// Where this run's reports start (trainers/loop/trainer.hpp): a fresh run's empty history, or after a resume the
// checkpoint's (not known, from a manifest without one: the reports then count from this run's first evaluation and
// start, as before it was recorded). A crossing recorded for another --target-accuracy than config's is dropped;
// whether config's target was reached before the checkpoint then shows only in the best accuracy (target_reached()).
// Without a target, config keeps the checkpoint's, for the sets this run writes.
ReportHistory starting_history(const TrainConfig& config, const ResumePoint& start);

// Collective over `world`, after a resume: the state `roles` now hold, put together on rank 0, must be `start`'s bit
// for bit. Rank 0 says what was resumed, how the reports continue (starting_history) and what changed with the world
// (`pieces`: the checkpoint pieces of this run); every rank throws std::logic_error if the state differs.
void check_resumed_state(const ResumePoint& start, Roles& roles, const TrainConfig& config, const Comm& world,
                         std::size_t pieces);

}  // namespace gradsync
