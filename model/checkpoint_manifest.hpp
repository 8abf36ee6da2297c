#pragma once
// The manifest of a checkpoint set: a small text file, written after the pieces it names, that commits them.
// A set is the whole training state at one step, cut into pieces (one per parameter-server shard, or one for a
// replicated model); each piece is a checkpoint file (checkpoint.hpp) holding one key range of the parameters and
// of the optimizer state (a replicated piece holds all of it, followed by any state of the workers' synchronizer,
// e.g. compression residuals: its optimizer count is then the sum; sharded state comes in blocks of one value per
// parameter, the optimizer's and then each worker's residual, and a piece holds its key range of each block). Every host
// that holds pieces of a set writes its own manifest naming ALL the set's pieces (with their checksums), marking the ones
// it holds, so a reader can tell a complete set from a torn one using the files of any hosts that are left.
//
// Text layout, version 1 (one field per line, '\n' line ends, numbers in decimal, CRCs as 8 hex digits):
//   gradsync-manifest 1
//   run <fingerprint, to the end of the line>
//   step <global steps done>
//   next_epoch <first epoch still to train, 0-based>
//   epoch_examples <positions of that epoch's permutation already trained>
//   history <evaluations> <best accuracy> <steps at the last evaluation> <seconds at it> <seconds at the checkpoint>
//           <target accuracy, 0: none> <steps to the target, -1: not reached> <seconds to it, -1: not reached>
//           (one line; optional: manifests written before the report history was recorded have none)
//   shape <ranks> <workers> <servers> <per-worker batch>
//   params <count> <crc of all parameters>
//   optimizer <count> <crc of all optimizer state, as its pieces hold it, in piece order>
//   pieces <K>
//   piece <k> <begin> <end> <file name> <file bytes> <file crc> <here: 1 if this host holds it, else 0>   (K lines)
//   end <crc of every byte before this line>
// The last line's CRC makes a torn or edited manifest unreadable rather than misleading. Real numbers are written in
// the shortest form that reads back to the same double.
#include <cstdint>
#include <string>
#include <vector>

#include "model/checkpoint.hpp"

namespace gradsync {

struct ManifestPiece {
  std::uint64_t begin = 0, end = 0;  // the key range [begin, end) of the parameters (and optimizer state)
  std::string file;                  // file name inside the set's directory, no '/'
  std::uint64_t bytes = 0;           // the piece file's size
  std::uint32_t crc = 0;             // the piece file's own whole-file CRC (its last 4 bytes)
  bool here = false;                 // this manifest's host holds a copy

  bool operator==(const ManifestPiece&) const = default;
};

// The run's reports up to a checkpoint, as much of them as a resumed run needs to continue them as the uninterrupted
// run would (trainers/loop/trainer.hpp): the best test accuracy so far, the last evaluation before the checkpoint, the
// training time at the checkpoint and the --target-accuracy crossing once reached. Seconds are training time
// (evaluations and epoch-end checkpoints excluded) over every run the training went through; steps are global steps.
struct ReportHistory {
  bool known = false;            // false: not recorded (a manifest from before it was, or a run resumed from one)
  std::int64_t evaluations = 0;  // evaluations so far; with none, the best accuracy and the last evaluation mean nothing
  double best_accuracy = 0;
  std::int64_t evaluated_steps = 0;  // at the last evaluation
  double evaluated_s = 0;            // at the last evaluation
  double elapsed_s = 0;              // at the checkpoint: past evaluated_s when it was taken inside an epoch
  double target_accuracy = 0;        // the writing run's --target-accuracy (0: none)
  // When the best accuracy first reached target_accuracy, interpolated between evaluations; -1: not reached, or
  // reached by a run that aimed at another target (then best_accuracy >= target_accuracy says it was).
  double target_steps = -1, target_s = -1;

  // Whether the best accuracy has reached target_accuracy (when: target_steps, if known).
  bool target_reached() const { return target_accuracy > 0 && evaluations > 0 && best_accuracy >= target_accuracy; }
  bool operator==(const ReportHistory&) const = default;
};

struct Manifest {
  std::string run;  // the run fingerprint (trainers/checkpoint/checkpointing.hpp); pieces carry the same string
  std::int64_t step = 0;
  std::int64_t next_epoch = 0;
  std::int64_t epoch_examples = 0;
  ReportHistory history;  // known only in manifests that carry the line
  int ranks = 0, workers = 0, servers = 0;
  std::uint64_t batch = 0;
  std::uint64_t param_count = 0, optimizer_count = 0;
  std::uint32_t params_crc = 0, optimizer_crc = 0;  // of the whole vectors (the optimizer's in piece order)
  std::vector<ManifestPiece> pieces;

  bool operator==(const Manifest&) const = default;
  // Equal except for which pieces are here: two hosts' manifests of one set.
  bool same_set(const Manifest& other) const;
};

std::string serialize_manifest(const Manifest& manifest);

// Parses and checks a manifest: format, final CRC, pieces numbered 0..K-1 covering [0, param_count) in order,
// file names without '/'. Throws CheckpointError "<name>: ..." saying what is wrong.
Manifest parse_manifest(const std::string& text, const std::string& name);

// Reads `path` (at most 1 MiB) and parses it.
Manifest read_manifest(const std::string& path);

}  // namespace gradsync
