#pragma once
// bench_compute's flags (bench/bench_compute.cpp).
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace gradsync::bench {

struct ComputeFlags {
  int epochs = 5, reps = 3;
  bool compare_default = false, remeasure = false, peak_only = false;
  std::string data_dir, csv;
  std::vector<std::string> models = {"softmax", "mlp"};
  std::vector<std::size_t> batches = {32, 256};
};

// Parses bench_compute's command line into `f` (one process: it prints --help or the error itself). Returns
// std::nullopt to go on, or the exit code to leave with (bench/flags/command_line.hpp).
std::optional<int> parse_compute_flags(int argc, char** argv, ComputeFlags& f);

}  // namespace gradsync::bench
