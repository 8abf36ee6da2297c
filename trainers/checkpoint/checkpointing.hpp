#pragma once
// Checkpoint and resume for the trainer. A checkpoint is a *set*: the whole training state at one global step,
// cut into pieces (one per parameter-server shard, or one holding the replicated model), each written by
// --checkpoint-replicas ranks on different hosts into their own host's directory, and committed there by a
// manifest written after the pieces (model/checkpoint_manifest.hpp). No shared file system is assumed: a resumed
// run finds the newest set whose every piece has a valid copy on some host still present, and the pieces travel
// over MPI. trainers/checkpoint/checkpoint_set.hpp writes and finds sets; this file holds what both sides agree on.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "collectives/allreduce.hpp"
#include "model/checkpoint.hpp"
#include "model/checkpoint_manifest.hpp"
#include "trainers/config/train_config.hpp"

namespace gradsync {

// What must match between the run that wrote a checkpoint and the run that resumes it: model shape, method (and its
// ring chunk size, overlap mode and ps mode/staleness), dataset, seed and momentum (it shapes the saved optimizer
// state). Not in it, so a run may resume on another world: the number of ranks, of workers and of parameter-server
// shards. The batch is checked apart (the per-worker batch, or the global one with --global-batch). Epochs,
// learning rate, weight decay and steps per epoch may change too.
// `model` is the model's Model::describe().
std::string run_fingerprint(const TrainConfig& config, const std::string& model);

// config.checkpoint_dir with every "%h" replaced by this host's name (this_host_name()).
std::string local_checkpoint_dir(const TrainConfig& config);

// A set's directory inside a host's checkpoint directory, and file names inside it. Zero-padded, so that names
// sort by step.
std::string set_dir_name(std::int64_t step);
std::string piece_file_name(std::size_t piece, std::size_t pieces);
std::string manifest_file_name(int rank);  // one per writing rank: ranks of one host never share a file
// The step of a set directory's name, or -1 if `name` is not one.
std::int64_t step_of_set_dir(const std::string& name);

struct ResumePoint {
  std::vector<float> params;
  std::vector<float> optimizer_state;
  int next_epoch = 0;               // first epoch still to train (0-based)
  std::int64_t steps_done = 0;      // global steps
  std::int64_t epoch_examples = 0;  // positions of next_epoch's permutation already trained
  ReportHistory history;            // the run's reports up to the checkpoint (not known: a manifest without them)
  Manifest manifest;                // of the set resumed: the writing run's shape and the state's digests
  std::string sources;              // where each piece came from, "piece k: host:path", for the log
  std::string skipped;              // rank 0: files of sets as new as this one that were unusable, and why
};

// The optimizer values piece `p` of the set `m` holds: all of them in a replicated piece, where the workers'
// synchronizer state follows the optimizer's (checkpoint_set.hpp). Sharded state is a whole number of blocks of the
// model's size (the optimizer's, then the workers' residuals of a compressed push; none for plain SGD) and a piece
// holds its key range of each block, block after block.
std::size_t piece_optimizer_count(const Manifest& m, const ManifestPiece& p);
// Piece `range`'s optimizer values out of the whole block-major `state` (blocks of `parameter_count`), into `piece`
// (blocks * range.size() floats), and back.
void copy_piece_state(std::span<const float> state, std::size_t parameter_count, ElementRange range,
                      std::span<float> piece);
void place_piece_state(std::span<const float> piece, std::size_t parameter_count, ElementRange range,
                       std::span<float> state);
// The CRC of the whole optimizer state as a manifest names it: of its pieces' values in piece order (for sharded
// state; for replicated state simply crc32_floats(state)).
std::uint32_t optimizer_state_crc(const Manifest& m, std::span<const float> state);

// True if every value is finite (no NaN, no Inf).
bool all_finite(std::span<const float> values);

}  // namespace gradsync
