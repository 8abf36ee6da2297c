#pragma once
// Checkpoint and resume for the trainer, on top of model/checkpoint.hpp (format, atomic write, validation).
// Checkpoints are taken at epoch ends, where every rank meets anyway: rank 0 holds the model there (as a worker
// for ring/mpi, as server 0 for ps after gathering the shards) and writes it; other ranks write nothing.
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "model/checkpoint.hpp"
#include "trainers/train_config.hpp"

namespace gradsync {

struct ResumePoint {
  std::vector<float> params;
  std::vector<float> optimizer_state;
  int next_epoch = 0;  // first epoch still to train (0-based)
  std::int64_t steps_done = 0;
};

// What must match between the run that wrote a checkpoint and the run that resumes it: model shape, method
// (and its ring chunk size), dataset, per-worker batch, ranks, seed and momentum (it shapes the saved optimizer
// state). Epochs, learning rate, weight decay and steps per epoch may change between the two.
std::string run_fingerprint(const TrainConfig& config, const std::vector<std::size_t>& layer_sizes, int ranks);

// The checkpoint's path inside `dir` (the file save_checkpoint replaces atomically).
std::string checkpoint_file(const std::string& dir);

// Collective over `world`. Rank 0 reads and validates the checkpoint in config.checkpoint_dir; every rank
// gets the same ResumePoint, or every rank throws CheckpointError carrying rank 0's message.
ResumePoint load_resume_point(const TrainConfig& config, const std::vector<std::size_t>& layer_sizes,
                              std::size_t parameter_count, const Comm& world);

// Collective over `world`: rank 0 creates config.checkpoint_dir if needed and checks that it can write there,
// before any training time is spent; every rank throws CheckpointError with rank 0's message otherwise.
void prepare_checkpoint_dir(const TrainConfig& config, const Comm& world);

// Rank 0 only. Refuses (CheckpointError) to write a model with NaN or Inf in it, so that the last good
// checkpoint is what stays on disk after a divergence.
void save_checkpoint(const TrainConfig& config, const std::string& fingerprint, std::span<const float> params,
                     std::span<const float> optimizer_state, int epochs_done, std::int64_t steps_done);

// True if every value is finite. Vectorizes: x - x is 0 for finite x and NaN for NaN or Inf.
bool all_finite(std::span<const float> values);

}  // namespace gradsync
