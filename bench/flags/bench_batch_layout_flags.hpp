#pragma once
// bench_batch_layout's flags (bench/bench_batch_layout.cpp).
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace gradsync::bench {

struct BatchLayoutFlags {
  std::string data_dir;  // empty: the source tree's data/mnist, as train reads it
  std::vector<std::size_t> batches = {32, 256}, outputs = {10, 128};
  int rounds = 15;
  double block_s = 0.05;
};

// Parses bench_batch_layout's command line into `f` (one process: it prints --help or the error itself). Returns
// std::nullopt to go on, or the exit code to leave with (bench/flags/command_line.hpp).
std::optional<int> parse_batch_layout_flags(int argc, char** argv, BatchLayoutFlags& f);

}  // namespace gradsync::bench
