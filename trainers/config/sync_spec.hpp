#pragma once
// A synchronizer spelled as one word, for programs that take several of them (bench_sync --methods): train's --sync
// value and modifiers joined by '+', each modifier one of train's flags:
//   ring                            --sync ring
//   ring+buckets, mpi+pipe+thread   --buckets, --pipeline 1, --progress thread (thread: with buckets or pipe)
//   ring+compress=powersgd:4+noef   --compress powersgd:4 --error-feedback 0
//   ring+traced                     the program's own: bench_sync records this method's steps into its trace
//   xcore                           a program's own base instead of a --sync value (parse_sync_spec's `bounds`)
// Text becomes typed values here once, through train's own parsers (find_sync_method, parse_compression); the
// display name is made from the typed values (TrainConfig::sync_name), never parsed back.
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "compression/compressors.hpp"
#include "trainers/config/progress.hpp"
#include "trainers/config/sync_method.hpp"

namespace gradsync {

struct TrainConfig;

struct SyncSpec {
  SyncMethod sync;                      // --sync (unset with a bound)
  std::string_view bound;               // one of the program's `bounds` instead of --sync, else empty
  CompressionChoice compression;        // +compress=NAME[:PARAM], +noef
  bool buckets = false;                 // +buckets
  bool pipeline = false;                // +pipe
  Progress progress = Progress::calls;  // +thread
  bool traced = false;                  // +traced

  // `base` with the spec's choices: sync, compression, buckets, pipeline, progress.
  TrainConfig applied_to(const TrainConfig& base) const;
  // The display name: the bound's, or applied_to(base).sync_name(); "-traced" after it with +traced.
  std::string name(const TrainConfig& base) const;
};

// The spec `text` spells, or nullopt with `problem` set to a one-line message that quotes `text`. `bounds` are the
// bases a program accepts besides --sync's values. Checks the grammar only: the program checks the configuration
// (validate(), trainers/config/validate_config.hpp) as train does.
std::optional<SyncSpec> parse_sync_spec(std::string_view text, std::string& problem,
                                        std::span<const std::string_view> bounds = {});
// The grammar in one line, for --help and errors.
std::string sync_spec_grammar();

}  // namespace gradsync
