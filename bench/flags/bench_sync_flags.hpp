#pragma once
// bench_sync's flags (bench/bench_sync.cpp).
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/models.hpp"
#include "trainers/config/sync_spec.hpp"
#include "trainers/config/train_config.hpp"

namespace gradsync::bench {

// The words --methods takes besides train's: the base "xcore", the ring's schedule through a shared window, and the
// modifier "traced", which records only that method's steps into --trace's file.
inline constexpr std::string_view kSyncBounds[] = {"xcore"};
inline constexpr std::string_view kSyncOwnModifiers[] = {"traced"};
inline constexpr SpecWords kSyncWords{kSyncBounds, kSyncOwnModifiers};

// A --methods entry: its spec and, unless its base is a bound (xcore), the run it spells.
struct SyncMethodEntry {
  SyncSpec spec;
  TrainConfig choices;  // spec_config(spec): train's defaults elsewhere, where bench_sync's own settings go

  bool traced() const { return spec.has("traced"); }
  // The run it spells with bench_sync's own settings, which `base` holds: the model, the batch, the buckets' size
  // and the data (train's defaults elsewhere).
  TrainConfig run(const TrainConfig& base) const;
  // The table's row and the CSV's method column: the bound's name, or train's name of the run; "-traced" after it.
  std::string name() const {
    return (spec.own_base.empty() ? choices.sync_name() : std::string(spec.own_base)) + (traced() ? "-traced" : "");
  }
};

struct SyncFlags {
  std::vector<std::string> method_entries = {"ring", "mpi"};  // --methods as given
  std::vector<SyncMethodEntry> methods;                       // each entry parsed
  std::string data_dir, trace, csv;
  const ModelInfo* model = &model_info("mlp");  // --model
  std::size_t batch = 32, bucket_kib = TrainConfig::kDefaultBucketBytes >> 10;
  std::vector<std::size_t> hidden = {128};
  long steps = 6000, block = 32, settle = 4;
};

// Parses bench_sync's command line into `f`. Every rank calls it alike; `lead` prints --help or the error. Returns
// std::nullopt to go on, or the exit code to leave with (bench/flags/command_line.hpp).
std::optional<int> parse_sync_flags(int argc, char** argv, bool lead, SyncFlags& f);

}  // namespace gradsync::bench
