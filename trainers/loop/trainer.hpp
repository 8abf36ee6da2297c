#pragma once
// Data-parallel SGD. Every epoch all ranks draw the same permutation of the training set from the seed and each
// worker takes its own slice of every global batch, so a synchronous run on W workers with per-worker batch b
// follows serial SGD with batch W*b.
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "model/dataset.hpp"
#include "trainers/config/train_config.hpp"
#include "trainers/core/divergence.hpp"
#include "trainers/core/train_result.hpp"
#include "trainers/loop/steps_per_epoch.hpp"

namespace gradsync {

// Collective over `world`: every rank calls it with the same config and data. `config` must pass validate().
// World ranks 0..config.server_ranks()-1 serve (--sync ps); all other ranks are workers (trainers/loop/roles.hpp).
// Reports and the result are complete on rank 0 (other ranks get their own partial view); `on_epoch` runs on rank 0 only.
// With config.resume, starts from the newest complete checkpoint set on the hosts of `world`, on any number of ranks
// (CheckpointError on every rank if none is usable), continuing the reports from its history (run_start.hpp); with
// config.stop_at_target and a target it had already reached, trains nothing (the result has no epochs and reports the
// crossing; rank 0 says so). With config.checkpoint_dir, every config.checkpoint_steps global steps, every
// config.checkpoint_every epochs and after the last, all ranks write a checkpoint set
// (trainers/checkpoint/checkpoint_set.hpp) at a point where nothing is in flight; it records the report history
// (the epoch-end set's, with that epoch's evaluation). With config.global_batch, the per-worker batch is
// global_batch / workers. Throws DivergenceError on the rank that meets a non-finite loss or
// gradient. When recovers_in_place(config), a lost process does not end the run: the survivors re-form it over
// themselves (trainers/loop/in_place.hpp), rank 0 of the new world prints a line for each recovery, and the result is
// complete on the rank whose TrainResult::reports is set (every rank keeps the reports, so that one exists).
TrainResult train(const TrainConfig& config, const TrainTest& data, const Comm& world,
                  const EpochObserver& on_epoch = {});

// Whether a lost process re-forms `config`'s run in place (trainers/loop/in_place.hpp): --recover auto or inplace,
// a ULFM MPI started with fault tolerance on, and a family that can (in_place_refusal). Local; requires MPI
// initialized.
bool recovers_in_place(const TrainConfig& config);
// Why `config`'s family cannot re-form in place (its checks.in_place_refusal: the parameter server's asp and ssp), or
// empty. Local.
std::string in_place_refusal(const TrainConfig& config);

}  // namespace gradsync
