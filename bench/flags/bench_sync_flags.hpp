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

// The bases --methods takes besides train's --sync values: "xcore", the ring's schedule through a shared window.
inline constexpr std::string_view kSyncBounds[] = {"xcore"};

struct SyncFlags {
  std::vector<std::string> method_entries = {"ring", "mpi"};  // --methods as given
  std::vector<SyncSpec> methods;                              // each entry parsed (trainers/config/sync_spec.hpp)
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
