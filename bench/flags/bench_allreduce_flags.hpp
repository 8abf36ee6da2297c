#pragma once
// bench_allreduce's flags (bench/bench_allreduce.cpp).
#include <optional>
#include <string>
#include <vector>

#include "collectives/methods.hpp"
#include "trainers/cli/run_settings.hpp"

namespace gradsync::bench {

#ifdef GRADSYNC_SIMULATED
// The simulated network charges every call the same time, so one warm-up and one timed call per row measure it, and
// each repetition more is only wall time spent simulating (at 64 simulated ranks, minutes per small size).
inline constexpr int kDefaultIters = 1, kDefaultWarmup = 1, kDefaultReps = 1;
#else
inline constexpr int kDefaultIters = 0, kDefaultWarmup = 3, kDefaultReps = 5;  // 0: iterations to move ~1 GiB
#endif

struct AllreduceFlags {
  std::string methods = allreduce_method_names([](const AllreduceMethod&m) { return m.exact; }, ","), min_bytes = "4",
              max_bytes = "64M", chunks, segment, csv;
  double step_factor = 2;
  int iters = kDefaultIters, warmup = kDefaultWarmup, servers = 0, reps = kDefaultReps;
  double link_gbps = 0;
  bool no_check = false, explain = false;
  bool shared_buffers = false;
  bool list_methods = false;      // handled before MPI_Init; declared here for --help
  std::vector<Setting> settings;  // after a parse: the flags as parsed (flag_settings), for comparing the ranks'
};

// Parses bench_allreduce's command line into `f`. Every rank calls it alike; `lead` prints --help or the error.
// Returns std::nullopt to go on, or the exit code to leave with (bench/flags/command_line.hpp).
std::optional<int> parse_allreduce_flags(int argc, char** argv, bool lead, AllreduceFlags& f);

}  // namespace gradsync::bench
